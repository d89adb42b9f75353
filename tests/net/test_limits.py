"""Limits: the connection's bounds (docs/protocol.md) and the plans' (seed 002), over real websockets.

Each test quotes the sentence it checks.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time

import pytest
import websockets

from ygg_server.ops import admin
from ygg_server.clock import now_us

from .test_org import balance, messages, set_usage, usage
from .test_sessions import PW, ask, closed_with, serving

pytestmark = pytest.mark.backends("sqlite", "postgres")

DAY = 86_400_000_000


# --- the connection's bounds ---

async def test_no_auth_within_the_auth_timeout_closes(tmp_path):
    """docs/protocol.md: "10 s to authenticate after it (then close 1008)"."""
    async with serving(tmp_path, auth_timeout=0.5) as s:
        started = time.monotonic()
        async with websockets.connect(s.url) as ws:
            assert await closed_with(ws) == 1008
        assert time.monotonic() - started < 3


async def test_frames_without_auth_do_not_extend_the_auth_timeout(tmp_path):
    """docs/protocol.md: "10 s to authenticate after it (then close 1008)": a deadline, however chatty the client."""
    async with serving(tmp_path, auth_timeout=1.0) as s:
        started = time.monotonic()
        async with websockets.connect(s.url) as ws:
            with pytest.raises(websockets.ConnectionClosed):
                while time.monotonic() - started < 6:
                    await ws.send(json.dumps({"op": "ping", "ref": 1}))
                    assert json.loads(await asyncio.wait_for(ws.recv(), 5))["code"] == "unauthenticated"
                    await asyncio.sleep(0.2)
            assert ws.close_code == 1008
        assert time.monotonic() - started < 3


async def test_oversized_frame_closes_with_1009(team):
    """docs/protocol.md: "Frames larger than 1 MiB close the connection with code **1009**"."""
    alice = await team.person("alice")
    async with websockets.connect(team.url) as ws:
        assert (await ask(ws, {"op": "auth", "ref": 1, "token": alice.token}))["op"] == "session"
        await ws.send(json.dumps({"op": "send", "ref": 2, "workspace": team.ws, "text": "x" * (1 << 20)}))
        assert await closed_with(ws) == 1009
    async with websockets.connect(team.url) as ws:  # before authenticating too
        await ws.send("x" * ((1 << 20) + 1))
        assert await closed_with(ws) == 1009


async def test_idle_connection_is_closed(tmp_path):
    """docs/protocol.md: "10 minutes without a frame or a pong (close 1000 "idle"; the client library reconnects)"."""
    async with serving(tmp_path, idle_timeout=0.6) as s:
        s.admin(admin.add_person, "alice", PW)
        async with websockets.connect(s.url) as ws:
            assert (await ask(ws, {"op": "auth", "ref": 1, "handle": "alice", "password": PW}))["op"] == "session"
            for i in range(4):  # frames keep it open
                await asyncio.sleep(0.3)
                assert (await ask(ws, {"op": "ping", "ref": i}))["op"] == "pong"
            started = time.monotonic()
            assert await closed_with(ws) == 1000
            assert ws.close_reason == "idle" and time.monotonic() - started < 2


async def test_a_quiet_connection_that_answers_pings_is_not_idle(tmp_path):
    """Seed 003: "Each agent's app keeps a channel open over WebSocket, subscribed to exactly that topic": an agent
    with nothing to say whose socket answers the keepalive pings stays connected past the idle bound."""
    async with serving(tmp_path, idle_timeout=0.6, ping_interval=0.1, ping_timeout=5.0) as s:
        s.admin(admin.add_person, "alice", PW)
        key = s.admin(admin.add_agent, "quiet", "alice")["api_key"]
        async with websockets.connect(s.url) as ws:  # websockets answers pings by itself
            assert (await ask(ws, {"op": "auth", "ref": 1, "api_key": key}))["op"] == "session"
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(ws.recv(), 2.0)  # 3x idle_timeout without a frame either way
            assert (await ask(ws, {"op": "ping", "ref": 2}))["op"] == "pong", "still connected"


# --- plans ---

async def test_free_plan_301st_message_of_the_month_is_refused(team):
    """Seed 002: "An organization's plan sets how many messages it can send a month" (Free: 300).

    Seed 002: "A message to several agents counts once per recipient"."""
    team.admin(admin.set_plan, "alice", "free")
    alice = await team.person("alice")
    researcher = await team.client(api_key=team.keys["researcher"])
    set_usage(team, team.ws, 298)
    topic = (await alice.send(workspace=team.ws, topic="new", title="Plan", type="inform", to=["researcher"],
                              text="299th"))["message"]["topic"]
    two = await alice.send(workspace=team.ws, topic=topic, type="inform", to=["researcher", "reviewer"], text="2 more")
    assert two["op"] == "refused" and two["reason"] == "plan_limit", "two recipients count twice"
    ok = await alice.send(workspace=team.ws, topic=topic, type="inform", to=["researcher"], text="300th")
    assert ok["op"] == "sent" and usage(team, team.ws) == 300
    before = messages(team)
    wallet = await balance(alice, team.ws, researcher.me["id"])
    r = await alice.send(workspace=team.ws, topic=topic, type="inform", to=["researcher"], text="301st")
    assert r["op"] == "refused" and r["reason"] == "plan_limit", r
    r = await researcher.send(workspace=team.ws, topic=topic, type="inform", to=["@alice"], text="301st")
    assert r["op"] == "refused" and r["reason"] == "plan_limit", r
    assert messages(team) == before and usage(team, team.ws) == 300
    assert await balance(alice, team.ws, researcher.me["id"]) == wallet, "nothing charged"
    team.admin(admin.set_plan, "alice", "team")
    r = await alice.send(workspace=team.ws, topic=topic, type="inform", to=["researcher"], text="licensed")
    assert r["op"] == "sent"


async def test_free_plan_connects_five_agents(team):
    """Seed 002: "how many agents it can connect" (Free: 5) ... "An agent counts once per organization it is in, while its token is valid"."""
    team.admin(admin.set_plan, "alice", "free")
    for name in ("a3", "a4", "a5"):
        team.admin(admin.add_agent, name, "alice")
    with pytest.raises(admin.AdminError) as e:
        team.admin(admin.add_agent, "a6", "alice")
    assert e.value.code == "plan_limit"
    team.admin(admin.revoke_agent, "a5@alice")  # a revoked token no longer counts
    team.admin(admin.add_agent, "a6", "alice")
    team.admin(admin.set_plan, "alice", "team")
    team.admin(admin.add_agent, "a7", "alice")


async def test_free_plan_workspaces_limit(team):
    """Seed 002: "how many workspaces it can have" (Free: 1, Team: unlimited)."""
    team.admin(admin.set_plan, "alice", "free")
    with pytest.raises(admin.AdminError) as e:
        team.admin(admin.add_workspace, "second", "alice")
    assert e.value.code == "plan_limit"
    for i in range(3):
        team.admin(admin.add_workspace, f"bob-{i}", "bob")  # bob's organization is on Team


async def test_each_person_gets_one_free_organization(team):
    """Seed 002: "Each person gets one Free organization." and everyone "can create or join more": an
    organization a person creates is Free (their one), a second Free one is refused free_org_limit, by the
    socket and the admin commands alike; more need a Team plan, which the operator sets."""
    bob = await team.person("bob")  # his own organization is on Team (a self-hosted server's default)
    acme = await bob.call("create_org", name="Acme")
    assert acme["plan"] == "free"
    orgs = {o["name"]: o for o in (await bob.call("list_orgs"))["orgs"]}
    assert orgs["Acme"]["role"] == "owner" and orgs["Acme"]["plan"] == "free" and orgs["Acme"]["agents"] == 5
    assert orgs["Acme"]["messages_per_month"] == 300 and orgs["Acme"]["messages_this_month"] == 0
    assert len(orgs) == 2 and orgs["bob's organization"]["plan"] == "team"
    again = await bob.request("create_org", name="Beta")
    assert again["op"] == "error" and again["code"] == "free_org_limit", again
    for fn, args in ((admin.add_org, ("Beta", "bob", "free")), (admin.set_plan, ("bob", "free"))):
        with pytest.raises(admin.AdminError) as e:
            team.admin(fn, *args)
        assert e.value.code == "free_org_limit"
    assert (await bob.call("create_workspace", name="ops", org=acme["id"]))["org"] == acme["id"]
    full = await bob.request("create_workspace", name="ops2", org=acme["id"])
    assert full["code"] == "plan_limit", "Acme has the Free plan's limits (1 workspace)"
    assert team.admin(admin.add_org, "Gamma", "bob", "team")["plan"] == "team"  # the operator's Team ones
    team.admin(admin.set_plan, acme["id"], "team", 1000)  # Acme is licensed now: bob's Free one is free again
    assert (await bob.call("create_org", name="Beta"))["plan"] == "free"
    assert (await bob.call("create_workspace", name="ops2", org=acme["id"]))["org"] == acme["id"]


async def test_team_plan_is_as_licensed(team):
    """Seed 002: Team's agents are "one per 100 messages, at least 50" and its messages a month as licensed:
    the operator sets the organization's licensed messages (set-plan ORG team --licensed N); none: not metered."""
    out = team.admin(admin.set_plan, "alice", "team", 3)
    assert (out["messages_per_month"], out["agents"]) == (3, 50)
    with pytest.raises(admin.AdminError) as e:
        team.admin(admin.set_plan, "alice", "free", 3)
    assert e.value.code == "bad_plan", "only a Team plan is licensed"
    alice = await team.person("alice")
    set_usage(team, team.ws, 2)
    ok = await alice.send(workspace=team.ws, topic="new", title="Plan", type="inform", to=["researcher"], text="3rd")
    assert ok["op"] == "sent", ok
    r = await alice.send(workspace=team.ws, topic=ok["message"]["topic"], type="inform", to=["researcher"], text="4th")
    assert r["op"] == "refused" and r["reason"] == "plan_limit", r
    for i in range(48):  # researcher, reviewer and 48 more: the 50 of any licence under 5,000
        team.admin(admin.add_agent, f"a{i}", "alice")
    with pytest.raises(admin.AdminError) as e:
        team.admin(admin.add_agent, "a51", "alice")
    assert e.value.code == "plan_limit"
    assert team.admin(admin.set_plan, "alice", "team", 5100)["agents"] == 51  # one per 100 messages
    team.admin(admin.add_agent, "a51", "alice")
    r = await alice.send(workspace=team.ws, topic=ok["message"]["topic"], type="inform", to=["researcher"], text="4th")
    assert r["op"] == "sent", r
    orgs = (await alice.call("list_orgs"))["orgs"]
    (own,) = [o for o in orgs if o["role"] == "owner"]
    assert (own["plan"], own["licensed"], own["messages_per_month"], own["agents"]) == ("team", 5100, 5100, 51)
    assert own["messages_this_month"] == 4 and own["workspaces"] is None and own["history_days"] == 90
    assert team.admin(admin.set_plan, "alice", "team")["messages_per_month"] is None  # no licence: not metered
    team.admin(admin.add_agent, "a52", "alice")
    (own,) = [o for o in (await alice.call("list_orgs"))["orgs"] if o["role"] == "owner"]
    assert own["messages_per_month"] is None and own["messages_this_month"] is None and own["agents"] is None


