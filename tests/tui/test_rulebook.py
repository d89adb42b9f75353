"""`/rulebook` in the composer sets the conversation's rulebook (issue 6; docs/protocol.md, "Directives")."""

from .conftest import SIZE, ready, wait_for, wait_text


async def test_rulebook_command_sets_shows_and_reaches_the_agents_directive(team):
    """Seed 003 §55: "a per-conversation rulebook (reply style, reply length, when not to interrupt)", set by the
    conversation's people: alice sets it from the composer; the agent's next wake carries it."""
    researcher = await team.agent("researcher")
    alice = await team.person("alice")
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        c = main.composer
        c.area.focus()
        await pilot.press(*"/rulebook length=300 style=short and formal")
        assert c.text == "/rulebook length=300 style=short and formal"
        await pilot.press("enter")
        await wait_for(pilot, lambda: c.text == "", what="the command went through")
        await wait_for(pilot, lambda: any("Reply length: at most 300 characters" in n.message
                                          and "Reply style: short and formal" in n.message for n in app._notifications),
                       what="the rulebook in force is shown")
        got = await alice.call("get_rulebook", workspace=team.ws, conversation="general")
        assert got["set"] == {"length": 300, "style": "short and formal"}

        await pilot.press(*"/rulebook length=abc")
        await pilot.press("enter")
        await wait_text(pilot, "bad_rulebook", "length is a number of characters")
        assert c.text == "/rulebook length=abc"  # kept, to be fixed
    sent = await alice.send(workspace=team.ws, conversation="general", topic="new", title="Q", type="request",
                            to=["researcher"], text="How long may you answer?")
    assert sent["op"] == "sent"
    d = await researcher.next_delivery(timeout=5)
    assert d["wake"] and "at most 300 characters" in d["directive"]["stable"][1]
    assert "short and formal" in d["directive"]["stable"][1] and d["directive"]["rulebook"]["length"] == 300


async def test_a_viewer_is_refused_in_words(team):
    """Seed 003 §55: "a per-conversation rulebook (reply style, reply length, when not to interrupt)": a viewer is
    not one of the people who set it."""
    app = team.app("carol")
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        main.composer.area.focus()
        await pilot.press(*"/rulebook reset")
        await pilot.press("enter")
        await wait_text(pilot, "permission_denied")


def test_a_length_that_is_not_a_plain_number_is_a_usage_error():
    """A length written with digits int() does not read ("²", "①") is explained like "abc", not raised as a bare
    ValueError (which ended the composer's worker silently: nothing shown, nothing sent)."""
    import pytest

    from ygg_tui import rulebook

    for bad in ("/rulebook length=²", "/rulebook length=①", "/rulebook length=abc"):
        with pytest.raises(rulebook.Usage):
            rulebook.parse(bad)
    assert rulebook.parse("/rulebook length=300 style=short") == {"length": 300, "style": "short"}
