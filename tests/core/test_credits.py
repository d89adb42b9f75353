"""Seed 000, "Credits": what a message costs, who pays, who funds, what running out does."""

import pytest
from msgspec.structs import replace

from ygg_server.core import POOL, Notice, Pause, RefusalReason as R, TopicStatus
from ygg_server.core.rules import MAX_FUNDING, message_cost

from .harness import World, assert_context, assert_refused, notices, woken


def _cost(d):
    assert d.refusal is None, d.refusal
    return -sum(e.delta for e in d.ledger)


@pytest.mark.parametrize(
    "chars, recipients, attachment, cost",
    [
        (0, 1, 0, 1),  # at least 1 per message
        (1, 1, 0, 1),
        (1000, 1, 0, 1),
        (1001, 1, 0, 2),  # per *started* 1,000 characters
        (2500, 1, 0, 3),
        (2500, 3, 0, 9),  # for each recipient
        (10, 1, 1, 2),  # attached files cost by size: 1 per started 100 kB
        (10, 1, 100_000, 2),
        (10, 1, 100_001, 3),
        (10, 2, 250_000, 8),
    ],
)
def test_what_a_message_costs(chars, recipients, attachment, cost):
    """Seed 000: "1 credit per started 1,000 characters, at least 1 per message;"

    "a message sent to several recipients at once costs that for each of them;" and
    "attached files cost by size."
    """
    w = World()
    to = ["reviewer", "writer", "human.alice"][:recipients]
    d = w.send("researcher", "x" * chars, to=to, attachment_bytes=attachment)
    assert _cost(d) == cost == d.message.cost == message_cost("x" * chars, attachment, recipients)
    assert w.wallets["researcher"] == 1000 - cost


def test_even_context_costs():
    """Seed 000: "Every message an agent sends costs credits, even one delivered as context:" """
    w = World()
    tid = w.open("researcher", to=["reviewer"])
    d = w.send("reviewer", topic=tid, type="inform", to=["researcher"])
    assert_context(d, "researcher", "context_inform")
    assert _cost(d) == 1
    d = w.send("reviewer", title="Untargeted")  # nobody addressed in General: still one message
    assert _cost(d) == 1 and d.message.to == ()


def test_people_send_for_free():
    """Seed 000: "Every message an agent sends costs credits" — a person's messages cost nothing."""
    w = World()
    d = w.send("human.alice", "x" * 5000, to=["researcher", "reviewer"])
    assert d.refusal is None and d.ledger == () and d.message.cost == 0


@pytest.mark.parametrize(
    "wallet, pool, draws, payer",
    [
        (10, 0, False, "researcher"),
        (10, 10, False, "researcher"),  # the wallet first
        (None, 10, False, POOL),  # no wallet: the pool
        (0, 10, False, None),  # an empty wallet is the cap: refused, its funders asked (issue 17)
        (1, 10, False, None),  # a wallet that cannot cover the whole message: refused
        (0, 10, True, POOL),  # an agent an admin lets draw on the pool (credits.poolDraw): the pool
        (1, 10, True, POOL),  # ... pays the whole message when the wallet cannot
    ],
)
def test_wallet_then_pool(wallet, pool, draws, payer):
    """Seed 000: "Credits come from the agent's own wallet, or from the workspace pool if it has none."

    Core decision (docs/rules.md, "Credits"): an agent's wallet, when it has one, is its cap (before, the pool
    paid whatever the wallet could not: funded 1 credit, an agent spent 3 more from the pool); the pool pays for
    an agent with no wallet, or for one the workspace's admins let draw on it (`credits.poolDraw`).
    """
    w = World(pool=pool)
    if wallet is None:
        del w.wallets["researcher"]
    else:
        w.wallets["researcher"] = wallet
    if draws:
        w.draws_pool.add("researcher")
    d = w.send("researcher", "x" * 1500, to=["reviewer"])
    if payer is None:
        assert_refused(d, R.CREDITS_EXHAUSTED)
        assert notices(d, Notice.FUNDING_REQUEST), "the people who can fund it see a request"
        return
    assert [(e.account, e.delta) for e in d.ledger] == [(payer, -2)]


