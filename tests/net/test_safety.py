"""The safety promise on loopback, tried from outside by scripted adversarial agents (issue 17; docs/rules.md,
"The bound"): each hole the issue found, over the socket, on every backend."""

import pytest

from ygg_server.ops import admin

from .conftest import drain_acked

pytestmark = pytest.mark.backends("sqlite", "process", "postgres")


def _base(ws: str, **kw) -> dict:
    return {"workspace": ws, "conversation": "general", **kw}


async def test_messages_to_system_ygg_cost_credits_unless_they_answer_a_notice(team):
    """Seed 000: "A reply an agent sends to Agent'Ygg itself (system.ygg) is absorbed: not delivered, not
    charged." and "Every agent message costs credits from a wallet only a human refills."

    Before: every message whose only recipient was system.ygg was free, reply or not (31 of 31 accepted at
    cost 0 from an agent with no credits, one of them opening a topic)."""
    key = team.admin(admin.add_agent, "chatty", "alice")["api_key"]
    team.admin(admin.fund, "chatty", 3)
    chatty = await team.client(api_key=key)
    opened = await chatty.send(**_base(team.ws, topic="new", title="To nobody", type="inform", to=["system.ygg"],
                                       text="x" * 1500))
    assert opened["op"] == "sent" and opened["message"]["cost"] == 2 and opened["deliveries"] == [], opened
    tid = opened["message"]["topic"]
    r = await chatty.send(**_base(team.ws, topic=tid, type="request", to=["system.ygg"], text="y"))
    assert r["op"] == "sent" and r["message"]["cost"] == 1 and r["deliveries"] == [], r
    r = await chatty.send(**_base(team.ws, topic=tid, type="response", to=["system.ygg"], text="z"))
    assert r["op"] == "refused" and r["reason"] == "credits_exhausted", r


async def test_the_answer_to_a_closure_poll_is_free_once(team):
    """Seed 000: "When some are done and others are not, the backend asks the others once if they are done too"
    and its reply to system.ygg is "not charged": one answer per poll; a second one costs."""
    researcher = await team.client(api_key=team.keys["researcher"])
    reviewer = await team.client(api_key=team.keys["reviewer"])
    opened = await researcher.send(**_base(team.ws, topic="new", title="Review", type="inform", to=["reviewer"],
                                           text="for your review"))
    tid = opened["message"]["topic"]
    await researcher.send(**_base(team.ws, topic=tid, type="inform", state="done", to=["reviewer"], text="done"))
    got = await drain_acked(reviewer)
    polls = [d for d in got if d["message"].get("notice") == "closure_poll"]
    assert len(polls) == 1, got
    pid = polls[0]["message"]["id"]
    first = await reviewer.send(**_base(team.ws, topic=tid, type="response", in_reply_to=pid, state="working",
                                        text="not yet"))
    assert first["op"] == "sent" and first["message"]["cost"] == 0 and first["deliveries"] == [], first
    second = await reviewer.send(**_base(team.ws, topic=tid, type="response", in_reply_to=pid, state="working",
                                         to=["system.ygg"], text="still not"))
    assert second["op"] == "sent" and second["message"]["cost"] == 1 and second["deliveries"] == [], second


async def test_state_flips_do_not_poll_the_same_participants_again(team):
    """Seed 000: "the backend asks the others once if they are done too". Before: "done" polled the others,
    the next "working" ended the round and forgot who was asked, so the next "done" polled them again: a
    population flipping done/working never went quiet."""
    researcher = await team.client(api_key=team.keys["researcher"])
    reviewer = await team.client(api_key=team.keys["reviewer"])
    opened = await researcher.send(**_base(team.ws, topic="new", title="Flip", type="inform", to=["reviewer"],
                                           text="working beside you"))
    tid = opened["message"]["topic"]
    polls = 0
    for i in range(6):
        for state in ("done", "working"):
            r = await researcher.send(**_base(team.ws, topic=tid, type="inform", state=state, to=["reviewer"],
                                              text=f"{state} {i}"))
            assert r["op"] == "sent" and r["message"]["cost"] >= 1, r  # every flip is paid
        for d in await drain_acked(reviewer, 0.15):
            if d["message"].get("notice") == "closure_poll":
                polls += 1
                r = await reviewer.send(**_base(team.ws, topic=tid, type="response", in_reply_to=d["message"]["id"],
                                                state="working", text="not done"))
                assert r["op"] == "sent" and r["message"]["cost"] == 0, r
    assert polls == 1


