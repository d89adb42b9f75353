"""The engine on PostgreSQL: Load -> Decide -> Apply -> Publish, safe with several nodes.

The same surface as `engine.Engine` (`submit(kind, ...)`, `start(loop, publish)`, `stop()`)
and the same commands (send, ack, fund, set_budget, session, sync), on asyncio and asyncpg.
Several server processes may run on one database; what makes that safe:

- **Decided under row locks.** A batch of sends is one transaction (acks have their own, `_ack_run`). It first locks,
  in one statement and in one global order (conversations, topics, agent wallets, then a
  limited plan's usage row), every row the batch's decisions read and change, and loads them
  from there (`SELECT … FOR UPDATE` returns the newest committed version). Then the core
  decides each send in memory, in arrival order, and the batch's writes go out in a few bulk
  statements before the COMMIT. A workspace pool is read without a lock, and only when a
  decision charges it is it locked and compared; if another node changed it meanwhile, the
  batch is decided again against the locked value. Two nodes therefore never spend the same
  credits twice nor write a topic from a stale state. A topic another node holds is skipped
  (`SKIP LOCKED`), not waited for: its sends are decided first in the next batch (`_leave`).
- **Retries.** A deadlock, a serialization failure, or a unique violation (two nodes storing
  one `client_id`) rolls the batch back and decides it again; a batch that fails otherwise is
  split, so a bad command fails alone.
- **What is cached per node** is what only changes through `meta.config`: directories, the
  General conversations, organizations and plans, per-agent flags. Each batch reads the
  version in its locking statement and drops the caches when it moved. Topics, wallets,
  conversations other than General, usage and open-topic counts are never cached.
- **Announcements** cross nodes with NOTIFY, sent inside the transaction (so only if it
  commits): who has new deliveries, topic and balance changes, the messages for monitors.
- **Timers** (nudges, polls, auto-done) are claimed: every node looks every `timer_interval`
  seconds for topics whose `next_due` passed, `FOR UPDATE SKIP LOCKED`, so one node handles each.
- Unlimited plans count usage on a per-node row; limited plans on the shared row, under its lock.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
import random
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

import asyncpg
import msgspec

from .ops import auth
from . import idempotency, protocol
from .protocol import frames
from .core import (
    POOL, Conversation, Decision, Directory, Kind, Topic, TopicStatus, View, decide, due, fund,
    general_id, next_due, plan_of,
)
from .core import assign as core_assign, party as core_party, side as core_side
from .core.decide import throttle_limit
from .core.funding import set_budget as core_set_budget
from .core.lifecycle import unfunded
from .core.model import Fitness
from .core.rules import MAX_HOPS, THROTTLE_DIRECT, THROTTLE_GROUP
from .engine import MAX_BATCH, Engine, Published, _month, now_us
from .store import postgres as pg
from .store import sqlite as db

log = logging.getLogger("ygg.pg_engine")

class _Contended(Exception):
    """A General conversation's party counters, read without a lock, were near a limit after all.

    General is in every agent message's batch (its counters move with each one), so locking its row
    for a whole batch made every node's batches of a workspace take turns on it. A batch with no
    person writing in General reads it without a lock and, at its write, adds its agents' messages
    to the counters (`run`, `hops`) in one UPDATE, which returns the result. That is exactly what a
    locked batch would have decided as long as neither the batch's own view nor the result reaches
    a limit (no message was throttled or hop-limited, no notice is due). When one does, the
    transaction is rolled back and decided again with General locked.
    """


RETRYABLE = (
    _Contended,
    asyncpg.exceptions.DeadlockDetectedError,
    asyncpg.exceptions.SerializationError,
    asyncpg.exceptions.UniqueViolationError,
    asyncpg.exceptions.LockNotAvailableError,
)
MAX_ATTEMPTS = 12
_LOST = (asyncpg.exceptions.PostgresConnectionError, asyncpg.exceptions.InterfaceError,
         asyncpg.exceptions.OperatorInterventionError, OSError, ConnectionError)
_EMPTY = Directory.build("", [], [])
_enc = msgspec.json.Encoder()


@dataclass(slots=True)
class _Command:
    kind: str
    args: tuple
    future: asyncio.Future
    deferred: int = 0  # batches that left it for later: its topic was locked by another node


@dataclass
class _Snapshot:
    """What one batch loaded under its locks (immutable between decisions of an attempt)."""

    version: int = 0
    topics: dict[str, Topic] = field(default_factory=dict)
    convs: dict[str, Conversation] = field(default_factory=dict)
    wallets: dict[str, int | None] = field(default_factory=dict)  # agent -> balance (locked)
    pools: dict[str, int] = field(default_factory=dict)  # workspace -> pool balance
    locked_pools: set[str] = field(default_factory=set)
    busy: set[str] = field(default_factory=set)  # topics another node's transaction holds (skipped, not waited for)
    fitness: dict[str, Fitness] = field(default_factory=dict)  # agents a send to a capability may go to (_fitness)
    shared: set[str] = field(default_factory=set)  # General conversations read without a lock (see _Contended)
    opened: dict[str, int] = field(default_factory=dict)
    usage: dict[tuple[str, str], int] = field(default_factory=dict)  # limited plans: used this month
    idem: dict[tuple[str, str], bytes] = field(default_factory=dict)


@dataclass
class _Work:
    """The batch's state while deciding: the snapshot, moved by each decision in turn."""

    snap: _Snapshot
    topics: dict[str, Topic]
    convs: dict[str, Conversation]
    wallets: dict[str, int | None]
    pools: dict[str, int]
    opened: dict[str, int]
    usage: dict[tuple[str, str], int]
    idem: dict[tuple[str, str], bytes]
    flags: set[tuple[str, str]]
    decisions: list[tuple[Decision, str, str | None, str | None]] = field(default_factory=list)
    new_idem: list[tuple[str, str, bytes, int]] = field(default_factory=list)
    pools_charged: set[str] = field(default_factory=set)
    limited: set[str] = field(default_factory=set)  # orgs whose usage row is the shared one
    wakes: dict[str, int] = field(default_factory=dict)  # wakes this batch gave each agent of snap.fitness

    @classmethod
    def of(cls, s: _Snapshot, flags: set) -> "_Work":
        return cls(s, dict(s.topics), dict(s.convs), dict(s.wallets), dict(s.pools), dict(s.opened),
                   dict(s.usage), dict(s.idem), set(flags))