async def test_the_months_count_shown_is_the_one_the_plan_limit_counts(team):
    """Seed 002: "A message to several agents counts once per recipient. The monthly count resets on the 1st
    (UTC)." list_orgs' `messages_this_month` is the count the limit is checked against, with the messages sent
    while the plan was not metered (on PostgreSQL each node counts those on its own row)."""
    alice = await team.person("alice")
    ok = await alice.send(workspace=team.ws, topic="new", title="Count", type="inform", to=["researcher"], text="1")
    assert ok["op"] == "sent", ok
    topic = ok["message"]["topic"]
    for text in ("2", "3"):
        r = await alice.send(workspace=team.ws, topic=topic, type="inform", to=["researcher"], text=text)
        assert r["op"] == "sent", r

    async def shown():
        (own,) = [o for o in (await alice.call("list_orgs"))["orgs"] if o["role"] == "owner"]
        return own["messages_this_month"]

    team.admin(admin.set_plan, "alice", "team", 4)  # metered now: room for one more message
    assert await shown() == 3
    r = await alice.send(workspace=team.ws, topic=topic, type="inform", to=["researcher"], text="4")
    assert r["op"] == "sent", r
    r = await alice.send(workspace=team.ws, topic=topic, type="inform", to=["researcher"], text="5")
    assert r["op"] == "refused" and r["reason"] == "plan_limit", r
    assert await shown() == 4


