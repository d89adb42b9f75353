"""Export (issue 19): "A person can export a conversation or a workspace they can read (Markdown transcript and
JSON lines) from the TUI and the CLI": the palette's "Export …" and `ygg export`, each holding exactly what its
person reads (bob is not in alice's direct conversation with her agent, and it is not in his export)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

from textual.command import CommandPalette

from ygg_tui.commands import YggCommands

from .conftest import PW, ready, seed_topic, wait_for, SIZE


async def _conversation(team):
    alice = await team.person("alice")
    await seed_topic(team, alice, "Launch plan", ["first line\nsecond line", "more **words**"])
    secret = await alice.send(workspace=team.ws, conversation=f"dm:{team.ids['researcher']}", topic="new",
                              title="private", type="inform", text="only alice and her agent read this")
    assert secret["op"] == "sent", secret
    return alice


async def test_a_person_exports_a_workspace_with_ygg_export_holding_only_what_they_read(team, tmp_path):
    await _conversation(team)
    out = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-m", "ygg_tui.cli", "export", "team", "--url", team.url, "--handle", "bob",
                         "--password", PW, "-o", str(tmp_path / "bob")], capture_output=True, text=True, timeout=60,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["messages"] == 2
    rows = [json.loads(line) for line in (tmp_path / "bob.jsonl").read_text().splitlines()]
    assert [r["text"] for r in rows] == ["first line\nsecond line", "more **words**"]  # oldest first
    assert {r["author_handle"] for r in rows} == {"alice"} and {r["conversation_name"] for r in rows} == {"General"}
    md = (tmp_path / "bob.md").read_text()
    assert md.startswith("# team") and "## General" in md and "### Launch plan" in md and "> second line" in md
    assert "only alice and her agent" not in md

    out = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-m", "ygg_tui.cli", "export", "nowhere", "--url", team.url, "--handle",
                         "bob", "--password", PW], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "nowhere" in out.stderr


async def test_a_person_exports_the_open_conversation_from_the_palette(team):
    await _conversation(team)
    app = team.app("alice")
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        main.open_conversation(next(c for c, row in app.store.workspaces[team.ws].conversations.items()
                                    if row.get("name") == "General"))
        titles = [t for t, _, _ in YggCommands(app.screen)._commands()]
        assert "Export this conversation" in titles and "Export workspace team" in titles
        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette), what="the palette")
        await pilot.press(*"export this conversation")
        await pilot.pause(0.3)
        await pilot.press("down", "enter")
        exports = app.config.exports_dir
        await wait_for(pilot, lambda: (exports / "team-General.jsonl").exists(), what="the export written")
    rows = [json.loads(line) for line in (exports / "team-General.jsonl").read_text().splitlines()]
    assert [r["text"] for r in rows] == ["first line\nsecond line", "more **words**"]
    assert "### Launch plan" in (exports / "team-General.md").read_text()


async def test_an_export_pages_through_the_whole_history(team, monkeypatch):
    from ygg_server import export

    monkeypatch.setattr(export, "PAGE", 2)  # five messages: three pages
    alice = await team.person("alice")
    await seed_topic(team, alice, "Long", [f"line {i}" for i in range(5)])
    g = await export.gather(alice.call, "team", "general")
    assert [m["text"] for m in g["conversations"][0]["messages"]] == [f"line {i}" for i in range(5)]
    assert not g["whole"] and export.stem_for(g) == "team-General"