def test_a_topic_budget_bounds_its_traffic():
    """Seed 000: "`credits_exhausted`	The agent (or the topic's budget) is out of credits." """
    w = World()
    tid = w.open("researcher", to=["reviewer"])
    w.topics[tid] = replace(w.topic(tid), budget=3)
    d = w.send("reviewer", "x" * 1500, topic=tid, to=["researcher"])
    assert _cost(d) == 2 and w.topic(tid).budget == 1
    d = w.send("researcher", "x" * 1500, topic=tid, to=["reviewer"])
    assert_refused(d, R.CREDITS_EXHAUSTED)
    assert "budget" in d.refusal.detail and w.topic(tid).status == TopicStatus.PAUSED


def test_running_out_refuses_pauses_and_asks_the_funders_once():
    """Seed 000: "When an agent runs out, its message is refused, its topic pauses, and the people who can fund it see a request in the console."

    Core decision (docs/rules.md): the funders are the agent's owner and the workspace's owners
    and admins; the funding_request is raised once per exhaustion (flag `broke`).
    """
    w = World(people=("alice", "bob", "carol", "dave"))
    w.member("human.bob", role="admin")
    w.member("human.dave", role="viewer")
    w.add_agent("helper", "carol", wallet=1)
    tid = w.open("helper", to=["reviewer"])
    assert w.wallets["helper"] == 0
    d = w.send("helper", topic=tid, to=["reviewer"])
    assert_refused(d, R.CREDITS_EXHAUSTED)
    assert d.routed[0].message.notice == Notice.FUNDING_REQUEST and d.message is None
    (req,) = notices(d, Notice.FUNDING_REQUEST)
    assert set(req.to) == {"human.carol", "human.alice", "human.bob"}  # owner, workspace owner, admin
    t = w.topic(tid)
    assert (t.status, t.pause, t.paused_by) == (TopicStatus.PAUSED, Pause.CREDITS, "helper")
    assert ("broke", "helper", w.ws) in w.flags
    # not repeated while still out
    d = w.send("helper", topic=tid, to=["reviewer"])
    assert_refused(d, R.CREDITS_EXHAUSTED)
    assert notices(d, Notice.FUNDING_REQUEST) == [] and d.topics == ()
    d = w.send("helper", title="Elsewhere", to=["reviewer"])
    assert_refused(d, R.CREDITS_EXHAUSTED)
    assert notices(d, Notice.FUNDING_REQUEST) == []


def test_refusal_for_credits_charges_nothing_and_stores_nothing():
    """Seed 000: "When an agent runs out, its message is refused" — nothing delivered, nothing charged."""
    w = World(wallet=0)
    d = w.send("researcher", to=["reviewer"])
    assert_refused(d, R.CREDITS_EXHAUSTED)
    assert d.message is None and d.usage == 0 and all(r.message.notice for r in d.routed)


@pytest.mark.parametrize("funder", ["researcher", "reviewer"])
def test_an_agent_cannot_fund(funder):
    """Seed 000: "Only a human can fund an agent; an agent can never credit itself." """
    w = World()
    for account in ("researcher", POOL):
        d = w.fund(funder, account, 100)
        assert_refused(d, R.PERMISSION_DENIED)
    assert w.wallets["researcher"] == 1000 and w.pool == 0


@pytest.mark.parametrize(
    "role, own_agent, account, allowed",
    [
        ("owner", False, "agent", True),
        ("admin", False, "agent", True),
        ("member", True, "agent", True),  # your own agent
        ("member", False, "agent", False),
        ("viewer", True, "agent", False),
        ("owner", False, POOL, True),
        ("admin", False, POOL, True),
        ("member", False, POOL, False),
    ],
)
def test_who_may_fund(role, own_agent, account, allowed):
    """Seed 000: "Only a human can fund an agent; an agent can never credit itself."

    Core decision (docs/rules.md): owners and admins fund any agent and the pool; a member funds
    their own agents; a viewer funds nothing.
    """
    w = World(people=("alice", "bob"))
    w.member("human.bob", role=role)
    agent = w.add_agent("helper", "bob" if own_agent else "alice", wallet=0)
    d = w.fund("human.bob", agent if account == "agent" else POOL, 50)
    if allowed:
        assert d.refusal is None and [(e.account, e.delta) for e in d.ledger] == [(d.ledger[0].account, 50)]
    else:
        assert_refused(d, R.PERMISSION_DENIED)


