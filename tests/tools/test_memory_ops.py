"""Agents' long-term memory on the store (issue 23; seed 003 §46-48), over loopback on both stores: kept and
searched per workspace (SQLite FTS5, PostgreSQL full text), never across a workspace's isolation."""

from __future__ import annotations

import asyncio

import pytest

from ygg_server.client import Refused
from ygg_server.ops import admin, memory

pytestmark = pytest.mark.backends("sqlite", "postgres")


async def _remember(agent, ws, note):
    return await agent.call("call_tool", workspace=ws, tool="remember", arguments={"note": note})


async def test_memories_are_kept_and_searched_on_the_store(team):
    agent = await team.client(api_key=team.keys["researcher"])
    for note in ("Bob deploys on Fridays", "The staging database is called ygg-stage", "Bob deploys on Fridays"):
        await _remember(agent, team.ws, note)
    found = await agent.call("call_tool", workspace=team.ws, tool="memory_search", arguments={"query": "deplo bob"})
    assert [m["text"] for m in found["result"]] == ["Bob deploys on Fridays"]  # prefixes, every word, kept once
    phrase = await agent.call("call_tool", workspace=team.ws, tool="memory_search",
                              arguments={"query": '"staging database"'})
    assert [m["text"] for m in phrase["result"]] == ["The staging database is called ygg-stage"]
    recalled = await agent.call("list_memories", workspace=team.ws, query="when does the database deploy?", any=True)
    assert {m["text"] for m in recalled["memories"]} == {"Bob deploys on Fridays",
                                                         "The staging database is called ygg-stage"}
    used = team.conn.execute("SELECT uses FROM memories WHERE text = 'Bob deploys on Fridays'").fetchone()[0]
    assert used == 1  # found by the tool: marked used (the recall's listing reads only)


async def test_a_memory_never_crosses_a_workspaces_isolation(team):
    """Issue 23: "memory is per workspace unless its owner shares it, and never crosses a workspace's isolation"."""
    lab = team.admin(admin.add_workspace, "lab", "alice")["id"]
    team.admin(admin.add_agent, "scout", "alice", lab)
    agent, bob = await team.client(api_key=team.keys["researcher"]), await team.person("bob")
    await _remember(agent, team.ws, "The launch code word is tulip")
    # the researcher follows alice into lab too: there it remembers nothing of team's
    found = await agent.call("call_tool", workspace=lab, tool="memory_search", arguments={"query": "tulip"})
    assert found == {**found, "ok": True, "result": []}
    assert (await agent.call("list_memories", workspace=lab, query="tulip"))["memories"] == []
    bobs = team.admin(admin.add_workspace, "bobs", "bob")["id"]
    with pytest.raises(Refused) as e:  # not a member: answered as for a workspace that does not exist
        await agent.call("call_tool", workspace=bobs, tool="remember", arguments={"note": "tulip"})
    assert e.value.reason == "not_found"
    scout_id = team.conn.execute("SELECT id FROM agents WHERE name = 'scout'").fetchone()[0]
    now = team.gw.clock()
    team.conn.execute("""INSERT INTO memories (id, workspace, agent, text, created_at, used_at)
                         VALUES ('m-lab', ?, ?, 'The tulip plan, lab only', ?, ?)""", (lab, scout_id, now, now))
    mine = await agent.call("list_memories", workspace=team.ws, query="tulip")
    assert [m["text"] for m in mine["memories"]] == ["The launch code word is tulip"]
    for who, ref in ((bob, "researcher"), (bob, team.conn.execute(
            "SELECT id FROM agents WHERE name = 'researcher'").fetchone()[0])):  # not bob's agent: as if none
        with pytest.raises(Refused) as e:
            await who.call("list_memories", workspace=team.ws, agent=ref)
        assert e.value.reason == "not_found"
    alice = await team.person("alice")
    listed = await alice.call("list_memories", workspace=team.ws, agent="researcher")
    assert [m["text"] for m in listed["memories"]] == ["The launch code word is tulip"]
    with pytest.raises(Refused):  # an id of another workspace's memory is not forgotten from here
        await alice.call("forget", workspace=team.ws, agent="scout", id="m-lab")
    await alice.call("forget", workspace=team.ws, agent="researcher", id=listed["memories"][0]["id"])
    assert (await agent.call("list_memories", workspace=team.ws))["memories"] == []
    assert team.conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 1  # lab's untouched


@pytest.mark.backends("sqlite", "process")  # (process: the writer's memory command crosses to its child)
async def test_a_turns_memory_writes_drop_no_cache_and_rescan_no_connection(team):
    """Seed 003 §46: "at the start of every turn the context is assembled from the conversation's history and the
    agent's long-term memory at once". On SQLite a management connection's commit changes the writer's
    `data_version`: it drops its cache and the gateway rescans every connection (0.1 to 0.7 s with 10 to 100 agents),
    and a recall at each turn's start (its memories marked used) was such a commit. Kept and recalled through the
    writer, a turn's memory rescans nothing; the same memory written on the management connection does."""
    rescans: list[int] = []
    rescan = team.gw.rescan

    async def counted():
        rescans.append(1)
        await rescan()

    team.gw.rescan = counted
    agent = await team.client(api_key=team.keys["researcher"])
    await agent.call("ping")
    rescans.clear()  # (the fixture's own writes, before the server's first batch)
    for _ in range(3):
        await _remember(agent, team.ws, "Bob deploys on Fridays")
        found = await agent.call("call_tool", workspace=team.ws, tool="memory_search", arguments={"query": "bob"})
        assert [m["text"] for m in found["result"]] == ["Bob deploys on Fridays"]
    assert team.conn.execute("SELECT count(*), max(uses) FROM memories").fetchone() == (1, 3)
    # the control: a memory written on the management connection, then one more batch: exactly one rescan, for it
    researcher = team.conn.execute("SELECT id FROM agents WHERE name = 'researcher'").fetchone()[0]
    team.admin(memory.save, researcher, team.ws, "Alice reviews on Mondays", team.gw.clock())
    await _remember(agent, team.ws, "The staging database is ygg-stage")
    for _ in range(100):
        if rescans:
            break
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.2)
    assert rescans == [1], "six memory writes through the writer rescanned nothing; the management one, once"
