"""Skills on the server (issue 23; seed 003 §43-45), over loopback on both stores: layers, activation rules,
attaching with the tools, the compact list, the body loaded on demand, import and export."""

from __future__ import annotations

from pathlib import Path

import pytest

from ygg_server.client import Refused
from ygg_server.skills.format import read_folder

pytestmark = pytest.mark.backends("sqlite", "postgres")
FIXTURES = Path(__file__).parent / "fixtures" / "skills"


def _skill(name: str, description: str, tools: str = "", body: str = "Body.") -> dict:
    head = f"---\nname: {name}\ndescription: {description}\n" + (f"allowed-tools: {tools}\n" if tools else "") + "---\n"
    return {"SKILL.md": head + body}


async def test_skills_resolve_in_layers_the_most_specific_winning(team):
    """§44: "some apply to every agent on the platform, some to all of your agents, and some to one particular agent;
    when names collide, the most specific layer wins"."""
    alice, agent = await team.person("alice"), await team.client(api_key=team.keys["researcher"])
    before = {s["name"]: s for s in (await agent.call("list_skills"))["skills"]}
    assert before["memory-keeping"]["layer"] == "platform"  # bundled: every agent has it (its tools are defaults)
    await alice.call("import_skill", files=_skill("memory-keeping", "Alice's own way to keep notes.",
                                                  "remember"), folder="memory-keeping")
    mid = {s["name"]: s for s in (await agent.call("list_skills"))["skills"]}
    assert mid["memory-keeping"] == {"name": "memory-keeping", "description": "Alice's own way to keep notes.",
                                     "layer": "owner", "tools": ["remember"]}
    await alice.call("import_skill", agent="researcher", folder="memory-keeping",
                     files=_skill("memory-keeping", "Only the researcher's.", "remember", "Researcher body."))
    after = {s["name"]: s for s in (await agent.call("list_skills"))["skills"]}
    assert after["memory-keeping"]["layer"] == "agent" and after["memory-keeping"]["description"] == "Only the researcher's."
    other = await team.client(api_key=team.keys["reviewer"])
    theirs = {s["name"]: s for s in (await other.call("list_skills"))["skills"]}
    assert theirs["memory-keeping"]["layer"] == "owner"  # one agent's layer is that agent's alone
    bob = await team.person("bob")
    assert "memory-keeping" not in [s["name"] for s in (await bob.call("list_skills"))["skills"]
                                    if s["layer"] != "platform"]  # alice's library is hers


async def test_a_skill_switches_on_only_with_its_tools_and_attaching_it_brings_them(team):
    """§44: "calendar instructions, say, switch on only for an agent that actually has calendar tools"; §43:
    "Assigning a skill also brings along the tools it depends on, so it works at once"."""
    alice, agent = await team.person("alice"), await team.client(api_key=team.keys["researcher"])
    mine = await agent.call("list_skills")
    off = {s["name"]: s for s in mine["inactive"]}
    assert off["web-research"]["missing"] == ["web_search", "fetch_page"]  # the platform's, but no web tools
    assert "web-research" not in mine["prompt"]
    attached = await alice.call("attach_skill", agent="researcher", skill="web-research")
    assert {"web_search", "fetch_page"} <= set(attached["tools"])
    mine = await agent.call("list_skills")
    on = {s["name"]: s for s in mine["skills"]}
    assert on["web-research"]["layer"] == "agent"
    assert "- web-research: Research a question on the web and answer with sources." in mine["prompt"]
    with pytest.raises(Refused) as e:
        await agent.call("attach_skill", agent="researcher", skill="web-research")
    assert e.value.reason in ("permission_denied", "not_found")
    await alice.call("detach_tool", agent="researcher", tool="fetch_page")  # a tool taken away: the skill goes off
    mine = await agent.call("list_skills")
    assert [s["missing"] for s in mine["inactive"] if s["name"] == "web-research"] == [["fetch_page"]]


async def test_the_prompt_holds_one_line_and_load_skill_reads_the_body_on_demand(team):
    """§45: "an agent normally holds only a compact list of its skills (each skill's name and one line on what it
    covers) and loads the full instructions on demand"."""
    alice, agent = await team.person("alice"), await team.client(api_key=team.keys["researcher"])
    files = read_folder(FIXTURES / "valid" / "pdf-forms")
    out = await alice.call("import_skill", agent="researcher", folder="pdf-forms", files=files)
    assert out["layer"] == "agent" and "fetch_page" in out["tools"]
    prompt = (await agent.call("list_skills"))["prompt"]
    assert "pdf-forms: Fill in PDF forms" in prompt and "Read the form's fields" not in prompt
    got = await agent.call("call_tool", workspace=team.ws, tool="load_skill", arguments={"name": "pdf-forms"})
    assert got["ok"] and got["result"]["instructions"].startswith("# Filling a form")
    assert got["result"]["files"] == ["references/FIELDS.md", "scripts/check.py"]
    ref = await agent.call("call_tool", workspace=team.ws, tool="load_skill",
                           arguments={"name": "pdf-forms", "file": "references/FIELDS.md"})
    assert "date of birth" in ref["result"]["text"]
    off = await agent.call("call_tool", workspace=team.ws, tool="load_skill", arguments={"name": "web-research"})
    assert not off["ok"] and off["error"] == "skill web-research is not active for you: it needs web_search"
    exported = await alice.call("export_skill", agent="researcher", skill="pdf-forms")
    assert exported["files"] == files  # as imported, byte for byte


async def test_a_malformed_skill_is_refused_on_import_saying_why(team):
    """Issue 23: "refuse what breaks the format, say why"."""
    alice, agent = await team.person("alice"), await team.client(api_key=team.keys["researcher"])
    with pytest.raises(Refused) as e:
        await alice.call("import_skill", folder="bad-yaml", files=read_folder(FIXTURES / "malformed" / "bad-yaml"))
    assert e.value.reason == "bad_skill" and "not valid YAML" in e.value.frame["detail"]
    with pytest.raises(Refused) as e:
        await alice.call("import_skill", agent="researcher", files=_skill("teleport", "d", "teleporter"))
    assert e.value.reason == "bad_skill" and "teleporter" in e.value.frame["detail"]
    with pytest.raises(Refused) as e:
        await agent.call("import_skill", files=_skill("x", "d"))
    assert e.value.reason == "permission_denied"
    assert team.conn.execute("SELECT count(*) FROM skills").fetchone()[0] == 0
