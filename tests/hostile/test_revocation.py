"""Revocation while connected (issue 8): an agent's key revoked, a membership removed, a role lowered to
viewer, each written by another connection (the admin CLI's way), while the socket stays open.

Within a second the open socket stops getting deliveries and events of that workspace and its sends are
refused; deliveries queued before the change are checked again when they would go out, and nothing of
that workspace comes back after a reconnect.
"""

from __future__ import annotations

import asyncio
import json
import time

import pytest
import websockets

from ygg_server import admin

WITHIN = 1.0  # seconds


async def until(check, within: float = WITHIN, step: float = 0.05):
    """Poll `check()` (async) until it returns a truthy value; return (value, seconds taken)."""
    start = time.monotonic()
    while True:
        got = await check()
        if got:
            return got, time.monotonic() - start
        if time.monotonic() - start > within:
            raise AssertionError(f"not within {within} s")
        await asyncio.sleep(step)


async def nothing(client, timeout: float = 0.4) -> None:
    with pytest.raises(asyncio.TimeoutError):
        d = await client.next_delivery(timeout=timeout)
        raise AssertionError(f"unexpected delivery {d['message']['text']!r} from {d['message']['workspace']}")


async def personal(client) -> str:
    return [w["id"] for w in (await client.call("list_workspaces"))["workspaces"] if w["personal"]][0]


async def test_revoked_key_closes_the_socket_and_refuses_everything_within_a_second(team):
    """docs/protocol.md: "a revoked agent's connections close at once"."""
    alice = await team.person("alice")
    ws = await websockets.connect(team.url)
    await ws.send(json.dumps({"op": "auth", "ref": 1, "api_key": team.keys["researcher"]}))
    token = json.loads(await ws.recv())["token"]
    r = await alice.send(workspace=team.ws, topic="new", title="Before", to=["researcher"], text="before")
    assert json.loads(await asyncio.wait_for(ws.recv(), 5))["message"]["text"] == "before"
    team.admin(admin.revoke_agent, "researcher@alice")
    started = time.monotonic()
    with pytest.raises(websockets.ConnectionClosed):
        while True:
            await ws.send(json.dumps({"op": "send", "ref": 2, "workspace": team.ws, "topic": r["message"]["topic"],
                                      "to": ["@alice"], "text": "still here?"}))
            reply = json.loads(await asyncio.wait_for(ws.recv(), WITHIN))
            assert reply["op"] != "sent" or time.monotonic() - started < 0.2, "a send accepted well after the revocation"
            await asyncio.sleep(0.05)
    assert time.monotonic() - started < WITHIN and ws.close_code == 1008
    refused = await alice.send(workspace=team.ws, topic=r["message"]["topic"], to=["researcher"], text="after")
    assert refused["op"] == "refused" and refused["reason"] == "unknown_recipient"
    for creds in ({"api_key": team.keys["researcher"]}, {"token": token}):
        async with websockets.connect(team.url) as again:
            await again.send(json.dumps({"op": "auth", "ref": 3, **creds}))
            assert json.loads(await again.recv())["code"] == "unauthenticated"


async def test_removed_membership_stops_deliveries_queued_before_and_refuses_sends(team):
    """PROTOCOL.md: "A delivery not acked is offered again after a reconnect": but only while the recipient is still in that workspace."""
    alice = await team.person("alice")
    home = await personal(alice)  # researcher goes with alice into her personal workspace too
    agent = await team.client(api_key=team.keys["researcher"], prefetch=1)
    rid = agent.me["id"]
    first = await alice.send(workspace=team.ws, topic="new", title="Queue", to=["researcher"], text="a0")
    for i in range(1, 4):  # one is held (prefetch 1), three wait in the inbox
        assert (await alice.send(workspace=team.ws, topic=first["message"]["topic"], to=["researcher"],
                                 text=f"a{i}"))["op"] == "sent"
    held = await agent.next_delivery(timeout=5)
    assert held["message"]["text"] == "a0"
    team.conn.execute("DELETE FROM memberships WHERE workspace = ? AND participant = ?", (team.ws, rid))

    async def refused():
        r = await agent.send(workspace=team.ws, topic=first["message"]["topic"], to=["@alice"], text="mine")
        assert r["op"] != "sent" or r["message"]["text"] == "mine"
        return r if r["op"] == "refused" else None

    r, took = await until(refused)
    assert r["reason"] == "unknown_workspace", r
    await asyncio.sleep(0.2)
    await agent.ack([held["id"]])  # room again: the three queued wakes are checked before they go out
    await nothing(agent)
    later = await alice.send(workspace=team.ws, topic=first["message"]["topic"], to=["researcher"], text="a4")
    assert later["op"] == "refused" and later["reason"] == "unknown_recipient"
    ok = await alice.send(workspace=home, topic="new", title="Home", to=["researcher"], text="from home")
    assert ok["op"] == "sent"
    d = await agent.next_delivery(timeout=5)
    assert d["message"]["text"] == "from home", "its other workspace still reaches it"
    await agent.ack([d["id"]])
    await agent.close()
    again = await team.client(api_key=team.keys["researcher"])
    await nothing(again)  # after a reconnect too
    unacked = team.conn.execute("SELECT count(*) FROM deliveries WHERE recipient = ? AND acked_at IS NULL",
                                (rid,)).fetchone()[0]
    assert unacked == 3, "the queued ones are held back, not acked for it"


