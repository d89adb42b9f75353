"""Revocation on PostgreSQL: tests/hostile/test_revocation.py on one node, then across two nodes.

The hostile suite's four tests run here with `store` fixed to "postgres" (a key revoked, a
membership removed, a role lowered, each by another connection while the socket stays open).
Then the same changes made through node A, or by the admin CLI's connection, must hold on
node B's connections within a second: node B learns of them from the NOTIFY every such write
sends, and its claims check memberships and keys in the database itself.
"""

from __future__ import annotations

import asyncio
import json
import time

import pytest
import websockets

from ygg_server.ops import admin
from tests.hostile.test_revocation import *  # noqa: F401,F403
from tests.hostile.test_revocation import WITHIN, nothing, until


@pytest.fixture
def store() -> str:
    return "postgres"


async def test_a_membership_removed_by_the_cli_holds_back_another_nodes_queue(team):
    """PROTOCOL.md: "A delivery not acked is offered again after a reconnect": on node B too, only while the
    recipient is still in that workspace, though the membership was removed through another connection."""
    other = await team.node()
    url_b = f"ws://127.0.0.1:{other.port}/"
    alice = await team.person("alice")  # node A
    agent = await team.client(url_b, api_key=team.keys["researcher"], prefetch=1)  # node B
    rid = agent.me["id"]
    first = await alice.send(workspace=team.ws, topic="new", title="Queue", to=["researcher"], text="a0")
    topic = first["message"]["topic"]
    for i in range(1, 4):
        assert (await alice.send(workspace=team.ws, topic=topic, to=["researcher"], text=f"a{i}"))["op"] == "sent"
    held = await agent.next_delivery(timeout=5)
    assert held["message"]["text"] == "a0"
    team.conn.execute("DELETE FROM memberships WHERE workspace = ? AND participant = ?", (team.ws, rid))

    async def refused():
        r = await agent.send(workspace=team.ws, topic=topic, to=["@alice"], text="mine")
        return r if r["op"] == "refused" else None

    r, took = await until(refused)
    assert r["reason"] == "unknown_workspace" and took < WITHIN
    await agent.ack([held["id"]])  # room again on node B: its next claim must not take the three queued
    await nothing(agent)
    await agent.close()
    again = await team.client(api_key=team.keys["researcher"])  # and not on node A after a reconnect either
    await nothing(again)
    unacked = team.conn.execute("SELECT count(*) FROM deliveries WHERE recipient = ? AND acked_at IS NULL",
                                (rid,)).fetchone()[0]
    assert unacked == 3, "held back, not acked for it"


async def test_a_role_lowered_through_node_a_holds_on_node_b(team):
    """Seed 002: "People are admin or member of an organization or workspace" (and a viewer only reads): lowered
    through one node's socket, the person's connection on another node loses sending and monitoring."""
    other = await team.node()
    url_b = f"ws://127.0.0.1:{other.port}/"
    alice = await team.person("alice")  # node A
    assert (await alice.request("add_member", workspace=team.ws, handle="bob", role="admin"))["op"] == "add_member"
    bob = await team.person("bob", url=url_b)  # node B
    await bob.subscribe(team.ws, monitor=True)
    t = await alice.send(workspace=team.ws, topic="new", title="Roles", type="inform", to=["@bob"], text="go")
    topic = t["message"]["topic"]

    async def watched():
        return [e for e in bob.pending_events() if e["kind"] == "message"] or None

    await until(watched, within=5)  # monitoring works across nodes before the change
    lowered = await alice.request("add_member", workspace=team.ws, handle="bob", role="viewer")
    assert lowered["op"] == "add_member", lowered

    async def refused():
        r = await bob.send(workspace=team.ws, topic=topic, to=["researcher"], text="as a viewer")
        return r if r["op"] == "refused" else None

    r, took = await until(refused)
    assert r["reason"] == "permission_denied" and took < WITHIN
    await asyncio.sleep(0.3)
    bob.pending_events()
    await alice.send(workspace=team.ws, topic=topic, type="inform", to=["researcher"], text="watched?")
    await asyncio.sleep(0.5)
    assert [e for e in bob.pending_events() if e["kind"] == "message"] == [], "no monitor on node B any more"


async def test_a_key_revoked_by_the_cli_closes_the_agents_sockets_on_every_node(team):
    """docs/protocol.md: "a revoked agent's connections close at once": on node A and on node B."""
    other = await team.node()
    sockets = []
    for url in (team.url, f"ws://127.0.0.1:{other.port}/"):
        ws = await websockets.connect(url)
        await ws.send(json.dumps({"op": "auth", "ref": 1, "api_key": team.keys["researcher"]}))
        assert json.loads(await ws.recv())["op"] == "session"
        sockets.append(ws)
    team.admin(admin.revoke_agent, "researcher@alice")
    started = time.monotonic()

    async def closed(ws):
        with pytest.raises(websockets.ConnectionClosed):
            while True:
                await ws.send(json.dumps({"op": "ping", "ref": 2}))
                await asyncio.wait_for(ws.recv(), WITHIN)
                await asyncio.sleep(0.05)
        return ws.close_code

    codes = await asyncio.gather(*(closed(ws) for ws in sockets))
    assert codes == [1008, 1008] and time.monotonic() - started < WITHIN
