"""Helpers of tests/net; the server fixtures (`backend`, `server`, `team`) are tests/conftest.py's."""

from __future__ import annotations

import asyncio
import sqlite3

from ygg_server.store import sqlite as db


def migrated_before(path, marker: str) -> sqlite3.Connection:
    """A database at `path` as an older server left it: the migrations of the old list (tests/store/legacy.py)
    before the first one whose SQL holds `marker`. Returns a connection to it in autocommit mode."""
    from ..store import legacy

    c = sqlite3.connect(path, isolation_level=None)
    legacy.sqlite_before(c, marker)
    return c


async def drain_acked(client, timeout: float = 0.3) -> list[dict]:
    """Every delivery that reaches `client` until it is quiet for `timeout` seconds, each acked."""
    out = []
    while True:
        try:
            d = await client.next_delivery(timeout=timeout)
        except asyncio.TimeoutError:
            return out
        await client.ack([d["id"]])
        out.append(d)


async def acked_until(client, pred, timeout: float = 5.0) -> dict:
    """The first delivery to `client` for which `pred` holds, within `timeout` seconds; each one before it acked."""
    async def first():
        while True:
            d = await client.next_delivery()
            await client.ack([d["id"]])
            if pred(d):
                return d
    return await asyncio.wait_for(first(), timeout)
