"""Seed 000, "Message types" and "Wakes": what wakes a recipient, and why the rest is context."""

import pytest

from ygg_server.core import SYSTEM, MessageType, Notice, RefusalReason as R, State, TopicStatus

from .harness import World, assert_context, assert_refused, assert_woken, delivery, notices, woken


@pytest.mark.parametrize(
    "mtype, wakes, reason",
    [
        ("request", True, None),
        ("inform", False, "context_inform"),
        ("response", False, "orphan_response"),  # no request to answer
    ],
)
def test_only_a_request_wakes(mtype, wakes, reason):
    """Seed 000: "Every message has a type. The type decides whether it can wake its recipient."

    and the table: "`request`	You need an answer or an action.	Yes, the only type that can."
    """
    w = World()
    tid = w.open("human.alice", title="Plan", to=["researcher"])
    d = w.send("researcher", topic=tid, type=mtype, to=["reviewer"])
    if wakes:
        assert_woken(d, "reviewer")
    else:
        assert_context(d, "reviewer", reason)


def test_inform_never_wakes():
    """Seed 000: "`inform`	Information that needs no reply: a status, a result, a "thanks".	Never. Delivered as context." """
    w = World()
    tid = w.open("researcher", to=["reviewer", "writer"])
    d = w.send("reviewer", topic=tid, type="inform", to=["researcher", "writer"])
    assert_context(d, "researcher", "context_inform")
    assert_context(d, "writer", "context_inform")
    assert woken(d) == set()


def test_a_response_wakes_the_requester_only_once():
    """Seed 000: "`response`	You answer the request you were woken for. Set `in_reply_to`.	Yes, the requester only, once."

    Core decision (docs/rules.md): the response's other recipients get it as context_inform.
    """
    w = World()
    d = w.send("researcher", to=["reviewer"], title="Review")
    tid, rid = d.topics[0].id, d.message.id
    d = w.send("reviewer", topic=tid, type="response", in_reply_to=rid, to=["researcher", "writer"])
    assert_woken(d, "researcher")
    assert_context(d, "writer", "context_inform")
    # "once": a second answer from the same recipient is kept as context
    d = w.send("reviewer", topic=tid, type="response", in_reply_to=rid, to=["researcher"])
    assert_context(d, "researcher", "orphan_response")


def test_each_recipient_answers_once():
    """Seed 000: "A request gets exactly one answer from each recipient." """
    w = World()
    d = w.send("researcher", to=["reviewer", "writer"], title="Two opinions")
    tid, rid = d.topics[0].id, d.message.id
    # (docs/rules.md, "Parties": the requester of a multi-recipient request wakes on the last answer)
    assert_context(w.send("reviewer", topic=tid, type="response", in_reply_to=rid), "researcher", "wake_coalesced")
    assert_woken(w.send("writer", topic=tid, type="response", in_reply_to=rid), "researcher")
    assert rid not in w.topic(tid).pending
    assert_context(w.send("writer", topic=tid, type="response", in_reply_to=rid), "researcher", "orphan_response")


@pytest.mark.parametrize("in_reply_to", [None, "m999", "opening-of-other-topic"])
def test_an_answer_to_no_request_is_orphaned(in_reply_to):
    """Seed 000: "A second answer, or an answer to a request that does not exist, is kept as context and wakes no one." """
    w = World()
    other = w.send("writer", to=["reviewer"], title="Elsewhere").message.id
    tid = w.open("researcher", to=["reviewer"])
    ref = other if in_reply_to == "opening-of-other-topic" else in_reply_to
    d = w.send("reviewer", topic=tid, type="response", in_reply_to=ref, to=["researcher"])
    assert_context(d, "researcher", "orphan_response")
    assert woken(d) == set()


def test_a_non_recipient_cannot_answer_a_request():
    """Seed 000: "`response`	You answer the request you were woken for." — only a recipient answers it."""
    w = World()
    d = w.send("researcher", to=["reviewer"], title="Review")
    tid, rid = d.topics[0].id, d.message.id
    w.send("researcher", topic=tid, type="inform", to=["writer"])  # writer joins the topic
    assert_context(w.send("writer", topic=tid, type="response", in_reply_to=rid, to=["researcher"]),
                   "researcher", "orphan_response")


@pytest.mark.parametrize("state", [None, "working", "waiting", "needs_human", "done"])
def test_a_person_always_wakes_the_agents_they_address(state):
    """Seed 000: "a message from a human (people always wake the agents they address);" """
    w = World()
    tid = w.open("researcher", to=["reviewer"])
    if state == "done":
        w.send("reviewer", topic=tid, type="inform", state="done", to=["researcher"])
    elif state == "needs_human":
        w.send("reviewer", topic=tid, type="inform", state="needs_human", to=["researcher"])
    elif state is not None:
        w.send("reviewer", topic=tid, type="inform", state=state, to=["researcher"])
    for mtype in ("request", "response"):
        assert_woken(w.send("human.alice", topic=tid, type=mtype, to=["reviewer"]), "reviewer")