class PgEngine:
    def __init__(self, url: str, *, clock: Callable[[], int] = now_us, prepared: bool | None = None,
                 node: str | None = None, lease: float = 30.0, timer_interval: float = 1.0,
                 idempotency_window: int = idempotency.WINDOW_US):
        self.url = url
        self.idempotency_window = idempotency_window  # how long a client_id's answer is kept (microseconds)
        self._sweep_at = 0  # when the next chunk of older idempotency rows goes (`_sweep`)
        self._sweeping: asyncio.Task | None = None
        self.dsn, self.prepared = pg.parse_dsn(url, prepared)
        self.path = url  # what the gateway's reader and admin connections open
        self.events = True  # topic and balance events are always handed over (in this process)
        self.node = node or uuid.uuid4().hex[:12]
        self.clock = clock
        self.lease = lease
        self.timer_interval = timer_interval
        self.conversations: dict[str, dict[str, Conversation]] = {}  # what this node saw, for event visibility
        self.on_notify: Callable[[dict], None] | None = None  # the gateway's handler of other nodes' news
        self.conn: asyncpg.Connection | None = None  # the writer
        self.pool: asyncpg.Pool | None = None  # claims, releases, heartbeats, fetches
        self.listener: asyncpg.Connection | None = None
        self._sync: pg.SyncConnection | None = None  # cold loads through the sqlite-shaped loaders; side writes
        self._queue: asyncio.Queue | None = None
        self._task: asyncio.Task | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._publish: Callable[[Published], None] | None = None
        self._timers: list[tuple[int, str]] = []
        self._deferred: list[_Command] = []  # sends left for the next batch (see _batch), oldest first
        self.present: frozenset[str] = frozenset()  # who is connected to this node (the gateway replaces it whole)
        self.node_timeout = 4 * min(max(lease / 3, 0.2), 5.0)  # a node silent this long is gone (PgGateway's)
        self.presence_timeout = protocol.PRESENCE_TIMEOUT  # an agent silent this long is offline (PgGateway's)
        self._next_poll = 0.0
        self._after: tuple = ((), {}, {})
        self._lock_general = False  # the next attempt locks General (the last was _Contended)
        self._reset(None)

    # --- lifecycle ---

    async def open(self) -> None:
        """Connect, migrate, register this node, listen. Idempotent."""
        if self.conn is not None:
            return
        self.conn = await pg.connect(self.dsn, self.prepared)
        await pg.migrate(self.conn)
        self._sync = await asyncio.to_thread(pg.SyncConnection, self.url, self.prepared)
        self.pool = await pg.create_pool(self.dsn, self.prepared, size=4, soft=True)
        self._reset(await self.conn.fetchval("SELECT value FROM meta WHERE key = 'config'"))
        now = self.clock()
        await self.conn.execute(
            """INSERT INTO nodes (id, started_at, heartbeat_at) VALUES ($1, $2, $2)
               ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at""", self.node, now)
        await self._listen()

    async def _listen(self) -> None:
        self.listener = await pg.connect(self.dsn, self.prepared)
        await self.listener.add_listener(pg.CHANNEL, self._notified)

    async def relisten(self) -> bool:
        """Reconnect the listener if it was lost; True if it was (the caller rescans: news may be missed)."""
        if self.listener is not None and not self.listener.is_closed():
            return False
        try:
            await self._listen()
        except (OSError, asyncpg.PostgresError):
            log.warning("listener: cannot reconnect yet")
            return False
        return True

    def _notified(self, _conn, _pid, _channel, payload: str) -> None:
        try:
            msg = msgspec.json.decode(payload)
        except msgspec.DecodeError:
            return
        if msg.get("n") == self.node:
            return
        if self.on_notify is not None:
            self.on_notify(msg)

    def start(self, loop: asyncio.AbstractEventLoop, publish: Callable[[Published], None]) -> None:
        self._loop, self._publish = loop, publish
        self._queue = asyncio.Queue()
        self._task = loop.create_task(self._run())
        self._acks: list[_Command] = []
        self._ack_wake = asyncio.Event()
        self._ack_task = loop.create_task(self._ack_run())

    def stop(self) -> None:
        """Stop and close (callable from another thread, as `Gateway.close` does)."""
        loop = self._loop
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
        if self._sweeping is not None:
            self._sweeping.cancel()
            await asyncio.gather(self._sweeping, return_exceptions=True)
            self._sweeping = None
        if getattr(self, "_ack_task", None) is not None:
            self._ack_task.cancel()
            self._ack_task = None
        if self._task is not None:
            self._queue.put_nowait(None)
            try:
                await asyncio.wait_for(self._task, 15)
            except (asyncio.TimeoutError, asyncio.CancelledError):
                self._task.cancel()
            self._task = None
        for c in (self.listener, self.conn, getattr(self, "_ack_conn", None)):
            if c is not None and not c.is_closed():
                try:
                    await c.close(timeout=5)
                except Exception:
                    c.terminate()
        self.listener = self.conn = None
        if self.pool is not None:
            try:
                await asyncio.wait_for(self.pool.close(), 5)
            except Exception:
                self.pool.terminate()
            self.pool = None
        if self._sync is not None:
            await asyncio.to_thread(self._sync.close)
            self._sync = None

    def submit(self, kind: str, *args) -> asyncio.Future:
        fut = asyncio.get_running_loop().create_future()
        if kind == "ack":  # acks decide nothing and lock nothing a decision reads: their own fast path
            self._acks.append(_Command(kind, args, fut))
            self._ack_wake.set()
        else:
            self._queue.put_nowait(_Command(kind, args, fut))
        return fut

    async def _ack_run(self) -> None:
        """Acks queued while the last ones were written go together, as one statement (its own
        transaction, committed when it returns): an ack does not wait for a batch of sends."""
        self._ack_conn = None
        while True:
            await self._ack_wake.wait()
            self._ack_wake.clear()
            while self._acks:
                cmds, self._acks = self._acks, []
                try:
                    if self._ack_conn is None or self._ack_conn.is_closed():
                        self._ack_conn = await pg.connect(self.dsn, self.prepared)
                    acked = await self._write_acks(self._ack_conn, [(c, *c.args) for c in cmds])
                except asyncio.CancelledError:
                    raise
                except Exception as e:
                    log.exception("acks failed")
                    for c in cmds:
                        if not c.future.done():
                            c.future.set_exception(e)
                    continue
                for c, (participant, ids, ref) in zip(cmds, (c.args for c in cmds)):
                    mine = [i for i in ids if (i, participant) in acked]
                    acked.difference_update((i, participant) for i in mine)
                    if not c.future.done():
                        c.future.set_result({"op": "acked", "ref": ref, "ids": mine})

    async def _write_acks(self, conn: asyncpg.Connection, acks: list) -> set[tuple[int, str]]:
        """One statement (rows locked in id order, as leases are renewed and returned); again on a
        deadlock or serialization failure, which roll back only this statement's transaction."""
        ids, who = [], []
        for _, participant, list_ids, _ in acks:
            ids += list_ids
            who += [participant] * len(list_ids)
        for attempt in range(MAX_ATTEMPTS):
            try:
                rows = await conn.fetch(pg.ACK_DELIVERIES, self.clock(), ids, who)
                return {(r[0], r[1]) for r in rows}
            except RETRYABLE:
                if attempt == MAX_ATTEMPTS - 1:
                    raise
                await asyncio.sleep(random.uniform(0, 0.002 * (2 ** min(attempt, 6))))

    # --- caches (only what changes through meta.config) ---

    def _reset(self, version: int | None) -> None:
        self._version = version
        self.directories: dict[str, Directory] = {}
        self._settings: dict[str, dict] = {}
        self._orgs: dict[str, tuple[str, str] | None] = {}
        self._flags: set[tuple[str, str]] | None = None
        self.conversations = {}

    async def _cold(self, fn, *args):
        return await asyncio.to_thread(fn, self._sync, *args)

    async def _ensure(self, workspaces: set[str]) -> None:
        """Directories, General conversations and organizations of these workspaces, cached."""
        for ws in workspaces:
            if ws not in self.directories:
                d = await self._cold(db.load_directory, ws)
                if not d.memberships:
                    continue  # a made-up workspace id is not kept
                self.directories[ws] = d
                gid = general_id(ws)
                convs = await self._cold(_load_conversations, [gid])
                if gid in convs:  # (the gateway asks a topic's conversation's kind: General's is fixed)
                    self.conversations.setdefault(ws, {})[gid] = convs[gid]
                self._orgs[ws] = await self._cold(db.org_of, ws)
                self._settings[ws] = await self._cold(db.settings, ws)
        if self._flags is None:
            self._flags = await self._cold(db.load_flags)

    def _directory(self, ws: str) -> Directory:
        return self.directories.get(ws, _EMPTY)

    def _party_limits(self, ws: str) -> dict:
        """The workspace's party settings as View fields (as Engine._party_limits)."""
        s = self._settings.get(ws) or {}
        return {"max_hops": s.get("party.maxHops", MAX_HOPS),
                "throttle": (s.get("party.throttleDirect", THROTTLE_DIRECT), s.get("party.throttleGroup", THROTTLE_GROUP))}

    # --- the writer task ---

    async def _run(self) -> None:
        q = self._queue
        stop = False
        while True:
            if stop:  # a None came: decide the sends left for later (they wait for their locks now), then end
                if not self._deferred:
                    return
                batch, self._deferred = self._deferred, []
                await self._tick_safely(batch)
                continue
            wait = max(0.0, self._next_poll - time.monotonic())
            if self._timers:
                wait = min(wait, max(0.0, (self._timers[0][0] - self.clock()) / 1e6))
            if self._deferred:
                wait = 0.0
            try:
                first = await asyncio.wait_for(q.get(), wait) if wait > 0 else q.get_nowait()
            except (asyncio.TimeoutError, asyncio.QueueEmpty):
                first = _IDLE
            batch, self._deferred = self._deferred, []
            stop = first is None
            if first is not _IDLE and first is not None:
                batch.append(first)
            while not stop and len(batch) < MAX_BATCH and not q.empty():
                nxt = q.get_nowait()
                if nxt is None:
                    stop = True
                    break
                batch.append(nxt)
            await self._tick_safely(batch)

    async def _tick_safely(self, batch: list[_Command]) -> None:
        try:
            await self._tick(batch)
        except Exception as e:  # never let the writer die
            log.exception("tick failed")
            for cmd in batch:
                if not cmd.future.done():
                    cmd.future.set_exception(e)
            self._deferred = []

    async def _tick(self, batch: list[_Command]) -> None:
        await self._usable()
        out = Published()
        results: dict[int, Any] = {}
        group = [c for c in batch if c.kind == "send"]
        if group:
            await self._group(group, results, out)
        for cmd in batch:
            if cmd.kind != "send":
                results[id(cmd)] = await self._single(cmd, out)
        now_m = time.monotonic()
        if now_m >= self._next_poll or (self._timers and self._timers[0][0] <= self.clock()):
            self._next_poll = now_m + self.timer_interval
            try:
                await self._due(out)
            except Exception:
                log.exception("timers failed")
        if self.clock() >= self._sweep_at and (self._sweeping is None or self._sweeping.done()):
            self._sweeping = asyncio.get_running_loop().create_task(self._sweep())
        later = {id(c) for c in self._deferred}
        for cmd in batch:
            r = results.get(id(cmd))
            if cmd.future.done() or id(cmd) in later:
                continue
            if isinstance(r, BaseException):
                cmd.future.set_exception(r)
            else:
                cmd.future.set_result(r)
        if self._publish and (out.deliveries or out.messages or out.topics or out.balances or out.rescan):
            self._publish(out)

    async def _attempts(self, fn, *args):
        """Run fn(*args) in a transaction, again on deadlock / serialization failure / unique violation."""
        for attempt in range(MAX_ATTEMPTS):
            try:
                self._after = ((), {}, {})
                async with self.conn.transaction():
                    result = await fn(*args)
                self._apply_after()  # committed: now this node's caches may follow
                self._lock_general = False
                return result
            except RETRYABLE as e:
                self._lock_general = self._lock_general or isinstance(e, _Contended)
                if attempt == MAX_ATTEMPTS - 1:
                    raise
                log.info("retrying after %s", type(e).__name__)
                await asyncio.sleep(random.uniform(0, 0.002 * (2 ** min(attempt, 6))))
            except _LOST:  # the outcome of this batch is unknown to us: fail it; the next one reconnects
                await self._reconnect()
                raise

    async def _reconnect(self) -> None:
        try:
            if self.conn is not None:
                self.conn.terminate()
            self.conn = await pg.connect(self.dsn, self.prepared)
        except (OSError, asyncpg.PostgresError):
            log.warning("writer: cannot reconnect yet")

    async def _usable(self) -> None:
        """Before a batch: a writer connection that was lost is made again."""
        if self.conn is None or self.conn.is_closed():
            await self._reconnect()

    async def _group(self, cmds: list[_Command], results: dict[int, Any], out: Published) -> None:
        """Sends in one transaction; a batch that fails for another reason is split."""
        try:
            answers, part = await self._attempts(self._batch, cmds)
        except Exception as e:
            if len(cmds) == 1:
                log.exception("command %s failed", cmds[0].kind)
                results[id(cmds[0])] = e
                return
            held: set[str] = set()
            for c in cmds:
                if c.args[0] in held:  # its author's earlier send was left for later: so is this one (`_leave`)
                    c.deferred += 1
                    self._deferred.append(c)
                    continue
                await self._group([c], results, out)
                if self._deferred and self._deferred[-1] is c:
                    held.add(c.args[0])
            return
        results.update(answers)
        _merge(out, part)
        for c in cmds:  # the sends this batch left (see _batch): first in the next one, and they wait there
            if id(c) not in answers:
                c.deferred += 1
                self._deferred.append(c)

    async def _single(self, cmd: _Command, out: Published) -> Any:
        try:
            if cmd.kind == "sync":
                return None
            if cmd.kind == "session":
                return await self._session(*cmd.args)
            if cmd.kind in ("set_profile", "set_setting"):  # not decisions: Engine's, on the side connection
                return await asyncio.to_thread(getattr(Engine, "_do_" + cmd.kind), _Side(self), *cmd.args, out=out)
            handler = getattr(self, "_do_" + cmd.kind)
            answer, part = await self._attempts(handler, *cmd.args)
        except Exception as e:
            log.exception("command %s failed", cmd.kind)
            return e
        _merge(out, part)
        return answer

    # --- sends: one transaction ---

    async def _batch(self, cmds: list[_Command]) -> tuple[dict[int, Any], Published]:
        now = self.clock()
        month = _month(now)
        answers: dict[int, Any] = {}
        sends: list[tuple[_Command, str, frames.Send]] = [(cmd, *cmd.args) for cmd in cmds]
        work = await self._load(sends, month) if sends else None
        if work is not None and work.snap.busy:
            sends = self._leave(sends, work.snap.busy)
        if work is not None:
            work.snap.fitness = await self._fitness(sends)
        while work is not None:
            for cmd, author, frame in sends:
                try:
                    answers[id(cmd)] = self._send(work, author, frame, now, month)
                except Exception as e:
                    log.exception("send failed")
                    answers[id(cmd)] = e
            moved = await self._lock_pools(work)
            if not moved:
                break
            limited = work.limited
            work = _Work.of(work.snap, self._flags)  # a pool changed under us: decide again, now locked
            work.limited = limited
        out = Published()
        if work is not None:
            await self._write(work, now, out)
        return answers, out

    @staticmethod
    def _leave(sends: list[tuple[_Command, str, frames.Send]], busy: set[str]) -> list[tuple[_Command, str, frames.Send]]:
        """The sends decided now; those in a topic another node holds are left for the next batch.

        Waiting for that node's COMMIT while holding this batch's other locks made the nodes take
        turns (each batch waited for the other's, whose next one waited for this one), so a topic
        locked elsewhere is skipped (`FOR UPDATE SKIP LOCKED`, as claims are) and its sends go first
        into this node's next batch, where they wait for the lock. An author's later sends are left
        with its first one, so each participant's sends are still decided in the order they came.
        """
        now, held = [], set()
        for s in sends:
            cmd, author, f = s
            t = f.topic
            if author in held or (isinstance(t, str) and t in busy):
                held.add(author)
            else:
                now.append(s)
        return now

    async def _fitness(self, sends: list[tuple[_Command, str, frames.Send]]) -> dict[str, Fitness]:
        """What assignment scoring knows of the agents the batch's sends to a capability may go to (seed 003
        §14), as `Engine._assignment` loads it: load, trust and response time by `db.fitness` (plain SQL, on
        this node's side connection: what is committed), online if connected to this node or to another
        live one (`presence`). The batch's own wakes are added to the load as it decides (`_stage`)."""
        agents: set[str] = set()
        for _, author, f in sends:
            to = f.to
            if isinstance(to, list) and any(isinstance(r, str) and r.startswith(core_assign.PREFIX) for r in to):
                d = self._directory(f.workspace)
                if author in d.memberships:
                    agents.update(core_assign.asked(d, tuple(r for r in to if isinstance(r, str))))
        if not agents:
            return {}
        ids = sorted(agents)
        present = self.present
        online = set(present) | await pg.present_elsewhere(  # every live node's, this one's too ("": none left out)
            self.conn, [a for a in ids if a not in present], "", self.clock(), self.node_timeout,
            self.presence_timeout)
        return await self._cold(db.fitness, ids, online.__contains__)

    async def _load(self, sends: list[tuple[_Command, str, frames.Send]], month: str) -> _Work:
        """Lock and load every row the batch's decisions depend on, in the global lock order."""
        for _ in range(3):
            await self._ensure({f.workspace for _, _, f in sends})
            convs, topics, agents, pools, idem, limited, opening = set(), set(), set(), set(), [], set(), set()
            waited = set()  # topics of sends left by an earlier batch: waited for, not skipped
            shared, locked = set(), set()  # General conversations: read without a lock / locked (a person writes)
            spaces = set()  # the workspaces written in: held against a delete (admin.delete_workspace)
            for cmd, author, f in sends:
                ws = f.workspace
                d = self._directory(ws)
                if author not in d.memberships:
                    continue
                spaces.add(ws)
                cid = _conversation_id(d, f.conversation, author)
                if cid is not None:  # General too: its party counters move with agents' messages
                    convs.add(cid)
                    if cid == general_id(ws):
                        (shared if d.participants[author].kind == Kind.AGENT else locked).add(cid)
                t = f.topic
                if isinstance(t, str) and t != "new":
                    (waited if cmd.deferred else topics).add(t)
                if d.participants[author].kind == Kind.AGENT:
                    agents.add(author)
                    pools.add(ws)
                    if not isinstance(t, str) or t == "new":
                        opening.add(author)
                if f.client_id is not None:
                    idem.append((author, f.client_id))
                org = self._orgs.get(ws)
                if org is not None and plan_of(*org[1:]).messages_per_month is not None:
                    limited.add(org[0])
            if limited:
                await self.conn.executemany(
                    "INSERT INTO usage (org, month, count) VALUES ($1, $2, 0) ON CONFLICT DO NOTHING",
                    [(o, month) for o in sorted(limited)])
            shared = set() if self._lock_general else shared - locked
            rows = await self.conn.fetch(
                _LOAD, sorted(convs - shared), sorted(topics - waited), sorted(agents), sorted(pools),
                [a for a, _ in idem], [c for _, c in idem], sorted(limited), month, sorted(shared), sorted(waited),
                sorted(spaces))
            snap = _Snapshot()
            held = set()
            for kind, a, b, c, x, y, n, blob in rows:
                if kind == "v":
                    snap.version = n
                elif kind == "s":
                    held.add(a)
                elif kind == "t":
                    snap.topics[a] = db.decode_topic(blob)
                elif kind == "c":
                    snap.convs[a] = db.conversation(a, b, c, x, y, blob.decode())
                elif kind == "w":
                    snap.wallets[a] = n
                elif kind == "p":
                    snap.pools[a] = n
                elif kind == "i":
                    snap.idem[(a, b)] = blob
                elif kind == "k":
                    snap.busy.add(a)
                elif kind == "u":
                    snap.usage[(a, month)] = snap.usage.get((a, month), 0) + (n or 0)
            if snap.version != self._version:
                self._reset(snap.version)
                continue  # someone changed the directory: load it again, lock again (a superset)
            if spaces - held:  # deleted while this waited for its row (the version above was read before)
                self._reset(await self.conn.fetchval("SELECT value FROM meta WHERE key = 'config'"))
                continue
            snap.shared = shared & set(snap.convs)
            for a in agents:
                snap.wallets.setdefault(a, None)
            for cv in snap.convs.values():  # seen now: the gateway shows their topics' events to their members
                self.conversations.setdefault(cv.workspace, {})[cv.id] = cv
            if opening:  # after the wallet locks: another node's new topic for the same agent is visible now
                snap.opened = dict.fromkeys(opening, 0)
                for opener, count in await self.conn.fetch(
                        "SELECT opener, count(*) FROM topics WHERE opener = ANY($1::text[]) AND status != 'closed' "
                        "GROUP BY opener", sorted(opening)):
                    snap.opened[opener] = count
            w = _Work.of(snap, self._flags)
            w.limited = limited
            return w
        raise asyncpg.exceptions.SerializationError("the configuration kept changing")

    def _send(self, w: _Work, author: str, frame: frames.Send, now: int, month: str) -> dict:
        ref, client_id = frame.ref, frame.client_id
        if client_id is not None:
            reply = w.idem.get((author, client_id))
            if reply is not None:
                return {**msgspec.json.decode(reply), "ref": ref, "duplicate": True}
        ws, conv_ref = frame.workspace, frame.conversation
        directory = self._directory(ws)
        if author not in directory.memberships:
            return protocol.refused(ref, "unknown_workspace", "no such workspace")
        try:
            post = protocol.to_post(frame, message_id=protocol.new_id(), author=author, workspace=ws)
        except protocol.BadFrame as e:
            return protocol.error(ref, "bad_frame", e.detail)
        known = self._known(w, ws)
        conv = directory.conversation(conv_ref, author, known)
        topic = w.topics.get(post.topic) if post.topic and post.topic != "new" else None
        if topic is not None and topic.workspace != ws:
            topic = None
        agent = directory.participants[author].kind == Kind.AGENT
        view = View(
            directory, conv, topic,
            open_opened=w.opened.get(author, 0) if agent else 0,
            wallet=w.wallets.get(author) if agent else None,
            pool=w.pools.get(ws) or 0 if agent else 0,
            plan_left=self._plan_left(w, ws, month),
            flags=frozenset(w.flags),
            new_conversation=conv is not None and conv.id not in known,
            **self._party_limits(ws),
            side=core_side.existing(conv, post.topic, known) if agent else None,
        )
        if any(r.startswith(core_assign.PREFIX) for r in post.to):
            fitness = {a: msgspec.structs.replace(f, load=f.load + w.wakes.get(a, 0)) if a in w.wakes else f
                       for a, f in w.snap.fitness.items()}
            view = msgspec.structs.replace(
                view, weights=core_assign.weights_of((self._settings.get(ws) or {}).get("assign.weights")), fitness=fitness)
        d = decide(view, post, now)
        self._stage(w, d, ws, now, month)
        reply = protocol.answer(ref, d)
        if client_id is not None and reply["op"] == "sent":
            body = msgspec.json.encode({k: v for k, v in reply.items() if k != "ref"})
            w.idem[(author, client_id)] = body
            w.new_idem.append((author, client_id, body, now))
        return reply

    def _known(self, w: _Work, ws: str) -> dict[str, Conversation]:
        return {cid: c for cid, c in w.convs.items() if c.workspace == ws}

    def _plan_left(self, w: _Work, ws: str, month: str) -> int | None:
        org = self._orgs.get(ws)
        if org is None:
            return None
        limit = plan_of(*org[1:]).messages_per_month
        if limit is None:
            return None
        return max(0, limit - w.usage.get((org[0], month), 0))

    def _stage(self, w: _Work, d: Decision, ws: str, now: int, month: str | None) -> None:
        """Move the batch's state by one decision (the database is written once, at the end)."""
        org = self._orgs.get(ws)
        for t in d.topics:
            before = w.topics.get(t.id)
            was_open = before is not None and before.status != TopicStatus.CLOSED
            is_open = t.status != TopicStatus.CLOSED
            if was_open != is_open and t.opener in w.opened:
                w.opened[t.opener] += 1 if is_open else -1
            w.topics[t.id] = t
        if d.conversation is not None:
            w.convs[d.conversation.id] = d.conversation
        for e in d.ledger:
            if e.account == POOL:
                w.pools[e.workspace] = (w.pools.get(e.workspace) or 0) + e.delta
                w.pools_charged.add(e.workspace)
            else:
                w.wallets[e.account] = (w.wallets.get(e.account) or 0) + e.delta
        for f in d.flags:
            (w.flags.add if f.on else w.flags.discard)((f.name, f.agent))
        if d.usage and org and month:
            w.usage[(org[0], month)] = w.usage.get((org[0], month), 0) + d.usage
        if w.snap.fitness:  # a later send to a capability in this batch counts these wakes in the load
            for r in d.routed:
                for x in r.deliveries:
                    if x.wake and x.recipient in w.snap.fitness:
                        w.wakes[x.recipient] = w.wakes.get(x.recipient, 0) + 1
        w.decisions.append((d, ws, org[0] if org else None, month))

    async def _lock_pools(self, w: _Work) -> bool:
        """Lock the pools the decisions charged; True if one moved since it was read (decide again)."""
        todo = sorted(w.pools_charged - w.snap.locked_pools)
        if not todo:
            return False
        moved = False
        rows = await self.conn.fetch(
            "SELECT workspace, balance FROM wallets WHERE account = 'pool' AND workspace = ANY($1::text[]) "
            "ORDER BY workspace FOR UPDATE", todo)
        for ws, bal in rows:
            if w.snap.pools.get(ws) != bal:
                w.snap.pools[ws] = bal
                moved = True
        w.snap.locked_pools.update(todo)
        return moved

    # --- writing a batch ---

    async def _write(self, w: _Work, now: int, out: Published) -> None:
        """Write a transaction's decisions, and NOTIFY the other nodes, in one statement; fill `out`."""
        decisions = w.decisions
        if not decisions:
            return
        # conversations, topics, wallets, usage, flags: each row written once, in its last state
        convs: dict[str, Conversation] = {}
        topics: dict[str, Topic] = {}
        msgs, seen, dl, ledger = [], set(), [], []
        deltas: dict[tuple[str, str], int] = {}
        usage: dict[tuple[str, str, str], int] = {}
        flags: dict[tuple[str, str], bool] = {}
        balances: dict[tuple[str, str], int] = {}
        for d, ws, org, month in decisions:
            if d.conversation is not None:
                convs[d.conversation.id] = d.conversation
            for t in d.topics:
                topics[t.id] = t
            for r in d.routed:  # a message decided twice (a notice's derived id) is stored once
                m = r.message
                if m.id not in seen:
                    seen.add(m.id)
                    msgs.append(m)
                    dl += [(m, x) for x in r.deliveries]
            for e in d.ledger:
                key = db.wallet_key(e.workspace, e.account)
                deltas[key] = deltas.get(key, 0) + e.delta
                ledger.append(e)
                bal = w.pools.get(e.workspace) if e.account == POOL else w.wallets.get(e.account)
                balances[(e.workspace, e.account)] = bal or 0
            if d.usage and org and month:
                key = (org, month, "" if org in w.limited else self.node)  # "": the shared row, in `usage`
                usage[key] = usage.get(key, 0) + d.usage
            for f in d.flags:
                flags[(f.name, f.agent)] = f.on
        counted = self._counted(w, convs)
        cs = [c for c in convs.values() if c.id not in counted]
        ts, ks, us = list(topics.values()), sorted(deltas), sorted(usage)
        gs = sorted(counted)
        on = [k for k, v in flags.items() if v]
        off = [k for k, v in flags.items() if not v]
        idem = w.new_idem if w is not None else []
        news = pg.payloads(self.node, {
            "t": [[t.workspace, t.id] for t in ts], "b": [[*k, v] for k, v in balances.items()],
            "m": [[m.workspace, m.id] for m in msgs],
        })
        rows = await self.conn.fetch(
            _WRITE, now,
            [x.id for x in cs], [x.workspace for x in cs], [str(x.kind) for x in cs], [x.name for x in cs],
            [msgspec.json.encode(sorted(x.members)).decode() for x in cs],
            [t.id for t in ts], [t.workspace for t in ts], [t.conversation for t in ts], [t.opener for t in ts],
            [str(t.status) for t in ts], [next_due(t) for t in ts], [db.encode_topic(t) for t in ts],
            [t.created_at for t in ts],
            [m.id for m in msgs], [m.workspace for m in msgs], [m.conversation for m in msgs], [m.topic for m in msgs],
            [m.author for m in msgs], [str(m.type) for m in msgs], [m.text for m in msgs],
            [_enc.encode(m) for m in msgs], [m.created_at for m in msgs],
            [m.id for m, _ in dl], [x.recipient for _, x in dl], [int(x.wake) for _, x in dl],
            [x.reason for _, x in dl], list(range(len(dl))),
            [k[0] for k in ks], [k[1] for k in ks], [deltas[k] for k in ks],
            [e.workspace for e in ledger], [e.account for e in ledger], [e.delta for e in ledger],
            [e.cause for e in ledger],
            [k[0] for k in us], [k[1] for k in us], [k[2] for k in us], [usage[k] for k in us],
            [k[0] for k in on], [k[1] for k in on], [k[0] for k in off], [k[1] for k in off],
            [x[0] for x in idem], [x[1] for x in idem], [x[2] for x in idem],
            1 if flags else 0,  # other nodes cache flags: make them drop theirs
            self.node, pg.CHANNEL, news, [db.party_json(x) for x in cs],
            gs, [counted[g][0] for g in gs], [counted[g][1] for g in gs], [db.waits_funds(t) for t in ts])
        stored_ids: dict[tuple[str, str], int] = {}
        inserted: set[str] = set()
        for kind, n, mid, who in rows:
            if kind == "d":
                stored_ids[(mid, who)] = n
            elif kind == "m":
                inserted.add(mid)
            elif kind == "g":
                self._check_counted(convs[mid], who)
        stored = []
        for m, x in dl:
            did = stored_ids.get((m.id, x.recipient))
            if did is not None:
                stored.append(db.Stored(did, x.recipient, x.wake, x.reason, m))
        stored.sort(key=lambda s: s.id)
        written = {s.message.id for s in stored}
        addressed = {m.id for m, _ in dl}
        out.deliveries += stored
        out.messages += [m for m in msgs if m.id in inserted and (m.id in written or m.id not in addressed)]
        out.topics += ts
        # who may see each topic's event (Gateway._readers): its conversation, read here when this node has not
        # seen it (a funding resumes an agent's topics in every workspace it is in; a timer's topic)
        out.conversations.update((t.conversation, convs[t.conversation]) for t in ts if t.conversation in convs)
        unseen = sorted({t.conversation for t in ts if t.conversation not in out.conversations
                         and t.conversation not in self.conversations.get(t.workspace, {})})
        if unseen:
            out.conversations.update(await _fetch_conversations(self.conn, unseen))
        out.balances += [(*k, v) for k, v in balances.items()]
        self._after = (flags, convs, topics)  # for this node's caches, after the COMMIT (_attempts)

    def _counted(self, w: _Work | None, convs: dict[str, Conversation]) -> dict[str, tuple[int, int]]:
        """The General conversations read without a lock: what the batch adds to `run` and `hops`."""
        out: dict[str, tuple[int, int]] = {}
        for cid in (w.snap.shared if w is not None else ()):
            base, final = w.snap.convs[cid], convs.get(cid)
            if final is None:
                continue
            run, hops = final.run - base.run, final.hops - base.hops
            if run < 0 or hops < 0 or msgspec.structs.replace(final, run=base.run, hops=base.hops) != base:
                raise _Contended(cid)  # reset, or a notice, or anything but counting: decide it locked
            self._check_counted(final, None)
            out[cid] = (run, hops)
        return out

    def _check_counted(self, conv: Conversation, party: str | None) -> None:
        """Counters below both limits (the batch's own, or, with `party`, the row's after the UPDATE)."""
        if party is not None:
            conv = db.conversation(conv.id, conv.workspace, str(conv.kind), conv.name, "[]", party)
        limits = self._party_limits(conv.workspace)
        if conv.run >= throttle_limit(conv, limits["throttle"]) or conv.hops >= limits["max_hops"]:
            raise _Contended(conv.id)

    def _apply_after(self) -> None:
        flags, convs, topics = self._after
        self._after = ((), {}, {})
        if flags and self._flags is not None:
            for (name, agent), on in flags.items():
                (self._flags.add if on else self._flags.discard)((name, agent))
        for cv in convs.values():
            self.conversations.setdefault(cv.workspace, {})[cv.id] = cv
        for t in topics.values():
            when = next_due(t)
            if when is not None:
                heapq.heappush(self._timers, (when, t.id))

    # --- the other commands, each its own transaction ---

    async def _session(self, participant: str, lifetime: int, key: str | None = None) -> tuple[str, int]:
        cap = pg.Capture()
        token, expires = auth.new_session(cap, participant, self.clock(), lifetime, key)
        await pg.run_captured(self.conn, cap)
        return token, expires

    async def _hold(self, workspaces: set[Any], skip: bool = False) -> set[str]:
        """These workspaces' rows held till the COMMIT against a delete, as _LOAD holds a batch's (first in the
        lock order: admin.delete_workspace deletes the row first): those still there. A command outside a batch
        calls it before `_fresh`, which then sees a delete it waited for. `skip`: not waiting for a workspace a
        delete holds (what it would write there is being deleted)."""
        rows = await self.conn.fetch(
            "SELECT id FROM workspaces WHERE id = ANY($1::text[]) ORDER BY id FOR KEY SHARE"
            + (" SKIP LOCKED" if skip else ""), sorted(w for w in workspaces if isinstance(w, str)))
        return {r[0] for r in rows}

    async def _fresh(self, workspaces: set[str]) -> None:
        """The caches as of now (for the commands outside a batch): drop them if the config moved."""
        version = await self.conn.fetchval("SELECT value FROM meta WHERE key = 'config'")
        if version != self._version:
            self._reset(version)
        await self._ensure(workspaces)

    async def _do_fund(self, funder: str, frame: frames.Fund) -> tuple[dict, Published]:
        ws, account, amount, ref = frame.workspace, frame.account, frame.amount, frame.ref
        out = Published()
        await self._hold({ws})
        await self._fresh({ws})
        directory = self._directory(ws)
        if funder not in directory.memberships:
            return protocol.refused(ref, "unknown_workspace", "no such workspace"), out
        if account != POOL:
            found = directory.resolve((account,))
            if isinstance(found, tuple) and len(found) == 1:
                account = found[0]
        key = db.wallet_key(ws, account)
        # lock order: topics, then the wallet; then look again for topics paused meanwhile
        paused: dict[str, Topic] = {}
        for step in range(2):
            # where agents wait for funds: paused for credits, or open again with some still unfunded
            # (found through the partial index topics_waiting_funds: the writer marks them, waits_funds)
            if account == POOL:
                rows = await self.conn.fetch(
                    """SELECT id, state FROM topics WHERE workspace = $1 AND waits_funds IS NOT NULL
                       ORDER BY id FOR UPDATE""", ws)
            else:
                rows = await self.conn.fetch(
                    """SELECT id, state FROM topics WHERE waits_funds IS NOT NULL
                       AND (convert_from(state, 'UTF8')::jsonb -> 'unfunded' ? $1
                            OR convert_from(state, 'UTF8')::jsonb ->> 'paused_by' = $1) ORDER BY id FOR UPDATE""", account)
            for tid, state in rows:
                paused[tid] = db.decode_topic(state)
            if step == 0:
                bal = await self.conn.fetchval(
                    "SELECT balance FROM wallets WHERE workspace = $1 AND account = $2 FOR UPDATE", *key)
        topics = [t for t in paused.values() if unfunded(t)]
        now = self.clock()
        view = View(directory, None, flags=frozenset(self._flags))
        d = fund(view, funder, account, amount, tuple(topics), now, f"fund:{uuid.uuid4()}")
        w = _Work.of(_Snapshot(), self._flags)
        if account == POOL:
            w.pools[ws] = bal or 0
        else:
            w.wallets[account] = bal
        self._stage(w, d, ws, now, None)
        await self._write(w, now, out)
        if d.refusal:
            return protocol.refused(ref, d.refusal.reason, d.refusal.detail), out
        bal = w.pools[ws] if account == POOL else w.wallets[account]
        return {"op": "funded", "ref": ref, "account": account, "balance": bal}, out

    async def _do_set_budget(self, who: str, frame: frames.SetBudget) -> tuple[dict, Published]:
        ws, topic_id, budget, ref = frame.workspace, frame.topic, frame.budget, frame.ref
        out = Published()
        await self._hold({ws})
        await self._fresh({ws})
        directory = self._directory(ws)
        row = await self.conn.fetchrow("SELECT state FROM topics WHERE id = $1 FOR UPDATE", topic_id) \
            if isinstance(topic_id, str) else None
        t = db.decode_topic(row[0]) if row else None
        if who not in directory.memberships or t is None or t.workspace != ws:
            return protocol.refused(ref, "unknown_topic", "no such topic"), out
        p = directory.participants[who]
        role = directory.memberships[who].role
        if p.kind != Kind.HUMAN or not (role in ("owner", "admin") or (role != "viewer" and who in t.members)):
            return protocol.refused(ref, "permission_denied", "a person in the topic, or an admin, sets its budget"), out
        if budget is not None and (type(budget) is not int or not 0 <= budget <= 10**9):
            return protocol.refused(ref, "bad_amount", "a budget is a whole number of credits, or null for none"), out
        now = self.clock()
        w = _Work.of(_Snapshot(), self._flags)
        self._stage(w, core_set_budget(t, budget, now, f"budget:{uuid.uuid4()}"), ws, now, None)
        await self._write(w, now, out)
        return {"op": "set_budget", "ref": ref, "topic": topic_id, "budget": budget}, out

    async def _do_party(self, who: str, frame: frames.AddParticipant | frames.RemoveParticipant | frames.SetLead
                        ) -> tuple[dict, Published]:
        """add_participant / remove_participant / set_lead (as Engine._do_party), the conversation locked."""
        out = Published()
        op, ref, ws, conv_ref, target = frame.op, frame.ref, frame.workspace, frame.conversation, frame.target
        await self._hold({ws})
        await self._fresh({ws})
        directory = self._directory(ws)
        if who not in directory.memberships:
            return protocol.refused(ref, "unknown_workspace", "no such workspace"), out
        cid = _conversation_id(directory, conv_ref, who)
        row = await self.conn.fetchrow(
            "SELECT id, workspace, kind, name, members, party FROM conversations WHERE id = $1 AND workspace = $2 "
            "FOR UPDATE", cid, ws)
        known = {row[0]: db.conversation(*row)} if row else {}
        conv = directory.conversation(conv_ref, who, known)
        if conv is not None and conv.id not in known:
            conv = None  # a direct conversation nobody wrote in yet is not there to change
        view = View(directory, conv, flags=frozenset(self._flags))
        now = self.clock()
        if op == "set_lead":
            d = core_party.set_lead(view, who, target)
        else:
            d = core_party.change_members(view, who, "add" if op == "add_participant" else "remove", target, now)
        w = _Work.of(_Snapshot(), self._flags)
        self._stage(w, d, ws, now, None)
        await self._write(w, now, out)
        if d.refusal:
            return protocol.refused(ref, d.refusal.reason, d.refusal.detail), out
        c = d.conversation or conv
        return {"op": op, "ref": ref, "conversation": c.id, "members": sorted(c.members), "lead": c.lead,
                "changed": d.conversation is not None}, out

    async def _sweep(self) -> None:
        """Idempotency rows older than the window go, a chunk at a time (`idempotency.SWEEP_PG`), on a pool
        connection beside the writer, never in its way; one node at a time (a node that finds the sweep
        lock taken leaves the chunk to the node holding it)."""
        now = self.clock()
        self._sweep_at = now + idempotency.EVERY_US  # (tried again then, whatever happens here)
        try:
            async with self.pool.acquire() as c, c.transaction():
                if not await c.fetchval(idempotency.SWEEP_LOCK):
                    return
                status = await c.execute(idempotency.SWEEP_PG, now - self.idempotency_window)
            self._sweep_at = idempotency.next_sweep(now, int(status.split()[-1]))
        except Exception:
            log.exception("idempotency sweep failed")

    # --- timers: claimed, so one node handles each due topic ---

    async def _due(self, out: Published) -> None:
        now = self.clock()
        while self._timers and self._timers[0][0] <= now:
            heapq.heappop(self._timers)
        part = await self._attempts(self._due_tx, now)
        _merge(out, part)

    async def _due_tx(self, now: int) -> Published:
        out = Published()
        rows = await self.conn.fetch(
            "SELECT id, workspace, state FROM topics WHERE next_due <= $1 ORDER BY next_due LIMIT 200 "
            "FOR UPDATE SKIP LOCKED", now)
        if rows:  # (after the topics: a workspace a delete holds is skipped, not waited for, so no deadlock)
            held = await self._hold({r[1] for r in rows}, skip=True)
            rows = [r for r in rows if r[1] in held]
        if not rows:
            return out
        await self._fresh({r[1] for r in rows})
        topics = [db.decode_topic(r[2]) for r in rows]
        convs = await _fetch_conversations(self.conn, sorted({t.conversation for t in topics}))
        w = _Work.of(_Snapshot(), self._flags)
        for t in topics:
            when = next_due(t)
            if when is None or when > now:
                continue
            conv = convs.get(t.conversation)
            view = View(self._directory(t.workspace), conv, flags=frozenset(w.flags))
            d = due(view, t, now)
            if d.topics:
                self._stage(w, d, t.workspace, now, None)
        await self._write(w, now, out)
        return out


