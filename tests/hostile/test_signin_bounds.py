"""Sign-ins under a spray (issue 18): the password-check queue is bounded, in all and per address (an IPv6 /64),
so guesses from a few addresses delay a right password by a few checks, not by all of theirs."""

from __future__ import annotations

import asyncio
import json
import time

import websockets

from ygg_server.net.signin import AuthLimiter, bucket, sign_in_keys
from ygg_server.ops import admin, auth
from ygg_server.protocol import frames

from tests.net.test_sessions import serving

from .conftest import PW


async def attempt(url: str, creds: dict, local: str, ref=1) -> dict:
    """One sign-in from address `local`: its answer (a guess may wait behind the queued checks: 60 s at most)."""
    async with websockets.connect(url, local_addr=(local, 0)) as ws:
        await ws.send(json.dumps({"op": "auth", "ref": ref, **creds}))
        return json.loads(await asyncio.wait_for(ws.recv(), 60))


async def test_a_right_password_waits_a_few_checks_under_a_spray_from_six_addresses(tmp_path, monkeypatch):
    """docs/protocol.md: "a password sign-in while 16 password checks, or 2 from this address, are queued): not checked and not counted as a failure; try again after N seconds". Issue 18: "six addresses spraying guesses delayed a right sign-in by 34 s (one hashing slot, no bound on its
    queue)": each of six addresses sends as many guesses at once as the per-address limiter lets through (30),
    with argon2 at its real cost. Each guess is answered: refused, or `busy` with `retry_after` (unchecked, not
    counted); a right password from a seventh address, retried after `retry_after` when busy, signs in within a
    few checks' time."""
    from argon2 import PasswordHasher

    monkeypatch.setattr(auth, "_hasher", PasswordHasher())  # the real cost
    async with serving(tmp_path) as s:
        s.admin(admin.add_person, "alice", PW)
        t0 = time.monotonic()
        assert (await attempt(s.url, {"handle": "alice", "password": PW}, "127.0.0.1"))["op"] == "session"
        check = time.monotonic() - t0
        spray = [asyncio.ensure_future(attempt(s.url, {"handle": f"g{a}x{j}", "password": "guess"},
                                               f"127.0.0.{2 + a}", ref=j))
                 for a in range(6) for j in range(30)]
        await asyncio.sleep(max(0.5, check))  # the spray is queued
        library = asyncio.ensure_future(s.person("alice"))  # the client library waits out `busy` answers
        started, busy = time.monotonic(), 0
        while (r := await attempt(s.url, {"handle": "alice", "password": PW}, "127.0.0.9"))["op"] != "session":
            assert r["code"] == "busy" and r["retry_after"] >= 1, r
            busy += 1
            await asyncio.sleep(r["retry_after"])
        delay = time.monotonic() - started
        assert (await asyncio.wait_for(library, 60)).me["handle"] == "alice"
        answers = await asyncio.gather(*spray)
    codes = sorted({a.get("code") for a in answers})
    assert set(codes) <= {"unauthenticated", "busy"}, codes
    assert all(a["retry_after"] >= 1 for a in answers if a["code"] == "busy")
    print(f"\none argon2 check {check:.2f} s; a right sign-in under 180 guesses from six addresses took "
          f"{delay:.2f} s ({busy} busy answers first); the guesses were answered {codes}, "
          f"{sum(a['code'] == 'busy' for a in answers)} of them busy")
    assert delay < 14 * check + 2.0, "a right password waits for a few checks, not for all the guesses"


def test_ipv6_addresses_are_counted_by_their_64():
    """docs/protocol.md: "More than 256 open connections from one address (an IPv6 /64)". Issue 18: "IPv6 bucketed per address": a host holds a /64, so the sign-in limiter (and the connection caps)
    count the /64; IPv4 and IPv4-mapped addresses count alone."""
    assert bucket(("2001:db8:1:2::1", 1)) == bucket(("2001:db8:1:2:ffff::9", 2)) == "2001:db8:1:2::/64"
    assert bucket(("2001:db8:1:3::1", 1)) != bucket(("2001:db8:1:2::1", 1))
    assert bucket(("::ffff:10.0.0.1", 1)) == "10.0.0.1" and bucket(("10.0.0.2", 1)) == "10.0.0.2"
    limiter = AuthLimiter(per_address=3, per_key=100, window=60)
    now = time.monotonic()
    for i in range(3):  # three guesses, each from another address of one /64, for another handle
        limiter.failed(sign_in_keys((f"2001:db8:1:2::{i + 1:x}", 0), frames.Auth(handle=f"h{i}", password="x")), now)
    locked = sign_in_keys(("2001:db8:1:2:abcd::1", 0), frames.Auth(handle="other", password="x"))
    assert limiter.retry_after(locked, now) > 0
    assert limiter.retry_after(sign_in_keys(("2001:db8:9::1", 0), frames.Auth(handle="o", password="x")), now) == 0
