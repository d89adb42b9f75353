"""Acks on PostgreSQL: their own connection and task, beside the writer's batches.

An ack decides nothing and locks nothing a decision reads, so it does not wait for a batch of
sends: the acks queued while the last ones were written go together, as one statement (its own
transaction, committed when it returns).
"""

from __future__ import annotations

import asyncio
import logging
import random

import asyncpg

from . import ACK_DELIVERIES, connect
from ...protocol.results import Acked

log = logging.getLogger("ygg.writer")
MAX_ATTEMPTS = 12
_AGAIN = (asyncpg.exceptions.DeadlockDetectedError, asyncpg.exceptions.SerializationError)


class Acks:
    def __init__(self, store, loop: asyncio.AbstractEventLoop):
        self.store = store
        self._queue: list = []
        self._wake = asyncio.Event()
        self._conn: asyncpg.Connection | None = None
        self._task = loop.create_task(self._run())

    def submit(self, cmd) -> None:
        self._queue.append(cmd)
        self._wake.set()

    async def aclose(self) -> None:
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        if self._conn is not None and not self._conn.is_closed():
            try:
                await self._conn.close(timeout=5)
            except Exception:
                self._conn.terminate()

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._queue:
                cmds, self._queue = self._queue, []
                try:
                    if self._conn is None or self._conn.is_closed():
                        self._conn = await connect(self.store.dsn, self.store.prepared)
                    acked = await self._write(cmds)
                except asyncio.CancelledError:
                    raise
                except Exception as e:
                    log.exception("acks failed")
                    for c in cmds:
                        if not c.future.done():
                            c.future.set_exception(e)
                    continue
                for c in cmds:
                    participant, ids = c.args[:2]
                    mine = [i for i in ids if (i, participant) in acked]
                    acked.difference_update((i, participant) for i in mine)
                    if not c.future.done():
                        c.future.set_result(Acked(mine))  # (the gateway answers it with the frame's ref)

    async def _write(self, cmds: list) -> set[tuple[int, str]]:
        """One statement (rows locked in id order, as leases are renewed and returned); again on a
        deadlock or serialization failure, which roll back only this statement's transaction."""
        ids, who = [], []
        for c in cmds:
            participant, list_ids = c.args[:2]
            ids += list_ids
            who += [participant] * len(list_ids)
        for attempt in range(MAX_ATTEMPTS):
            try:
                rows = await self._conn.fetch(ACK_DELIVERIES, self.store.clock(), ids, who)
                return {(r[0], r[1]) for r in rows}
            except _AGAIN:
                if attempt == MAX_ATTEMPTS - 1:
                    raise
                await asyncio.sleep(random.uniform(0, 0.002 * (2 ** min(attempt, 6))))
        raise AssertionError("unreachable")