def _woke(reply: dict, who: str | None = None) -> int:
    return sum(1 for x in reply["deliveries"] if x["wake"] and (who is None or x["to"] == who))


async def test_a_persons_message_buys_hops_for_its_topic_only(team):
    """Seed 004: "One of your messages buys a bounded number of NPC-to-NPC hops — six by default. When the limit
    ends an exchange, the transcript says so rather than going quiet."

    Before: the hop limit was counted per conversation and any person's message anywhere in it reset it: two
    tasks in General shared one budget, and "anyone for lunch?" in another topic gave a runaway exchange 6 more."""
    alice = await team.person("alice")
    agents = {n: await team.client(api_key=team.keys[n]) for n in ("researcher", "reviewer")}
    ids = {n: (await c.request("whoami"))["id"] for n, c in agents.items()}
    topics = []
    for title in ("Task one", "Task two"):
        r = await alice.send(**_base(team.ws, topic="new", title=title, type="inform", to=["researcher"],
                                     text=title))
        topics.append(r["message"]["topic"])
    one, two = topics

    async def exchange(tid: str, n: int) -> list[dict]:
        out = []
        for i in range(n):
            author, other = ("researcher", "reviewer") if i % 2 == 0 else ("reviewer", "researcher")
            r = await agents[author].send(**_base(team.ws, topic=tid, type="request", to=[other],
                                                  text=f"{tid} step {i}"))
            assert r["op"] == "sent", r
            out.append(r)
        return out

    first = await exchange(one, 8)
    assert [_woke(r, ids[o]) for r, o in zip(first, ["reviewer", "researcher"] * 4)] == [1] * 6 + [0] * 2
    assert {x["reason"] for x in first[6]["deliveries"] if not x["wake"] and x["to"] in ids.values()} \
        == {"hop_limit"}
    assert sum(_woke(r) for r in await exchange(two, 6)) == 6  # the other task has its own six
    await alice.send(**_base(team.ws, topic=two, type="inform", to=["reviewer"], text="anyone for lunch?"))
    assert sum(_woke(r, ids["reviewer"]) + _woke(r, ids["researcher"]) for r in await exchange(one, 2)) == 0
    page = await alice.request("history", workspace=team.ws, conversation="general", topic=one)
    said = [m for m in page["messages"] if m.get("notice") == "hop_limit"]
    assert len(said) == 1, page  # the transcript says so, once
    await alice.send(**_base(team.ws, topic=one, type="inform", to=["researcher"], text="go on"))
    assert _woke((await exchange(one, 1))[0], ids["reviewer"]) == 1


async def test_delegating_again_spends_the_hops_of_the_persons_message(team):
    """Seed 004: "One of your messages buys a bounded number of NPC-to-NPC hops" and seed 003 §15: "A separate
    side conversation is opened". Before: each delegation from a direct conversation copied its counters into
    the side conversation afresh: one person's message bought 18 agent-to-agent wakes against a limit of 6."""
    alice = await team.person("alice")
    researcher = await team.client(api_key=team.keys["researcher"])
    reviewer = await team.client(api_key=team.keys["reviewer"])
    r = await alice.send(workspace=team.ws, conversation="dm:researcher", topic="new", title="Numbers",
                         type="inform", to=["researcher"], text="please check the numbers")
    cid, tid = r["message"]["conversation"], r["message"]["topic"]
    wakes = 0
    for i in range(10):
        d = await researcher.send(workspace=team.ws, conversation=cid, topic=tid, type="request", to=["reviewer"],
                                  text=f"reviewer, table {i}")
        assert d["op"] == "sent" and d["message"]["conversation"] != cid, d  # on the side
        wakes += _woke(d)
        side, stid = d["message"]["conversation"], d["message"]["topic"]
        a = await reviewer.send(workspace=team.ws, conversation=side, topic=stid, type="response", in_reply_to=stid,
                                state="done", text=f"table {i} checked")
        assert a["op"] == "sent", a
        wakes += sum(1 for x in a["deliveries"] if x["wake"] and not x["to"].startswith("human."))
        c = await researcher.send(workspace=team.ws, conversation=side, topic=stid, type="inform", state="done",
                                  to=["reviewer"], text="thanks")
        assert c["op"] == "sent", c
    assert wakes == 6