@pytest.mark.backends("sqlite", "postgres")  # reaches into the writer, in another process on "process"
async def test_history_past_the_plans_window_is_not_searchable(team):
    """Seed 002: "A message belongs to one workspace, and stays searchable for as long as the organization's plan keeps history" (Free: 7 days, Team: 90)."""
    alice = await team.person("alice")
    writer = team.gw.writer
    writer.clock = lambda: now_us() - 8 * DAY  # this message was written 8 days ago
    try:
        old = await alice.send(workspace=team.ws, topic="new", title="Old", type="inform", to=["researcher"],
                               text="the zeppelin plan")
    finally:
        writer.clock = now_us
    assert old["op"] == "sent"
    new = await alice.send(workspace=team.ws, topic="new", title="New", type="inform", to=["researcher"],
                           text="the zeppelin budget")

    async def found(query):
        return [m["id"] for m in (await alice.call("search_messages", workspace=team.ws, query=query))["messages"]]

    async def shown():
        return [m["id"] for m in (await alice.call("history", workspace=team.ws, conversation="general"))["messages"]]

    assert await found("zeppelin") == [new["message"]["id"], old["message"]["id"]]
    assert old["message"]["id"] in await shown()
    team.admin(admin.set_plan, "alice", "free")
    assert await found("zeppelin") == [new["message"]["id"]]
    assert await found("zeppelin plan") == []
    assert old["message"]["id"] not in await shown()