@pytest.mark.parametrize("amount", [0, -5, 1.5, "10", True, None, MAX_FUNDING + 1])
def test_a_funding_is_a_positive_whole_number(amount):
    """Core decision (docs/rules.md): bad_amount for anything but a whole number from 1 to MAX_FUNDING."""
    w = World()
    assert_refused(w.fund("human.alice", "researcher", amount), R.BAD_AMOUNT)


def test_funding_an_unknown_agent():
    """Seed 000: "`unknown_recipient`	Nobody by that id or @handle in the workspace." """
    w = World()
    assert_refused(w.fund("human.alice", "nobody", 10), R.UNKNOWN_RECIPIENT)
    assert_refused(w.fund("human.alice", "human.alice", 10), R.UNKNOWN_RECIPIENT)


def test_refill_wakes_that_agent_alone():
    """Seed 000: "Once refilled, the agent alone is woken to resend what did not go through." """
    w = World(wallet=1)
    tid = w.open("researcher", to=["reviewer"])
    w.send("reviewer", topic=tid, type="inform", to=["researcher", "writer"])
    assert_refused(w.send("researcher", topic=tid, to=["reviewer"]), R.CREDITS_EXHAUSTED)
    d = w.fund("human.alice", "researcher", 10)
    assert d.refusal is None and woken(d) == {"researcher"}
    (msg,) = notices(d, Notice.CREDITS_REFILLED)
    assert msg.topic == tid
    t = w.topic(tid)
    assert (t.status, t.pause, t.paused_by) == (TopicStatus.OPEN, None, None)
    assert ("broke", "researcher", w.ws) not in w.flags and w.wallets["researcher"] == 10
    assert w.send("researcher", topic=tid, to=["reviewer"]).refusal is None
    # exhausted again later: a new funding request is raised
    w.wallets["researcher"] = 0
    d = w.send("researcher", topic=tid, to=["reviewer"])
    assert len(notices(d, Notice.FUNDING_REQUEST)) == 1


def test_refilling_the_pool_wakes_the_agents_it_had_stopped():
    """Seed 000: "Once refilled, the agent alone is woken to resend what did not go through."

    Core decision (docs/rules.md): funding the pool wakes each agent that was out of credits.
    """
    w = World(wallet=0, pool=1)
    del w.wallets["researcher"], w.wallets["reviewer"]
    tid = w.open("researcher", to=["reviewer"])
    assert_refused(w.send("researcher", topic=tid, to=["reviewer"]), R.CREDITS_EXHAUSTED)
    assert_refused(w.send("reviewer", title="Mine", to=["writer"]), R.CREDITS_EXHAUSTED)
    d = w.fund("human.alice", POOL, 100)
    assert woken(d) == {"researcher", "reviewer"} and w.pool == 100
    by_agent = {m.to[0]: m for m in notices(d, Notice.CREDITS_REFILLED)}
    assert by_agent["researcher"].topic == tid
    assert by_agent["reviewer"].topic is None  # no topic of its own paused: its direct conversation with the funder


def test_refill_without_a_paused_topic_speaks_in_the_direct_conversation():
    """Seed 000: "Once refilled, the agent alone is woken to resend what did not go through." """
    from ygg_server.core import direct_id

    w = World(wallet=0)
    assert_refused(w.send("researcher", to=["reviewer"]), R.CREDITS_EXHAUSTED)
    d = w.fund("human.alice", "researcher", 5)
    (msg,) = notices(d, Notice.CREDITS_REFILLED)
    assert msg.topic is None and msg.conversation == direct_id(w.ws, "human.alice", "researcher")
    assert d.conversation is not None and d.conversation.members == {"human.alice", "researcher"}


