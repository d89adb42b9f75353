"""Every close of a signed-in connection for an auth reason is preceded by an `error` frame saying why
(docs/protocol.md, "Authentication"): a client library sees more than a close code. Over real websockets.
"""

from __future__ import annotations

import asyncio
import json

import pytest
import websockets

from ygg_server.ops import admin

from .test_agent_keys import signed_in

pytestmark = pytest.mark.backends("sqlite", "postgres")


async def last_words(ws, within: float = 2.0) -> tuple[list[dict], int]:
    """The frames a socket gets until the server closes it, and the close code."""
    frames = []
    try:
        while True:
            frames.append(json.loads(await asyncio.wait_for(ws.recv(), within)))
    except websockets.ConnectionClosed:
        return frames, ws.close_code


def the_error(frames: list[dict]) -> dict:
    errors = [f for f in frames if f.get("op") == "error"]
    assert len(errors) == 1 and frames[-1] is errors[0], frames
    return errors[0]


async def test_a_revoked_agent_is_told_it_was_revoked_before_the_close(team):
    """Seed 002: "Agents belong to a person"; docs/protocol.md: "a revoked agent's connections close at once",
    after an `error` frame whose detail says it was revoked."""
    alice = await team.person("alice")
    ws, _ = await signed_in(team.url, team.keys["researcher"])
    await alice.call("revoke_agent", agent="researcher")
    frames, code = await last_words(ws)
    err = the_error(frames)
    assert code == 1008 and err["code"] == "unauthenticated" and err["ref"] is None
    assert "revoked" in err["detail"] and "rotate" not in err["detail"], err


async def test_an_old_key_is_told_its_key_was_replaced_before_the_close(team):
    """docs/protocol.md: after `rotate_key` "the sessions it opened end, so its open connections close (1008) and
    sign in again with the new key": the error frame says so."""
    alice = await team.person("alice")
    ws, _ = await signed_in(team.url, team.keys["reviewer"])
    await alice.call("rotate_key", agent="reviewer")
    frames, code = await last_words(ws)
    err = the_error(frames)
    assert code == 1008 and err["code"] == "unauthenticated"
    assert "new key" in err["detail"] and "revoked" not in err["detail"], err


async def test_the_operators_revocation_is_told_the_same_way(team):
    """The admin CLI's `revoke-agent` (another writer: the server's rescan) closes with the same words."""
    ws, _ = await signed_in(team.url, team.keys["researcher"])
    team.admin(admin.revoke_agent, "researcher")
    frames, code = await last_words(ws)
    assert code == 1008 and "revoked" in the_error(frames)["detail"]
