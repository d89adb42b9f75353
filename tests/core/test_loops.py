"""Seed 000, "Why loops cannot form": repeated text and ping-pong stop waking."""

import pytest

from ygg_server.core.rules import LOOP_MEMORY, PING_PONG, REPEAT_LIMIT

from .harness import World, assert_context, assert_woken


def _fresh(w, tid, who):
    """Clear `who`'s pending wake, so a request to it is judged on its own."""
    w.send(who, topic=tid, type="inform", to=["human.alice"])


@pytest.mark.parametrize("variant", ["Can you check this again?", "can  you CHECK this again?", "  Can you check\nthis again? "])
def test_the_same_text_repeated_stops_waking(variant):
    """Seed 000: "Repeated exchanges and repeated text are detected and stop waking."

    and: "loop_suspected (the same back-and-forth or the same text repeated)". Core decision
    (docs/rules.md): text is compared with case and spacing aside; a text already seen
    REPEAT_LIMIT times among the agent messages since a person last wrote stops waking.
    """
    w = World()
    tid = w.open("human.alice", title="Check", to=["researcher", "reviewer"])
    text = "Can you check this again?"
    for _ in range(REPEAT_LIMIT):
        _fresh(w, tid, "reviewer")
        assert_woken(w.send("researcher", text, topic=tid, to=["reviewer"]), "reviewer")
    _fresh(w, tid, "reviewer")
    d = w.send("researcher", variant, topic=tid, to=["reviewer"])
    assert_context(d, "reviewer", "loop_suspected")
    assert d.ledger  # still charged: detection stops the wake, not the cost


def test_agents_copying_each_other_stop_waking():
    """Seed 000: "Repeated exchanges and repeated text are detected and stop waking." """
    w = World()
    tid = w.open("human.alice", title="Echo", to=["researcher", "reviewer", "writer"])
    text = "I agree, let us proceed."
    for a, b in (("researcher", "reviewer"), ("reviewer", "writer")):
        _fresh(w, tid, b)
        assert_woken(w.send(a, text, topic=tid, to=[b]), b)
    _fresh(w, tid, "researcher")
    assert_context(w.send("writer", text, topic=tid, to=["researcher"]), "researcher", "loop_suspected")


def test_a_person_writing_clears_the_memory():
    """Core decision (docs/rules.md): loop memory holds the agent messages since a person last wrote."""
    w = World()
    tid = w.open("human.alice", title="Check", to=["researcher", "reviewer"])
    for _ in range(REPEAT_LIMIT):
        _fresh(w, tid, "reviewer")
        w.send("researcher", "again", topic=tid, to=["reviewer"])
    w.send("human.alice", "go on", topic=tid, type="inform", to=["researcher"])
    assert w.topic(tid).recent == ()
    _fresh(w, tid, "reviewer")
    assert_woken(w.send("researcher", "again", topic=tid, to=["reviewer"]), "reviewer")


def test_ping_pong_between_two_agents_stops_waking():
    """Seed 000: "Repeated exchanges and repeated text are detected and stop waking."

    Core decision (docs/rules.md): PING_PONG agent messages in a row exchanged only between the
    same two agents (each to the other alone): the last of them stops waking.
    """
    w = World()
    tid = w.open("human.alice", title="Rally", to=["researcher"])
    pair = ("researcher", "reviewer")
    for i in range(PING_PONG):
        a, b = pair[i % 2], pair[(i + 1) % 2]
        d = w.send(a, f"shot {i}", topic=tid, to=[b])
        if i < PING_PONG - 1:
            assert_woken(d, b)
        else:
            assert_context(d, b, "loop_suspected")


def test_a_third_party_breaks_the_rally():
    """Core decision (docs/rules.md): the back-and-forth must be only the same two agents, in a row."""
    w = World()
    tid = w.open("human.alice", title="Rally", to=["researcher", "writer"])
    pair = ("researcher", "reviewer")
    for i in range(PING_PONG - 2):  # even: the last shot is the reviewer's
        a, b = pair[i % 2], pair[(i + 1) % 2]
        w.send(a, f"shot {i}", topic=tid, to=[b])
    w.send("writer", "a word from the side", topic=tid, type="inform", to=["researcher"])
    # without the side word these would make PING_PONG in a row
    assert_woken(w.send("researcher", "one more", topic=tid, to=["reviewer"]), "reviewer")
    assert_woken(w.send("reviewer", "and another", topic=tid, to=["researcher"]), "researcher")


def test_loop_memory_is_bounded():
    """Core decision (docs/rules.md): at most LOOP_MEMORY agent messages are remembered per topic."""
    w = World(wallet=10_000)
    tid = w.open("human.alice", title="Long", to=["researcher", "reviewer", "writer"])
    for i in range(LOOP_MEMORY + 10):
        w.send(("researcher", "writer")[i % 2], f"note {i}", topic=tid, type="inform", to=["reviewer"])
    assert len(w.topic(tid).recent) == LOOP_MEMORY
