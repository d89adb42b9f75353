"""Issue 18 reviewed as a whole, as an attacker with an ordinary account on loopback would try it: the holes found
in the merged work and the gaps left open, each a test that failed before its fix.

Issue 18: "Tried from outside as an attacker with an ordinary account would, the server today lets one tenant reach
into another and lets one connection hold gigabytes."
"""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
import websockets

from ygg_server.ops import accounts, admin, auth
from ygg_server.store import sqlite as db

from tests.net.test_sessions import serving

from .conftest import PW


async def _signed_in(url: str, handle: str, password: str = PW, **connect) -> websockets.ClientConnection:
    ws = await websockets.connect(url, **connect)
    reply = await _ask(ws, "auth", handle=handle, password=password)
    assert reply["op"] == "session", reply
    return ws


async def _ask(ws, op: str, timeout: float = 5, **fields) -> dict:
    ref = f"{op}-{id(fields)}"
    await ws.send(json.dumps({"op": op, "ref": ref, **fields}))
    while True:
        frame = json.loads(await asyncio.wait_for(ws.recv(), timeout))
        if frame.get("ref") == ref:
            return frame


async def _auth(url: str, handle: str, password: str = PW) -> dict:
    async with websockets.connect(url) as ws:
        return await _ask(ws, "auth", handle=handle, password=password)


# --- names: a handle is typed as people read it ---

async def test_a_handle_signs_in_however_it_is_cased_or_written(tmp_path):
    """docs/protocol.md: "Handles are compared as people read them: NFKC, case-folded". Issue 18, "Names": "handles unique after NFKC case-folding"; the review's gap (b): "sign-in by the folded
    handle (NFKC case-folded: `Alice` signs in as `alice`)". The session names the handle as it is stored."""
    async with serving(tmp_path) as s:
        s.admin(admin.add_person, "alice", PW)
        for typed in ("Alice", "ALICE", "ａｌｉｃｅ"):
            r = await _auth(s.url, typed)
            assert (r["op"], r["me"]["handle"]) == ("session", "alice"), (typed, r)
        assert (await _auth(s.url, "Alice", "not it"))["code"] == "unauthenticated"


async def test_guesses_at_one_handle_written_many_ways_are_counted_as_one_handles(tmp_path):
    """docs/protocol.md: "`wrong_password` (counted as a failed sign-in for the handle: `retry_after` past the limit)". Issue 18: "30 made-up API keys in under a second locked out …"; seed rule (docs/security.md): a handle is
    guessed at a few times a minute at most. Once `Alice` signs in as `alice`, each way of writing it must not be a
    fresh allowance of guesses: after the per-handle limit of wrong passwords under `ALICE`, `Alice`, … the right
    password under `alice` is not even checked."""
    async with serving(tmp_path, auth_failures_per_key=3) as s:
        s.admin(admin.add_person, "alice", PW)
        for typed in ("ALICE", "Alice", "aLiCe"):
            assert (await _auth(s.url, typed, "a guess"))["code"] == "unauthenticated"
        limited = await _auth(s.url, "alice")
        assert limited["code"] == "unauthenticated" and limited["retry_after"] >= 1, limited


async def test_an_invitation_to_a_handle_written_another_way_reaches_its_person(team):
    """docs/protocol.md: "is found as typed, else as handles are compared". Issue 18, "Consent": an invitation to `@Bob` is one to `bob` (handles compared as people read them), answered
    exactly as one to a handle nobody has."""
    carol = team.admin(admin.add_person, "carol", PW)["id"]
    alice = await team.person("alice")
    known = await alice.call("add_member", workspace=team.ws, handle="Carol")
    unknown = await alice.call("add_member", workspace=team.ws, handle="Zed9")
    assert {k: v for k, v in known.items() if k not in ("ref", "handle")} == \
        {k: v for k, v in unknown.items() if k not in ("ref", "handle")}
    assert team.conn.execute("SELECT count(*) FROM invitations WHERE invitee = ?", (carol,)).fetchone()[0] == 1