_IDLE = object()


class _Side:
    """What Engine's set_profile and set_setting use, on this node's side connection (autocommit).

    They are not decisions: an UPDATE of an agent's profile or a workspace's settings. Written
    there, the write bumps meta.config, so every node (this one too) drops its cached
    directories and settings before its next batch.
    """

    _SETTINGS = Engine._SETTINGS

    def __init__(self, engine: "PgEngine"):
        self.conn = engine._sync
        self.directories: dict = {}
        self.settings: dict = {}
        self.party_views: dict = {}

    def directory(self, ws: str) -> Directory:
        return db.load_directory(self.conn, ws)

    def _settings(self, ws: str) -> dict:
        return db.settings(self.conn, ws)


def _merge(out: Published, part: Published) -> None:
    out.deliveries += part.deliveries
    out.messages += part.messages
    out.topics += part.topics
    out.balances += part.balances
    out.conversations.update(part.conversations)
    out.rescan = out.rescan or part.rescan


def _conversation_id(d: Directory, ref: str, author: str) -> str | None:
    if ref == "general":
        return general_id(d.workspace)
    made = d.conversation(ref, author, {})
    return made.id if made is not None else ref


def _load_conversations(conn, ids: list[str]) -> dict[str, Conversation]:
    """(sync, on the loader connection) conversations by id."""
    out = {}
    for cid in ids:
        row = conn.execute("SELECT id, workspace, kind, name, members, party FROM conversations WHERE id = ?",
                           (cid,)).fetchone()
        if row:
            out[cid] = db.conversation(*row)
    return out


