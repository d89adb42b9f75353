"""Artifacts (seed 003 §8-10; core/artifacts.py): the message that posts a version, its cost, the fields' rules,
the diff between versions."""

from ygg_server.core import decide
from ygg_server.core.artifacts import KINDS, announce, diff, problem
from ygg_server.core.model import ArtifactRef

from .harness import World


def test_posting_a_version_is_a_message_that_names_it_and_wakes_nobody():
    """Seed 003 §8: "it can post it as an artifact: a separate, versioned object attached to the conversation,
    rendered and viewable on its own, instead of a wall of text in a message bubble." """
    w = World()
    ref = ArtifactRef("a1", 1, "Plan", "document")
    post = announce("m1", "researcher", w.ws, "new", ref, body="x" * 10, to=("reviewer",), title="Plan")
    d = decide(w.view("researcher"), post, w.now)
    assert d.refusal is None
    m = d.message
    assert m.artifact == ref and m.type == "inform" and "Plan" in m.text and "x" * 10 not in m.text
    assert all(not x.wake for x in d.routed[0].deliveries), "an inform wakes nobody"


def test_the_body_is_paid_for_like_text():
    """Seed 000: "Every message an agent sends costs credits": a version's body counts like text (1 per started
    1,000 characters, per recipient)."""
    w = World()
    ref = ArtifactRef("a1", 1, "Plan", "document")
    small = decide(w.view("researcher"), announce("m1", "researcher", w.ws, "new", ref, body="x", title="P"), w.now)
    big = decide(w.view("researcher"), announce("m2", "researcher", w.ws, "new", ref, body="x" * 2500, title="P"),
                 w.now)
    assert small.message.cost == 1 and big.message.cost == 3
    w.wallets["researcher"] = 2
    assert decide(w.view("researcher"), announce("m3", "researcher", w.ws, "new", ref, body="x" * 2500, title="P"),
                  w.now).refusal.reason == "credits_exhausted"


def test_an_artifacts_fields_follow_their_rules():
    """Core decision (docs/rules.md, "Artifacts"): a kind of document, code or page; a body neither empty nor over
    200,000 characters; a title."""
    assert KINDS == ("document", "code", "page")
    assert problem("T", "document", "x") is None
    assert problem("T", "spreadsheet", "x") and problem("T", "code", "  ") and problem(" ", "page", "x")
    assert problem("T", "code", "x" * 200_001)


def test_a_diff_between_versions():
    """Seed 003 §9: "the whole history is visible (who changed what, and when), and old versions stay readable":
    a unified diff between two versions' bodies."""
    out = diff("a\nb\nc", "a\nB\nc", "version 1", "version 2")
    assert out[:2] == ["--- version 1", "+++ version 2"] and "-b" in out and "+B" in out
    assert diff("same", "same") == []