def test_a_person_wakes_an_agent_whose_wake_is_pending():
    """Seed 000: "a message from a human (people always wake the agents they address);"

    Core decision (docs/rules.md): a person's request is never folded (wake_coalesced).
    """
    w = World()
    tid = w.open("researcher", to=["reviewer"])  # reviewer woken, has not answered
    assert_context(w.send("writer", topic=tid, to=["reviewer"]), "reviewer", "wake_coalesced")
    assert_woken(w.send("human.alice", topic=tid, to=["reviewer"]), "reviewer")


def test_a_persons_inform_does_not_wake():
    """Seed 000: "`inform` ... Never. Delivered as context." against "people always wake the agents they address".

    Core decision (docs/rules.md): the type wins; a person who wants an agent to act sends a request.
    """
    w = World()
    tid = w.open("researcher", to=["reviewer"])
    assert_context(w.send("human.alice", topic=tid, type="inform", to=["reviewer"]), "reviewer", "context_inform")


def test_people_not_addressed_see_it_as_observers():
    """Core decision (docs/rules.md): people in the conversation who were not addressed get context `observer`."""
    w = World(people=("alice", "bob"))
    d = w.send("researcher", to=["reviewer"], title="Review")
    assert_context(d, "human.alice", "observer")
    assert_context(d, "human.bob", "observer")
    d = w.send("human.bob", topic=d.topics[0].id, to=["reviewer"])
    assert_context(d, "human.alice", "observer")
    assert [x.recipient for x in d.routed[0].deliveries].count("human.bob") == 0  # never to the author


def test_agent_request_wakes_an_addressed_person():
    """Seed 000: "`request`	You need an answer or an action.	Yes, the only type that can." — people too."""
    w = World()
    tid = w.open("researcher", to=["human.alice"], state="needs_human")
    assert_woken(w.send("researcher", topic=tid, to=["@alice"]), "human.alice")


def test_further_requests_are_folded_into_a_pending_wake():
    """Seed 000: "If an agent already has an unanswered wake on a topic, further requests on that topic are folded into it instead of waking it again." """
    w = World()
    d = w.send("researcher", to=["reviewer"], title="Review")
    tid, first = d.topics[0].id, d.message.id
    d2 = w.send("writer", topic=tid, to=["reviewer"])
    assert_context(d2, "reviewer", "wake_coalesced")
    d3 = w.send("researcher", topic=tid, to=["reviewer"])
    assert_context(d3, "reviewer", "wake_coalesced")
    assert w.topic(tid).members["reviewer"].folded == 2
    # another topic is another wake
    assert_woken(w.send("writer", to=["reviewer"], title="Elsewhere"), "reviewer")
    # once everything is answered, the next request wakes again
    for rid, to in ((first, "researcher"), (d2.message.id, "writer"), (d3.message.id, "researcher")):
        w.send("reviewer", topic=tid, type="response", in_reply_to=rid, to=[to])
    assert not w.topic(tid).members["reviewer"].wake_pending
    assert_woken(w.send("researcher", topic=tid, to=["reviewer"]), "reviewer")


def test_resume_after_answering_a_wake_that_had_requests_folded_into_it():
    """Seed 000: "If an agent already has an unanswered wake on a topic, further requests on that topic are folded into it instead of waking it again."

    Core decision (docs/rules.md): the folded requests still need answers, so when the agent
    writes while it still owes one, it gets one `resume` notice (a wake), and that resume is
    itself the pending wake further requests fold into.
    """
    w = World()
    d = w.send("researcher", to=["reviewer"], title="Review")
    tid, first = d.topics[0].id, d.message.id
    w.send("writer", topic=tid, to=["reviewer"])  # folded
    d = w.send("reviewer", topic=tid, type="response", in_reply_to=first)
    resume = notices(d, Notice.RESUME)
    assert [m.to for m in resume] == [("reviewer",)] and resume[0].topic == tid
    assert "reviewer" in woken(d)
    assert w.topic(tid).members["reviewer"].wake_pending
    assert_context(w.send("researcher", topic=tid, to=["reviewer"]), "reviewer", "wake_coalesced")


def test_no_resume_when_nothing_is_owed_any_more():
    """Core decision (docs/rules.md): no `resume` when the folded requests were all answered."""
    w = World()
    d = w.send("researcher", to=["reviewer"], title="Review")
    tid, first = d.topics[0].id, d.message.id
    second = w.send("writer", topic=tid, to=["reviewer"]).message.id
    w.send("reviewer", topic=tid, type="response", in_reply_to=second, to=["writer"])
    d = w.send("reviewer", topic=tid, type="response", in_reply_to=first)
    assert notices(d, Notice.RESUME) == []


