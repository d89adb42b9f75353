"""The Store port on PostgreSQL: batches decided under row locks, safe with several nodes.

- **Loaded under locks.** A batch first locks, in one statement and in one global order (workspaces,
  conversations, topics, agents' wallets, then a limited plan's usage row), every row its decisions read
  and change, and loads them from there (`batch_sql.LOAD`: `FOR UPDATE` returns the newest committed
  version). A workspace's pool is read without a lock; a decision that charges it has it locked and
  compared (`confirm`): if another node changed it meanwhile, the batch is decided again. A topic another
  node holds is skipped (`SKIP LOCKED`), not waited for: its sends go first into the next batch.
- **General's counters.** General is in every agent message's batch (its party counters move with each
  one), so a batch with no person writing there reads it unlocked and adds its agents' messages to the
  counters in the write (`Contended` when that would not be what a locked batch decides: decided again,
  locked).
- **Retries.** A deadlock, a serialization failure, or a unique violation (two nodes storing one
  `client_id`) rolls the batch back and the writer decides it again.
- **What a node caches** is what only changes through `meta.config`: directories, organizations and
  plans, workspace settings, per-agent flags. Each batch reads the version in its locking statement and
  drops the caches (and plans again) when it moved. Topics, wallets, pools, conversations, usage and
  open-topic counts are never cached between batches.
- **Announcements** cross nodes with NOTIFY, sent inside the transaction (so only if it commits): who
  has new deliveries, topic and balance changes, the messages for monitors.
- **Timers** (nudges, polls, auto-done) are claimed: every node looks every `timer_interval` seconds for
  topics whose `next_due` passed, `FOR UPDATE SKIP LOCKED`, so one node handles each.
- Acks have their own path and connection (`Acks`): they decide nothing a batch reads.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
import time
import uuid
from contextlib import asynccontextmanager
from typing import Callable

import asyncpg
import msgspec

from ... import idempotency, protocol
from ...core import POOL, Conversation, next_due
from ...core.lifecycle import OPEN_SLOT
from ...core.decide import throttle_limit
from ...core.rules import party_limits
from ...core.artifacts import Head
from ...core.files import Upload
from ...core.state import LiveState
from .. import schedules
from ..port import Keys, Snapshot
from ..writes import REVISION_DELIVERY, artifact_rows, file_rows, insert_session, revision_rows, write_memory
from ..writeset import WriteSet
from . import CHANNEL, Capture, SyncConnection, connect, create_pool, migrate, parse_dsn, payloads, present_elsewhere, \
    run_captured, translate
from .acks import Acks
from .batch_sql import LOAD, WRITE
from ..loaders import fitness, load_directory, load_flags, org_of, settings  # (cold loads, through SyncConnection)
from ..loaders import ARTIFACT_HEAD, UPLOAD, READERS, REACHED, REVISED_MESSAGE, readers as conversation_readers
from ..rows import Stored, conversation, decode_message, decode_topic, encode_topic, party_json, waits_funds

log = logging.getLogger("ygg.writer")
_enc = msgspec.json.Encoder()


class Contended(Exception):
    """A General conversation's party counters, read without a lock, were near a limit after all: the batch is
    rolled back and decided again with General locked."""


RETRYABLE = (
    Contended,
    asyncpg.exceptions.DeadlockDetectedError,
    asyncpg.exceptions.SerializationError,
    asyncpg.exceptions.UniqueViolationError,
    asyncpg.exceptions.LockNotAvailableError,
)
_LOST = (asyncpg.exceptions.PostgresConnectionError, asyncpg.exceptions.InterfaceError,
         asyncpg.exceptions.OperatorInterventionError, OSError, ConnectionError)


class PgStore:
    retryable = RETRYABLE
    separate_acks = True

    def __init__(self, url: str, *, clock: Callable[[], int], prepared: bool | None = None, node: str | None = None,
                 lease: float = 30.0, timer_interval: float = 1.0, idempotency_window: int = idempotency.WINDOW_US):
        self.url = url
        self.dsn, self.prepared = parse_dsn(url, prepared)
        self.clock = clock
        self.node = node or uuid.uuid4().hex[:12]
        self.lease = lease
        self.timer_interval = timer_interval
        self.idempotency_window = idempotency_window  # how long a client_id's answer is kept (microseconds)
        self.node_timeout = 4 * min(max(lease / 3, 0.2), 5.0)  # a node silent this long is gone (net.delivery.cluster's)
        self.presence_timeout = protocol.PRESENCE_TIMEOUT  # an agent silent this long is offline (net.delivery.cluster's)
        self.present: frozenset[str] = frozenset()  # (scoring reads every node's presence rows, this one's too)
        self.conversations: dict[str, dict[str, Conversation]] = {}  # what this node saw, for event visibility
        self.on_notify: Callable[[dict], None] | None = None  # the gateway's handler of other nodes' news
        # agents -> {agent: lease holder}: those whose deliveries a connection of this node takes as they are
        # written (net.delivery.cluster: nothing of theirs is waiting unleased), so they are not claimed back
        self.lease_to: Callable[[set[str]], dict[str, str]] | None = None
        self.conn: asyncpg.Connection | None = None  # the writer
        self.pool: asyncpg.Pool | None = None  # claims, releases, heartbeats, fetches, sweeps
        self.listener: asyncpg.Connection | None = None
        self._sync: SyncConnection | None = None  # cold loads through the sqlite-shaped loaders
        self._acks: Acks | None = None
        self._timers: list[tuple[int, str]] = []
        self._next_poll = 0.0
        self._sweep_at = 0
        self._sweeping: asyncio.Task | None = None
        self._lock_general = False  # the next attempt locks General (the last was Contended)
        self._reset(None)

    # --- lifecycle ---

    async def open(self) -> None:
        """Connect, migrate, register this node, listen. Idempotent."""
        if self.conn is not None:
            return
        self.conn = await connect(self.dsn, self.prepared)
        await migrate(self.conn)
        self._sync = await asyncio.to_thread(SyncConnection, self.url, self.prepared)
        self.pool = await create_pool(self.dsn, self.prepared, size=4, soft=True)
        self._reset(await self.conn.fetchval("SELECT value FROM meta WHERE key = 'config'"))
        now = self.clock()
        await self.conn.execute(
            """INSERT INTO nodes (id, started_at, heartbeat_at) VALUES ($1, $2, $2)
               ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at""", self.node, now)
        await self._listen()

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._acks = Acks(self, loop)

    def ops_connection(self) -> SyncConnection:
        """A connection beside the writer's, for reads and management ops (sqlite-shaped, as they are written)."""
        return SyncConnection(self.url, self.prepared)

    async def _listen(self) -> None:
        self.listener = await connect(self.dsn, self.prepared)
        await self.listener.add_listener(CHANNEL, self._notified)

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

    def ack(self, cmd) -> None:
        self._acks.submit(cmd)

    async def aclose(self) -> None:
        if self._sweeping is not None:
            self._sweeping.cancel()
            await asyncio.gather(self._sweeping, return_exceptions=True)
            self._sweeping = None
        if self._acks is not None:
            await self._acks.aclose()
            self._acks = None
        for c in (self.listener, self.conn):
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

    # --- caches (only what changes through meta.config) ---

    def _reset(self, version: int | None) -> None:
        self._version = version
        self.directories: dict = {}
        self.settings: dict[str, dict] = {}
        self.orgs: dict[str, tuple | None] = {}
        self.flags: set[tuple[str, str, str]] | None = None
        self.conversations = {}

    async def _cold(self, fn, *args):
        return await asyncio.to_thread(fn, self._sync, *args)

    async def _ensure(self, workspaces: set[str]) -> None:
        """Directories, General conversations, settings and organizations of these workspaces, cached."""
        for ws in workspaces:
            if ws not in self.directories:
                d = await self._cold(load_directory, ws)
                if not d.memberships:
                    continue  # a made-up workspace id is not kept
                self.directories[ws] = d
                self.orgs[ws] = await self._cold(org_of, ws)
                self.settings[ws] = await self._cold(settings, ws)
        if self.flags is None:
            self.flags = await self._cold(load_flags)

    def idle_seconds(self) -> float:
        wait = max(0.0, self._next_poll - time.monotonic())
        if self._timers:
            wait = min(wait, max(0.0, (self._timers[0][0] - self.clock()) / 1e6))
        return wait

    def timers_due(self) -> bool:
        return time.monotonic() >= self._next_poll or bool(self._timers and self._timers[0][0] <= self.clock())

    # --- one batch ---

    @asynccontextmanager
    async def batch(self):
        if self.conn is None or self.conn.is_closed():
            await self._reconnect()
        try:
            async with self.conn.transaction():
                self._locked_pools: set[str] = set()
                yield self
        except _LOST:  # the outcome of this batch is unknown to us: fail it; the next one reconnects
            await self._reconnect()
            raise

    async def _reconnect(self) -> None:
        try:
            if self.conn is not None:
                self.conn.terminate()
            self.conn = await connect(self.dsn, self.prepared)
        except (OSError, asyncpg.PostgresError):
            log.warning("writer: cannot reconnect yet")

    async def schedules_due(self, now: int) -> list:
        """The reminders and routines due at `now`, locked (another node skips them), looked for as often as the
        topics' timers (every `timer_interval`); written back with the batch."""
        if time.monotonic() < self._next_poll:
            return []
        return [schedules.schedule_of(r) for r in await self.conn.fetch(schedules.DUE_PG, now)]

    async def catalog(self, workspaces: set[str]) -> Snapshot:
        await self._ensure(workspaces)
        # (party views are made again each batch: another node may have moved a party's members or Lead)
        # (the settings are the batch's own copy: a set_setting moves them for the commands after it, and a batch
        # that is decided again or fails leaves this node's cache as committed)
        s = self._snap = Snapshot(directories=self.directories, settings=dict(self.settings), orgs=self.orgs)
        return s

    async def load(self, k: Keys) -> bool:
        s, conn = self._snap, self.conn
        self._keys = k
        if k.limited:
            await conn.executemany("INSERT INTO usage (org, month, count) VALUES ($1, $2, 0) ON CONFLICT DO NOTHING",
                                   [(o, k.month) for o in sorted(k.limited)])
        shared = set() if self._lock_general else set(k.shared)
        locked = k.conversations | (k.shared - shared)
        rows = await conn.fetch(
            LOAD, sorted(locked), sorted(k.topics - k.waited), [a for _, a in sorted(k.wallets)], sorted(k.pools),
            [a for a, _ in k.idem], [c for _, c in k.idem], sorted(k.limited), k.month, sorted(shared),
            sorted(k.waited), sorted(k.workspaces), [ws for ws, _ in sorted(k.wallets)])
        version, held = None, set()
        topics, convs, wallets, pools, usage = {}, {}, {}, {}, {}
        for kind, a, b, c, x, y, n, blob in rows:
            if kind == "v":
                version = n
            elif kind == "s":
                held.add(a)
            elif kind == "t":
                topics[a] = decode_topic(blob)
            elif kind == "c":
                convs[a] = conversation(a, b, c, x, y, blob.decode())
            elif kind == "w":
                wallets[(b, a)] = n
            elif kind == "p":
                pools[a] = n
            elif kind == "i":
                s.idem[(a, b)] = blob
            elif kind == "k":
                s.busy.add(a)
            elif kind == "u":
                usage[(a, k.month)] = usage.get((a, k.month), 0) + (n or 0)
        if version != self._version:
            self._reset(version)
            return False  # someone changed the directory: load it again, lock again (a superset)
        if k.workspaces - held:  # deleted while this waited for its row (the version above was read before)
            self._reset(await conn.fetchval("SELECT value FROM meta WHERE key = 'config'"))
            return False
        self._shared = {cid: convs[cid] for cid in shared if cid in convs}
        for a in k.wallets:
            wallets.setdefault(a, None)
        for ws in k.pools:  # (no row yet: an empty pool, as on SQLite)
            pools.setdefault(ws, None)
        for cv in convs.values():  # seen now: the gateway shows their topics' events to their members
            self.conversations.setdefault(cv.workspace, {})[cv.id] = cv
        opened = {}
        if k.opening:  # after the wallet locks: another node's new topic for the same agent is visible now
            opened = dict.fromkeys(k.opening, 0)
            for opener, count in await conn.fetch(
                    "SELECT opener, count(*) FROM topics WHERE opener = ANY($1::text[]) AND " + OPEN_SLOT + " "
                    "GROUP BY opener", sorted(k.opening)):
                opened[opener] = count
        for ws, account in k.paused:  # where agents wait for funds (after the wallet's lock: none pauses meanwhile)
            s.paused[(ws, account)] = await self._paused(ws, account, topics)
        for owner, ref in k.agents:
            s.agents[(owner, ref)] = await conn.fetchrow(
                "SELECT id, profile FROM agents WHERE owner = $1 AND (id = $2 OR name = $2) AND revoked = 0", owner, ref)
        if k.capable:
            s.fitness = await self._fitness(sorted(k.capable))
        if k.revised:
            s.revised = await self._revisable(sorted(k.revised))
        if k.artifacts:  # each row locked: two nodes editing one artifact take turns (versions never collide)
            for aid in sorted(k.artifacts):
                row = await conn.fetchrow(translate(ARTIFACT_HEAD)[0] + " FOR UPDATE OF a", aid)
                if row is not None:
                    s.artifacts[aid] = Head(*row)
        # (read as the timers read theirs: the message counts its hops where the artifact, or the card pressed, is)
        missing = sorted(({h.conversation for h in s.artifacts.values()}
                          | {row[0].conversation for row in s.revised.values()}) - set(convs))
        if missing:
            convs.update(await fetch_conversations(conn, missing))
        for fid in sorted(k.files):  # each row locked: two nodes never send one upload with two messages
            row = await conn.fetchrow(translate(UPLOAD)[0] + " FOR UPDATE", fid)
            if row is not None:
                s.files[fid] = Upload(*row)
        await self._due(topics, convs)
        self._base = (topics, convs, wallets, pools, opened, usage)
        self._fresh_state()
        return True

    def _fresh_state(self) -> None:
        topics, convs, wallets, pools, opened, usage = self._base
        st = self._snap.state = LiveState()
        self._snap.settings = dict(self.settings)
        st.topics, st.wallets, st.pools = dict(topics), dict(wallets), dict(pools)
        st.opened, st.usage, st.flags = dict(opened), dict(usage), set(self.flags or ())
        for c in convs.values():
            st.conversations.setdefault(c.workspace, {})[c.id] = c

    async def _revisable(self, ids: list[str]) -> dict[str, tuple]:
        """The messages an edit or a delete names (loaders.revisable), each row locked: two nodes editing one
        message take turns, each deciding against the other's version."""
        out = {}
        for mid in ids:
            row = await self.conn.fetchrow(translate(REVISED_MESSAGE)[0] + " FOR UPDATE", mid)
            if row is not None:
                m = decode_message(row[1])
                reached = tuple(r[0] for r in await self.conn.fetch(translate(REACHED)[0], row[0]))
                conv = await self.conn.fetchrow(translate(READERS)[0], m.conversation)
                out[mid] = (m, row[0], reached, conversation_readers(conv))
        return out

    async def _revise(self, outcome) -> None:
        """A batch's edits and deletes (store/writes.revision_rows), their context deliveries, and the news for
        the other nodes (who has new deliveries, the messages for monitors), delivered at COMMIT."""
        conn = self.conn
        cap = Capture()
        for sql, params in revision_rows(outcome.revisions):
            cap.execute(sql, params)
        await run_captured(conn, cap)
        insert = translate(REVISION_DELIVERY)[0]  # (RETURNING id: a serial key, as the adapter adds it)
        stored, first = [], {}
        for r, seq, _ in outcome.revisions:
            m = r.message
            for x in r.deliveries:
                did = await conn.fetchval(insert, m.id, seq, x.recipient, int(x.wake), x.reason)
                stored.append(Stored(did, x.recipient, x.wake, x.reason, m))
                first.setdefault(x.recipient, did)
        news = payloads(self.node, {"d": first, "m": [[r.message.workspace, r.message.id] for r, *_ in outcome.revisions]})
        if news:
            await conn.execute("SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p", CHANNEL, news)
        outcome.deliveries += stored
        outcome.messages += [r.message for r, *_ in outcome.revisions]

    async def _paused(self, ws: str, account: str, topics: dict) -> list:
        """Topics paused for credits, or open again with some still unfunded (the partial index
        topics_waiting_funds: the writer marks them, waits_funds), locked."""
        if account == POOL:
            rows = await self.conn.fetch(
                "SELECT id, state FROM topics WHERE workspace = $1 AND waits_funds IS NOT NULL ORDER BY id FOR UPDATE",
                ws)
        else:  # (the agent's wallet in this workspace: its topics here)
            rows = await self.conn.fetch(
                """SELECT id, state FROM topics WHERE waits_funds IS NOT NULL AND workspace = $2
                   AND (convert_from(state, 'UTF8')::jsonb -> 'unfunded' ? $1
                        OR convert_from(state, 'UTF8')::jsonb ->> 'paused_by' = $1) ORDER BY id FOR UPDATE""",
                account, ws)
        out = []
        for tid, state in rows:
            t = topics.setdefault(tid, decode_topic(state))
            out.append(t)
        return out

    async def _fitness(self, ids: list[str]) -> dict:
        """Load, trust and response time by `fitness` (what is committed), online if present on a live node."""
        online = await present_elsewhere(self.conn, ids, "", self.clock(), self.node_timeout, self.presence_timeout)
        return await self._cold(fitness, ids, online.__contains__)

    async def _due(self, topics: dict, convs: dict) -> None:
        """The topics whose timer is due, claimed (every `timer_interval` seconds, or when this node's own is)."""
        if not self.timers_due():
            return
        self._next_poll = time.monotonic() + self.timer_interval
        now = self.clock()
        while self._timers and self._timers[0][0] <= now:
            heapq.heappop(self._timers)
        rows = await self.conn.fetch(
            "SELECT id, workspace, state FROM topics WHERE next_due <= $1 ORDER BY next_due LIMIT 200 "
            "FOR UPDATE SKIP LOCKED", now)
        if rows:  # (after the topics: a workspace a delete holds is skipped, not waited for, so no deadlock)
            got = await self.conn.fetch("SELECT id FROM workspaces WHERE id = ANY($1::text[]) ORDER BY id "
                                        "FOR KEY SHARE SKIP LOCKED", sorted({r[1] for r in rows}))
            live = {r[0] for r in got}
            rows = [r for r in rows if r[1] in live]
        if not rows:
            return
        await self._ensure({r[1] for r in rows})
        due = [topics.setdefault(r[0], decode_topic(r[2])) for r in rows]
        missing = sorted({t.conversation for t in due} - set(convs))
        if missing:
            convs.update(await fetch_conversations(self.conn, missing))
        self._snap.due = due

    async def confirm(self, outcome) -> bool:
        """Lock the pools the decisions charged; True if one moved since it was read (decide again)."""
        todo = sorted(outcome.pools_charged - self._locked_pools)
        if not todo:
            return False
        moved = False
        pools = self._base[3]
        for ws, bal in await self.conn.fetch(
                "SELECT workspace, balance FROM wallets WHERE account = 'pool' AND workspace = ANY($1::text[]) "
                "ORDER BY workspace FOR UPDATE", todo):
            if pools.get(ws) != bal:
                pools[ws] = bal
                moved = True
        self._locked_pools.update(todo)
        if moved:
            self._fresh_state()
        return moved

    async def write(self, outcome) -> None:
        """The batch's rows, and the NOTIFYs to the other nodes, in one statement; then its direct writes."""
        conn, now, w = self.conn, self.clock(), WriteSet.of(outcome.decisions)
        for agent, body in outcome.profiles:
            await conn.execute("UPDATE agents SET profile = $1 WHERE id = $2", body, agent)
        for ws, body in outcome.settings:
            await conn.execute("UPDATE workspaces SET settings = $1 WHERE id = $2", body, ws)
        for row, key in outcome.sessions:
            cap = Capture()
            insert_session(cap, row, key)
            await run_captured(conn, cap)
        for op, args in outcome.memories:
            cap = Capture()
            write_memory(cap, op, args)
            await run_captured(conn, cap)
        if outcome.revisions:
            await self._revise(outcome)
        if outcome.artifacts or outcome.files:
            cap = Capture()
            for sql, params in artifact_rows(outcome.artifacts) + file_rows(outcome.files):
                cap.execute(sql, params)
            await run_captured(conn, cap)
        if outcome.schedules:
            await conn.executemany(schedules.UPDATE_PG, schedules.updates(outcome.schedules))
        if not (outcome.decisions or outcome.idem or outcome.profiles or outcome.settings):
            return
        convs = {cid: c for cid, (c, _) in w.conversations.items()}
        counted = self._counted(convs)
        cs = [c for c in convs.values() if c.id not in counted]
        ts = [t for t, _ in w.topics.values()]
        msgs, dl = w.messages, w.deliveries
        ks, gs = sorted(w.deltas), sorted(counted)
        limited = self._keys.limited  # "": the shared row, in `usage` (a plan with a monthly limit); else this node's
        usage = {(o, m, "" if o in limited else self.node): n for (o, m), n in w.usage.items()}
        us = sorted(usage)
        on = [k for k, v in w.flags.items() if v]
        off = [k for k, v in w.flags.items() if not v]
        balances = {(ws, a): b for ws, a, b in outcome.balances}
        news = payloads(self.node, {
            "t": [[t.workspace, t.id] for t in ts], "b": [[*k, v] for k, v in balances.items()],
            "m": [[m.workspace, m.id] for m in msgs],
        })
        if outcome.profiles or outcome.settings:
            news.append('{"x":"rescan"}')  # every node (this one too) looks at its connections again
        idem = outcome.idem
        holders = self.lease_to({x.recipient for _, x in dl if x.recipient.startswith("agent.")}) \
            if self.lease_to is not None and dl else {}
        rows = await conn.fetch(
            WRITE, now,
            [x.id for x in cs], [x.workspace for x in cs], [str(x.kind) for x in cs], [x.name for x in cs],
            [msgspec.json.encode(sorted(x.members)).decode() for x in cs],
            [t.id for t in ts], [t.workspace for t in ts], [t.conversation for t in ts], [t.opener for t in ts],
            [str(t.status) for t in ts], [next_due(t) for t in ts], [encode_topic(t) for t in ts],
            [t.created_at for t in ts],
            [m.id for m in msgs], [m.workspace for m in msgs], [m.conversation for m in msgs], [m.topic for m in msgs],
            [m.author for m in msgs], [str(m.type) for m in msgs], [m.text for m in msgs],
            [_enc.encode(m) for m in msgs], [m.created_at for m in msgs],
            [m.id for m, _ in dl], [x.recipient for _, x in dl], [int(x.wake) for _, x in dl],
            [x.reason for _, x in dl], list(range(len(dl))),
            [k[0] for k in ks], [k[1] for k in ks], [w.deltas[k] for k in ks],
            [e.workspace for e, _ in w.ledger], [e.account for e, _ in w.ledger], [e.delta for e, _ in w.ledger],
            [e.cause for e, _ in w.ledger],
            [k[0] for k in us], [k[1] for k in us], [k[2] for k in us], [usage[k] for k in us],
            [k[0] for k in on], [k[1] for k in on], [k[2] for k in on], [k[0] for k in off], [k[1] for k in off],
            [k[2] for k in off],
            [x[0] for x in idem], [x[1] for x in idem], [x[2] for x in idem],
            1 if (w.flags or outcome.profiles or outcome.settings) else 0,  # other nodes cache these: drop theirs
            self.node, CHANNEL, news, [party_json(x) for x in cs],
            gs, [counted[g][0] for g in gs], [counted[g][1] for g in gs], [waits_funds(t) for t in ts],
            [holders.get(x.recipient, "") for _, x in dl], now + int(self.lease * 1e6))
        stored_ids: dict[tuple[str, str], int] = {}
        inserted: set[str] = set()
        for kind, n, mid, who in rows:
            if kind == "d":
                stored_ids[(mid, who)] = n
                if who in holders:
                    outcome.leased[n] = holders[who]
            elif kind == "m":
                inserted.add(mid)
            elif kind == "g":
                self._check_counted(convs[mid], who)
        stored = []
        for m, x in dl:
            did = stored_ids.get((m.id, x.recipient))
            if did is not None:
                stored.append(Stored(did, x.recipient, x.wake, x.reason, m))
        stored.sort(key=lambda s: s.id)
        written = {s.message.id for s in stored}
        addressed = {m.id for m, _ in dl}
        outcome.deliveries += stored
        outcome.messages += [m for m in msgs if m.id in inserted and (m.id in written or m.id not in addressed)]
        # who may see each topic's event (Gateway._readers): its conversation, read here when this node has not
        # seen it (a funding resumes an agent's topics in every workspace it is in; a timer's topic)
        outcome.conversations.update((t.conversation, convs[t.conversation]) for t in ts if t.conversation in convs)
        unseen = sorted({t.conversation for t in ts if t.conversation not in outcome.conversations
                         and t.conversation not in self.conversations.get(t.workspace, {})})
        if unseen:
            outcome.conversations.update(await fetch_conversations(conn, unseen))

    def _counted(self, convs: dict[str, Conversation]) -> dict[str, tuple[int, int]]:
        """The General conversations read without a lock: what the batch adds to `run` and `hops`."""
        out: dict[str, tuple[int, int]] = {}
        for cid, base in self._shared.items():
            final = convs.get(cid)
            if final is None:
                continue
            run, hops = final.run - base.run, final.hops - base.hops
            if run < 0 or hops < 0 or msgspec.structs.replace(final, run=base.run, hops=base.hops) != base:
                self._contended = True
                raise Contended(cid)  # reset, or a notice, or anything but counting: decide it locked
            self._check_counted(final, None)
            out[cid] = (run, hops)
        return out

    def _check_counted(self, conv: Conversation, party: str | None) -> None:
        """Counters below both limits (the batch's own, or, with `party`, the row's after the UPDATE)."""
        if party is not None:
            conv = conversation(conv.id, conv.workspace, str(conv.kind), conv.name, "[]", party)
        limits = party_limits(self._snap.settings.get(conv.workspace) or {})  # (as the batch decided it)
        if conv.run >= throttle_limit(conv, limits["throttle"]) or conv.hops >= limits["max_hops"]:
            self._contended = True
            raise Contended(conv.id)

    def committed(self, outcome) -> None:
        self._lock_general = False
        for d, *_ in outcome.decisions:
            for f in d.flags:
                if self.flags is not None:
                    (self.flags.add if f.on else self.flags.discard)(f.key)
            for c in (d.conversation, d.side):
                if c is not None:
                    self.conversations.setdefault(c.workspace, {})[c.id] = c
        for t in outcome.topics:
            when = next_due(t)
            if when is not None:
                heapq.heappush(self._timers, (when, t.id))
        if self.clock() >= self._sweep_at and (self._sweeping is None or self._sweeping.done()):
            self._sweeping = asyncio.get_running_loop().create_task(self._sweep())

    def failed(self) -> None:
        self._lock_general = self._lock_general or self._contended
        self._contended = False

    _contended = False

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


async def fetch_conversations(conn: asyncpg.Connection, ids: list[str]) -> dict[str, Conversation]:
    rows = await conn.fetch(
        "SELECT id, workspace, kind, name, members, party FROM conversations WHERE id = ANY($1::text[])", ids)
    return {r[0]: conversation(*r) for r in rows}

