"""Seed 000, "Conversations and topics": topics, titles, the topic limit, closing."""

import pytest

from ygg_server.core import Notice, RefusalReason as R, TopicStatus

from .harness import World, assert_context, assert_refused, notices, woken


@pytest.mark.parametrize("topic", [None, ""])
@pytest.mark.parametrize("author", ["researcher", "human.alice"])
def test_a_message_must_name_its_topic(author, topic):
    """Seed 000: "Every message names its topic: the one it continues, or new to open one."

    and the refusal table: "`topic_required`	The message named no topic."
    """
    w = World()
    assert_refused(w.send(author, topic=topic, to=["reviewer"]), R.TOPIC_REQUIRED)


def test_new_opens_a_topic_and_its_id_continues_it():
    """Seed 000: "Every message names its topic: the one it continues, or new to open one."

    Core decision (docs/rules.md): a topic's id is the id of the message that opened it.
    """
    w = World()
    d = w.send("researcher", to=["reviewer"], title="Review the auth patch")
    assert d.refusal is None
    tid = d.topics[0].id
    assert tid == d.message.id and d.message.topic == tid
    t = w.topic(tid)
    assert (t.opener, t.title, t.status) == ("researcher", "Review the auth patch", TopicStatus.OPEN)
    d2 = w.send("reviewer", topic=tid, title=None, type="inform", to=["researcher"])
    assert d2.refusal is None and d2.message.topic == tid and d2.topics[0].id == tid


def test_an_unknown_topic_id_is_refused():
    """Core decision (docs/rules.md): a topic id that is not a topic of this conversation: unknown_topic."""
    w = World()
    assert_refused(w.send("researcher", topic="no-such-topic", to=["reviewer"]), R.UNKNOWN_TOPIC)


@pytest.mark.parametrize(
    "opener, title, refused",
    [
        ("researcher", None, True),  # an agent opening without a title
        ("researcher", "   ", True),  # blank is no title
        ("researcher", "Review the auth patch", False),
        ("human.alice", None, False),  # a person may open untitled
        ("human.alice", "Plan the release", False),
    ],
)
def test_title_required_when_opening(opener, title, refused):
    """Seed 000: "The first agent to write in a topic gives it a title. Untitled work is refused."

    and the refusal table: "`title_required`	It opened a topic, or wrote first in an untitled one, without a title."
    """
    w = World()
    d = w.send(opener, title=title, to=["reviewer"])
    if refused:
        assert_refused(d, R.TITLE_REQUIRED)
    else:
        assert d.refusal is None
        assert d.topics[0].title == (title.strip() if title else None)


def test_first_agent_in_an_untitled_topic_gives_it_a_title():
    """Seed 000: "The first agent to write in a topic gives it a title. Untitled work is refused."

    A person opened the topic without a title: the first agent to write there must give one.
    """
    w = World()
    tid = w.open("human.alice", title=None, to=["researcher"])
    assert w.topic(tid).title is None
    assert_refused(w.send("researcher", topic=tid, title=None, type="inform", to=["human.alice"]), R.TITLE_REQUIRED)
    d = w.send("researcher", topic=tid, title="Summarise the sources", type="inform", to=["human.alice"])
    assert d.refusal is None and w.topic(tid).title == "Summarise the sources"
    # titled now: later agents need not repeat it, and cannot rename it
    d = w.send("reviewer", topic=tid, title=None, type="inform", to=["researcher"])
    assert d.refusal is None
    w.send("writer", topic=tid, title="Something else", type="inform", to=["researcher"])
    assert w.topic(tid).title == "Summarise the sources"


def test_a_person_may_keep_writing_untitled():
    """Core decision (docs/rules.md): "Untitled work is refused" binds agents; a person may write untitled."""
    w = World()
    tid = w.open("human.alice", title=None, to=["researcher"])
    assert w.send("human.alice", topic=tid, title=None, to=["researcher"]).refusal is None


def test_topic_limit_of_three_opened_topics():
    """Seed 000: "An agent may hold at most 3 topics it opened at a time."

    and the refusal table: "`topic_limit`	The agent already holds 3 topics it opened."
    """
    w = World()
    for i in range(3):
        w.open("researcher", title=f"T{i}", to=["reviewer"])
    assert_refused(w.send("researcher", title="T3", to=["reviewer"]), R.TOPIC_LIMIT)


def test_taking_part_in_other_topics_is_unlimited():
    """Seed 000: "Taking part in other topics is unlimited, and finishing a topic frees the slot at once." """
    w = World()
    for i in range(3):
        w.open("researcher", title=f"T{i}", to=["reviewer"])
    others = [w.open("human.alice", title=f"Other {i}", to=["researcher"]) for i in range(5)]
    others += [w.open("writer", title=f"Writer {i}", to=["researcher"]) for i in range(3)]
    for tid in others:
        assert w.send("researcher", topic=tid, type="inform", to=["human.alice"]).refusal is None


def test_a_person_has_no_topic_limit():
    """Core decision (docs/rules.md): the limit of 3 opened topics is an agent's; people open freely."""
    w = World()
    for i in range(6):
        w.open("human.alice", title=f"T{i}", to=["researcher"])


