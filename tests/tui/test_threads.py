"""Side threads in the TUI (issue 21; seed 003 §5-7): the small card right under the message a `<dm>` part came
from, collapsed and expanded with `x`, its marker changing when the thread is settled (no message added), and
`/resolve` from the thread's own conversation."""

from .conftest import SIZE, ready, seeded, screen_text, wait_for, wait_text
from .test_snapshots import quiet


async def _dm(team) -> dict:
    researcher = await team.agent("researcher")
    sent = await researcher.send(workspace=team.ws, conversation="general", topic="new", title="Quarterly report",
                                 type="inform", text='Draft is coming.\n<dm target="reviewer">check the totals in '
                                 'table 2</dm>')
    assert sent["op"] == "sent" and sent["message"]["threads"], sent
    return sent


async def test_the_card_under_the_message_expands_and_its_marker_changes(team):
    """Seed 003 §5: "in the main channel it shows as a small expandable thread card right under that message instead
    of a wall of text"; §7: "The marker in the original conversation changes from "ongoing" to "resolved" [...]
    instead of adding a new message." """
    sent = await _dm(team)
    thread = sent["message"]["threads"][0]
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        ml = main.messages
        await wait_for(pilot, lambda: ml.select_id(sent["message"]["id"]), what="the message")
        text = await wait_text(pilot, "Draft is coming.", "side thread with reviewer · ◌ ongoing")
        assert "check the totals" not in text, "collapsed: the part is not a wall of text in the channel"
        ml.focus()
        await pilot.press("x")
        await wait_text(pilot, "▾ side thread with reviewer", "check the totals in table 2")
        shown = len(ml.messages)
        reviewer = await team.agent("reviewer")
        r = await reviewer.call("settle_thread", workspace=team.ws, thread=thread, state="resolved",
                                summary="Totals match.")
        assert r["state"] == "resolved"
        await wait_text(pilot, "✓ resolved", "summary: Totals match.")
        assert len(ml.messages) == shown, "no new message in the origin"
        await pilot.press("x")
        await wait_for(pilot, lambda: "summary: Totals match." not in screen_text(app), what="collapsed again")


async def test_resolve_from_the_thread_conversation(team):
    """Seed 003 §7: "Bringing it back is a deliberate step any member of the thread can take" (a person too)."""
    sent = await _dm(team)
    thread = sent["message"]["threads"][0]
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        await wait_for(pilot, lambda: app.store.conversation(thread) is not None, what="the thread is listed")
        main.open_topic(thread, None)
        main.composer.area.focus()
        await pilot.press(*"/abandon nobody answered", "enter")
        await wait_for(pilot, lambda: (app.store.conversation(thread) or {}).get("thread") == "abandoned",
                       what="abandoned")
        convs = (await (await team.person("bob")).call("list_conversations", workspace=team.ws))["conversations"]
        assert next(c for c in convs if c["id"] == thread)["summary"] == "nobody answered"


def test_thread_card_snapshot(snap_compare, sync_team):
    seeded(sync_team, _dm(sync_team))

    async def before(pilot):
        main = await ready(pilot)
        ml = main.messages
        await wait_for(pilot, lambda: any(m.get("threads") and ml.select_id(m["id"]) for m in ml.messages),
                       what="the message")
        ml.focus()
        await pilot.press("x")
        await wait_text(pilot, "check the totals in table 2")
        quiet(pilot)
        await pilot.pause(0.1)

    assert snap_compare(sync_team.app(), terminal_size=SIZE, run_before=before)
