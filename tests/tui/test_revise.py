"""Editing and deleting one's own message from the TUI, its versions, and search people expect (issue 20: "No edit,
delete or undo of one's own message"; "search matches whole words only, cuts snippets mid-word, highlights
nothing")."""

from textual.widgets import OptionList

from ygg_tui.screens.dialogs import ConfirmScreen
from ygg_tui.screens.revising import VersionsScreen
from ygg_tui.screens.search import SearchScreen

from .conftest import SIZE, edit_selected, ready, screen_text, seed_topic, wait_for, wait_text


async def test_edit_then_see_the_versions_then_delete_my_message(team):
    """e edits the selected message in a small dialog holding its text; the list marks it "(edited)"; v shows
    every version; d asks y/n and the message then shows as deleted."""
    alice = await team.person("alice")
    sent = await seed_topic(team, alice, "Plans", ["we ship on Tuesday"])
    mid = sent["message"]["id"]
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await edit_selected(pilot, mid)
        ml = main.messages
        assert app.screen.query_one("#edit-text").text == "we ship on Tuesday", "it starts from the old text"
        await pilot.press(*["backspace"] * len("Tuesday"), *"Wednesday", "enter")
        await wait_for(pilot, lambda: app.screen is main, what="saved")
        await wait_for(pilot, lambda: ml.selected and ml.selected["text"] == "we ship on Wednesday",
                       what="the new text in place")
        assert ml.selected["version"] == 1
        await wait_text(pilot, "(edited)", "we ship on Wednesday")
        assert app.focused is ml

        await pilot.press("v")
        await wait_for(pilot, lambda: isinstance(app.screen, VersionsScreen), what="the versions")
        await wait_text(pilot, "Versions (2)", "we ship on Tuesday", "we ship on Wednesday")
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is main)

        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="y/n")
        await pilot.press("n")
        await wait_for(pilot, lambda: app.screen is main)
        assert not ml.selected.get("deleted"), "n keeps it"
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="y/n")
        await pilot.press("y")
        await wait_for(pilot, lambda: ml.selected and ml.selected.get("deleted"), what="deleted")
        text = screen_text(app)
        assert "(deleted)" in text and "we ship on" not in text


async def test_others_see_the_correction_in_place_and_cannot_edit_it(team):
    """bob's screen shows alice's correction where the message was, without a new unread; bob's e and d on it
    are refused on the spot."""
    alice = await team.person("alice")
    sent = await seed_topic(team, alice, "Lunch", ["pizza at noon"])
    mid = sent["message"]["id"]
    app = team.app("bob")
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        ml = main.messages
        await wait_for(pilot, lambda: ml.select_id(mid), what="alice's message")
        main.messages.focus()
        await pilot.press("e")
        await wait_for(pilot, lambda: any("Only its author" in str(n.message) for n in app._notifications),
                       what="told why not")
        assert app.screen is main
        r = await alice.call("edit_message", workspace=team.ws, message=mid, text="pizza at one")
        assert r["message"]["version"] == 1
        await wait_text(pilot, "pizza at one", "(edited)")
        assert "pizza at noon" not in screen_text(app)
        await pilot.pause(0.3)
        assert not app.store.unread, "a correction is not news to read"


async def test_search_finds_word_starts_and_shows_the_topic_and_the_hit(team):
    """/ then "deplo": a message with "deployment" is found, shown with its topic's title and a snippet whose hit is
    highlighted."""
    bob = await team.person("bob")
    await seed_topic(team, bob, "Release train", [
        "some words before " * 8 + "the deployment of the green build went well, " + "and more after " * 8])
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        main.messages.focus()
        await pilot.press("slash")
        await wait_for(pilot, lambda: isinstance(app.screen, SearchScreen))
        await pilot.press(*"deplo", "enter")
        await wait_text(pilot, "1 found", "Release train")
        option = app.screen.query_one("#results", OptionList).get_option_at_index(0)
        prompt = option.prompt
        lit = [prompt.plain[s.start:s.end] for s in prompt.spans if "reverse" in str(s.style)]
        assert lit == ["deployment"], prompt.spans
        snippet = prompt.plain.split("\n")[1].strip()
        assert snippet.startswith("…") and snippet.endswith("…")
        assert all(w in ("…", *"some words before the deployment of green build went well, and more after".split())
                   for w in snippet.strip("…").split()), "cut on word boundaries"


async def test_the_operator_feed_shows_an_edit_in_place_and_its_versions(team):
    """The operator view (monitor) of a direct conversation alice is not in: bob's correction is drawn where the
    message was, who it woke still shown, and v shows its versions there too."""
    from ygg_tui.screens.operator import OperatorScreen
    from ygg_tui.widgets.message_list import MessageList

    bob = await team.person("bob")
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        main.messages.focus()
        await pilot.press("o")
        await wait_for(pilot, lambda: isinstance(app.screen, OperatorScreen) and app.screen.ready, what="operator")
        op = app.screen
        sent = await bob.send(workspace=team.ws, conversation="dm:reviewer", topic="new", title="Bob's question",
                              type="request", to=["reviewer"], text="Reviewer, a quick one?")
        feed = op.query_one("#op-feed", MessageList)
        await wait_text(pilot, "Reviewer, a quick one?", "⚡ woke reviewer")
        await bob.call("edit_message", workspace=team.ws, message=sent["message"]["id"], text="Reviewer, two quick ones?")
        await wait_text(pilot, "Reviewer, two quick ones?", "(edited)", "⚡ woke reviewer")
        feed.focus()
        await wait_for(pilot, lambda: app.focused is feed and feed.select_id(sent["message"]["id"]), what="selected")
        op.refresh_all()  # (the live feed drawn again between the selection and the key, as a person meets it)
        await pilot.pause()
        assert feed.selected and feed.selected["id"] == sent["message"]["id"], "the redraw kept the selection"
        await pilot.press("v")
        await wait_for(pilot, lambda: isinstance(app.screen, VersionsScreen), what="the versions")
        await wait_text(pilot, "Reviewer, a quick one?", "Reviewer, two quick ones?")
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is op and app.focused is feed, what="back to the feed")
