"""The Store port on SQLite: the embedded writer's one connection and its live cache.

The cache (`self.snap`) is kept between batches: directories, conversations, topics, balances,
open-topic counts, flags and usage, as the last COMMIT left them. A batch loads only what the cache
does not hold (`load`), is decided against it (the decisions fold into it at once), and its rows go
out in a few `executemany` before the COMMIT (`write`). Another connection (the admin CLI, the
socket's management ops) may change the database at any time: `PRAGMA data_version` tells, at the
start of each batch, and the cache is then dropped and read again (`snap.rescan`).

SQLite's I/O here never waits on anything but the disk: the methods are coroutines only to fit the
port, and never suspend, so the writer's thread or process runs them without an event loop
(`writer.loop.drive`).
"""

from __future__ import annotations

import heapq
import time
from contextlib import asynccontextmanager
from typing import Callable

from ... import idempotency
from ...core import POOL, next_due
from ..loaders import (
    artifact_heads, balance, credit_paused, due_topics, fitness, load_conversations, load_directory, load_flags, load_topic,
    open_opened, org_of, revisable, settings, uploads, usage,
)
from .. import schedules
from ..port import EMPTY, Keys, Snapshot
from ..writes import artifact_rows, file_rows, insert_session, write as write_rows, write_memory, write_revisions
from ..writeset import WriteSet
from . import Checkpointer, connect, index_messages, reindex
from . import ack as write_acks

# The search index is fed in chunks (index_messages), which costs far less per message than a row at a
# time: when this many messages wait for it, or the oldest has waited this long (an idle writer ticks every
# 0.1 s). Search reads the messages not indexed yet too (search_tail), so it finds every stored message.
# A chunk is indexed inside a batch, whose callers wait for it: 100 rows take 1-3 ms (500 took up to 8 ms,
# every quarter second at 2,000 msgs/s: a tail of the latency), at no measurable cost per message.
INDEX_ROWS = 100
INDEX_WAIT_NS = 250_000_000