def test_finishing_a_topic_frees_the_slot_at_once_and_resumes_the_refused_agent():
    """Seed 000: "Taking part in other topics is unlimited, and finishing a topic frees the slot at once."

    and, among the wakes: "a resume after one of the agent's topics closed".
    Core decision (docs/rules.md): the `resume` goes to an agent that was refused topic_limit,
    once, when one of its topics closes.
    """
    w = World()
    tids = [w.open("researcher", title=f"T{i}", to=["reviewer"]) for i in range(3)]
    assert_refused(w.send("researcher", title="T3", to=["reviewer"]), R.TOPIC_LIMIT)
    w.send("reviewer", topic=tids[0], type="inform", state="done", to=["researcher"])
    d = w.send("researcher", topic=tids[0], type="inform", state="done", to=["reviewer"])
    assert w.topic(tids[0]).status == TopicStatus.CLOSED
    resume = notices(d, Notice.RESUME)
    assert [m.to for m in resume] == [("researcher",)] and resume[0].topic is None
    assert "researcher" in woken(d)
    assert w.send("researcher", title="T3", to=["reviewer"]).refusal is None  # the slot is free at once
    # the resume is sent once: closing another topic does not repeat it
    w.send("reviewer", topic=tids[1], type="inform", state="done", to=["researcher"])
    d = w.send("researcher", topic=tids[1], type="inform", state="done", to=["reviewer"])
    assert notices(d, Notice.RESUME) == []


def test_no_resume_when_the_agent_was_never_refused():
    """Core decision (docs/rules.md): closing a topic sends `resume` only to an agent refused topic_limit."""
    w = World()
    tid = w.open("researcher", to=["reviewer"])
    w.send("reviewer", topic=tid, type="inform", state="done", to=["researcher"])
    d = w.send("researcher", topic=tid, type="inform", state="done", to=["reviewer"])
    assert w.topic(tid).status == TopicStatus.CLOSED and notices(d, Notice.RESUME) == []


def test_topic_closes_when_everyone_is_done():
    """Seed 000: "When every participant is done, the topic closes." """
    w = World()
    tid = w.open("researcher", to=["reviewer", "writer"])
    w.send("reviewer", topic=tid, type="inform", state="done", to=["researcher"])
    w.send("writer", topic=tid, type="inform", state="done", to=["researcher"])
    assert w.topic(tid).status == TopicStatus.OPEN
    w.send("researcher", topic=tid, type="inform", state="done", to=["reviewer"])
    t = w.topic(tid)
    assert t.status == TopicStatus.CLOSED and t.closed_at == w.now and t.pending == {}


def test_the_message_that_closes_a_topic_wakes_nobody():
    """Seed 000: "A closed topic is archived and nothing in it can wake anyone again."

    Core decision (docs/rules.md): the message that closes a topic is delivered as context
    (recipient_done) to everyone, even a request, even from a person.
    """
    w = World()
    tid = w.open("human.alice", title="Plan", to=["researcher"])
    w.send("researcher", topic=tid, type="response", state="done", to=["human.alice"])
    d = w.send("human.alice", topic=tid, type="request", state="done", to=["researcher"])
    assert w.topic(tid).status == TopicStatus.CLOSED
    assert_context(d, "researcher", "recipient_done")
    assert woken(d) == set()


@pytest.mark.parametrize("author", ["researcher", "reviewer", "writer", "human.alice"])
@pytest.mark.parametrize("mtype", ["request", "response", "inform"])
def test_a_closed_topic_refuses_everything(author, mtype):
    """Seed 000: "A closed topic is archived and nothing in it can wake anyone again."

    and the refusal table: "`topic_closed`	The topic is closed."
    """
    w = World()
    tid = w.open("researcher", to=["reviewer"])
    w.send("reviewer", topic=tid, type="inform", state="done", to=["researcher"])
    w.send("researcher", topic=tid, type="inform", state="done", to=["reviewer"])
    assert w.topic(tid).status == TopicStatus.CLOSED
    d = w.send(author, topic=tid, type=mtype, to=["reviewer" if author != "reviewer" else "researcher"])
    assert_refused(d, R.TOPIC_CLOSED)
    assert d.topics == () and d.routed == ()


def test_a_closed_topic_has_no_timers():
    """Seed 000: "A closed topic is archived and nothing in it can wake anyone again." """
    from ygg_server.core import next_due
    from ygg_server.core.rules import HOUR

    w = World()
    tid = w.open("researcher", to=["reviewer"], state="waiting")
    w.send("reviewer", topic=tid, type="inform", state="done", to=["researcher"])
    w.send("researcher", topic=tid, type="inform", state="done", to=["reviewer"])
    assert next_due(w.topic(tid)) is None
    for _ in range(5):
        w.tick(HOUR)
        assert all(d.routed == () and d.topics == () for d in w.run_timers())


def test_a_request_to_an_agent_in_a_topic_opens_participation():
    """Seed 000: "It has its own participants, its own state, and it closes when everyone in it is done." """
    w = World()
    tid = w.open("researcher", to=["reviewer"])
    assert set(w.topic(tid).members) == {"researcher", "reviewer"}
    w.send("reviewer", topic=tid, to=["writer"])
    assert set(w.topic(tid).members) == {"researcher", "reviewer", "writer"}
