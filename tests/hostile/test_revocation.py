"""Revocation while connected (issue 8): an agent's key revoked, a membership removed, a role lowered to
viewer, each written by another connection (the admin CLI's way), while the socket stays open.

Within a second the open socket stops getting deliveries and events of that workspace and its sends are
refused; deliveries queued before the change are checked again when they would go out, and nothing of
that workspace comes back after a reconnect.

On PostgreSQL, the same changes made through node A, or by the admin CLI's connection, must hold on
node B's connections within a second too: node B learns of them from the NOTIFY every such write
sends, and its claims check memberships and keys in the database itself (the last three tests).
"""

from __future__ import annotations

import asyncio
import json
import time

import pytest
import websockets

from ygg_server.ops import admin

pytestmark = pytest.mark.backends("sqlite", "postgres")

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


async def test_deleted_workspace_stops_deliveries_queued_before_and_subscriptions(team):
    """Seed 003 §66: the owner keeps "deleting the workspace"; §65: a personal workspace "can never be deleted".

    Deleted over the socket while an agent holds one of its deliveries and three more wait: within a second
    its sends there are refused, the queued ones never go out (nor after a reconnect), followers hear nothing
    more of it, its ids answer as ids that never existed; the agent's other workspace still reaches it."""
    alice = await team.person("alice")
    home = await personal(alice)
    agent = await team.client(api_key=team.keys["researcher"], prefetch=1)
    bob = await team.person("bob")
    await bob.subscribe(team.ws)
    first = await alice.send(workspace=team.ws, topic="new", title="Doomed", to=["researcher"], text="d0")
    for i in range(1, 4):
        assert (await alice.send(workspace=team.ws, topic=first["message"]["topic"], to=["researcher"],
                                 text=f"d{i}"))["op"] == "sent"
    held = await agent.next_delivery(timeout=5)
    assert held["message"]["text"] == "d0"
    forbidden = await bob.request("delete_workspace", workspace=team.ws)  # a member
    assert forbidden["op"] == "error" and forbidden["code"] == "forbidden", forbidden
    kept = await alice.request("delete_workspace", workspace=home)
    assert kept["op"] == "error" and kept["code"] == "personal_workspace", kept
    gone = await alice.call("delete_workspace", workspace=team.ws)
    assert gone["id"] == team.ws and gone["deleted"] is True

    async def refused():
        r = await agent.send(workspace=team.ws, topic=first["message"]["topic"], to=["@alice"], text="mine")
        return r if r["op"] == "refused" else None

    r, _ = await until(refused)
    assert r["reason"] == "unknown_workspace", r
    await asyncio.sleep(0.2)
    bob.pending_events()
    await agent.ack([held["id"]])
    await nothing(agent)
    assert (await alice.request("history", workspace=team.ws))["code"] == "not_found"
    assert (await alice.request("delete_workspace", workspace=team.ws))["code"] == "not_found"
    assert team.ws not in [w["id"] for w in (await bob.call("list_workspaces"))["workspaces"]]
    ok = await alice.send(workspace=home, topic="new", title="Home", to=["researcher"], text="zeppelin at home")
    assert ok["op"] == "sent"
    d = await agent.next_delivery(timeout=5)
    assert d["message"]["text"] == "zeppelin at home"
    await agent.ack([d["id"]])
    found = (await alice.call("search_messages", workspace=home, query="zeppelin"))["messages"]
    assert [m["id"] for m in found] == [ok["message"]["id"]], "the full-text index still answers"
    assert [e for e in bob.pending_events() if team.ws in json.dumps(e)] == []
    await agent.close()
    again = await team.client(api_key=team.keys["researcher"])
    await nothing(again)
    left = team.conn.execute("SELECT count(*) FROM messages WHERE workspace = ?", (team.ws,)).fetchone()[0]
    assert left == 0 and team.conn.execute("SELECT count(*) FROM memberships WHERE workspace = ?",
                                            (team.ws,)).fetchone()[0] == 0
    assert (await alice.call("create_workspace", name="team"))["name"] == "team", "its name is free again"


async def test_leaving_an_organization_takes_its_workspaces_away_within_a_second(team):
    """Seed 002: everyone "can create or join more" organizations, and leave them: bob's memberships
    through alice's organization go, with his agent's there, its queued deliveries held back; a workspace
    he was added to directly stays; the organization's last owner cannot leave it."""
    alice = await team.person("alice")
    org = [w["org"] for w in (await alice.call("list_workspaces"))["workspaces"] if w["id"] == team.ws][0]
    scout = team.admin(admin.add_agent, "scout", "bob")
    team.admin(admin.fund, "scout", 100)
    team.admin(admin.add_org_member, org, "bob")
    ops = (await alice.call("create_workspace", name="ops"))["id"]  # bob and scout reach it through the org
    agent = await team.client(api_key=scout["api_key"], prefetch=1)
    bob = await team.person("bob")
    await bob.subscribe(ops)
    first = await alice.send(workspace=ops, topic="new", title="Ops", to=["scout"], text="o0")
    for i in range(1, 4):
        assert (await alice.send(workspace=ops, topic=first["message"]["topic"], to=["scout"], text=f"o{i}"))["op"] == "sent"
    held = await agent.next_delivery(timeout=5)
    owner = await alice.request("leave_org", org=org)
    assert owner["op"] == "error" and owner["code"] == "last_owner", owner
    out = await bob.call("leave_org", org=org)
    assert out["left"] == [ops], "team, which he was added to directly, stays"

    async def refused():
        r = await agent.send(workspace=ops, topic=first["message"]["topic"], to=["@alice"], text="mine")
        return r if r["op"] == "refused" else None

    r, _ = await until(refused)
    assert r["reason"] == "unknown_workspace", r
    await asyncio.sleep(0.2)
    await agent.ack([held["id"]])
    await nothing(agent)
    assert (await bob.request("history", workspace=ops))["code"] == "not_found"
    assert (await bob.request("leave_org", org=org))["code"] == "not_found", "no longer in it"
    assert {w["id"] for w in (await bob.call("list_workspaces"))["workspaces"]} >= {team.ws}
    later = await alice.send(workspace=ops, topic=first["message"]["topic"], to=["scout"], text="o4")
    assert later["op"] == "refused" and later["reason"] == "unknown_recipient"
    await agent.close()
    await nothing(await team.client(api_key=scout["api_key"]))


# --- across two nodes: PostgreSQL ---

@pytest.mark.backends("postgres")
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


@pytest.mark.backends("postgres")
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


@pytest.mark.backends("postgres")
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
