"""SVG snapshots (pytest-textual-snapshot) of the main screen, the needs_human queue, the operator
view and a refusal, against a real server. Deterministic: no clocks on screen (`clock = false`),
no ids; the server's state is made before the app starts, in the same order every run.

Update them after a deliberate change with `pytest tests/tui/test_snapshots.py --snapshot-update`.
"""

import asyncio
import time

from textual.widgets import DataTable

from ygg_tui.screens.operator import OperatorScreen

from .conftest import SIZE, answer, open_topic, ready, wait_for


def seed(team, *steps):
    async def run():
        for step in steps:
            await step(team)
            await team.close_clients()
    asyncio.run(run())
    time.sleep(0.3)  # let the server see the seeding clients go (presence)


async def conversation(team):
    researcher = await team.agent("researcher")
    alice = await team.person("alice")
    await open_topic(team, alice, "researcher", "What is Ygg?", "What is Ygg, in two sentences?")
    await answer(team, researcher, state="done",
                 text="A chat where people and AI agents work side by side.\nTopics, wakes and credits keep it calm.")
    bob = await team.person("bob")
    await bob.send(workspace=team.ws, conversation="dm:@alice", topic="new", title="Lunch", type="request",
                   to=["@alice"], text="Lunch at noon?")


async def two_waiting(team):
    researcher = await team.agent("researcher")
    reviewer = await team.agent("reviewer")
    alice = await team.person("alice")
    await open_topic(team, alice, "researcher", "Deploy on Friday", "Can we deploy on Friday?")
    await answer(team, researcher, state="needs_human", text="Deploys on Fridays need a person's approval.")
    await open_topic(team, alice, "reviewer", "Raise the budget", "Is the budget enough?")
    await answer(team, reviewer, state="needs_human", text="It is not: a person must decide.")


def quiet(pilot):
    for area in pilot.app.screen.query("TextArea"):
        area.cursor_blink = False
        # the lines TextArea cached are keyed without the cursor once it stops blinking, so a line cached while the
        # blink had it hidden would be drawn again without it: empty the cache (notify_style_update) and repaint
        area.notify_style_update()
        area.refresh()
    # the header names the server's address, and the test server's port is random: one address in every shot
    pilot.app.url = "ws://127.0.0.1:8765/"
    if pilot.app.main is not None:
        pilot.app.main._header()


def test_main_screen(snap_compare, sync_team):
    seed(sync_team, conversation)

    async def before(pilot):
        main = await ready(pilot)
        await wait_for(pilot, lambda: any(m.get("notice") for m in main.messages.messages), what="notice")
        quiet(pilot)
        await pilot.pause(0.1)

    assert snap_compare(sync_team.app(), terminal_size=SIZE, run_before=before)


def test_needs_human_queue(snap_compare, sync_team):
    seed(sync_team, two_waiting)

    async def before(pilot):
        main = await ready(pilot)
        main.messages.focus()
        await pilot.press("h")
        await wait_for(pilot, lambda: not main.messages.fetching and len(main.messages) >= 2)
        await wait_for(pilot, lambda: main.composer.text == "@researcher ", what="the answer addressed to the asker")
        await wait_for(pilot, lambda: pilot.app.focused is main.composer.area, what="the composer has the keys")
        await pilot.pause()
        quiet(pilot)
        await pilot.pause(0.1)

    assert snap_compare(sync_team.app(), terminal_size=SIZE, run_before=before)


def test_operator_view(snap_compare, sync_team):
    seed(sync_team, conversation, two_waiting)

    async def before(pilot):
        main = await ready(pilot)
        main.messages.focus()
        await pilot.press("o")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, OperatorScreen) and pilot.app.screen.ready)
        # a DataTable sizes its columns to their cells when idle: under load the shot could come first (in a
        # textual-private flag, so this waits for exactly that and nothing longer)
        await wait_for(pilot, lambda: not any(t._require_update_dimensions or t._new_rows
                                              for t in pilot.app.screen.query(DataTable)), what="column widths")
        await pilot.pause(0.2)

    assert snap_compare(sync_team.app(), terminal_size=SIZE, run_before=before)


def test_refusal(snap_compare, sync_team):
    seed(sync_team, conversation)

    async def before(pilot):
        main = await ready(pilot)
        quiet(pilot)
        main.composer.area.focus()
        await pilot.press(*"@nobody are you there?", "enter")
        await wait_for(pilot, lambda: main.query_one("#refusal").display, what="refusal")
        await pilot.pause(0.1)

    assert snap_compare(sync_team.app(), terminal_size=SIZE, run_before=before)