async def test_removed_person_gets_no_backlog_no_events_and_cannot_send(team):
    """docs/protocol.md: "`{"op":"subscribe","ref":…,"workspace":"…","monitor":false}` answers `subscribed`; then the connection gets ... events": only while a member."""
    alice = await team.person("alice")
    bob_id = team.conn.execute("SELECT id FROM people WHERE handle = 'bob'").fetchone()[0]
    team.admin(admin.add_member, team.ws, "bob", "admin")  # an admin monitors the workspace
    watcher = await team.person("bob")
    await watcher.subscribe(team.ws, monitor=True)
    t = await alice.send(workspace=team.ws, topic="new", title="Seen", type="inform", to=["@bob"], text="b0")
    topic = t["message"]["topic"]
    assert (await watcher.next_delivery(timeout=5))["message"]["text"] == "b0"
    while True:
        e = await watcher.next_event(timeout=5)
        if e["kind"] == "message":
            break
    for i in range(1, 4):  # queued for bob's next device
        await alice.send(workspace=team.ws, topic=topic, type="inform", to=["@bob"], text=f"b{i}")
    team.conn.execute("DELETE FROM memberships WHERE workspace = ? AND participant = ?", (team.ws, bob_id))

    async def refused():
        r = await watcher.send(workspace=team.ws, topic=topic, to=["@alice"], text="mine")
        return r if r["op"] == "refused" else None

    r, _ = await until(refused)
    assert r["reason"] == "unknown_workspace"
    await asyncio.sleep(0.2)
    watcher.pending_events()
    while watcher.pending_deliveries():
        await watcher.next_delivery(timeout=1)
    await alice.send(workspace=team.ws, topic=topic, type="inform", to=["researcher"], text="after")
    await alice.call("fund", workspace=team.ws, pool=True, amount=1)
    await asyncio.sleep(0.3)
    assert [e for e in watcher.pending_events() if e.get("workspace", e.get("topic", {}).get("workspace",
            e.get("message", {}).get("workspace"))) == team.ws] == []
    laptop = await team.person("bob")  # a new device: none of the backlog of a workspace bob left
    await nothing(laptop)
    assert (await laptop.request("history", workspace=team.ws))["code"] == "not_found"


async def test_role_lowered_to_viewer_refuses_sends_and_stops_monitoring_within_a_second(team):
    """Seed 002: "People are admin or member of an organization or workspace" (and a viewer only reads): lowered while connected, the next send is refused."""
    alice = await team.person("alice")
    agent = await team.client(api_key=team.keys["researcher"])
    rid = agent.me["id"]
    bob_id = team.conn.execute("SELECT id FROM people WHERE handle = 'bob'").fetchone()[0]
    team.admin(admin.add_member, team.ws, "bob", "admin")
    bob = await team.person("bob")
    await bob.subscribe(team.ws, monitor=True)
    t = await alice.send(workspace=team.ws, topic="new", title="Roles", to=["researcher"], text="go")
    topic = t["message"]["topic"]
    wallet = team.conn.execute("SELECT balance FROM wallets WHERE account = ?", (rid,)).fetchone()[0]
    team.conn.execute("UPDATE memberships SET role = 'viewer' WHERE workspace = ? AND participant IN (?, ?)",
                      (team.ws, rid, bob_id))

    async def refused():
        r = await agent.send(workspace=team.ws, topic=topic, to=["@alice"], text="answer")
        return r if r["op"] == "refused" else None

    r, _ = await until(refused)
    assert r["reason"] == "permission_denied"
    r = await bob.send(workspace=team.ws, topic=topic, to=["researcher"], text="as a viewer")
    assert r["op"] == "refused" and r["reason"] == "permission_denied"
    assert team.conn.execute("SELECT balance FROM wallets WHERE account = ?", (rid,)).fetchone()[0] <= wallet
    await asyncio.sleep(0.3)
    bob.pending_events()
    await alice.send(workspace=team.ws, topic=topic, type="inform", to=["researcher"], text="watched?")
    await asyncio.sleep(0.3)
    assert [e for e in bob.pending_events() if e["kind"] == "message"] == [], "a viewer without monitor: no message events"
    r = await bob.request("subscribe", workspace=team.ws, monitor=True)
    assert r["op"] == "error" and r["code"] == "forbidden"
    # a viewer still reads (docs/rules.md: "viewer reads only")
    assert (await bob.call("history", workspace=team.ws))["messages"]