# --- slow readers and prefetch ---

async def test_slow_reader_is_dropped_and_gets_its_deliveries_again(tmp_path, caplog):
    """docs/protocol.md: "a slow reader with 10,000 frames queued is dropped (1013) and gets its unacked deliveries again when it reconnects"."""
    async with serving(tmp_path, outgoing=4) as s:
        s.admin(admin.add_person, "alice", PW)
        bob_id = s.admin(admin.add_person, "bob", PW)["id"]
        ws = s.admin(admin.add_workspace, "team", "alice")["id"]
        s.admin(admin.add_member, ws, "bob")
        alice = await s.person("alice", PW)
        sock = socket.socket()  # a small receive buffer, no compression, and bob stops reading
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", s.gw.port))
        sent = []
        async with websockets.connect(s.url, sock=sock, max_size=None, max_queue=1, compression=None) as slow:
            assert (await ask(slow, {"op": "auth", "ref": 1, "handle": "bob", "password": PW}))["op"] == "session"
            slow.transport.pause_reading()
            topic = "new"
            for i in range(50):  # ~7.5 MB bob does not read: the socket's buffers fill, then the queue
                r = await alice.send(workspace=ws, topic=topic, title="Flood", type="inform", to=["@bob"],
                                     text=f"{i} " + "x" * 150_000)
                assert r["op"] == "sent"
                topic = r["message"]["topic"]
                sent.append(r["message"]["id"])
            for _ in range(100):  # a reader that cannot even take the close frame is cut off after a grace
                if bob_id not in s.gw.conns:
                    break
                await asyncio.sleep(0.1)
            assert bob_id not in s.gw.conns, "the slow reader was dropped"
            slow.transport.resume_reading()
            with pytest.raises(websockets.ConnectionClosed):
                while True:
                    await asyncio.wait_for(slow.recv(), 15)
        drops = [r for r in caplog.records if "dropping slow connection" in r.getMessage()]
        assert len(drops) == 1, "dropped once, not once per frame that followed"
        bob = await s.person("bob", PW)
        got = []
        while len(got) < len(sent):
            got.append((await bob.next_delivery(timeout=10))["message"]["id"])
        assert got == sent, "every unacked delivery comes again, in order"


