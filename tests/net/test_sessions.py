"""Sessions, the handshake and the connection's bounds, over real websockets (issue 3).

Each test quotes the sentence of seed 003 or of PROTOCOL.md / docs/protocol.md it checks.
"""

from __future__ import annotations

import asyncio
import json
import time
from datetime import datetime, timezone

import pytest
import websockets
from websockets.exceptions import InvalidStatus

from ygg_server.ops import admin, auth
from ygg_server.net.gateway import Limits
from ygg_server.protocol.times import iso
from ygg_server.store import sqlite as db

from tests import backends

pytestmark = pytest.mark.backends("sqlite", "process", "postgres")

PW = "pw-" + "x" * 8


def serving(tmp_path, **limits):
    """A server like the `server` fixture (SQLite, the writer on a thread), with the Limits a test needs."""
    return backends.serving("sqlite", db.db_path(tmp_path), Limits(**limits))


async def ask(ws, frame: dict) -> dict:
    await ws.send(json.dumps(frame))
    return json.loads(await asyncio.wait_for(ws.recv(), 5))


async def closed_with(ws, timeout: float = 5) -> int:
    """Read until the server closes; return its close code."""
    with pytest.raises(websockets.ConnectionClosed):
        while True:
            await asyncio.wait_for(ws.recv(), timeout)
    return ws.close_code


# --- credentials ---