def test_funding_an_agent_that_is_not_out_wakes_nobody():
    """Seed 000: "Once refilled, the agent alone is woken to resend what did not go through." — nothing to resend."""
    w = World()
    d = w.fund("human.alice", "researcher", 5)
    assert d.refusal is None and d.routed == () and w.wallets["researcher"] == 1005


def test_an_agents_traffic_is_bounded_by_its_credits():
    """Seed 000: "Credits are the hard bound behind every guarantee: whatever an agent does, its traffic is finite." """
    w = World(wallet=10)
    tid = w.open("human.alice", title="Chatter", to=["researcher", "reviewer"])
    accepted = 0
    for i in range(50):
        d = w.send("researcher", f"idea {i}", topic=tid, type="inform", to=["reviewer"])
        accepted += d.refusal is None
    assert accepted == 10 and w.wallets["researcher"] == 0


def test_every_agent_out_of_credits_in_a_topic_waits_and_each_is_woken_once():
    """Seed 000: "Once refilled, the agent alone is woken to resend what did not go through."

    Core decision (docs/rules.md): a second agent running out in a topic already paused for credits
    is kept beside the first (`unfunded`; `paused_by` stays the first), and each is woken in that
    topic, once, when its own funds come.
    """
    w = World(wallet=1)
    tid = w.open("researcher", to=["reviewer"])  # researcher: 0 left
    w.send("reviewer", topic=tid, type="inform", to=["researcher"])  # reviewer: 0 left
    assert_refused(w.send("researcher", topic=tid, to=["reviewer"]), R.CREDITS_EXHAUSTED)
    assert_refused(w.send("reviewer", topic=tid, to=["researcher"]), R.CREDITS_EXHAUSTED)
    t = w.topic(tid)
    assert (t.status, t.pause, t.paused_by) == (TopicStatus.PAUSED, Pause.CREDITS, "researcher")
    assert t.unfunded == {"researcher": "wallet", "reviewer": "wallet"}
    d = w.fund("human.alice", "reviewer", 10)
    assert woken(d) == {"reviewer"}
    (msg,) = notices(d, Notice.CREDITS_REFILLED)
    assert msg.topic == tid
    t = w.topic(tid)
    assert t.status == TopicStatus.OPEN and t.unfunded == {"researcher": "wallet"}  # its resend goes through
    assert w.send("reviewer", topic=tid, to=["researcher"]).refusal is None
    d = w.fund("human.alice", "researcher", 10)
    (msg,) = notices(d, Notice.CREDITS_REFILLED)
    assert woken(d) == {"researcher"} and msg.topic == tid and w.topic(tid).unfunded == {}
    assert w.fund("human.alice", "researcher", 10).routed == ()  # refilled once: nothing more to wake


def test_refilling_the_pool_wakes_each_agent_waiting_in_a_topic_once():
    """Seed 000: "Once refilled, the agent alone is woken to resend what did not go through." """
    w = World(wallet=0, pool=2)
    del w.wallets["researcher"], w.wallets["reviewer"]
    tid = w.open("researcher", to=["reviewer"])
    w.send("reviewer", topic=tid, type="inform", to=["researcher"])
    assert_refused(w.send("researcher", topic=tid, to=["reviewer"]), R.CREDITS_EXHAUSTED)
    assert_refused(w.send("reviewer", topic=tid, to=["researcher"]), R.CREDITS_EXHAUSTED)
    d = w.fund("human.alice", POOL, 100)
    got = sorted((m.to, m.topic) for m in notices(d, Notice.CREDITS_REFILLED))
    assert got == [(("researcher",), tid), (("reviewer",), tid)]
    assert len({m.id for m in notices(d)}) == 2
    t = w.topic(tid)
    assert (t.status, t.paused_by, t.unfunded) == (TopicStatus.OPEN, None, {})


