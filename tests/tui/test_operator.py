"""The operator view: the whole workspace live (monitor), filterable."""

from textual.widgets import DataTable, Select

from ygg_tui.screens.operator import ALL, OperatorScreen
from ygg_tui.widgets.message_list import MessageList

from .conftest import SIZE, answer, open_topic, ready, wait_for, wait_text


async def test_operator_sees_everything_live_and_filters(team):
    researcher = await team.agent("researcher")
    reviewer = await team.agent("reviewer")
    bob = await team.person("bob")
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        main.messages.focus()
        await pilot.press("o")
        await wait_for(pilot, lambda: isinstance(app.screen, OperatorScreen) and app.screen.ready, what="operator")
        op = app.screen
        # a direct conversation alice is not in: only monitoring shows it
        sent = await bob.send(workspace=team.ws, conversation=f"dm:reviewer", topic="new", title="Bob's question",
                              type="request", to=["reviewer"], text="Reviewer, a quick one?")
        assert sent["op"] == "sent", sent
        await answer(team, reviewer, state="done", text="Sure: yes.")
        await open_topic(team, bob, "researcher", "General work", "Researcher, look at this")
        await answer(team, researcher, state="working", text="Looking.")
        feed = op.query_one("#op-feed", MessageList)
        await wait_for(pilot, lambda: len(feed) >= 4, what="live feed")
        topics = op.query_one("#op-topics", DataTable)
        await wait_for(pilot, lambda: topics.row_count >= 2, what="topic rows")
        await wait_text(pilot, "Bob's question", "General work", "Reviewer, a quick one?", "⚡ woke reviewer")
        # wakes versus context, per topic and per agent
        row = topics.get_row(sent["message"]["topic"])
        assert str(row[0]) == "Bob's question" and row[4] >= 2 and row[5] >= 2
        agents = op.query_one("#op-agents", DataTable)
        await wait_for(pilot, lambda: agents.get_row(team.ids["reviewer"])[4] >= 1, what="woken count")
        assert agents.get_row(team.ids["reviewer"])[2] >= 1  # spent a credit
        # filters: by type, by conversation, by participant
        op.query_one("#f-type", Select).value = "response"
        await wait_for(pilot, lambda: len(feed) and all(m["type"] == "response" for m in feed.messages))
        op.query_one("#f-type", Select).value = ALL
        op.query_one("#f-conversation", Select).value = sent["message"]["conversation"]
        dm = sent["message"]["conversation"]
        await wait_for(pilot, lambda: len(feed) >= 2 and topics.row_count == 1
                       and all(m["conversation"] == dm for m in feed.messages))
        op.query_one("#f-conversation", Select).value = ALL
        op.query_one("#f-participant", Select).value = team.ids["researcher"]
        await wait_for(pilot, lambda: all(team.ids["researcher"] in (m["author"], *m["to"]) for m in feed.messages)
                       and len(feed) >= 2)
        # back to the main screen: monitoring stops
        op.query_one("#op-feed").focus()
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is main)
        await wait_for(pilot, lambda: team.ws not in app.session.monitoring)


async def test_operator_needs_the_monitor_permission(team):
    app = team.app("bob")
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        main.messages.focus()
        await pilot.press("o")
        await wait_for(pilot, lambda: any("monitor permission" in n.message for n in app._notifications))
        assert not isinstance(app.screen, OperatorScreen)


async def test_an_operator_whose_monitor_is_taken_away_is_told_and_the_view_closes(team):
    """docs/protocol.md: `subscription` with `no_monitor` tells a follower its monitor went (an admin role
    lowered); the TUI closes the operator view of that workspace and says why."""
    from ygg_server.ops import admin

    team.server.admin(admin.add_member, team.ws, "bob", "admin")
    app = team.app("bob")
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        main.messages.focus()
        await pilot.press("o")
        await wait_for(pilot, lambda: isinstance(app.screen, OperatorScreen) and app.screen.ready, what="operator")
        team.server.admin(admin.add_member, team.ws, "bob", "member")
        await wait_for(pilot, lambda: any("no longer monitor" in n.message for n in app._notifications),
                       what="the notice")
        await wait_for(pilot, lambda: app.screen is main and app.operator is None, what="the view closed")