def test_everything_else_is_context():
    """Seed 000: "Everything else reaches the agent as context: it sees it next time it is woken, without being disturbed." """
    w = World()
    tid = w.open("researcher", to=["reviewer", "writer"])
    for mtype in ("inform", "response"):
        d = w.send("reviewer", topic=tid, type=mtype, to=["writer"])
        x = delivery(d, "writer")
        assert not x.wake and x.reason is not None


@pytest.mark.parametrize("who", ["researcher", "human.alice"])
def test_default_recipients_without_to(who):
    """Core decision (docs/rules.md): no `to` means the requester for an answer, else the topic's
    other participants, else the conversation's members (none in General)."""
    w = World()
    d = w.send("researcher", to=["reviewer", "writer"], title="Review")
    tid, rid = d.topics[0].id, d.message.id
    d = w.send("reviewer", topic=tid, type="response", in_reply_to=rid)
    assert d.message.to == ("researcher",)
    d = w.send(who, topic=tid, type="inform")
    assert set(d.message.to) == {"researcher", "reviewer", "writer"} - {who}
    d = w.send("researcher", title="Nobody in particular")
    assert d.refusal is None and d.message.to == ()


def test_addressing_oneself_is_dropped():
    """Core decision (docs/rules.md): the author is never among a message's recipients."""
    w = World()
    d = w.send("researcher", to=["researcher", "reviewer"], title="Me and you")
    assert d.message.to == ("reviewer",)


def test_a_malformed_message_is_an_inform():
    """Seed 000: "A malformed message is never a wake: it is downgraded to an inform." """
    w = World()
    tid = w.open("researcher", to=["reviewer"])
    for author in ("writer", "human.alice"):
        d = w.send(author, topic=tid, type="request", to=["reviewer"], malformed=True)
        assert d.message.type == MessageType.INFORM and d.message.malformed
        assert_context(d, "reviewer", "context_inform")
        assert d.message.id not in w.topic(tid).pending


def test_a_message_to_system_ygg_is_absorbed_and_paid_unless_it_answers_a_notice():
    """Seed 000: "A reply an agent sends to Agent'Ygg itself (system.ygg) is absorbed: not delivered, not charged."
    and "Every agent message costs credits from a wallet only a human refills."

    Core decision (docs/rules.md, "The bound"): only the single answer to a system notice that asked for one is
    free; anything else to system.ygg is absorbed (no deliveries) but costs like any other message.
    """
    w = World(wallet=10)
    tid = w.open("researcher", to=["reviewer"])
    before = w.wallets["reviewer"]
    d = w.send("reviewer", topic=tid, type="response", to=[SYSTEM], text="x" * 5000)
    assert d.refusal is None and d.absorbed
    assert d.routed[0].deliveries == () and d.message.cost == 5 and d.usage == 1
    assert d.message.to == (SYSTEM,)
    assert w.wallets["reviewer"] == before - 5
    poll = notices(w.send("researcher", topic=tid, type="inform", state="done", to=["reviewer"]),
                   Notice.CLOSURE_POLL)[0]
    before = w.wallets["reviewer"]
    d = w.send("reviewer", topic=tid, type="response", in_reply_to=poll.id, to=[SYSTEM], text="x" * 5000)
    assert d.absorbed and d.ledger == () and d.message.cost == 0 and d.usage == 0
    again = w.send("reviewer", topic=tid, type="response", in_reply_to=poll.id, to=[SYSTEM], text="again")
    assert again.absorbed and again.message.cost == 1  # a single answer: the second one is paid
    assert w.wallets["reviewer"] == before - 1
    d = w.send("reviewer", topic=tid, type="request", to=[SYSTEM], text="y" * 6000)
    assert_refused(d, R.CREDITS_EXHAUSTED)  # 4 left: unfunded, refused with its reason


def test_answering_a_closure_poll_with_done_counts():
    """Seed 000: "When some are done and others are not, the backend asks the others once if they are done too;"

    Core decision (docs/rules.md): the answer to system.ygg is absorbed, but its state counts.
    """
    w = World()
    tid = w.open("researcher", to=["reviewer"])
    d = w.send("researcher", topic=tid, type="inform", state="done", to=["reviewer"])
    poll = notices(d, Notice.CLOSURE_POLL)[0]
    d = w.send("reviewer", topic=tid, type="response", in_reply_to=poll.id, state="done")
    assert d.absorbed and d.message.to == (SYSTEM,)
    assert w.topic(tid).status == "closed"