def test_a_topic_stopped_by_its_budget_resumes_when_the_budget_is_raised():
    """Seed 000: "`credits_exhausted`	The agent (or the topic's budget) is out of credits."

    Core decision (docs/rules.md): funding fills wallets and the pool, which a topic's budget does
    not draw on; the budget is raised with set_budget, and that wakes the agent it stopped.
    """
    w = World()
    tid = w.open("researcher", to=["reviewer"])
    w.topics[tid] = replace(w.topic(tid), budget=1)
    d = w.send("researcher", "x" * 1500, topic=tid, to=["reviewer"])
    assert_refused(d, R.CREDITS_EXHAUSTED)
    assert len(notices(d, Notice.FUNDING_REQUEST)) == 1 and ("broke", "researcher", w.ws) not in w.flags
    assert w.topic(tid).unfunded == {"researcher": "budget"}
    assert notices(w.send("researcher", "x" * 1500, topic=tid, to=["reviewer"]), Notice.FUNDING_REQUEST) == []
    d = w.fund("human.alice", "researcher", 10)
    assert woken(d) == set() and w.topic(tid).status == TopicStatus.PAUSED  # a wallet cannot pay past the budget
    d = w.set_budget(tid, 0)  # lowered: still stopped
    assert d.routed == () and w.topic(tid).status == TopicStatus.PAUSED
    d = w.set_budget(tid, 5)
    (msg,) = notices(d, Notice.CREDITS_REFILLED)
    assert woken(d) == {"researcher"} and msg.topic == tid
    t = w.topic(tid)
    assert (t.status, t.budget, t.unfunded) == (TopicStatus.OPEN, 5, {})
    assert w.send("researcher", "x" * 1500, topic=tid, to=["reviewer"]).refusal is None


def test_a_topic_stored_before_unfunded_still_wakes_its_agent():
    """Seed 000: "Once refilled, the agent alone is woken to resend what did not go through."

    A topic row stored before `unfunded` and `asked` existed loads, and its `paused_by` is woken.
    """
    import msgspec

    from ygg_server.core import Topic

    w = World(wallet=1)
    tid = w.open("researcher", to=["reviewer"])
    assert_refused(w.send("researcher", topic=tid, to=["reviewer"]), R.CREDITS_EXHAUSTED)
    row = msgspec.json.decode(msgspec.json.encode(w.topic(tid)))
    del row["unfunded"]
    for m in row["members"].values():
        m.pop("asked", None)  # (a member's fields at their defaults are not written: core.model, omit_defaults)
    old = msgspec.json.decode(msgspec.json.encode(row), type=Topic)
    assert old.unfunded == {} and old.paused_by == "researcher"
    w.topics[tid] = old
    d = w.fund("human.alice", "researcher", 10)
    (msg,) = notices(d, Notice.CREDITS_REFILLED)
    assert msg.topic == tid and w.topic(tid).status == TopicStatus.OPEN


def test_a_credits_pause_nobody_funds_does_not_hold_the_agents_topic_slots():
    """Seed 000: "`topic_limit` The agent already holds 3 topics it opened." and "its message is refused, its topic
    pauses, and the people who can fund it see a request" (issue 17: a credits pause nobody funded held the agent's
    slots forever). Core decision (docs/rules.md, "Credits"): a topic paused for funds holds no slot."""
    w = World(wallet=3)
    tids = [w.open("researcher", title=f"T{i}", type="inform", to=["reviewer"]) for i in range(3)]
    assert_refused(w.send("researcher", title="T3", type="inform", to=["reviewer"]), R.TOPIC_LIMIT)
    w.wallets["researcher"] = 0
    assert_refused(w.send("researcher", topic=tids[0], type="inform", to=["reviewer"]), R.CREDITS_EXHAUSTED)
    assert w.topic(tids[0]).status == TopicStatus.PAUSED
    w.wallets["researcher"] = 1
    d = w.send("researcher", title="T3", type="inform", to=["reviewer"])
    assert d.refusal is None, d.refusal  # the paused topic's slot is free
    assert_refused(w.send("researcher", title="T4", type="inform", to=["reviewer"]), R.TOPIC_LIMIT)
