"""Files in the TUI (issue 21): each file sent with a message shown under it (name, size, type), `s` saves one to a
local path; `/attach PATH` in the composer uploads a file that goes with the next message."""

from textual.widgets import Input

from ygg_tui.screens.dialogs import FormScreen

from .conftest import SIZE, ready, seeded, wait_for, wait_text
from .test_snapshots import quiet

CSV = b"region,total\nnorth,1200\nsouth,950\n"


async def _sent_file(team) -> dict:
    researcher = await team.agent("researcher")
    f = await researcher.upload(team.ws, "totals.csv", CSV, "text/csv")
    sent = await researcher.send(workspace=team.ws, conversation="general", topic="new", title="Quarterly totals",
                                 type="inform", text="Totals attached.", files=[f["id"]])
    assert sent["op"] == "sent" and sent["message"]["files"], sent
    return sent


async def test_a_file_is_shown_under_its_message_and_saved(team, tmp_path):
    """Issue 21: files "shown in the TUI with name, size and type", "downloadable by those who can read the
    message"."""
    sent = await _sent_file(team)
    dest = tmp_path / "saved.csv"
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        ml = main.messages
        await wait_for(pilot, lambda: ml.select_id(sent["message"]["id"]), what="the message")
        await wait_text(pilot, "Totals attached.", "▤ totals.csv · 34 B · text/csv · s: save")
        ml.focus()
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(app.screen, FormScreen), what="the save form")
        app.screen.query_one("#f-path", Input).value = str(dest)
        app.screen.query_one("#f-path", Input).focus()
        await pilot.press("enter")
        await wait_for(pilot, lambda: dest.exists() and dest.read_bytes() == CSV, what="the file saved")


async def test_attach_sends_a_file_with_the_next_message(team, tmp_path):
    """Issue 21: a file attached in the composer (`/attach PATH`) goes with the next message, as stored."""
    src = tmp_path / "notes.md"
    src.write_bytes(b"# Notes\n\nship it\n")
    researcher = await team.agent("researcher")
    first = await researcher.send(workspace=team.ws, conversation="general", topic="new", title="Notes",
                                  type="request", to=["@alice"], text="Send me your notes?")
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        await wait_for(pilot, lambda: main.messages.select_id(first["message"]["id"]), what="the topic")
        main.open_topic(first["message"]["conversation"], first["message"]["topic"])
        main.composer.area.focus()
        await pilot.press(*f"/attach {src}", "enter")
        await wait_for(pilot, lambda: len(main.attached) == 1, what="attached")
        await wait_text(pilot, "· ▤ 1 file")  # (the composer's line says what goes with the message)
        await pilot.press(*"here they are", "enter")
        await wait_for(pilot, lambda: not main.attached, what="sent with it")
    hist = await researcher.call("history", workspace=team.ws, topic=first["message"]["topic"])
    mine = next(m for m in hist["messages"] if m["text"] == "here they are")
    assert [(f["name"], f["size"], f["type"]) for f in mine["files"]] == [("notes.md", 17, "text/markdown")]
    meta, data = await researcher.download(team.ws, mine["files"][0]["id"])
    assert data == src.read_bytes()


def test_file_line_snapshot(snap_compare, sync_team):
    seeded(sync_team, _sent_file(sync_team))

    async def before(pilot):
        main = await ready(pilot)
        ml = main.messages
        await wait_for(pilot, lambda: any(m.get("files") and ml.select_id(m["id"]) for m in ml.messages),
                       what="the message")
        await wait_text(pilot, "▤ totals.csv")
        quiet(pilot)
        await pilot.pause(0.1)

    assert snap_compare(sync_team.app(), terminal_size=SIZE, run_before=before)