# --- accounts: a deactivated person let back ---

async def test_an_operator_reactivates_a_deactivated_person(tmp_path, capsys):
    """docs/protocol.md: "signs in again with the password it had; owns its personal workspace and organization again; not_deactivated otherwise". Issue 18, "Accounts": "deactivate a person (sessions end at once, sign-in refused, memberships and agents
    taken away)"; the review's gap (a): "a `reactivate` admin command for a deactivated person". Let back, they sign
    in and own their personal workspace again; what was taken stays taken (their old sessions and agents, other
    workspaces); an active person is not `reactivated`."""
    from ygg_server import cli

    def run(*args) -> tuple[int, dict]:
        code = cli.main(["admin", "--data-dir", str(tmp_path), *args])
        return code, json.loads(capsys.readouterr().out.strip().splitlines()[-1])

    async with serving(tmp_path) as s:
        bob = s.admin(admin.add_person, "bob", PW)
        s.admin(admin.add_person, "alice", PW)
        team = s.admin(admin.add_workspace, "team", "alice")["id"]
        s.admin(admin.add_member, team, "bob")
        scout = s.admin(admin.add_agent, "scout", "bob")
        old = (await _auth(s.url, "bob"))["token"]
        assert run("deactivate-person", "bob")[1]["deactivated"] is True
        assert (await _auth(s.url, "bob"))["code"] == "unauthenticated"
        code, out = run("reactivate-person", "bob")
        assert code == 0 and out == {"id": bob["id"], "reactivated": True,
                                     "personal_workspace": bob["personal_workspace"]}, out
        ws = await _signed_in(s.url, "bob")
        mine = {w["id"]: w["role"] for w in (await _ask(ws, "list_workspaces"))["workspaces"]}
        assert mine == {bob["personal_workspace"]: "owner"}, "his own again; not the team he was taken out of"
        assert (await _ask(ws, "send", workspace=bob["personal_workspace"], topic="new", title="back",
                           to=["@bob"], text="hello"))["op"] == "sent"
        async with websockets.connect(s.url) as other:
            assert (await _ask(other, "auth", token=old))["code"] == "unauthenticated", "old sessions stay ended"
        async with websockets.connect(s.url) as other:
            assert (await _ask(other, "auth", api_key=scout["api_key"]))["code"] == "unauthenticated"
        code, out = run("reactivate-person", "bob")
        assert code == 1 and out["error"] == "not_deactivated"
        await ws.close()


# --- bounds: every op, not only send ---

async def test_ops_other_than_send_are_bounded_per_connection_and_the_refusal_says_why(tmp_path):
    """docs/protocol.md: "Every op but `send` (whose rate is the participant's) is bounded per connection: 50 a second in bursts of 500". Issue 18, "Bounds in bytes and time"; the review's gap (c): "non-send ops are not rate-limited per connection
    … bound every op sensibly, refusal names its reason". A connection asking faster than `op_rate` past its burst
    is answered `rate_limited` with `retry_after` and the op is not run; acks of made-up delivery ids too; another
    connection is not held back."""
    async with serving(tmp_path, op_rate=1.0, op_burst=5.0) as s:
        s.admin(admin.add_person, "alice", PW)
        ws = await _signed_in(s.url, "alice")
        answers = [await _ask(ws, "list_workspaces") for _ in range(9)]
        assert [a["op"] for a in answers[:5]] == ["list_workspaces"] * 5, answers
        refused = [a for a in answers if a["op"] == "error"]
        assert refused and all(a["code"] == "rate_limited" and a["retry_after"] >= 1 and "too many" in a["detail"]
                               for a in refused), answers
        made_up = [await _ask(ws, "ack", ids=[10_000_000 + i]) for i in range(3)]
        assert made_up[-1]["code"] == "rate_limited", made_up
        fresh = await _signed_in(s.url, "alice")
        assert (await _ask(fresh, "ping"))["op"] == "pong", "the bound is the connection's"
        await asyncio.sleep(refused[-1]["retry_after"])
        assert (await _ask(ws, "ping"))["op"] == "pong", "and refills"
        await ws.close()
        await fresh.close()


