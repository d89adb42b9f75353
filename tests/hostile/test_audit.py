"""The audit log (issue 18): security-relevant events as JSON lines on `ygg.audit`, never a credential."""

from __future__ import annotations

import asyncio
import json
import logging

from ygg_server.ops import admin

from tests.net.test_sessions import serving

from .conftest import PW
from .test_credentials import attempt


class _Lines(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


async def test_sign_ins_failures_limits_session_ends_revocations_and_rotations_are_audited_without_credentials(tmp_path):
    """docs/protocol.md: "a person signs in (a session of 30 days, ended sooner when unused for 14": each sign-in, and each failure, is audited. Issue 18: "An audit log (`ygg.audit`, JSON lines): sign-ins and failures, limiter hits, session ends,
    revocations, rotations ...; participant, remote address, outcome, never a credential"."""
    h, log = _Lines(), logging.getLogger("ygg.audit")
    log.addHandler(h)
    old = log.level
    log.setLevel(logging.INFO)
    try:
        async with serving(tmp_path, auth_failures_per_key=2, auth_failures_per_address=1000) as s:
            alice = s.admin(admin.add_person, "alice", PW)["id"]
            made = s.admin(admin.add_agent, "worker", "alice")
            key, aid = made["api_key"], made["id"]
            assert (await attempt(s.url, {"handle": "alice", "password": PW}))["op"] == "session"
            assert (await attempt(s.url, {"api_key": key}))["op"] == "session"
            for _ in range(3):  # two failures, then the limiter
                await attempt(s.url, {"handle": "alice", "password": "wrong-" + PW})
            await attempt(s.url, {"handle": PW + "-as-handle", "password": PW})  # a password in the handle's field
            await attempt(s.url, {"api_key": key[:-1] + "x"})
            worker = await s.client(api_key=key)
            new_key = s.admin(admin.rotate_key, aid)["api_key"]
            for _ in range(50):  # the open connection's session ends (the rescan closes it)
                if any('"session_end"' in line for line in h.lines):
                    break
                await asyncio.sleep(0.1)
            s.admin(admin.revoke_agent, aid)
            await worker.close()
    finally:
        log.removeHandler(h)
        log.setLevel(old)
    entries = [json.loads(line) for line in h.lines]
    by = lambda event, outcome="ok": [e for e in entries if e["event"] == event and e["outcome"] == outcome]  # noqa: E731
    assert any(e["participant"] == alice and e["method"] == "password" and e["address"] == "127.0.0.1"
               for e in by("sign_in"))
    assert any(e["participant"] == aid and e["method"] == "api_key" for e in by("sign_in"))
    assert [e["participant"] for e in by("sign_in", "failed") if e["method"] == "password"] == [alice, alice, None]
    assert by("sign_in", "limited") and all(e["retry_after"] >= 1 for e in by("sign_in", "limited"))
    assert any(e["method"] == "api_key" and e["key_id"] for e in by("sign_in", "failed"))
    assert any(e["participant"] == aid for e in by("key_rotated"))
    assert any(e["participant"] == aid for e in by("agent_revoked"))
    assert any(e["participant"] == aid for e in by("session_end")), "the rotated key's connection was ended"
    text = "\n".join(h.lines)
    for secret in (PW, key.split("_", 2)[2], new_key.split("_", 2)[2], "yggs_"):
        assert secret not in text, "a credential reached the audit log"