async def test_api_key_is_exchanged_for_a_session_token_that_resumes(team):
    """Seed 003: "an agent instead has a long-lived API key that it exchanges for a short-lived session token before doing anything else"."""
    key = team.keys["researcher"]
    async with websockets.connect(team.url) as ws:
        s = await ask(ws, {"op": "auth", "ref": 1, "api_key": key})
    assert s["op"] == "session" and s["ref"] == 1 and s["me"]["kind"] == "agent" and s["me"]["handle"] == "researcher"
    token = s["token"]
    assert token.startswith("yggs_") and token != key
    lifetime = auth.AGENT_SESSION / 1e6
    expires = time.mktime(time.strptime(s["expires_at"][:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone
    assert abs(expires - time.time() - lifetime) < 60, "an agent's session is short-lived (an hour)"
    async with websockets.connect(team.url) as ws:
        again = await ask(ws, {"op": "auth", "ref": 2, "token": token})
        assert again["op"] == "session" and again["me"] == s["me"] and again["token"] == token
        assert (await ask(ws, {"op": "whoami", "ref": 3}))["id"] == s["me"]["id"]


async def test_api_key_is_never_a_session_token(team):
    """Seed 003: "The key is never used directly as the credential of an ordinary request"."""
    key = team.keys["researcher"]
    async with websockets.connect(team.url) as ws:
        err = await ask(ws, {"op": "auth", "ref": 1, "token": key})
        assert err == {"op": "error", "ref": 1, "code": "unauthenticated", "detail": err["detail"]}
        err = await ask(ws, {"op": "whoami", "ref": 2})
        assert err["code"] == "unauthenticated", "still not signed in"
    # nor on the upgrade request
    async with websockets.connect(team.url, additional_headers={"Authorization": f"Bearer {key}"}) as ws:
        err = json.loads(await asyncio.wait_for(ws.recv(), 5))
        assert err["op"] == "error" and err["code"] == "unauthenticated"
        assert await closed_with(ws) == 1008


async def test_session_token_is_not_an_api_key(team):
    """PROTOCOL.md: "The API key is accepted only by `auth`; it is never a session token"."""
    async with websockets.connect(team.url) as ws:
        token = (await ask(ws, {"op": "auth", "ref": 1, "api_key": team.keys["reviewer"]}))["token"]
    async with websockets.connect(team.url) as ws:
        err = await ask(ws, {"op": "auth", "ref": 1, "api_key": token})
        assert err["op"] == "error" and err["code"] == "unauthenticated"


def _off_by_one(secret: str, at: int) -> str:
    c = secret[at]
    return secret[:at] + ("A" if c != "A" else "B") + secret[at + 1:]


async def test_wrong_password_or_key_one_character_off_is_unauthenticated(team):
    """PROTOCOL.md: "or `{"op":"error","ref":1,"code":"unauthenticated"}`" for credentials that are not valid."""
    key = team.keys["researcher"]
    attempts = [
        {"handle": "alice", "password": PW + "!"},
        {"handle": "alice", "password": PW[:-1]},
        {"handle": "nobody", "password": PW},
        {"handle": "alice", "password": 5},
        {"api_key": _off_by_one(key, len(key) - 1)},  # the secret
        {"api_key": _off_by_one(key, 6)},  # the key id
        {"api_key": key[:-1]},
        {"api_key": key + "x"},
        {"api_key": ["not", "a", "key"]},
        {"token": "yggs_" + "A" * 43},
    ]
    for i, creds in enumerate(attempts):
        async with websockets.connect(team.url) as ws:
            err = await ask(ws, {"op": "auth", "ref": i, **creds})
            assert err["op"] == "error" and err["code"] == "unauthenticated" and err["ref"] == i, (creds, err)
            if i == 0:
                ok = await ask(ws, {"op": "auth", "ref": "again", "handle": "alice", "password": PW})
                assert ok["op"] == "session", "the connection stayed usable"


async def test_expired_token_is_refused(team):
    """docs/protocol.md: "An expired session gets `unauthenticated` and the connection closes with 1008"."""
    now = time.time_ns() // 1000
    dead, _ = auth.new_session(team.conn, team.alice, now, -1)
    async with websockets.connect(team.url) as ws:
        err = await ask(ws, {"op": "auth", "ref": 1, "token": dead})
        assert err["code"] == "unauthenticated"
    async with websockets.connect(team.url, additional_headers={"Authorization": f"Bearer {dead}"}) as ws:
        assert json.loads(await asyncio.wait_for(ws.recv(), 5))["code"] == "unauthenticated"
        assert await closed_with(ws) == 1008
    # a session that expires while its connection is open
    short, _ = auth.new_session(team.conn, team.alice, now, 1_500_000)
    async with websockets.connect(team.url) as ws:
        assert (await ask(ws, {"op": "auth", "ref": 1, "token": short}))["op"] == "session"
        assert (await ask(ws, {"op": "ping", "ref": 2}))["op"] == "pong"
        await asyncio.sleep(max(0.0, (now + 1_600_000) / 1e6 - time.time()))
        await ws.send(json.dumps({"op": "ping", "ref": 3}))
        err = json.loads(await asyncio.wait_for(ws.recv(), 5))
        assert err["code"] == "unauthenticated" and err["ref"] in (3, None)  # None: the sweeper said it first
        assert await closed_with(ws) == 1008 and ws.close_reason == "session expired"


@pytest.mark.backends("sqlite", "postgres")  # (the writer in its own process reads the one clock: no test's)
async def test_a_session_expires_when_the_servers_clock_passes_its_expires_at(backend, database):
    """docs/protocol.md: "An expired session gets `unauthenticated` and the connection closes with 1008": expired by
    the server's clock, the one its writer was given (here a test's, set in 2001: by the wall clock every session
    made then is long gone). The gateway judges sessions by it, so the session lives until that clock passes its
    expires_at, and ends then, with no time passing for real."""
    now = [int(datetime(2001, 1, 1, tzinfo=timezone.utc).timestamp()) * 1_000_000]
    async with backends.serving(backend, database, clock=lambda: now[0]) as s:
        s.admin(admin.add_person, "alice", PW)
        key = s.admin(admin.add_agent, "researcher", "alice")["api_key"]
        async with websockets.connect(s.url) as ws:
            ok = await ask(ws, {"op": "auth", "ref": 1, "api_key": key})
            assert ok["op"] == "session" and ok["expires_at"] == iso(now[0] + auth.AGENT_SESSION), ok
            assert (await ask(ws, {"op": "ping", "ref": 2}))["op"] == "pong"
            now[0] += auth.AGENT_SESSION - 1  # a microsecond left
            assert (await ask(ws, {"op": "ping", "ref": 3}))["op"] == "pong"
            now[0] += 1
            await ws.send(json.dumps({"op": "ping", "ref": 4}))
            err = json.loads(await asyncio.wait_for(ws.recv(), 5))
            assert err["code"] == "unauthenticated" and err["ref"] in (4, None), err  # None: the sweeper said it first
            assert await closed_with(ws) == 1008 and ws.close_reason == "session expired"
        async with websockets.connect(s.url) as ws:  # its token is not resumed either
            err = await ask(ws, {"op": "auth", "ref": 5, "token": ok["token"]})
            assert err["code"] == "unauthenticated", err


async def test_expired_sessions_are_deleted(team):
    """docs/protocol.md: "Expired sessions are deleted within `session_sweep` (60 s)": the token table does not grow
    with every sign-in; a live session stays and still resumes."""
    now = time.time_ns() // 1000
    dead = [auth.new_session(team.conn, team.alice, now, -1)[0] for _ in range(3)]
    alive, _ = auth.new_session(team.conn, team.alice, now, 3_600_000_000)

    def stored(token):
        return team.conn.execute("SELECT count(*) FROM sessions WHERE token_hash = ?",
                                 (auth._digest(token),)).fetchone()[0]

    assert [stored(t) for t in dead] == [1, 1, 1]
    team.gw.limits.session_sweep = 0.2
    for _ in range(80):  # the sweeper looks at the setting at least every 5 s
        if not any(stored(t) for t in dead):
            break
        await asyncio.sleep(0.1)
    assert [stored(t) for t in dead] == [0, 0, 0] and stored(alive) == 1
    c = await team.client(token=alive)
    assert c.me["handle"] == "alice"


async def test_bearer_header_on_the_upgrade_authenticates(team):
    """PROTOCOL.md: "The first frame, or the header `Authorization: Bearer <session token>` on the upgrade request"."""
    alice = await team.person("alice")
    headers = {"Authorization": f"Bearer {alice.token}"}
    async with websockets.connect(team.url, additional_headers=headers) as ws:
        s = json.loads(await asyncio.wait_for(ws.recv(), 5))
        assert s["op"] == "session" and s["me"]["handle"] == "alice" and s["token"] == alice.token
        who = await ask(ws, {"op": "whoami", "ref": 1})
        assert who["id"] == team.alice and who["kind"] == "human"
        sent = await ask(ws, {"op": "send", "ref": 2, "workspace": team.ws, "topic": "new", "title": "Hi",
                              "type": "inform", "to": ["@bob"], "text": "via header"})
        assert sent["op"] == "sent", sent


# --- the handshake ---

async def test_browser_origin_refused_unless_allowed(tmp_path):
    """docs/protocol.md: "Browser `Origin` headers are refused unless the server was started with `--origin URL`"."""
    async with serving(tmp_path, origins=("https://app.example",)) as s:
        s.admin(admin.add_person, "alice", PW)
        with pytest.raises(InvalidStatus) as e:
            async with websockets.connect(s.url, origin="https://evil.example"):
                pass
        assert e.value.response.status_code == 403
        async with websockets.connect(s.url, origin="https://app.example") as ws:
            assert (await ask(ws, {"op": "auth", "ref": 1, "handle": "alice", "password": PW}))["op"] == "session"
        async with websockets.connect(s.url) as ws:  # scripts and agents send no Origin
            assert (await ask(ws, {"op": "auth", "ref": 1, "handle": "alice", "password": PW}))["op"] == "session"
    async with serving(tmp_path / "plain") as s:
        with pytest.raises(InvalidStatus) as e:
            async with websockets.connect(s.url, origin="https://app.example"):
                pass
        assert e.value.response.status_code == 403


# --- the quotations these tests stand on ---

MINE = ("test_sessions", "test_org", "test_queries", "test_isolation", "test_limits", "test_admin_cli",
        "test_search_index", "test_ids")
SOURCES = {"PROTOCOL.md": "PROTOCOL", "docs/protocol.md": "docs", "docs/architecture.md": "architecture",
           "Seed 002": "002", "Seed 003": "003"}


def _quotations():
    import ast
    import re
    from pathlib import Path

    here = Path(__file__).parent
    for stem in MINE:
        for node in ast.walk(ast.parse((here / f"{stem}.py").read_text(encoding="utf-8"))):
            if isinstance(node, ast.AsyncFunctionDef | ast.FunctionDef) and node.name.startswith("test_"):
                doc = ast.get_docstring(node, clean=False) or ""
                for source, quote in re.findall(r'(PROTOCOL\.md|docs/(?:protocol|architecture)\.md|Seed \d{3}): "(.{12,}?)"(?=[\s,.;:)(]|$)',
                                                doc, flags=re.S):
                    yield f"{stem}::{node.name}", SOURCES.get(source, source), quote


def test_every_test_here_quotes_what_it_checks():
    """PROTOCOL.md: "This page fixes the names that every client and every test may rely on": each test says which sentence it checks."""
    import ast
    from pathlib import Path

    here, bare = Path(__file__).parent, []
    for stem in MINE:
        for node in ast.walk(ast.parse((here / f"{stem}.py").read_text(encoding="utf-8"))):
            if isinstance(node, ast.AsyncFunctionDef | ast.FunctionDef) and node.name.startswith("test_") \
                    and node.name != "test_quotation_is_verbatim":
                if not any(s in (ast.get_docstring(node) or "") for s in SOURCES):
                    bare.append(f"{stem}::{node.name}")
    assert bare == []


@pytest.mark.parametrize("where, source, quote", list(_quotations()))
def test_quotation_is_verbatim(where, source, quote):
    from tests.core.test_quotes import assert_quoted

    assert_quoted(where, source, quote)


# the embedded gateway's shared inbox load; on PostgreSQL an agent's inbox claims for itself (ClaimInbox)
@pytest.mark.backends("sqlite", "process")
async def test_a_failed_inbox_load_does_not_leave_the_next_connection_waiting(team):
    """PROTOCOL.md: "A delivery not acked is offered again" (after a reconnect), on every connection that attaches.

    Two connections of one participant attaching at once share the load of its inbox. When that load fails (or
    its connection's handler is cancelled), the other loads again instead of waiting for good (before, the shared
    future was never resolved: the second connection attached to nothing and was never delivered anything)."""
    import sqlite3

    from ygg_server.net import gateway as gw_module
    from ygg_server.ops import queries

    gw, real, calls = team.gw, team.gw.read, []
    started, go = asyncio.Event(), asyncio.Event()

    async def read(fn, *args):
        if fn is queries.unacked:
            calls.append(args)
            if len(calls) == 1:
                started.set()
                await go.wait()
                raise sqlite3.OperationalError("disk I/O error")
        return await real(fn, *args)

    gw.read = read
    try:
        first = asyncio.ensure_future(gw._inbox("agent.nobody", True))
        await asyncio.wait_for(started.wait(), 5)
        second = asyncio.ensure_future(gw._inbox("agent.nobody", True))
        await asyncio.sleep(0.05)
        go.set()
        with pytest.raises(sqlite3.OperationalError):
            await first
        inbox = await asyncio.wait_for(second, 5)
        assert inbox.participant == "agent.nobody" and len(calls) == 2
    finally:
        gw.read = real
        gw.inboxes.pop("agent.nobody", None)
