"""Seed 003 §15: side conversations for tasks delegated from a direct conversation (docs/rules.md, "Side conversations")."""

from ygg_server.core.side import side_id

from .harness import World, assert_woken, notices


def dm_task():
    """alice asks researcher in their direct conversation; researcher delegates to reviewer (not in it)."""
    w = World()
    d = w.send("human.alice", "Please check the numbers", to=["researcher"], conversation="dm:researcher",
               title="Numbers")
    cid, tid = d.message.conversation, d.topics[0].id
    deleg = w.send("researcher", "reviewer, recompute table 2", to=["reviewer"], conversation=cid, topic=tid,
                   state="waiting", title=None)
    return w, cid, tid, deleg


def test_a_task_delegated_from_a_direct_conversation_runs_in_a_side_conversation():
    """Seed 003 §15: "For a task started inside a direct message, the back-and-forth is not allowed to spill into a
    conversation everyone sees. A separate side conversation is opened (an ordinary conversation record with its own
    channel and history, just not part of the main channel's membership)" """
    w, cid, tid, deleg = dm_task()
    assert deleg.refusal is None
    side = w.conversations[side_id(cid, tid)]
    assert deleg.message.conversation == side.id and deleg.message.topic != tid
    assert side.kind == "side" and side.origin == cid and side.origin_topic == tid and side.name == "Numbers"
    assert side.members == {"researcher", "reviewer", "human.alice"}
    assert w.conversations[cid].members == {"human.alice", "researcher"}  # the direct conversation did not grow
    assert_woken(deleg, "reviewer")
    # the back-and-forth stays on the side
    stid = deleg.message.topic
    q = w.send("reviewer", "which table 2, v1 or v2?", to=["researcher"], conversation=side.id, topic=stid,
               title=None)
    assert q.message.conversation == side.id and not notices(q, "side_result")
    # a second delegation from the same origin topic reuses the side conversation (a new topic there)
    again = w.send("researcher", "reviewer, also table 3", to=["reviewer"], conversation=cid, topic=tid, title=None)
    assert again.message.conversation == side.id and again.message.topic not in (stid, tid)


def test_only_the_final_result_comes_back_where_it_was_asked():
    """Seed 003 §15: "only the final result is sent back where it was asked for. This keeps a busy channel from
    turning into a stream of "still working" chatter every time someone delegates." """
    w, cid, tid, deleg = dm_task()
    side, stid = deleg.message.conversation, deleg.message.topic
    chatter = w.send("reviewer", "still working on it", to=["researcher"], conversation=side, topic=stid,
                     type="inform", title=None)
    assert not notices(chatter, "side_result")
    done = w.send("reviewer", "Table 2 sums to 42.", to=["researcher"], conversation=side, topic=stid,
                  type="response", in_reply_to=deleg.message.id, state="done", title=None)
    assert_woken(done, "researcher")
    back = notices(done, "side_result")
    assert len(back) == 1
    m = back[0]
    assert m.conversation == cid and m.topic == tid and m.to == ("human.alice",) and "Table 2 sums to 42." in m.text
    assert all(not x.wake for r in done.routed if r.message is m for x in r.deliveries)
    # nothing of the side conversation's chatter reached the direct conversation
    assert [x.text for x in w.messages if x.conversation == cid] == [
        "Please check the numbers", m.text]


def test_in_a_group_or_to_a_member_there_is_no_side_conversation():
    """Seed 003 §15: "For a task started inside a direct message" (Core decision: only an agent's request in a
    direct conversation to an agent not in it opens a side conversation; people's messages never do)."""
    w = World()
    d = w.send("human.alice", "hi", to=["researcher"], conversation="dm:researcher", title="Hi")
    cid, tid = d.message.conversation, d.topics[0].id
    mine = w.send("human.alice", "reviewer, join us", to=["reviewer"], conversation=cid, topic=tid)
    assert mine.message.conversation == cid  # a person adds someone: the party grows (seed 004)
    inside = w.send("researcher", "reviewer, you are here already", to=["reviewer"], conversation=cid, topic=tid)
    assert inside.message.conversation == cid
    g = w.send("researcher", "in General", to=["reviewer"], title="G")
    assert g.message.conversation == w.general.id


def test_a_side_conversations_counters_continue_its_origins():
    """Seed 003 §16: "the conversation is throttled until a human joins in again" (Core decision: each delegation
    carries the origin's turn counters into the side conversation, so a person writing in the direct conversation
    frees the side one too, and the side exchange stays within what the person's message bought)."""
    w, cid, tid, deleg = dm_task()
    w.max_hops, w.throttle = 10**6, (3, 3)
    side, stid = deleg.message.conversation, deleg.message.topic
    for i in range(4):
        w.send("reviewer", f"note {i}", to=["researcher"], conversation=side, topic=stid, type="request", title=None)
    d = w.send("reviewer", "more", to=["researcher"], conversation=side, topic=stid, type="request", title=None)
    assert not any(x.wake for x in d.routed[0].deliveries)  # throttled on the side
    w.send("human.alice", "any news?", to=["researcher"], conversation=cid, topic=tid)
    again = w.send("researcher", "reviewer, and table 4", to=["reviewer"], conversation=cid, topic=tid, title=None)
    assert again.message.conversation == side
    assert_woken(again, "reviewer")
    assert w.conversations[side].run == 1


def test_delegating_again_does_not_buy_the_side_conversation_more_hops():
    """Seed 004: "One of your messages buys a bounded number of NPC-to-NPC hops" (issue 17: each delegation copied
    the origin's counters into the side conversation afresh while the origin's never moved: one person's message
    bought 18 agent-to-agent wakes against a limit of 6).

    Core decision (docs/rules.md, "Parties"): the origin topic and its side conversation are one exchange; its hops
    follow the work into the side conversation and every delegation spends them."""
    w, cid, tid, deleg = dm_task()
    w.max_hops = 6
    wakes = 1 if any(x.wake for x in deleg.routed[0].deliveries) else 0
    for i in range(12):
        d = w.send("researcher", f"reviewer, table {i}", to=["reviewer"], conversation=cid, topic=tid, title=None)
        wakes += sum(1 for x in d.routed[0].deliveries if x.wake and x.recipient == "reviewer")
        side, stid = d.message.conversation, d.message.topic
        a = w.send("reviewer", f"done with {i}", to=["researcher"], conversation=side, topic=stid, type="response",
                   in_reply_to=stid, title=None, state="done")
        wakes += sum(1 for x in a.routed[0].deliveries if x.wake and x.recipient == "researcher")
        w.send("researcher", "thanks", to=["reviewer"], conversation=side, topic=stid, type="inform", title=None,
               state="done")  # the side topic closes: its opener's slot is free again
        assert w.topic(stid).status == "closed"
    assert wakes == 6
    w.send("human.alice", "carry on", to=["researcher"], conversation=cid, topic=tid)  # the person buys 6 more
    assert_woken(w.send("researcher", "reviewer, once more", to=["reviewer"], conversation=cid, topic=tid,
                        title=None), "reviewer")
