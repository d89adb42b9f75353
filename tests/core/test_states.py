"""Seed 000, "States": waiting and nudges, needs_human, done, closure polls, the one-hour auto-done."""

import pytest

from ygg_server.core import Notice, State, TopicStatus, next_due
from ygg_server.core.rules import AUTO_DONE_AFTER, HOUR, MAX_NUDGES, MINUTE, NUDGE_AFTER

from .harness import World, assert_context, assert_woken, notices, woken


def _timer_notices(w: World, kind: str) -> list:
    return [m for d in w.run_timers() for m in notices(d, kind)]


def test_waiting_nudges_the_silent_at_most_three_times():
    """Seed 000: "`waiting`	I wait on someone (`waiting_for` says who). If they stay silent, the backend nudges them, at most 3 times." """
    w = World()
    tid = w.open("researcher", to=["reviewer"], state="waiting", waiting_for=["reviewer"])
    assert w.topic(tid).members["researcher"].waiting_for == ("reviewer",)
    w.tick(NUDGE_AFTER - 1)
    assert _timer_notices(w, Notice.NUDGE) == []
    sent = []
    for _ in range(MAX_NUDGES + 3):
        w.tick(NUDGE_AFTER)
        sent += _timer_notices(w, Notice.NUDGE)
    assert MAX_NUDGES == 3 and len(sent) == MAX_NUDGES
    assert all(m.to == ("reviewer",) for m in sent) and len({m.id for m in sent}) == MAX_NUDGES
    assert next_due(w.topic(tid)) is None


def test_a_nudge_wakes_and_answering_stops_them():
    """Seed 000: "If they stay silent, the backend nudges them, at most 3 times." — only while silent."""
    w = World()
    tid = w.open("researcher", to=["reviewer"], state="waiting")
    w.tick(NUDGE_AFTER)
    (d,) = w.run_timers()
    assert woken(d) == {"reviewer"}
    w.send("reviewer", topic=tid, type="inform", to=["researcher"])  # no longer silent
    w.tick(5 * NUDGE_AFTER)
    assert _timer_notices(w, Notice.NUDGE) == []


def test_waiting_for_defaults_to_the_recipients():
    """Core decision (docs/rules.md): `waiting` without `waiting_for` waits on the message's recipients."""
    w = World()
    tid = w.open("researcher", to=["reviewer", "writer"], state="waiting")
    assert set(w.topic(tid).members["researcher"].waiting_for) == {"reviewer", "writer"}


def test_no_nudge_once_the_waiter_stops_waiting():
    """Seed 000: "`waiting`	I wait on someone (`waiting_for` says who)." — a nudge speaks for a waiter."""
    w = World()
    tid = w.open("researcher", to=["reviewer"], state="waiting")
    w.send("researcher", topic=tid, type="inform", state="working", to=["reviewer"])
    w.tick(NUDGE_AFTER)
    assert _timer_notices(w, Notice.NUDGE) == []


def test_needs_human_pauses_until_a_person_writes():
    """Seed 000: "`needs_human`	I need a person to decide. The topic pauses until a human steps in." """
    w = World()
    tid = w.open("researcher", to=["reviewer"])
    w.send("reviewer", topic=tid, type="inform", state="needs_human", to=["human.alice"])
    t = w.topic(tid)
    assert (t.status, t.pause) == (TopicStatus.PAUSED, "needs_human")
    # agents' messages reach agents as context while paused, but still reach the person
    assert_context(w.send("writer", topic=tid, to=["reviewer"]), "reviewer", "topic_paused")
    d = w.send("reviewer", topic=tid, to=["human.alice", "researcher"])
    assert_woken(d, "human.alice")
    assert_context(d, "researcher", "topic_paused")
    # a person steps in: the topic opens again and their message wakes
    d = w.send("human.alice", topic=tid, to=["reviewer"])
    assert_woken(d, "reviewer")
    assert (w.topic(tid).status, w.topic(tid).pause) == (TopicStatus.OPEN, None)
    assert_woken(w.send("writer", topic=tid, to=["researcher"]), "researcher")