class SqliteStore:
    retryable: tuple[type[BaseException], ...] = ()
    separate_acks = False  # acks are written with the batch's other rows

    def __init__(self, path, clock: Callable[[], int], idempotency_window: int = idempotency.WINDOW_US):
        self.path, self.clock = path, clock
        self.idempotency_window = idempotency_window  # how long a client_id's answer is kept (microseconds)
        self.conn = connect(path)
        self._checkpoints = Checkpointer(path, self.conn)
        self.present: set[str] = set()  # who is connected now (for assignment scoring's `online`)
        self._data_version = None
        self._rescan = False
        self._sweep_at = 0  # when the next chunk of older idempotency rows goes
        self._unindexed, self._index_at = 1, 0  # messages not in the search index yet, and when to index them:
        # not known here, so at the first batch (at start, this indexes what an earlier run left unindexed)
        self.reset()

    def close(self) -> None:
        self._checkpoints.stop()
        self.conn.close()

    async def open(self) -> None:
        """(Opened as it was made.)"""

    @staticmethod
    def ops_connection_at(path):
        """A connection to the file at `path` beside the writer's, for reads and management ops."""
        return connect(path)

    def ops_connection(self):
        return self.ops_connection_at(self.path)

    def reset(self) -> None:
        """Forget the cache (another connection changed the database, or a batch failed)."""
        self.snap = Snapshot()
        self.snap.state.flags = None  # (read when first needed)
        self.timers: list[tuple[int, str]] = []
        self.scheduled_at = self.conn.execute(schedules.NEXT).fetchone()[0]  # the next reminder or routine due
        for when, tid in due_topics(self.conn):
            heapq.heappush(self.timers, (when, tid))

    @property
    def directories(self) -> dict:
        """The directories cached (as PgStore's)."""
        return self.snap.directories

    def idle_seconds(self) -> float:
        """How long the writer may wait for a command before a topic's timer is due (at most 0.1 s)."""
        first = min(self.timers[0][0] if self.timers else 2**62, self.scheduled_at or 2**62)
        return min(0.1, max(0.0, (first - self.clock()) / 1e6))

    # --- one batch ---

    @asynccontextmanager
    async def batch(self):
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            version = self.conn.execute("PRAGMA data_version").fetchone()[0]
            if self._data_version is not None and version != self._data_version:
                self.reset()
                self._rescan = True  # (until a batch commits: the gateway is told with it)
            self._data_version = version
            s = self.snap
            s.rescan, s.idem, s.busy, s.fitness, s.paused, s.agents, s.due = self._rescan, {}, set(), {}, {}, {}, []
            s.revised, s.artifacts, s.files = {}, {}, {}
            yield self
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    async def schedules_due(self, now: int) -> list:
        """The reminders and routines due at `now` (written back with the batch)."""
        if self.scheduled_at is None or self.scheduled_at > now:
            return []
        return [schedules.schedule_of(r) for r in self.conn.execute(schedules.DUE, (now,))]

    async def catalog(self, workspaces: set[str]) -> Snapshot:
        s, conn = self.snap, self.conn
        for ws in workspaces:
            if ws not in s.directories:
                d = load_directory(conn, ws)
                if not d.memberships:  # a made-up workspace id is not kept: any client could fill memory with them
                    continue
                s.directories[ws] = d
            if ws not in s.settings:
                s.settings[ws] = settings(conn, ws)
            if ws not in s.orgs:
                s.orgs[ws] = org_of(conn, ws)
        if s.state.flags is None:
            s.state.flags = load_flags(conn)
        return s

    async def load(self, k: Keys) -> bool:
        s, conn, st = self.snap, self.conn, self.snap.state
        for ws in k.workspaces:
            if ws not in st.conversations:
                st.conversations[ws] = load_conversations(conn, ws)
        for tid in k.topics | k.waited:
            if tid not in st.topics:
                t = load_topic(conn, tid)
                if t is not None:
                    st.topics[tid] = t
        for ws, a in k.wallets:
            if (ws, a) not in st.wallets:
                st.wallets[(ws, a)] = balance(conn, ws, a)
        for ws in k.pools:
            if ws not in st.pools:
                st.pools[ws] = balance(conn, ws, POOL)
        for a in k.opening:
            if a not in st.opened:
                st.opened[a] = open_opened(conn, a)
        for ws in k.workspaces:
            org = s.orgs.get(ws)
            if org is not None and org[0] in k.limited and (org[0], k.month) not in st.usage:
                st.usage[(org[0], k.month)] = usage(conn, org[0], k.month)
        for who, cid in k.idem:
            row = conn.execute("SELECT reply FROM idempotency WHERE participant = ? AND client_id = ?",
                               (who, cid)).fetchone()
            if row:
                s.idem[(who, cid)] = row[0]
        if k.capable:
            s.fitness = fitness(conn, sorted(k.capable), self.present.__contains__)
        for ws, account in k.paused:  # (held as the live state's topics: what a decision folds in is counted from them)
            s.paused[(ws, account)] = [st.topics.setdefault(t.id, t) for t in (
                credit_paused(conn, workspace=ws, agent=None if account == POOL else account))]
        for owner, ref in k.agents:
            s.agents[(owner, ref)] = conn.execute(
                "SELECT id, profile FROM agents WHERE owner = ? AND (id = ? OR name = ?) AND revoked = 0",
                (owner, ref, ref)).fetchone()
        if k.revised:
            s.revised = revisable(conn, k.revised)
        if k.artifacts:
            s.artifacts = artifact_heads(conn, k.artifacts)
        if k.files:
            s.files = uploads(conn, k.files)
        self._due_now()
        return True

    def _due_now(self) -> None:
        """The topics whose timer is due, with what deciding them reads."""
        s, now, timers = self.snap, self.clock(), self.timers
        while timers and timers[0][0] <= now:
            _, tid = heapq.heappop(timers)
            t = s.state.topics.get(tid) or load_topic(self.conn, tid)
            if t is None:
                continue
            s.state.topics[tid] = t
            if t.workspace not in s.state.conversations:
                s.state.conversations[t.workspace] = load_conversations(self.conn, t.workspace)
            if t.workspace not in s.directories:
                d = load_directory(self.conn, t.workspace)
                if d.memberships:
                    s.directories[t.workspace] = d
            s.due.append(t)

    async def confirm(self, outcome) -> bool:
        return False  # (one writer: nothing read here moves under it)

    async def write(self, outcome) -> None:
        conn, now = self.conn, self.clock()
        if outcome.acks:
            write_acks(conn, outcome.acks, now)
        if outcome.idem:
            conn.executemany("INSERT INTO idempotency (participant, client_id, reply, created_at) VALUES (?,?,?,?)",
                             outcome.idem)
        for agent, body in outcome.profiles:
            conn.execute("UPDATE agents SET profile = ? WHERE id = ?", (body, agent))
        for ws, body in outcome.settings:
            conn.execute("UPDATE workspaces SET settings = ? WHERE id = ?", (body, ws))
        for row, key in outcome.sessions:
            insert_session(conn, row, key)
        for op, args in outcome.memories:
            write_memory(conn, op, args)
        if outcome.schedules:
            conn.executemany(schedules.UPDATE, schedules.updates(outcome.schedules))
        if outcome.decisions:
            stored = write_rows(conn, WriteSet.of(outcome.decisions))
            outcome.deliveries += stored
            written = {id(x.message) for x in stored}
            outcome.messages += [r.message for d, *_ in outcome.decisions for r in d.routed
                                 if not r.deliveries or id(r.message) in written]
            routed = sum(len(d.routed) for d, *_ in outcome.decisions)
            if routed and not self._unindexed:
                self._index_at = time.monotonic_ns() + INDEX_WAIT_NS
            self._unindexed += routed
        for sql, params in artifact_rows(outcome.artifacts) + file_rows(outcome.files):  # artifacts' versions and
            # comments, uploads marked sent (with their messages)
            conn.execute(sql, params)
        if outcome.revisions:  # edits and deletes: the text, its versions, the search index; those it reached told
            reindex(conn, outcome.revisions)
            outcome.deliveries += write_revisions(conn, outcome.revisions)
            outcome.messages += [r.message for r, *_ in outcome.revisions]
        for t in outcome.topics:  # a topic's event goes to those who see its conversation
            if t.conversation not in outcome.conversations:
                convs = self.snap.state.conversations.get(t.workspace)
                if convs is None:
                    convs = self.snap.state.conversations[t.workspace] = load_conversations(conn, t.workspace)
                if t.conversation in convs:
                    outcome.conversations[t.conversation] = convs[t.conversation]
        if self._unindexed and (self._unindexed >= INDEX_ROWS or time.monotonic_ns() >= self._index_at):
            index_messages(conn)
            self._unindexed = 0
        if now >= self._sweep_at:  # idempotency rows older than the window go, a chunk at a time, never a long delete
            self._sweep_at = idempotency.next_sweep(now, idempotency.sweep_sqlite(conn, now, self.idempotency_window))

    def committed(self, outcome) -> None:
        self._rescan = False
        if outcome.schedules:
            self.scheduled_at = self.conn.execute(schedules.NEXT).fetchone()[0]
        for t in outcome.topics:
            when = next_due(t)
            if when is not None:
                heapq.heappush(self.timers, (when, t.id))
        if outcome.catalog_changed:
            self.snap.directories.clear()
            self.snap.party_views.clear()

    def failed(self) -> None:
        self.reset()


__all__ = ["SqliteStore", "EMPTY"]