async def test_an_agents_wallet_is_its_cap_unless_an_admin_lets_it_draw_on_the_pool(team):
    """Seed 000: "Credits come from the agent's own wallet, or from the workspace pool if it has none."
    Before: funded 1 credit, an agent spent 3 more from the pool, and no funding request was raised."""
    key = team.admin(admin.add_agent, "thrifty", "alice")["api_key"]
    team.admin(admin.fund, "thrifty", 1)
    team.admin(admin.fund, None, 10, pool_ws=team.ws)
    thrifty = await team.client(api_key=key)
    alice = await team.person("alice")
    first = await thrifty.send(**_base(team.ws, topic="new", title="Spend", type="inform", to=["@alice"], text="a"))
    assert first["op"] == "sent", first
    tid = first["message"]["topic"]
    r = await thrifty.send(**_base(team.ws, topic=tid, type="inform", to=["@alice"], text="b"))
    assert r["op"] == "refused" and r["reason"] == "credits_exhausted" and "wallet 0, pool 10" in r["detail"], r
    got = await drain_acked(alice)
    assert any(d["message"].get("notice") == "funding_request" for d in got), got  # its funders were asked
    me = (await thrifty.request("whoami"))["id"]
    s = await alice.request("set_setting", workspace=team.ws, key="credits.poolDraw", value=[me])
    assert s["op"] == "setting_set" or s.get("value") == [me], s
    r = await thrifty.send(**_base(team.ws, topic=tid, type="inform", to=["@alice"], text="c"))
    assert r["op"] == "sent" and r["message"]["cost"] == 1, r


async def test_a_credits_pause_nobody_funds_frees_the_agents_topic_slot(team):
    """Seed 000: "`topic_limit` The agent already holds 3 topics it opened." Before: a topic paused for credits
    that nobody funded held one of its opener's three slots forever."""
    key = team.admin(admin.add_agent, "opener", "alice")["api_key"]
    team.admin(admin.fund, "opener", 3, ws_ref=team.ws)
    opener = await team.client(api_key=key)
    tids = []
    for i in range(3):
        r = await opener.send(**_base(team.ws, topic="new", title=f"T{i}", type="inform", to=["@alice"], text="x"))
        assert r["op"] == "sent", r
        tids.append(r["message"]["topic"])
    r = await opener.send(**_base(team.ws, topic="new", title="T3", type="inform", to=["@alice"], text="x"))
    assert r["reason"] == "topic_limit", r
    r = await opener.send(**_base(team.ws, topic=tids[0], type="inform", to=["@alice"], text="y"))
    assert r["reason"] == "credits_exhausted", r  # T0 pauses for credits
    r = await opener.send(**_base(team.ws, topic="new", title="T3", type="inform", to=["@alice"], text="x"))
    assert r["reason"] == "credits_exhausted", r  # past the topic limit now: only its credits stop it


@pytest.mark.backends("sqlite", "postgres")  # (the store matters; the process backend adds nothing)
async def test_out_of_credits_in_one_workspace_asks_each_workspaces_own_funders(team):
    """Seed 000: "Workspaces are isolated from each other." and "its message is refused, its topic pauses, and
    the people who can fund it see a request". Before: the `broke` flag was one per agent, so an agent broke
    in one workspace raised no funding request in another (whose people so learned of the first), and a
    funding in either cleared it for both."""
    from tests.backends import PW

    other = team.admin(admin.add_workspace, "other", "alice")["id"]
    team.admin(admin.add_person, "carol", PW)
    team.admin(admin.add_member, other, "carol", "admin")
    key = team.admin(admin.add_agent, "roamer", "alice")["api_key"]  # in both workspaces, no credits in either
    roamer = await team.client(api_key=key)
    alice, carol = await team.person("alice"), await team.person("carol")

    async def spend(ws: str) -> list[str]:
        r = await roamer.send(workspace=ws, conversation="general", topic="new", title="Spend", type="inform",
                              to=["@alice"], text="x")
        assert r["op"] == "refused" and r["reason"] == "credits_exhausted", r
        return [d["message"]["workspace"] for c in (alice, carol) for d in await drain_acked(c, 0.2)
                if d["message"].get("notice") == "funding_request"]

    assert await spend(team.ws) == [team.ws]  # alice, in team
    assert sorted(await spend(other)) == [other, other]  # alice and carol, in other: its own request
    f = await carol.request("fund", workspace=other, agent="roamer", amount=1)
    assert f["op"] == "funded", f
    await drain_acked(roamer, 0.2)
    assert await spend(team.ws) == []  # team's people were asked already: the funding in other cleared nothing here


