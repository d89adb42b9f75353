"""T: every topic of the conversation at once (issue 20, defect 8: "one topic at a time, no view of all a
conversation's topics"), with its state, participants and last message; ⏎ on one opens it. From the palette too."""

from textual.widgets import DataTable

from ygg_tui.commands import YggCommands
from ygg_tui.screens.topics_view import TopicsScreen

from .conftest import SIZE, ready, seed_topic, wait_for, wait_text


async def test_t_lists_every_topic_and_enter_opens_the_chosen_one(team):
    alice = await team.person("alice")
    bob = await team.person("bob")
    first = await seed_topic(team, alice, "Release plan", ["we ship on Tuesday"])
    await seed_topic(team, bob, "Lunch", ["pizza?", "at noon"])
    await seed_topic(team, alice, "Budget", ["is it enough?"])
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        await wait_for(pilot, lambda: len(app.store.topics_of(main.conversation)) == 3, what="three topics")
        main.messages.focus()
        await pilot.press("T")
        await wait_for(pilot, lambda: isinstance(app.screen, TopicsScreen), what="the topics view")
        await wait_text(pilot, "Topics of General (3)", "Release plan", "Lunch", "Budget", "bob: at noon", "not loaded yet")
        table = app.screen.query_one(DataTable)
        assert table.row_count == 3 and app.focused is table
        rows = [str(table.get_row_at(i)[1]) for i in range(3)]
        assert rows[0] == "Budget" and rows[-1] == "Release plan", "newest activity first"
        await pilot.press("down", "down", "enter")
        await wait_for(pilot, lambda: app.screen is main and main.topic == first["message"]["topic"],
                       what="the chosen topic open")
        await wait_text(pilot, "we ship on Tuesday")
        assert app.focused is main.messages
        # esc goes back without moving
        await pilot.press("T")
        await wait_for(pilot, lambda: isinstance(app.screen, TopicsScreen))
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is main)
        assert main.topic == first["message"]["topic"]
        # the palette offers it, and the footer and help name the key
        titles = [t for t, _, _ in YggCommands(app.screen)._commands()]
        assert "All topics of this conversation" in titles
        await wait_text(pilot, "All topics")