@pytest.mark.parametrize("notice", [Notice.CLOSURE_POLL, Notice.NUDGE, Notice.RESUME, Notice.CREDITS_REFILLED])
def test_system_notices_wake(notice):
    """Seed 000: "a few system notices from Agent'Ygg: a closure poll, a nudge, a resume after one of the agent's topics closed, or "your credits were refilled"." """
    from ygg_server.core.rules import NUDGE_AFTER

    w = World(wallet=0)
    if notice == Notice.CREDITS_REFILLED:
        w.wallets["researcher"] = 1
        tid = w.open("researcher", to=["reviewer"])
        w.send("researcher", topic=tid, type="inform", to=["reviewer"])  # refused: out of credits
        d = w.fund("human.alice", "researcher", 10)
    else:
        for a in w.wallets:
            w.wallets[a] = 100
        if notice == Notice.CLOSURE_POLL:
            tid = w.open("researcher", to=["reviewer"])
            w.send("reviewer", topic=tid, type="response", in_reply_to=tid)  # its wake answered: the poll is not folded
            d = w.send("researcher", topic=tid, type="inform", state="done", to=["reviewer"])
        elif notice == Notice.NUDGE:
            tid = w.open("researcher", to=["reviewer"], state="waiting")
            w.tick(NUDGE_AFTER)
            (d,) = w.run_timers()
        else:
            tids = [w.open("researcher", title=f"T{i}", to=["reviewer"]) for i in range(3)]
            w.send("researcher", title="T3", to=["reviewer"])  # topic_limit
            w.send("reviewer", topic=tids[0], type="inform", state="done")
            d = w.send("researcher", topic=tids[0], type="inform", state="done")
    (msg,) = notices(d, notice)
    assert msg.author == SYSTEM
    target = "reviewer" if notice in (Notice.CLOSURE_POLL, Notice.NUDGE) else "researcher"
    assert msg.to == (target,) and target in woken(d)


def test_agents_state_is_carried_over_when_not_given():
    """Seed 000: "Every message also carries the sender's state on that topic:" — kept when omitted.

    Core decision (docs/rules.md): no state means the sender's last state there, else working.
    """
    w = World()
    tid = w.open("researcher", to=["reviewer"])
    assert w.state(tid, "researcher") == State.WORKING
    w.send("reviewer", topic=tid, type="inform", state="waiting", waiting_for=["researcher"])
    w.send("reviewer", topic=tid, type="inform")
    assert w.state(tid, "reviewer") == State.WAITING


def test_a_poll_folds_into_the_wake_the_same_decision_gives():
    """Seed 000: "If an agent already has an unanswered wake on a topic, further requests on that topic are folded into it instead of waking it again."

    A response that says done wakes its requester, and the requester is also due a closure poll:
    the poll reaches it as context (`wake_coalesced`), so the decision wakes it once.
    """
    w = World()
    tid = w.open("researcher", to=["reviewer"])
    d = w.send("reviewer", topic=tid, type="response", in_reply_to=tid, state="done")
    assert_woken(d, "researcher")
    (poll,) = notices(d, Notice.CLOSURE_POLL)
    assert poll.to == ("researcher",)
    wakes = [x for r in d.routed for x in r.deliveries if x.recipient == "researcher" and x.wake]
    assert len(wakes) == 1
    assert [(x.wake, x.reason) for r in d.routed if r.message is poll for x in r.deliveries] == [(False, "wake_coalesced")]
    m = w.topic(tid).members["researcher"]
    assert m.polled_at == w.now and m.wake_pending  # still asked, and the one wake it got is pending
    # its answer to that wake answers the poll too: state done closes the topic
    w.send("researcher", topic=tid, type="inform", state="done", to=["reviewer"])
    assert w.topic(tid).status == TopicStatus.CLOSED


def test_a_poll_wakes_an_agent_with_no_wake_pending():
    """Seed 000: "a few system notices from Agent'Ygg: a closure poll, a nudge, a resume after one of the agent's topics closed, or "your credits were refilled"." """
    w = World()
    tid = w.open("researcher", to=["reviewer", "writer"])
    w.send("writer", topic=tid, type="response", in_reply_to=tid)  # writer answered its wake
    d = w.send("reviewer", topic=tid, type="response", in_reply_to=tid, state="done")
    polls = {m.to[0]: m for m in notices(d, Notice.CLOSURE_POLL)}
    assert set(polls) == {"researcher", "writer"}
    assert [(x.wake, x.reason) for r in d.routed if r.message is polls["writer"] for x in r.deliveries] == [(True, None)]
    assert sum(1 for r in d.routed for x in r.deliveries if x.recipient == "researcher" and x.wake) == 1
