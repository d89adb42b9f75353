"""Where the writer's loop runs: on a thread (SQLite), or as a task on the event loop (PostgreSQL).

Both have the face the gateway uses: `start(loop, publish)`, `submit(kind, *args) -> Future`,
`seen(pid, online)`, `events`, `aclose()`. The writer in its own process (`writer.process`) runs
the thread runner's loop in the child.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from typing import Any, Callable

from .commands import Command
from .loop import MAX_BATCH, Published, Writer, drive

log = logging.getLogger("ygg.writer")
_IDLE = object()


class _Face:
    """What both runners share: the writer, its store, who is connected (assignment scoring reads it)."""

    writer: Writer
    events = True  # hand over topic and balance events (in this process they cost nothing to hand over)

    @property
    def store(self):
        return self.writer.store

    @property
    def clock(self) -> Callable[[], int]:
        return self.writer.clock

    @clock.setter
    def clock(self, fn: Callable[[], int]) -> None:
        self.writer.clock = self.writer.store.clock = fn

    @property
    def present(self):
        return self.writer.store.present

    @present.setter
    def present(self, who) -> None:
        self.writer.store.present = who

    @property
    def conversations(self) -> dict:
        """The conversations the store saw (PostgreSQL's): who may see a topic's event whose conversation a batch
        or another node's news did not carry (`Fanout._readers`)."""
        return getattr(self.writer.store, "conversations", {})

    async def open(self) -> None:
        """Ready the store before serving (PostgreSQL: connect, migrate, register the node, listen)."""
        await self.writer.store.open()

    def connect(self):
        """A connection beside the writer's, for the ops (reads and management) the gateway runs."""
        return self.writer.store.ops_connection()

    def seen(self, pid: str, online: bool) -> None:
        """The gateway's word that `pid` came (its first connection) or went (its last)."""
        present = self.writer.store.present
        if isinstance(present, set):
            (present.add if online else present.discard)(pid)


class ThreadRunner(_Face):
    """The writer on a thread of its own, with the SQLite store (whose batches never suspend)."""

    def __init__(self, writer: Writer):
        self.writer = writer
        self.path = getattr(writer.store, "path", None)
        self._queue: queue.SimpleQueue[Command | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._publish: Callable[[Published], None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self, loop: asyncio.AbstractEventLoop, publish: Callable[[Published], None]) -> None:
        self._loop, self._publish = loop, publish
        self._thread = threading.Thread(target=self._run, name="ygg-writer", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._thread:
            self._queue.put(None)
            self._thread.join(timeout=10)
            self._thread = None
        self.writer.store.close()

    async def aclose(self) -> None:
        await asyncio.to_thread(self.stop)

    def submit(self, kind: str, *args) -> asyncio.Future:
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        self._queue.put(Command(kind, args, fut, loop))
        return fut

    def _run(self) -> None:
        later: list[Command] = []
        while True:
            try:
                first = self._queue.get(timeout=self.writer.store.idle_seconds())
            except queue.Empty:
                first = _IDLE
            if first is None:
                return
            batch = later + ([] if first is _IDLE else [first])
            while len(batch) < MAX_BATCH:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    self._queue.put(None)
                    break
                batch.append(nxt)
            answers, later, out = self.tick(batch)
            _resolve(answers)
            if out is not None and self._publish:
                self._loop.call_soon_threadsafe(self._publish, out)

    def tick(self, batch: list[Command]) -> tuple[list[tuple[Command, Any, BaseException | None]], list, Published | None]:
        """Decide and commit one batch (an empty one runs due timers): each command's answer (a result, or the
        error it ended with), the commands left for the next, and what to publish (None: nothing)."""
        try:
            answers, later, out = drive(self.writer.run(batch))
        except Exception as e:  # the commit failed: nothing in this batch happened
            log.exception("batch failed")
            return [(c, None, e) for c in batch], [], None
        left = {id(c) for c in later}
        for c in later:
            c.deferred += 1
        done = [(c, answers.get(id(c)), None) for c in batch if id(c) not in left]
        return done, later, out if out.any() else None


class TaskRunner(_Face):
    """The writer as a task on the event loop, with the PostgreSQL store (whose batches wait on the database)."""

    def __init__(self, writer: Writer):
        self.writer = writer
        self.path = getattr(writer.store, "url", None)
        self._queue: asyncio.Queue | None = None
        self._task: asyncio.Task | None = None
        self._publish: Callable[[Published], None] | None = None
        self._later: list[Command] = []

    def start(self, loop: asyncio.AbstractEventLoop, publish: Callable[[Published], None]) -> None:
        self._publish = publish
        self._queue = asyncio.Queue()
        self._task = loop.create_task(self._run())
        self.writer.store.start(loop)

    def submit(self, kind: str, *args) -> asyncio.Future:
        fut = asyncio.get_running_loop().create_future()
        cmd = Command(kind, args, fut)
        if kind == "ack" and self.writer.store.separate_acks:  # acks decide nothing a batch reads: their own path
            self.writer.store.ack(cmd)
        else:
            self._queue.put_nowait(cmd)
        return fut

    def stop(self) -> None:
        """Stop and close (callable from another thread, as `Gateway.close` does)."""
        loop = self._task.get_loop() if self._task is not None else None
        if loop is not None and loop.is_running():
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if running is not loop:
                asyncio.run_coroutine_threadsafe(self.aclose(), loop).result(30)
                return
        if loop is not None and not loop.is_closed() and not loop.is_running():
            loop.run_until_complete(self.aclose())

    async def aclose(self) -> None:
        if self._task is not None:
            self._queue.put_nowait(None)
            try:
                await asyncio.wait_for(self._task, 15)
            except (asyncio.TimeoutError, asyncio.CancelledError):
                self._task.cancel()
            self._task = None
        await self.writer.store.aclose()

    async def _run(self) -> None:
        q, store = self._queue, self.writer.store
        stop = False
        while True:
            if stop:  # a None came: decide the sends left for later (they wait for their locks now), then end
                if not self._later:
                    return
                batch, self._later = self._later, []
                await self._tick(batch)
                continue
            wait = 0.0 if self._later else store.idle_seconds()
            try:
                first = await asyncio.wait_for(q.get(), wait) if wait > 0 else q.get_nowait()
            except (asyncio.TimeoutError, asyncio.QueueEmpty):
                first = _IDLE
            batch, self._later = self._later, []
            stop = first is None
            if first is not _IDLE and first is not None:
                batch.append(first)
            while not stop and len(batch) < MAX_BATCH and not q.empty():
                nxt = q.get_nowait()
                if nxt is None:
                    stop = True
                    break
                batch.append(nxt)
            if batch or store.timers_due():
                await self._tick(batch)

    async def _tick(self, batch: list[Command]) -> None:
        try:
            answers, later, out = await self.writer.run(batch)
        except Exception as e:  # never let the writer die
            log.exception("batch failed")
            for c in batch:
                if not c.future.done():
                    c.future.set_exception(e)
            return
        left = {id(c) for c in later}
        for c in later:
            c.deferred += 1
        self._later = later
        for c in batch:
            if id(c) in left or c.future.done():
                continue
            r = answers.get(id(c))
            if isinstance(r, BaseException):
                c.future.set_exception(r)
            else:
                c.future.set_result(r)
        if self._publish and out.any():
            self._publish(out)


def _resolve(answers: list[tuple[Command, Any, BaseException | None]]) -> None:
    """Answer a batch's callers, in order, with one wake-up of each event loop (not one per command)."""
    by_loop: dict[asyncio.AbstractEventLoop, list] = {}
    for a in answers:
        by_loop.setdefault(a[0].loop, []).append(a)
    for loop, items in by_loop.items():
        loop.call_soon_threadsafe(_settle, items)


def _settle(items: list[tuple[Command, Any, BaseException | None]]) -> None:
    for cmd, result, error in items:
        if cmd.future.done():
            continue
        if error is not None:
            cmd.future.set_exception(error)
        elif isinstance(result, BaseException):
            cmd.future.set_exception(result)
        else:
            cmd.future.set_result(result)

