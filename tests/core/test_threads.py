"""Side threads (seed 003 §5-7; core/threads.py): the `<dm>` tag's parsing, a thread opened or reused, settled."""

from ygg_server.core.threads import (ABANDONED, MAX_PARTS, ONGOING, RESOLVED, DmPart, extract, opened, settle,
                                     thread_id)

from .harness import World


def test_the_tag_is_taken_out_and_the_rest_kept():
    """Seed 003 §5: "by wrapping the relevant part of its output in a short inline tag naming the target" and "The
    backend extracts it": the part leaves the message, the rest stays."""
    ex = extract('Plan below.\n<dm target="Nova">check the totals</dm>\nThanks.')
    assert ex.parts == (DmPart(("Nova",), "check the totals"),)
    assert ex.text == "Plan below.\n\nThanks."


def test_several_parts_and_several_targets():
    """Core decision (docs/rules.md, "Side threads"): several parts per message, several targets per part (commas),
    the tag's name and attribute in any case, single or double quotes."""
    ex = extract("<dm target='a, @bob'>one</dm> mid <DM TARGET=\"c\">two</DM>")
    assert ex.parts == (DmPart(("a", "@bob"), "one"), DmPart(("c",), "two"))
    assert ex.text == "mid"


def test_a_nested_tag_stays_text_of_the_outer_part():
    """Core decision (docs/rules.md, "Side threads"): tags nest by count; an inner one is text of the outer part."""
    ex = extract('<dm target="a">outer <dm target="b">inner</dm> tail</dm> after')
    assert ex.parts == (DmPart(("a",), 'outer <dm target="b">inner</dm> tail'),)
    assert ex.text == "after"


def test_malformed_tags_are_left_as_text_never_dropped():
    """Seed 003 §6: "The tag is the whole mechanism; there is no keyword or length detection behind it." What is
    not a well-formed tag is text (Core decision, docs/rules.md, "Side threads")."""
    for text in ('<dm target="a">never closed', '<dm>no target</dm>', '<dm target="">empty target</dm>',
                 '<dm target="a">  </dm>', 'a stray </dm> here', 'no tag at all', '<dmx target="a">x</dmx>'):
        assert extract(text).parts == () and extract(text).text == text, text
    ex = extract('<dm target="">bad</dm> then <dm target="a">good</dm>')
    assert ex.parts == (DmPart(("a",), "good"),) and ex.text == '<dm target="">bad</dm> then'


def test_parts_beyond_the_limit_stay_text():
    """Core decision (docs/rules.md, "Side threads"): at most MAX_PARTS parts per message; the rest stays text."""
    ex = extract("".join(f'<dm target="a">{i}</dm>' for i in range(MAX_PARTS + 2)))
    assert len(ex.parts) == MAX_PARTS and ex.text == f'<dm target="a">{MAX_PARTS}</dm><dm target="a">{MAX_PARTS + 1}</dm>'


def test_a_thread_is_for_exactly_those_participants_and_reused():
    """Seed 003 §5: "opens (or reuses) a dedicated thread for just those agents, and links it to the message it
    came from" """
    w = World()
    d, origin = w.directory, w.general
    t = opened(d, origin, "researcher", ("reviewer",), "m1", None, None)
    assert t.id == thread_id(origin.id, frozenset({"researcher", "reviewer"}))
    assert t.id != thread_id(origin.id, frozenset({"researcher", "reviewer", "writer"}))
    assert t.kind == "side" and t.origin == origin.id and t.origin_message == "m1" and t.thread == ONGOING
    assert {"researcher", "reviewer"} <= t.members and "writer" not in t.members
    settled = settle(d, t, "reviewer", RESOLVED, "done", 1, "c").conversation
    again = opened(d, origin, "researcher", ("reviewer",), "m2", settled, None)
    assert again.id == t.id and again.thread == ONGOING and again.origin_message == "m1"


def test_hops_follow_the_bound_across_threads():
    """Core decision (docs/rules.md, "Side threads"): the hop bound is per topic, and a thread opened from it
    carries the exchange on (its counters never go below the origin's)."""
    w = World()
    origin = w.general
    from msgspec.structs import replace
    busy = replace(origin, hops=3, run=2)
    t = opened(w.directory, origin, "researcher", ("reviewer",), "m1", None, busy)
    assert (t.hops, t.run) == (3, 2)
    assert opened(w.directory, origin, "researcher", ("reviewer",), "m1", replace(t, hops=5), replace(busy, hops=1)).hops == 5


def test_any_member_settles_a_thread_with_a_summary_and_no_message_in_the_origin():
    """Seed 003 §7: "any member of the thread can take: post a summary back and mark the thread resolved. The marker
    in the original conversation changes from "ongoing" to "resolved" (or "abandoned" if it got stuck) instead of
    adding a new message." """
    w = World()
    origin = w.general
    t = opened(w.directory, origin, "researcher", ("reviewer",), "m1", None, None)
    d = settle(w.directory, t, "reviewer", RESOLVED, "  Totals match.  ", 5, "c")
    assert d.refusal is None and d.conversation.thread == RESOLVED and d.conversation.summary == "Totals match."
    assert all(r.message.conversation == t.id for r in d.routed), "nothing is added to the origin"
    assert all(not x.wake for r in d.routed for x in r.deliveries)
    assert settle(w.directory, d.conversation, "researcher", ABANDONED, None, 6, "c2").conversation.summary == \
        "Totals match.", "marking it again keeps the summary"
    assert settle(w.directory, t, "writer", RESOLVED, None, 5, "c").refusal.reason == "unknown_conversation"
    assert settle(w.directory, origin, "researcher", RESOLVED, None, 5, "c").refusal.reason == "unknown_conversation"
    assert settle(w.directory, t, "reviewer", "finished", None, 5, "c").refusal.reason == "bad_thread_state"


def test_a_conversation_decides_whether_and_in_what_words_agents_are_told():
    """Seed 003 §6: "A conversation can only decide whether agents are told about side threads, and in what
    words." (its rulebook's `sideThreads` rule, rendered into the agents' directive)"""
    from ygg_server.ops import directives as d
    from ygg_server.protocol.configurable import SIDE_THREADS_WORDS
    assert SIDE_THREADS_WORDS in d.render_rulebook(d.rulebook_in_force({}))
    assert "Side threads" not in d.render_rulebook(d.rulebook_in_force({"sideThreads": "off"}))
    mine = d.render_rulebook(d.rulebook_in_force({"sideThreads": "Use <dm> for reviews only."}))
    assert "- Side threads: Use <dm> for reviews only." in mine and SIDE_THREADS_WORDS not in mine
    assert d.rulebook_problem({"sideThreads": ""}) and d.rulebook_problem({"sideThreads": 3})
    assert d.rulebook_problem({"sideThreads": "off"}) is None
