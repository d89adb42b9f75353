"""Issue 24's tables on both stores: a host's connection told of a wake, its narrow token exchanged, the agent
switched back to local, and the directory's rule."""

from __future__ import annotations

import asyncio
import json

import pytest
import websockets

from ygg_server.client import Client, Refused
from ygg_server.ops import hosting, listings
from ygg_server.ops.configure import set_pins_admin

pytestmark = pytest.mark.backends("sqlite", "postgres")


async def test_a_hosted_agents_wake_reaches_its_host_and_local_clears_it(team):
    """Seed 003 §29: "the same wake broadcast reaches the host machine"; §69: a narrower token "good only for
    that exchange step"; §24: back to local "clears its host assignment completely"."""
    s = team
    host = s.admin(hosting.add_host, "alice", "vm-1")
    rid = s.admin(hosting.set_runtime, "researcher", "hosted", "vm-1")["agent"]
    async with websockets.connect(s.url + "host") as ws:
        await ws.send(json.dumps({"op": "auth", "ref": 1, "host_key": host["host_key"]}))
        hello = json.loads(await ws.recv())
        assert hello["host"] == host["id"] and [a["id"] for a in hello["agents"]] == [rid]
        alice = await s.person("alice")
        await alice.send(workspace=s.ws, conversation="general", topic="new", title="Q", type="request",
                         to=["researcher"], text="hello?")
        assert json.loads(await asyncio.wait_for(ws.recv(), 10)) == {"op": "wake", "agent": rid}
        await ws.send(json.dumps({"op": "agents", "ref": 2}))
        assert json.loads(await ws.recv())["agents"][0]["pending"] == 1  # what a supervisor coming back reads
        await ws.send(json.dumps({"op": "token", "ref": 3, "agent": rid}))
        token = json.loads(await ws.recv())["token"]
    me = await s.client(api_key=token)
    assert me.me["id"] == rid
    s.admin(hosting.set_runtime, "researcher", "local")
    assert s.admin(hosting.hosted_agents, host["id"]) == [] and s.admin(hosting.runtime, rid)["runtime"] == "local"
    with pytest.raises(Refused):
        await Client(s.url, api_key=token, reconnect=False).connect()


async def test_the_directory_refuses_an_agent_pinned_to_a_shared_workspace(team):
    """Seed 003 §67: "an agent pinned to a shared workspace cannot be published to the public agent directory"."""
    s = team
    alice = s.alice
    listing = s.admin(listings.publish, alice, "researcher")  # shared everywhere by default: its owner's to publish
    assert [x["name"] for x in s.admin(listings.directory)] == ["researcher"]
    s.admin(set_pins_admin, "researcher", [s.ws])
    assert s.admin(listings.directory) == []
    with pytest.raises(Exception, match="pinned to a shared workspace"):
        s.admin(listings.publish, alice, "researcher")
    bob = s.conn.execute("SELECT id FROM people WHERE handle = 'bob'").fetchone()[0]
    with pytest.raises(Exception):
        s.admin(listings.copy, bob, listing["listing"])


@pytest.mark.backends("postgres")
async def test_a_wake_stored_by_one_node_starts_the_bridge_on_a_host_connected_to_another(team, tmp_path):
    """Seed 003 §29: "the same wake broadcast reaches the host machine, which then starts the agent process to
    handle the work", whichever node stored the wake: node A stores it, the host is connected to node B only."""
    from ygg_server.agents.hosting import HostSupervisor

    s = team
    host = s.admin(hosting.add_host, "alice", "vm-1")
    rid = s.admin(hosting.set_runtime, "researcher", "hosted", "vm-1")["agent"]
    b = await s.node()
    sup = await HostSupervisor(f"ws://127.0.0.1:{b.port}/", host["host_key"], tmp_path / "host").start()
    try:
        assert not s.gw.hosts and list(b.hosts) == [host["id"]]
        alice = await s.person("alice")  # on node A
        q = (await alice.send(workspace=s.ws, conversation="general", topic="new", title="Credits", type="request",
                              to=["researcher"], text="How do credits work?"))["message"]

        async def answered():
            out = await alice.call("history", workspace=s.ws, conversation="general", topic=q["topic"], limit=50)
            return next((m for m in out["messages"] if m["in_reply_to"] == q["id"]), None)

        deadline = asyncio.get_running_loop().time() + 20
        while (answer := await answered()) is None:
            assert asyncio.get_running_loop().time() < deadline, "no answer: the host was not woken"
            await asyncio.sleep(0.05)
        assert answer["author"] == rid and list(sup.running) == [rid]
        assert [x["agent"] for x in sup.starts] == [rid]  # started once, by node B's notice
    finally:
        await sup.stop()