async def test_a_signed_in_persons_password_checks_wait_in_the_same_bounded_queue(tmp_path):
    """docs/protocol.md: "`change_password` waits in the sign-ins' password-check queue: `busy` with `retry_after` when it is full". Issue 18: "hashing queue bounded (answer `retry_after` when full)"; the review's gap (e): "`HashQueue.__aenter__`
    … a second entrance bypassing the per-address bound for signed-in password checks". A person signed in on
    three connections from one address asks for three password changes at once while a check runs: past the
    per-address bound they are answered `busy` with `retry_after`, not queued behind each other without end."""
    async with serving(tmp_path, hash_queue_per_address=1) as s:
        s.admin(admin.add_person, "alice", PW)
        conns = [await _signed_in(s.url, "alice") for _ in range(3)]
        release, real = threading.Event(), auth.check_password
        started = threading.Event()

        def slow(stored, given):
            started.set()
            release.wait(10)
            return real(stored, given)

        auth.check_password = slow
        try:
            first = asyncio.ensure_future(_ask(conns[0], "change_password", password=PW, new_password="x" * 12))
            await asyncio.to_thread(started.wait, 5)
            others = [await _ask(c, "change_password", password=PW, new_password="y" * 12) for c in conns[1:]]
        finally:
            release.set()
            auth.check_password = real
        assert all(o["code"] == "busy" and o["retry_after"] >= 1 for o in others), others
        assert (await first)["changed"] is True
        for c in conns:
            await c.close()


# --- proxies: what a session and the audit log say of where it came from ---

async def test_a_session_behind_a_trusted_proxy_is_listed_with_the_clients_address(tmp_path, caplog):
    """docs/protocol.md: "the client's address (sign-in limits, logs) is the rightmost X-Forwarded-For hop that is not a trusted proxy". Issue 18: "list one's sessions (device, address, last seen)"; "`--trusted-proxy CIDR` taking the client address
    from X-Forwarded-For". Behind the proxy every socket's peer is the proxy: the session, and the audit log's
    `session_opened`, must name the client it forwards for."""
    import logging

    caplog.set_level(logging.INFO, logger="ygg.audit")
    async with serving(tmp_path, trusted_proxies=("127.0.0.1/32",)) as s:
        s.admin(admin.add_person, "alice", PW)
        ws = await _signed_in(s.url, "alice", additional_headers={"X-Forwarded-For": "203.0.113.7"})
        listed = (await _ask(ws, "list_sessions"))["sessions"]
        assert [x["address"] for x in listed] == ["203.0.113.7"], listed
        await ws.close()
    opened = [json.loads(r.getMessage()) for r in caplog.records if '"session_opened"' in r.getMessage()]
    assert [o["address"] for o in opened] == ["203.0.113.7"], opened


# --- several nodes (PostgreSQL) ---

@pytest.mark.backends("postgres")
async def test_an_invitation_made_on_one_node_reaches_the_invitee_on_another(team):
    """docs/protocol.md: "The invitee's connections get ... (on every node)". Issue 18, "Consent": "the TUI: an invitations list with accept/decline" — the invitation is announced to the
    invitee at once (event `invitation`); the review's gap (f): with two nodes on one PostgreSQL database, an invitee
    connected to node B hears of an invitation made on node A."""
    team.admin(admin.add_person, "carol", PW)
    other = await team.node()
    carol = await team.person("carol", url=f"ws://127.0.0.1:{other.port}/")
    alice = await team.person("alice")
    await alice.call("add_member", workspace=team.ws, handle="carol")
    while True:
        e = await carol.next_event(5)
        if e.get("kind") == "invitation":
            break
    assert (e["invitation"]["workspace"], e["invitation"]["inviter"]) == (team.ws, "@alice")