async def _fetch_conversations(conn: asyncpg.Connection, ids: list[str]) -> dict[str, Conversation]:
    rows = await conn.fetch(
        "SELECT id, workspace, kind, name, members, party FROM conversations WHERE id = ANY($1::text[])", ids)
    return {r[0]: db.conversation(*r) for r in rows}


# One statement loads a batch: the config version, then (locking, in this order) the workspaces (`FOR KEY
# SHARE`: admin.delete_workspace deletes a workspace's row first, so it waits for a batch writing there, and a
# batch finds a workspace deleted meanwhile missing), conversations (General included: its party counters
# move with agents' messages),
# topics, agent wallets, limited plans' shared usage rows; then, unlocked, pools, the other usage
# rows and the idempotency replies. UNION ALL runs its parts in order, so the lock order holds.
# Agents with no wallet row yet are serialized by an advisory lock on their id instead.
_LOAD = """
WITH v AS (SELECT value FROM meta WHERE key = 'config'),
s AS (SELECT id FROM workspaces WHERE id = ANY($11::text[]) ORDER BY id FOR KEY SHARE),
c AS (SELECT id, workspace, kind, name, members, party FROM conversations WHERE id = ANY($1::text[])
      ORDER BY id FOR UPDATE),
g AS (SELECT id, workspace, kind, name, members, party FROM conversations WHERE id = ANY($9::text[])),
tw AS (SELECT id, state FROM topics WHERE id = ANY($10::text[]) ORDER BY id FOR UPDATE),
t AS (SELECT id, state FROM topics WHERE id = ANY($2::text[]) ORDER BY id FOR UPDATE SKIP LOCKED),
k AS (SELECT id FROM topics WHERE id = ANY($2::text[]) EXCEPT SELECT id FROM t),
w AS (SELECT account, balance FROM wallets WHERE workspace = '*' AND account = ANY($3::text[]) ORDER BY account FOR UPDATE),
nw AS (SELECT count(pg_advisory_xact_lock(hashtextextended('wallet:' || a, 0))) AS n
       FROM (SELECT a FROM unnest($3::text[]) AS a WHERE a NOT IN (SELECT account FROM w) ORDER BY a) s),
ul AS (SELECT org, count::bigint AS count FROM usage WHERE org = ANY($7::text[]) AND month = $8 ORDER BY org FOR UPDATE),
uo AS (SELECT org, sum(count)::bigint AS count FROM usage_nodes WHERE org = ANY($7::text[]) AND month = $8
       GROUP BY org),
p AS (SELECT workspace, balance FROM wallets WHERE account = 'pool' AND workspace = ANY($4::text[])),
i AS (SELECT participant, client_id, reply FROM idempotency
      WHERE (participant, client_id) IN (SELECT * FROM unnest($5::text[], $6::text[])))
SELECT 'v', NULL, NULL, NULL, NULL, NULL, value, NULL::bytea FROM v
UNION ALL SELECT 's', id, NULL, NULL, NULL, NULL, NULL, NULL FROM s
UNION ALL SELECT 'c', id, workspace, kind, name, members, NULL, convert_to(party, 'UTF8') FROM c
UNION ALL SELECT 'c', id, workspace, kind, name, members, NULL, convert_to(party, 'UTF8') FROM g
UNION ALL SELECT 't', id, NULL, NULL, NULL, NULL, NULL, state FROM tw
UNION ALL SELECT 't', id, NULL, NULL, NULL, NULL, NULL, state FROM t
UNION ALL SELECT 'k', id, NULL, NULL, NULL, NULL, NULL, NULL FROM k
UNION ALL SELECT 'w', account, NULL, NULL, NULL, NULL, balance, NULL FROM w
UNION ALL SELECT 'x', NULL, NULL, NULL, NULL, NULL, n, NULL FROM nw
UNION ALL SELECT 'u', org, NULL, NULL, NULL, NULL, count, NULL FROM ul
UNION ALL SELECT 'u', org, NULL, NULL, NULL, NULL, count, NULL FROM uo
UNION ALL SELECT 'p', workspace, NULL, NULL, NULL, NULL, balance, NULL FROM p
UNION ALL SELECT 'i', participant, client_id, NULL, NULL, NULL, NULL, reply FROM i
"""

