"""The directive's text and the rules the server enforces on its documents (ygg_server/directives.py)."""

from ygg_server.ops import directives as d
from ygg_server.core.party import RosterEntry

LONG = "x" * 400


def test_persona_shrink_guard():
    """Seed 003 §57: "a sudden, large shrink is treated as suspicious and blocked instead of being applied
    silently"."""
    assert d.persona_refusal(LONG, "y" * 150)[0] == "persona_shrink"
    assert d.persona_refusal(LONG, "y" * 200) is None  # half is not a sudden large shrink
    assert d.persona_refusal("short one", "y") is None  # a persona under the floor is rewritten freely
    assert d.persona_refusal(LONG, " ")[0] == "persona_empty"
    assert d.persona_refusal(LONG, None)[0] == "persona_empty"
    assert d.persona_refusal("", "y" * (d.MAX_PERSONA + 1))[0] == "persona_too_long"


def test_rulebook_shape_and_defaults():
    """Seed 003 §55: "a per-conversation rulebook (reply style, reply length, when not to interrupt) separate from
    the agent's core persona"."""
    assert d.rulebook_problem({"style": "terse", "length": 200, "interrupt": "never", "language": "French"}) is None
    assert d.rulebook_problem({"length": 0}) and d.rulebook_problem({"length": True})
    assert d.rulebook_problem({"mood": "happy"}) and d.rulebook_problem({"style": ""}) and d.rulebook_problem([])
    rb = d.rulebook_in_force({"length": 200})
    assert rb["length"] == 200 and rb["style"] == d.DEFAULT_RULEBOOK["style"]
    text = d.render_rulebook(rb)
    assert "Reply length: at most 200 characters" in text and "When not to interrupt:" in text


def test_stable_blocks_do_not_depend_on_order_and_show_the_party():
    """Seed 003 §54: "stay byte-for-byte identical from turn to turn, so that the model provider's prompt cache
    really hits".

    Seed 004: "Each NPC is told who else is in the Party — names, job titles and a short line from each
    description"."""
    agents = (RosterEntry("agent.1", "pike", "Engineer", "Runs scripts and fixes them.", lead=True),)
    one = d.conversation_block(agents=agents, people=["@bob", "@alice"], lead_is_me=False, where="a party conversation",
                               rulebook=d.rulebook_in_force({"length": 100, "style": "short"}))
    two = d.conversation_block(agents=agents, people=["@alice", "@bob"], lead_is_me=False, where="a party conversation",
                               rulebook=dict(reversed(list(d.rulebook_in_force({"style": "short", "length": 100}).items()))))
    assert one == two
    assert "- pike (Lead), Engineer: Runs scripts and fixes them." in one and "- @alice, a person\n- @bob, a person" in one
    lead = d.conversation_block(agents=(), people=[], lead_is_me=True, where="x", rulebook={})
    assert "Nobody else is here." in lead and "You are this party's Lead" in lead
    core = d.core_block(name="nova", title="", description="", persona="")
    assert core.startswith("You are nova,") and "(empty: write one" in core
    assert d.fingerprint((core, one)) == d.fingerprint((core, two)) != d.fingerprint((core, one + " "))