async def test_a_backlog_larger_than_the_outgoing_bound_is_not_slowness(tmp_path):
    """PROTOCOL.md: "A delivery not acked is offered again after a reconnect", however many piled up while away."""
    async with serving(tmp_path, outgoing=4) as s:
        s.admin(admin.add_person, "alice", PW)
        s.admin(admin.add_person, "bob", PW)
        ws = s.admin(admin.add_workspace, "team", "alice")["id"]
        s.admin(admin.add_member, ws, "bob")
        alice = await s.person("alice", PW)
        first = await alice.send(workspace=ws, topic="new", title="Away", type="inform", to=["@bob"], text="0")
        sent = [first["message"]["id"]]
        for i in range(1, 20):  # bob is away: 20 deliveries pile up, 5 times the bound
            r = await alice.send(workspace=ws, topic=first["message"]["topic"], type="inform", to=["@bob"], text=str(i))
            sent.append(r["message"]["id"])
        bob = await s.person("bob", PW)
        got = [(await bob.next_delivery(timeout=5))["message"]["id"] for _ in sent]
        assert got == sent and bob.reconnects == 0


async def test_prefetch_bounds_the_wakes_one_connection_holds(team):
    """docs/protocol.md: "`"prefetch": N` (1..256, default 16): how many wakes one agent connection may hold unacked"."""
    alice = await team.person("alice")
    agent = await team.client(api_key=team.keys["researcher"], prefetch=2)
    first = await alice.send(workspace=team.ws, topic="new", title="Many", to=["researcher"], text="0")
    for i in range(1, 5):
        await alice.send(workspace=team.ws, topic=first["message"]["topic"], to=["researcher"], text=str(i))
    held = [await agent.next_delivery(timeout=5) for _ in range(2)]
    with pytest.raises(asyncio.TimeoutError):
        await agent.next_delivery(timeout=0.3)
    await agent.ack([held[0]["id"]])
    third = await agent.next_delivery(timeout=5)
    assert [d["message"]["text"] for d in (*held, third)] == ["0", "1", "2"]
    other = await team.client(api_key=team.keys["researcher"], prefetch=1)  # a second connection takes the next
    assert (await other.next_delivery(timeout=5))["message"]["text"] == "3"


# --- the server's own connections ---

async def test_a_cancelled_or_closing_read_never_shares_the_reader_connection(tmp_path):
    """docs/architecture.md: "read-only questions (history, search, lists), on a reader connection": one query on it at a time, and no close under a query."""
    async with serving(tmp_path) as s:
        busy, overlaps = [0], []

        def slow(conn, tag):
            busy[0] += 1
            overlaps.append(busy[0])
            time.sleep(0.3)
            try:
                return conn.execute("SELECT ?", (tag,)).fetchone()[0]
            finally:
                busy[0] -= 1

        first = asyncio.ensure_future(s.gw.read(slow, 1))
        await asyncio.sleep(0.05)
        first.cancel()  # the await is cancelled; its thread goes on with the connection
        assert await s.gw.read(slow, 2) == 2
        assert max(overlaps) == 1, "two threads used the reader connection at once"
        last = asyncio.ensure_future(s.gw.read(slow, 3))
        await asyncio.sleep(0.05)
    assert await last == 3, "the server closed the reader under a running query"


async def test_the_client_library_sends_a_whole_message_of_any_script(team):
    """docs/protocol.md: "one JSON object per text frame, UTF-8. Frames larger than 1 MiB close"; a message
    holds "up to 200,000 characters". The client library writes text as UTF-8, not as \\u escapes (6 bytes a
    character, 12 for one outside the BMP): a whole message in Chinese, or of emoji, fits in a frame."""
    alice = await team.person("alice")
    for text in ("语" * 200_000, "🌳" * 200_000):
        sent = await alice.call("send", workspace=team.ws, topic="new", title="long", type="inform", text=text)
        assert sent["op"] == "sent"
        page = await alice.call("history", workspace=team.ws, topic=sent["message"]["topic"])
        assert [m["text"] for m in page["messages"]] == [text]