# One statement writes a transaction: conversations, topics, messages and their deliveries
# (only for messages not stored before), wallets and the ledger, usage, flags, idempotency
# replies, the config version; and NOTIFYs the other nodes (delivered at COMMIT): who has new
# deliveries (made here, from the rows inserted, 60 recipients a payload), and $50, the
# payloads made in Python (topics, balances, messages).
_WRITE = """
WITH
cg AS (UPDATE conversations c SET party = (c.party::jsonb || jsonb_build_object(
         'run', coalesce((c.party::jsonb ->> 'run')::bigint, 0) + x.run,
         'hops', coalesce((c.party::jsonb ->> 'hops')::bigint, 0) + x.hops))::text
       FROM unnest($52::text[], $53::bigint[], $54::bigint[]) AS x(id, run, hops) WHERE c.id = x.id
       RETURNING c.id, c.party),
cv AS (INSERT INTO conversations (id, workspace, kind, name, members, party, created_at)
       SELECT x.*, $1 FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $51::text[]) AS x
       ON CONFLICT (id) DO UPDATE SET members = excluded.members, party = excluded.party),
tp AS (INSERT INTO topics (id, workspace, conversation, opener, status, next_due, state, created_at, waits_funds,
                           updated_at)
       SELECT x.*, $1 FROM unnest($7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::bigint[],
                                  $13::bytea[], $14::bigint[], $55::smallint[]) AS x
       ON CONFLICT (id) DO UPDATE SET status = excluded.status, next_due = excluded.next_due,
       state = excluded.state, updated_at = excluded.updated_at, waits_funds = excluded.waits_funds),
m AS (INSERT INTO messages (id, workspace, conversation, topic, author, type, text, body, created_at)
      SELECT * FROM unnest($15::text[], $16::text[], $17::text[], $18::text[], $19::text[], $20::text[], $21::text[],
                           $22::bytea[], $23::bigint[])
      ON CONFLICT (id) DO NOTHING RETURNING id, seq),
d AS (INSERT INTO deliveries (message, message_seq, recipient, wake, reason)
      SELECT x.message, m.seq, x.recipient, x.wake, x.reason
      FROM unnest($24::text[], $25::text[], $26::int[], $27::text[], $28::int[]) AS x(message, recipient, wake, reason, ord)
      JOIN m ON m.id = x.message ORDER BY x.ord
      RETURNING id, message, recipient),
wl AS (INSERT INTO wallets (workspace, account, balance) SELECT * FROM unnest($29::text[], $30::text[], $31::bigint[])
       ON CONFLICT (workspace, account) DO UPDATE SET balance = wallets.balance + excluded.balance),
lg AS (INSERT INTO ledger (workspace, account, delta, cause, created_at)
       SELECT x.*, $1 FROM unnest($32::text[], $33::text[], $34::bigint[], $35::text[]) AS x),
us AS (INSERT INTO usage (org, month, count)
       SELECT x.org, x.month, x.count FROM unnest($36::text[], $37::text[], $38::text[], $39::bigint[])
         AS x(org, month, node, count) WHERE x.node = ''
       ON CONFLICT (org, month) DO UPDATE SET count = usage.count + excluded.count),
un AS (INSERT INTO usage_nodes (org, month, node, count)
       SELECT * FROM unnest($36::text[], $37::text[], $38::text[], $39::bigint[]) AS x(org, month, node, count)
       WHERE x.node != ''
       ON CONFLICT (org, month, node) DO UPDATE SET count = usage_nodes.count + excluded.count),
fon AS (INSERT INTO flags (workspace, name, agent) SELECT '*', x.n, x.a FROM unnest($40::text[], $41::text[]) AS x(n, a)
        ON CONFLICT DO NOTHING),
foff AS (DELETE FROM flags f USING unnest($42::text[], $43::text[]) AS x(n, a)
         WHERE f.workspace = '*' AND f.name = x.n AND f.agent = x.a),
idm AS (INSERT INTO idempotency (participant, client_id, reply, created_at)
        SELECT x.*, $1 FROM unnest($44::text[], $45::text[], $46::bytea[]) AS x),
cfg AS (UPDATE meta SET value = value + 1 WHERE key = 'config' AND $47::int > 0),
nd AS (SELECT pg_notify($49, json_build_object('n', $48::text, 'd', json_object_agg(recipient, first))::text) AS x
       FROM (SELECT recipient, min(id) AS first, (row_number() OVER (ORDER BY recipient) - 1) / 60 AS chunk
             FROM d GROUP BY recipient) s GROUP BY chunk),
np AS (SELECT pg_notify($49, p) AS x FROM unnest($50::text[]) AS p)
SELECT 'd', id, message, recipient FROM d
UNION ALL SELECT 'm', NULL, id, NULL FROM m
UNION ALL SELECT 'g', NULL, id, party FROM cg
UNION ALL SELECT 'n', count(*), NULL, NULL FROM (SELECT x FROM nd UNION ALL SELECT x FROM np) z
"""
