"""Credentials under attack (issue 8): expired and replayed session tokens, keys one character off, brute
force (rate-limited per remote address and per credential), the API key used as a session token; and the
key never appears in any log, whatever the log level.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time

import pytest
import websockets

from ygg_server.ops import admin, auth
from ygg_server.client import Client

from tests.net.test_sessions import serving

from .conftest import PW


async def attempt(url: str, creds: dict, local: str | None = None, ref=1) -> dict:
    kw = {"local_addr": (local, 0)} if local else {}
    async with websockets.connect(url, **kw) as ws:
        await ws.send(json.dumps({"op": "auth", "ref": ref, **creds}))
        return json.loads(await asyncio.wait_for(ws.recv(), 5))


def refused(reply: dict) -> bool:
    return reply["op"] == "error" and reply["code"] == "unauthenticated"


def off_by_one(secret: str) -> list[str]:
    """The key with each character changed in turn, one shorter, one longer."""
    out = []
    for i, c in enumerate(secret):
        out.append(secret[:i] + ("A" if c != "A" else "B") + secret[i + 1:])
    return [w for w in out + [secret[:-1], secret + "A", secret.upper(), secret.lower()] if w != secret]


async def test_expired_and_replayed_tokens_and_the_key_as_a_token_are_refused(team):
    """PROTOCOL.md: "The API key is accepted only by `auth`; it is never a session token"."""
    key = team.keys["researcher"]
    s = await attempt(team.url, {"api_key": key})
    token = s["token"]
    now = time.time_ns() // 1000
    dead, _ = auth.new_session(team.conn, s["me"]["id"], now, -1)
    digest = team.conn.execute("SELECT token_hash FROM sessions LIMIT 1").fetchone()[0]
    for creds in ({"token": dead}, {"token": key}, {"api_key": token}, {"token": digest}, {"token": "yggs_" + digest},
                  {"token": token[:-1]}, {"token": token + "x"}, {"token": token.replace("yggs_", "yggk_")}):
        assert refused(await attempt(team.url, creds)), creds
    for bearer in (dead, key, digest):
        async with websockets.connect(team.url, additional_headers={"Authorization": f"Bearer {bearer}"}) as ws:
            assert refused(json.loads(await asyncio.wait_for(ws.recv(), 5)))
            with pytest.raises(websockets.ConnectionClosed):
                await asyncio.wait_for(ws.recv(), 5)
            assert ws.close_code == 1008
    # a token replayed after its agent was revoked (its sessions are deleted with it)
    assert (await attempt(team.url, {"token": token}))["op"] == "session"
    team.admin(admin.revoke_agent, "researcher@alice")
    assert refused(await attempt(team.url, {"token": token}))
    assert refused(await attempt(team.url, {"api_key": key}))


async def test_a_key_one_character_off_anywhere_is_refused(tmp_path):
    """PROTOCOL.md: "or `{"op":"error","ref":1,"code":"unauthenticated"}`": for every key one character off."""
    async with serving(tmp_path, auth_failures_per_address=10_000, auth_failures_per_key=10_000) as s:
        s.admin(admin.add_person, "alice", PW)
        key = s.admin(admin.add_agent, "worker", "alice")["api_key"]
        async with websockets.connect(s.url) as ws:  # one connection may try again and again
            for i, wrong in enumerate(off_by_one(key)):
                await ws.send(json.dumps({"op": "auth", "ref": i, "api_key": wrong}))
                r = json.loads(await asyncio.wait_for(ws.recv(), 5))
                assert refused(r) and r["ref"] == i, (wrong, r)
            await ws.send(json.dumps({"op": "auth", "ref": "ok", "api_key": key}))
            assert json.loads(await ws.recv())["op"] == "session"
        for i, wrong in enumerate(off_by_one(PW)):
            assert refused(await attempt(s.url, {"handle": "alice", "password": wrong}, ref=i))


async def test_brute_force_is_rate_limited_per_credential_and_per_address(tmp_path, monkeypatch):
    """docs/protocol.md: "Answer: ... or `{"op":"error","ref":1,"code":"unauthenticated"}`": past the limit, with `retry_after`, and the credential is not even checked."""
    checks = []
    real = auth.check_password
    monkeypatch.setattr(auth, "check_password", lambda stored, pw: checks.append(pw) or real(stored, pw))
    async with serving(tmp_path, auth_failures_per_key=5, auth_failures_per_address=12, auth_window=2.0) as s:
        s.admin(admin.add_person, "alice", PW)
        s.admin(admin.add_person, "bob", PW)
        k1 = s.admin(admin.add_agent, "one", "alice")["api_key"]
        k2 = s.admin(admin.add_agent, "two", "alice")["api_key"]
        # per credential: 5 wrong passwords for alice, then even the right one waits
        for i in range(5):
            assert "retry_after" not in await attempt(s.url, {"handle": "alice", "password": f"guess{i}"})
        checks.clear()
        started = time.monotonic()
        for i in range(50):  # the attacker keeps going: answered at once, and nothing is checked
            r = await attempt(s.url, {"handle": "alice", "password": f"guess-{i}"})
            assert refused(r) and 1 <= r["retry_after"] <= 2, r
        r = await attempt(s.url, {"handle": "alice", "password": PW})
        assert refused(r) and r["retry_after"] >= 1, "locked for now, even with the right password"
        assert checks == [], "a locked credential costs no password hash"
        assert time.monotonic() - started < 10
        assert (await attempt(s.url, {"handle": "bob", "password": PW}))["op"] == "session", "bob is not alice"
        # per API key id: 5 wrong secrets for key one; key two is not affected
        kid = k1.split("_")[1]
        for i in range(5):
            assert refused(await attempt(s.url, {"api_key": f"yggk_{kid}_wrong{i}"}))
        r = await attempt(s.url, {"api_key": k1})
        assert refused(r) and r["retry_after"] >= 1
        assert (await attempt(s.url, {"api_key": k2}))["op"] == "session"
        # per address: 12 failures from 127.0.0.1 in all (5 + 5 + 2 more), then no key or password from it is checked
        for i in range(2):
            await attempt(s.url, {"api_key": f"yggk_{i:016x}_nope"})
        r = await attempt(s.url, {"api_key": k2})
        assert refused(r) and r["retry_after"] >= 1, "the address is locked"
        r = await attempt(s.url, {"handle": "bob", "password": PW})
        assert refused(r) and r["retry_after"] >= 1
        assert (await attempt(s.url, {"api_key": k2}, local="127.0.0.2"))["op"] == "session", "another address is not"
        # session tokens are not limited (256 random bits; an expired one is an honest failure): still resumed
        token = (await attempt(s.url, {"api_key": k2}, local="127.0.0.2"))["token"]
        for i in range(40):
            r = await attempt(s.url, {"token": f"yggs_nope{i}"})
            assert refused(r) and "retry_after" not in r
        assert (await attempt(s.url, {"token": token}))["op"] == "session"
        await asyncio.sleep(2.1)  # the window passes
        assert (await attempt(s.url, {"handle": "alice", "password": PW}))["op"] == "session"
        assert (await attempt(s.url, {"api_key": k1}))["op"] == "session"
        # the limiter's memory is bounded, however many made-up key ids are tried
        lim = s.gw._limiter
        lim.max_keys = 100
        for i in range(500):
            lim.failed([("key", f"k:{i}")], time.monotonic())
        assert len(lim.failures) <= 101


async def test_the_key_is_never_logged(tmp_path, tracebacks):
    """Seed 003: "The key is never used directly as the credential of an ordinary request": nor written to a log, at any level."""
    async with serving(tmp_path, auth_failures_per_key=3, auth_failures_per_address=1000) as s:
        s.admin(admin.add_person, "alice", PW)
        ws_id = s.admin(admin.add_workspace, "team", "alice")["id"]
        key = s.admin(admin.add_agent, "worker", "alice")["api_key"]
        secret = key.split("_", 2)[2]
        agent = Client(s.url, api_key=key)
        await agent.connect()
        alice = await s.person("alice", PW)
        r = await alice.send(workspace=ws_id, topic="new", title="Hi", to=["worker"], text="go")
        assert r["op"] == "sent"
        assert (await agent.next_delivery(timeout=5))["wake"]
        await agent.close()
        lost = Client(s.url, api_key=key[:-1] + ("R" if key.endswith("Q") else "Q"), reconnect=False)  # always a wrong key
        with pytest.raises(Exception):
            await lost.connect()
        phase1 = len(tracebacks.records)  # so far only the server and the client library: every record counts
        for creds in ({"token": key}, {"api_key": key + "x"}, {"api_key": key[:-1]}, {"api_key": key},
                      {"handle": key, "password": key}, {"api_key": [key]}, {"api_key": key}):
            await attempt(s.url, creds)
        for raw in ('{"op":"auth","api_key":"' + key + '"', '{"op":"' + key + '"}', '{"op":"auth","ref":' + json.dumps(key)[:-1],
                    '{"op":"auth","ref":[1],"api_key":"' + key + '"}'):
            async with websockets.connect(s.url) as ws:
                await ws.send(raw)
                await asyncio.wait_for(ws.recv(), 5)
        async with websockets.connect(s.url, additional_headers={"Authorization": f"Bearer {key}"}) as ws:
            await asyncio.wait_for(ws.recv(), 5)
    ours = tracebacks.records[:phase1] + [  # then raw sockets of this test, whose own frame logs are not the server's
        r for r in tracebacks.records[phase1:] if not r.name.startswith("websockets.client")]
    assert ours, "the server logged something at DEBUG (the capture works)"
    text = "\n".join(r.getMessage() + (logging.Formatter().formatException(r.exc_info) if r.exc_info else "") for r in ours)
    for piece in (key, secret, secret[:12], secret[-12:]):
        leaked = piece in text  # (not in the assertion: a failure must not print the key either)
        assert not leaked, f"a piece of the key ({len(piece)} characters) appears in a log record"


async def test_password_guesses_do_not_hold_up_everyone_elses_queries(tmp_path, monkeypatch):
    """docs/protocol.md: "passwords with argon2": a deliberately slow hash, which must cost the guesser, not every other session."""
    from argon2 import PasswordHasher

    monkeypatch.setattr(auth, "_hasher", PasswordHasher())  # the real cost (~0.1-0.5 s a hash), not the tests' cheap one
    async with serving(tmp_path) as s:
        s.admin(admin.add_person, "alice", PW)
        for i in range(6):
            s.admin(admin.add_person, f"p{i}", PW)
        alice = await s.person("alice", PW)
        started = time.monotonic()
        await alice.call("list_workspaces")
        one = time.monotonic() - started
        t0 = time.monotonic()
        ok = await attempt(s.url, {"handle": "p0", "password": PW})
        hash_cost = time.monotonic() - t0
        assert ok["op"] == "session"
        guesses = [asyncio.ensure_future(attempt(s.url, {"handle": f"p{i}", "password": "guess"}, f"127.0.0.{2 + i}"))
                   for i in range(6)]  # (from six addresses: from one, only two are queued at once)
        await asyncio.sleep(hash_cost / 2)  # the first guesses are being hashed now
        started = time.monotonic()
        await alice.call("list_workspaces")
        await alice.call("list_members", workspace=(await alice.call("list_workspaces"))["workspaces"][0]["id"])
        waited = time.monotonic() - started
        assert all(refused(r) for r in await asyncio.gather(*guesses))
        print(f"\none argon2 check {hash_cost:.2f} s; three queries during six guesses {waited:.3f} s (alone {one:.3f} s)")
        assert waited < max(0.5, 2 * hash_cost), "queries waited behind the guessers' password hashes"
