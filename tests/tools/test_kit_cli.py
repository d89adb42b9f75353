"""An agent's tools, skills and memories from the operator's command line (issue 23: "TUI and CLI")."""

from __future__ import annotations

from pathlib import Path

from tests.net.test_admin_cli import PW, cli

FIXTURES = Path(__file__).parent / "fixtures" / "skills"


async def test_tools_skills_and_memories_from_the_command_line(tmp_path):
    d = tmp_path / "data"
    await cli(d, "add-person", "alice", "--password", PW)
    await cli(d, "add-workspace", "team", "--owner", "alice")
    await cli(d, "add-agent", "pike", "--owner", "alice")
    out = await cli(d, "tools", "pike", "--attach", "web_search", "--detach", "handoff")
    assert out["configured"] and "web_search" in out["tools"] and "handoff" not in out["tools"]
    assert (await cli(d, "tools", "pike", "--attach", "teleport", ok=False))["error"] == "unknown_tool"
    out = await cli(d, "skills", "pike", "--import", str(FIXTURES / "valid" / "pdf-forms"))
    assert "pdf-forms" in [s["name"] for s in out["skills"]]
    assert "fetch_page" in (await cli(d, "tools", "pike"))["tools"]  # brought along by the skill
    bad = await cli(d, "skills", "pike", "--import", str(FIXTURES / "malformed" / "unknown-field"), ok=False)
    assert bad["error"] == "bad_skill" and "triggers" in bad["detail"]
    await cli(d, "skills", "pike", "--export", "pdf-forms", "--into", str(tmp_path / "out"))
    assert (tmp_path / "out" / "pdf-forms" / "references" / "FIELDS.md").read_text().startswith("# Usual field")
    assert (await cli(d, "memories", "pike", "team"))["memories"] == []