def test_an_agent_opening_with_needs_human_opens_paused():
    """Seed 000: "`needs_human`	I need a person to decide. The topic pauses until a human steps in." """
    w = World()
    d = w.send("researcher", to=["reviewer", "human.alice"], state="needs_human", title="Decide")
    assert w.topic(d.topics[0].id).status == TopicStatus.PAUSED
    assert_context(d, "reviewer", "topic_paused")
    assert_woken(d, "human.alice")


def test_paused_topics_get_no_timers():
    """Core decision (docs/rules.md): a paused topic gets no nudges, no closure polls, no auto-done."""
    w = World()
    tid = w.open("researcher", to=["reviewer", "writer"], state="waiting")
    w.send("writer", topic=tid, type="inform", state="done")
    w.send("reviewer", topic=tid, type="inform", state="needs_human", to=["human.alice"])
    assert next_due(w.topic(tid)) is None
    for _ in range(10):
        w.tick(HOUR)
        assert all(d.routed == () for d in w.run_timers())
    assert w.topic(tid).status == TopicStatus.PAUSED


def test_some_done_polls_the_others_once():
    """Seed 000: "When some are done and others are not, the backend asks the others once if they are done too;" """
    w = World()
    tid = w.open("researcher", to=["reviewer", "writer"])
    d = w.send("reviewer", topic=tid, type="inform", state="done", to=["researcher"])
    polls = notices(d, Notice.CLOSURE_POLL)
    assert sorted(m.to for m in polls) == [("researcher",), ("writer",)]
    assert "researcher" in woken(d)
    # writer still holds the opening request's wake: its poll is folded into it (test_wakes.py)
    assert [(x.recipient, x.wake, x.reason) for r in d.routed if r.message.to == ("writer",) for x in r.deliveries] \
        == [("writer", False, "wake_coalesced")]
    # once: more messages in the topic poll nobody again
    d = w.send("human.alice", topic=tid, type="inform", to=["writer"])
    assert notices(d, Notice.CLOSURE_POLL) == []
    w.tick(10 * MINUTE)
    assert _timer_notices(w, Notice.CLOSURE_POLL) == []


def test_unanswered_poll_counts_done_after_an_hour_and_the_topic_closes():
    """Seed 000: "after an hour without an answer they are counted done, so a topic can never stay open forever." """
    w = World()
    tid = w.open("researcher", to=["reviewer", "writer"])
    w.send("reviewer", topic=tid, type="inform", state="done", to=["researcher"])
    w.tick(AUTO_DONE_AFTER - 1)
    w.run_timers()
    assert w.topic(tid).status == TopicStatus.OPEN
    w.tick(1)
    ds = w.run_timers()
    auto = [m for d in ds for m in notices(d, Notice.AUTO_DONE)]
    assert len(auto) == 2 and all(m.type == "inform" for m in auto)
    assert woken(ds[0]) == set()
    assert w.topic(tid).status == TopicStatus.CLOSED
    assert AUTO_DONE_AFTER == HOUR


def test_answering_a_poll_with_any_message_then_quiet_is_polled_again():
    """Seed 000: "after an hour without an answer they are counted done, so a topic can never stay open forever."

    Core decision (docs/rules.md): any message from the polled participant answers the poll; if it
    then stays quiet for an hour while others are done, it is polled again (and an hour after that,
    counted done).
    """
    w = World()
    tid = w.open("researcher", to=["reviewer"])
    w.send("reviewer", topic=tid, type="inform", state="done", to=["researcher"])
    w.tick(30 * MINUTE)
    w.send("researcher", topic=tid, type="inform", text="still checking", to=["reviewer"])
    assert w.topic(tid).members["researcher"].polled_at is None
    w.tick(HOUR - 1)
    assert _timer_notices(w, Notice.CLOSURE_POLL) == []
    w.tick(1)
    assert [m.to for m in _timer_notices(w, Notice.CLOSURE_POLL)] == [("researcher",)]
    w.tick(HOUR)
    w.run_timers()
    assert w.topic(tid).status == TopicStatus.CLOSED