@pytest.mark.backends("sqlite", "postgres")  # (the store matters; the process backend adds nothing)
async def test_agents_opening_topics_to_delegate_buy_themselves_no_hops(team):
    """Seed 004: "One of your messages buys a bounded number of NPC-to-NPC hops". docs/rules.md: agents opening
    topics buy themselves no hops. Before: an agent's new topic in its direct conversation with a person, delegated
    to another agent, opened a side conversation that copied the direct conversation's counters, which its work
    never advanced: each new topic bought the agents six more wakes of each other, with no person writing."""
    researcher = await team.client(api_key=team.keys["researcher"])
    reviewer = await team.client(api_key=team.keys["reviewer"])
    wakes, sides = 0, set()
    for i in range(3):
        d = await researcher.send(workspace=team.ws, conversation="dm:alice", topic="new", title=f"Chore {i}",
                                  type="request", to=["reviewer"], text=f"reviewer, chore {i}")
        assert d["op"] == "sent" and d["message"]["conversation"] not in sides, d  # a side conversation each
        sides.add(d["message"]["conversation"])
        wakes += _woke(d)
        side, stid = d["message"]["conversation"], d["message"]["topic"]
        for j in range(3):
            a = await reviewer.send(workspace=team.ws, conversation=side, topic=stid, type="request",
                                    to=["researcher"], text=f"chore {i}: which part {j}?")
            b = await researcher.send(workspace=team.ws, conversation=side, topic=stid, type="request",
                                      to=["reviewer"], text=f"chore {i}: part {j}")
            assert a["op"] == b["op"] == "sent", (a, b)
            wakes += _woke(a) + _woke(b)
    assert wakes <= 6, wakes


@pytest.mark.backends("sqlite", "postgres")  # (the store matters; the process backend adds nothing)
async def test_what_an_agent_spends_in_one_workspace_is_seen_in_no_other(team):
    """Seed 000: "a workspace is a team's space: its people, its agents, its conversations and its credits.
    Workspaces are isolated from each other." Before: one wallet spanned every workspace, and a member of one
    watched an agent's balance fall because of messages in a workspace she could not see."""
    other = team.admin(admin.add_workspace, "other", "alice")["id"]
    key = team.admin(admin.add_agent, "roamer", "alice")["api_key"]  # in team (bob's) and in other (not bob's)
    team.admin(admin.fund, "roamer", 5, ws_ref=other)
    team.admin(admin.fund, "roamer", 7, ws_ref=team.ws)
    bob, roamer = await team.person("bob"), await team.client(api_key=key)
    me = (await roamer.request("whoami"))["id"]
    assert (await bob.request("subscribe", workspace=team.ws))["op"] == "subscribed"
    watcher = await team.person("alice")  # (follows other: the event is sent, to its people only)
    assert (await watcher.request("subscribe", workspace=other))["op"] == "subscribed"
    r = await roamer.send(workspace=other, conversation="general", topic="new", title="Elsewhere", type="inform",
                          to=["@alice"], text="spent where bob is not")
    assert r["op"] == "sent" and r["message"]["cost"] == 1, r
    seen = await watcher.next_event(timeout=5)
    while seen.get("kind") != "balance":
        seen = await watcher.next_event(timeout=5)
    assert seen["workspace"] == other and seen["balance"] == 4, seen
    assert [e for e in bob.pending_events() if e.get("kind") in ("balance", "topic", "message")] == []
    assert (await bob.call("balances", workspace=team.ws))["agents"][me] == 7, "nothing moved in team"
