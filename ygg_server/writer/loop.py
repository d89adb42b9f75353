"""The writer: Load -> Decide -> Apply -> Publish, one batch at a time, over any Store.

Commands queue up; the writer takes everything queued (up to MAX_BATCH) and, in one transaction,
plans the rows they read, loads them, decides every command in arrival order against that
snapshot (`writer.batch`, pure), lets the store confirm what it read without a lock, writes the
rows, commits, and only then answers each caller and hands what the batch stored to the gateway.
Nothing is answered before it is durable; a batch amortizes the commit over many sends.

A batch the store could not serialize (`store.retryable`: a deadlock, another node's conflicting
write) is decided again, whole. A command whose deciding raised is answered with its error and the
batch is decided again without it; a batch whose write failed otherwise is split, each command in
a batch of its own, so a bad command fails alone. Sends whose topic another node holds are left
for the next batch, first in it, with their authors' later sends (so each author's sends are still
decided in the order they came).

Where the loop runs is the runner's business: `ThreadRunner` (SQLite, beside the event loop, or in
the writer process: `writer.process`) or `TaskRunner` (PostgreSQL, a task on the event loop).
"""

from __future__ import annotations

import asyncio
import logging
import random
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable

from ..core import Conversation, Topic
from . import plan, scheduled
from .batch import Batch, CommandFailed, Outcome
from .commands import Command

log = logging.getLogger("ygg.writer")
MAX_BATCH = 512
MAX_ATTEMPTS = 12


@dataclass(slots=True)
class Published:
    """What one committed batch hands to the gateway."""

    deliveries: list = field(default_factory=list)  # store rows (id, recipient, wake, reason, message)
    messages: list = field(default_factory=list)  # every message stored, in order (monitors see all, even undelivered)
    topics: list[Topic] = field(default_factory=list)
    balances: list[tuple[str, str, int]] = field(default_factory=list)  # (workspace, account, balance)
    rescan: bool = False  # someone else changed the database: look at every connection again
    parties: dict = field(default_factory=dict)  # conversation id -> PartyView, for agents' deliveries
    conversations: dict[str, Conversation] = field(default_factory=dict)  # of the topics here
    leased: dict[int, str] = field(default_factory=dict)  # delivery id -> the connection it went to as written

    def any(self) -> bool:
        return bool(self.deliveries or self.messages or self.topics or self.balances or self.rescan)

    def add(self, o: Outcome) -> None:
        self.deliveries += o.deliveries
        self.leased.update(o.leased)
        self.messages += o.messages
        self.topics += o.topics
        self.balances += o.balances
        self.parties.update(o.parties)
        self.conversations.update(o.conversations)


class Writer:
    def __init__(self, store, clock: Callable[[], int]):
        self.store = store
        self.clock = clock

    async def run(self, cmds: list[Command]) -> tuple[dict[int, Any], list[Command], Published]:
        """Decide and commit a batch: each command's answer (a result, or the error it ended with) by `id(cmd)`,
        the commands left for the next batch, and what to publish."""
        answers: dict[int, Any] = {}
        later: list[Command] = []
        out = Published()
        await self._decide(cmds, answers, later, out)
        return answers, later, out

    async def _decide(self, cmds: list[Command], answers: dict, later: list, out: Published) -> None:
        while True:  # (an empty batch runs too: it is how the timers and the store's upkeep run when idle)
            try:
                outcome, rescan = await self._attempts(cmds)
            except CommandFailed as f:  # answered with its error; the others are decided again without it
                bad = cmds[f.index]
                log.error("command %s failed", bad.kind, exc_info=f.error)
                answers[id(bad)] = f.error
                cmds = cmds[:f.index] + cmds[f.index + 1:]
                if not cmds:
                    return
                continue
            except Exception as e:
                await self._split(cmds, e, answers, later, out)
                return
            for i, c in enumerate(cmds):
                if i in outcome.answers:
                    answers[id(c)] = outcome.answers[i]
            later += outcome.later
            out.add(outcome)
            out.rescan = out.rescan or rescan
            return

    async def _split(self, cmds: list[Command], error: Exception, answers: dict, later: list, out: Published) -> None:
        """A batch that failed otherwise: each command in a batch of its own, so a bad one fails alone."""
        if len(cmds) == 1:
            log.error("command %s failed", cmds[0].kind, exc_info=error)
            answers[id(cmds[0])] = error
            return
        held: set[str] = set()  # authors whose send was left for later: so are their next ones
        for c in cmds:
            if c.kind == "send" and c.args[0] in held:
                later.append(c)
                continue
            n = len(later)
            await self._decide([c], answers, later, out)
            if len(later) > n and c.kind == "send":
                held.add(c.args[0])

    async def _attempts(self, cmds: list[Command]) -> tuple[Outcome, bool]:
        store = self.store
        for attempt in range(MAX_ATTEMPTS):
            now = self.clock()
            month = month_of(now)
            try:
                async with store.batch() as tx:
                    fired = scheduled.sends(await tx.schedules_due(now), now)  # due reminders and routines
                    planned = cmds + [c for _, c in fired if c is not None]
                    for _ in range(3):  # the catalog moved while the rows were locked: plan again
                        snap = await tx.catalog(plan.workspaces(planned))
                        if await tx.load(plan.keys(planned, snap, month)):
                            break
                    else:
                        raise RuntimeError("the configuration kept changing")
                    while True:
                        outcome = Batch(snap, now, month).run(cmds, fired)
                        if not await tx.confirm(outcome):
                            break
                    await tx.write(outcome)
            except store.retryable as e:
                store.failed()
                if attempt == MAX_ATTEMPTS - 1:
                    raise
                log.info("retrying after %s", type(e).__name__)
                await asyncio.sleep(random.uniform(0, 0.002 * (2 ** min(attempt, 6))))
                continue
            except BaseException:
                store.failed()
                raise
            store.committed(outcome)
            return outcome, snap.rescan
        raise AssertionError("unreachable")


def drive(coro):
    """Run a coroutine that never suspends (the SQLite store's batch) to its end, without an event loop."""
    try:
        coro.send(None)
    except StopIteration as e:
        return e.value
    coro.close()
    raise RuntimeError("the store suspended: it needs an event loop")


_month_span: tuple[int, int, str] = (0, 0, "")  # [start, end) of the last month asked about, in us, and its name


def month_of(now: int) -> str:
    """The UTC month of a time in microseconds ("2026-12"), a plan's counting period."""
    global _month_span
    start, end, name = _month_span
    if start <= now < end:
        return name
    dt = datetime.fromtimestamp(now / 1e6, tz=timezone.utc)
    first = datetime(dt.year, dt.month, 1, tzinfo=timezone.utc)
    after = datetime(dt.year + dt.month // 12, dt.month % 12 + 1, 1, tzinfo=timezone.utc)
    name = dt.strftime("%Y-%m")
    _month_span = (int(first.timestamp()) * 1_000_000, int(after.timestamp()) * 1_000_000, name)
    return name