def test_next_due_matches_due():
    """Core decision (docs/rules.md): `next_due(topic)` is when `due` next has something to do."""
    w = World()
    tid = w.open("researcher", to=["reviewer"], state="waiting")
    assert next_due(w.topic(tid)) == w.now + NUDGE_AFTER
    w.tick(NUDGE_AFTER - 1)
    assert all(d.topics == () for d in w.run_timers())
    w.tick(1)
    assert any(d.topics for d in w.run_timers())


@pytest.mark.parametrize("mtype", ["request", "response"])
def test_a_done_participant_is_shielded_from_agents(mtype):
    """Seed 000: "A participant who is done is shielded: no agent can wake it again on that topic. A human can." """
    w = World()
    d = w.send("researcher", to=["reviewer", "writer"], title="Review")
    tid, rid = d.topics[0].id, d.message.id
    w.send("reviewer", topic=tid, type="response", in_reply_to=rid, state="done")
    assert w.state(tid, "reviewer") == State.DONE
    if mtype == "response":
        rid = w.send("reviewer", topic=tid, type="request", to=["writer"], state="done").message.id
        d = w.send("writer", topic=tid, type="response", in_reply_to=rid, to=["reviewer"])
    else:
        d = w.send("writer", topic=tid, type="request", to=["reviewer"])
    assert_context(d, "reviewer", "recipient_done")
    assert_woken(w.send("human.alice", topic=tid, to=["reviewer"]), "reviewer")


def test_done_is_per_topic():
    """Seed 000: "A participant who is done is shielded: no agent can wake it again on that topic." """
    w = World()
    tid = w.open("researcher", to=["reviewer"])
    w.send("reviewer", topic=tid, type="inform", state="done")
    assert_woken(w.send("writer", to=["reviewer"], title="Another topic"), "reviewer")


def test_a_participant_is_polled_once_per_round_whoever_writes():
    """Seed 000: "When some are done and others are not, the backend asks the others once if they are done too;"

    Core decision (docs/rules.md): answering the poll does not make a participant pollable again by
    the next message (a person's included); the round ends when a person writes and nobody is done (agents
    flipping done and working again do not end it: that re-polled the same participants without bound).
    """
    w = World()
    tid = w.open("researcher", to=["reviewer"])
    d = w.send("reviewer", topic=tid, type="response", in_reply_to=tid, state="done")
    assert [m.to for m in notices(d, Notice.CLOSURE_POLL)] == [("researcher",)]
    w.send("researcher", topic=tid, type="inform", text="still checking", to=["reviewer"])
    assert w.topic(tid).members["researcher"].polled_at is None  # the poll is answered
    d = w.send("human.alice", topic=tid, type="request", text="how far are you?", to=["researcher"])
    assert notices(d, Notice.CLOSURE_POLL) == [] and woken(d) == {"researcher"}
    d = w.send("researcher", topic=tid, type="response", in_reply_to=d.routed[0].message.id, to=["human.alice"])
    assert [m.to for m in notices(d, Notice.CLOSURE_POLL)] == [("human.alice",)]  # alice: never asked yet
    d = w.send("human.alice", topic=tid, type="inform", text="ok", to=["researcher"])
    assert notices(d, Notice.CLOSURE_POLL) == []
    # nobody is done any more (the reviewer flips to working), then done again: still the same round
    d = w.send("human.alice", topic=tid, type="request", text="reviewer, one more look", to=["reviewer"])
    assert_woken(d, "reviewer")
    w.send("reviewer", topic=tid, type="response", in_reply_to=d.routed[0].message.id, state="working")
    d = w.send("reviewer", topic=tid, type="inform", state="done", to=["researcher"])
    assert notices(d, Notice.CLOSURE_POLL) == []
    # a new round: a person writes while nobody is done, then someone is done again
    w.send("reviewer", topic=tid, type="inform", state="working", to=["researcher"])
    w.send("human.alice", topic=tid, type="inform", text="carry on", to=["reviewer"])
    assert not any(m.asked for m in w.topic(tid).members.values())
    d = w.send("reviewer", topic=tid, type="inform", state="done", to=["researcher"])
    assert sorted(m.to for m in notices(d, Notice.CLOSURE_POLL)) == [("human.alice",), ("researcher",)]