@pytest.mark.backends("postgres")
def test_a_persons_session_opened_or_used_is_a_quiet_write_and_an_ended_one_is_not(server):
    """docs/protocol.md: "A person's session ends 30 days after sign-in, or after 14 days unused". The review's gap (d): the PostgreSQL adapter decided from the SQL's text that a session write needs no rescan;
    now `open_session` and `touch` ask for a quiet write (`Tx(conn, quiet=True)`): the config version every node
    rescans on does not move for them, and does for a session ended (its connections must close on every node).
    (The gateway has the writer write a new session, `accounts.session_row`; `open_session` is the same row written
    on a management connection.)"""
    pid = server.admin(admin.add_person, "dana", PW)["id"]

    def version() -> int:
        return server.conn.execute("SELECT value FROM meta WHERE key = 'config'").fetchone()[0]

    before, now = version(), server.gw.clock()
    accounts.open_session(server.conn, pid, "tok-1", now, 10**9, 10**9, None, None)
    accounts.touch(server.conn, ["tok-1"], now + 1, 10**9)
    assert version() == before, "opened and used: no node rescans"
    accounts.end_sessions(server.conn, pid, "all")
    assert version() > before, "ended: every node rescans"


async def test_a_person_invited_from_a_hundred_places_gets_a_bounded_list(tmp_path):
    """docs/protocol.md: "newest first, at most 100; `more: true` when there are older ones". Issue 18: "a response never larger than the frame limit the client library accepts (pages bounded by bytes)".
    Any person may make workspaces and invite anyone: 101 places inviting one person give a list of the newest 100
    and `more`, and each new invitation is found by its place, not by reading every one the person has (an
    invitation read them all: quadratic in a spray, on the connection every management op shares)."""
    from ygg_server.clock import now_us
    from ygg_server.ops import invitations

    async with serving(tmp_path) as s:
        s.admin(admin.add_person, "alice", PW)
        mallory = s.admin(admin.add_person, "mallory", PW)["id"]
        places = [s.admin(admin.add_workspace, f"lure{i}", "mallory")["id"] for i in range(invitations.SHOWN + 1)]
        for i, ws in enumerate(places):
            out = invitations.invite(s.conn, "workspace", ws, mallory, "alice", "member", now_us() + i)
            assert out["_notify"][1]["invitation"]["workspace"] == ws
        ws = await _signed_in(s.url, "alice")
        listed = await _ask(ws, "list_invitations")
        assert len(listed["invitations"]) == invitations.SHOWN and listed["more"] is True
        assert listed["invitations"][0]["workspace"] == places[-1], "the newest first"
        await ws.close()


async def test_a_token_resumed_again_and_again_writes_nothing_the_writer_would_rescan_for(tmp_path):
    """docs/protocol.md: "each use moves that on; an open connection counts as use". The review's gap (d), on SQLite: every commit of another connection changes the writer's `data_version`, and
    the writer then drops its cache and the gateway reads every connection's session and backlog again. A resume by
    token was such a commit (its last use written), and a token costs no password check: 50 resumes were 50 rescans
    of the whole server. Now a session's last use is written once per 1/100 of its idle expiry: the resumes after
    the first write nothing."""
    import sqlite3

    async with serving(tmp_path) as s:
        s.admin(admin.add_person, "alice", PW)
        token = (await _auth(s.url, "alice"))["token"]
        watch = sqlite3.connect(db.db_path(tmp_path))
        version = lambda: watch.execute("PRAGMA data_version").fetchone()[0]  # noqa: E731
        before = version()
        for _ in range(50):
            async with websockets.connect(s.url) as ws:
                assert (await _ask(ws, "auth", token=token))["op"] == "session"
        assert version() == before, "no commit the writer would rescan for"
        watch.close()
