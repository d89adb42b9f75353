"""The gateway on PostgreSQL: one node of several on one database.

What changes from the embedded gateway (`gateway.Gateway`, which this extends):

- **Claims** (seed 003 §2, §27): an agent's deliveries are claimed from the database with
  `SELECT … FOR UPDATE SKIP LOCKED` (`store.postgres.CLAIM_WAKES`, `CLAIM_CONTEXT`), leased to one of its
  connections (`deliveries.leased_by`, `lease_until`), instead of being handed out by the
  in-memory `Inbox`. `ClaimInbox` is the adapter the gateway uses for an agent; one `Claimer`
  per node runs the claims of all its agents, one transaction a round. Leases are renewed while
  a connection lives, returned when it closes, and run out when its node dies.
- **Announcements** (§28): what a node commits is published to its own connections at once and
  NOTIFYed to the others (the writer's WRITE statement); a node that hears that an agent connected to it
  has work claims it, a person's new deliveries are read and pushed, topic and balance events
  and monitored messages go to the followers connected here.
- **Presence** (§26): each node keeps a row per participant it serves (`presence`) and a
  heartbeat (`nodes`); "online" is a connection here, or a row on a node whose heartbeat is
  fresh. Presence events are sent when a participant's first connection anywhere opens and
  its last one closes.
People's deliveries still go to every one of their connections (`feed.Feed`, as on SQLite).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections import OrderedDict, deque
from typing import Any

import msgspec

from ..ops import queries
from .. import protocol
from ..protocol import replies
from ..core import party as core_party
from ..store import loaders, postgres as pg, rows as codec
from ..store.postgres.writer_store import PgStore, fetch_conversations
from ..writer import Published, now_us
from .conn import Conn, Limits
from .gateway import Gateway
from . import inbox as paging  # (PAGE read at each claim
from .inbox import Item, deliver_frame

log = logging.getLogger("ygg.cluster")


class ClaimInbox:
    """An agent's work on this node: what its connections here hold, claimed from the database."""

    is_agent = True

    def __init__(self, participant: str, claimer: "Claimer"):
        self.participant = participant
        self.claimer = claimer
        self.sinks: list[Conn] = []
        self.held: dict[int, tuple[Conn, list[int]]] = {}  # wake id -> (connection, context ids it carries)
        self.items: dict[int, Item] = {}  # (the gateway counts a person's backlog here; agents have none)
        self.news = 1  # announcements so far; a claim that found less than it could take, at `seen`, ends them
        self.seen = 0
        self._given = 0

    def add(self, items: list[Item]) -> None:
        """Work was announced (published here, or read): claim."""
        self.claimer.remember(items)
        self.offer()

    def offer(self) -> None:
        self.news += 1
        self.claimer.want(self)

    def attach(self, sink: Conn) -> None:
        sink.holder = self.claimer.holder()
        self.sinks.append(sink)
        self.offer()

    def detach(self, sink: Conn) -> None:
        if sink in self.sinks:
            self.sinks.remove(sink)
        for wid in list(sink.leased):
            self.held.pop(wid, None)
        sink.leased.clear()
        holder = getattr(sink, "holder", None)
        if holder is not None:
            self.claimer.release(holder, self.participant)
        if self.sinks:
            self.claimer.want(self)

    def roomiest(self) -> tuple[Conn, int] | None:
        """The connection with the most room; of equals, the one given work least recently."""
        best = max(self.sinks, key=lambda s: (s.prefetch - len(s.leased), -getattr(s, "given", 0)), default=None)
        if best is None or best.dropped:
            return None
        room = best.prefetch - len(best.leased)
        return (best, room) if room > 0 else None

    def deliver(self, sink: Conn, item: Item, context: list[Item]) -> None:
        self._given += 1
        sink.given = self._given
        self.held[item.id] = (sink, [c.id for c in context])
        sink.leased.add(item.id)
        sink.push(deliver_frame(item, context, self.participant, getattr(sink, "rosters", None)))

    def ack(self, ids: list[int]) -> list[int]:
        """Retire acked wakes held here and the context they carried; return every id retired."""
        retired: list[int] = []
        for i in ids:
            h = self.held.pop(i, None)
            if h is None:
                continue
            sink, context = h
            sink.leased.discard(i)
            retired.append(i)
            retired += context
        if retired and self.news != self.seen:  # room again, and perhaps more work than was taken
            self.claimer.want(self)
        return retired


class Claimer:
    """Runs this node's claims: every agent inbox with work announced and room, one transaction a round."""

    def __init__(self, store: PgStore, lease: float, parties=None):
        self.store = store
        self.lease = lease
        self.parties = parties  # async (claimed rows) -> {conversation: PartyView}: what agents are shown
        self.pending: dict[str, ClaimInbox] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._count = itertools.count(1)
        self.objs: OrderedDict[str, dict] = OrderedDict()  # message id -> object: recent, built here already
        self.tasks: set[asyncio.Task] = set()

    def holder(self) -> str:
        """A lease holder id: this node, one of its connections."""
        return f"{self.store.node}/{next(self._count)}"

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
        if self.tasks:
            await asyncio.wait(list(self.tasks), timeout=5)

    def want(self, inbox: ClaimInbox) -> None:
        self.pending[inbox.participant] = inbox
        self._wake.set()

    def remember(self, items: list[Item]) -> None:
        for i in items:
            self.objs[i.message["id"]] = i.message
        while len(self.objs) > 20_000:
            self.objs.popitem(last=False)

    def spawn(self, coro) -> None:
        t = asyncio.ensure_future(coro)
        self.tasks.add(t)
        t.add_done_callback(self.tasks.discard)

    def release(self, holder: str, participant: str) -> None:
        self.spawn(self._release(holder, participant))

    async def _release(self, holder: str, participant: str) -> None:
        """A connection closed: its leases return, and whoever else serves the agent is told."""
        try:
            async with self.store.pool.acquire() as c:
                async with c.transaction():
                    rows = await c.fetch(pg.RELEASE_DELIVERIES, holder)
                    if rows:
                        await c.execute("SELECT pg_notify($1, $2)", pg.CHANNEL,
                                        msgspec.json.encode({"n": "", "d": {participant: 0}}).decode())
        except Exception:
            log.exception("release of %s failed (its leases will run out)", holder)

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self.pending:
                todo = list(self.pending.values())
                self.pending.clear()
                asks = [(ib, *pick) for ib in todo if (pick := ib.roomiest()) is not None]
                if not asks:
                    continue
                news = [ib.news for ib, _, _ in asks]
                try:
                    rows = await self._claim(asks)
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.exception("claim failed; trying again shortly")
                    await asyncio.sleep(0.5)
                    for ib, _, _ in asks:
                        self.pending[ib.participant] = ib
                    continue
                views = await self.parties(rows) if self.parties is not None else {}
                self._dispatch(asks, rows, news, views)

    async def _claim(self, asks: list[tuple[ClaimInbox, Conn, int]]) -> list:
        """Claim the asks' wakes and the context each carries (`carried`), in one transaction: a failure leases
        neither, and the context left over is not leased (store/postgres/, CLAIM_WAKES)."""
        now = now_us()
        until = now + int(self.lease * 1e6)
        async with self.store.pool.acquire() as c, c.transaction():
            wakes = await c.fetch(  # (a wake's context in bytes at most: UTF-8 takes 4 a character at most)
                pg.CLAIM_WAKES, [ib.participant for ib, _, _ in asks], [s.holder for _, s, _ in asks],
                [n for _, _, n in asks], now, until, paging.PAGE, 4 * paging.MAX_CONTEXT)
            rows = [tuple(r)[:-2] for r in wakes]
            picked = carried(rows, [(r["ids"] or (), r["sizes"] or ()) for r in wakes])
            if picked[0]:
                rows += await c.fetch(pg.CLAIM_CONTEXT, *picked, now, until)
        return rows

    def _dispatch(self, asks, rows, news, views: dict) -> None:
        wakes: dict[str, list[Item]] = {}
        carried: dict[int, list[Item]] = {}
        for did, recipient, wake, reason, holder, carrier, mid, body, _, cid, *_ in rows:
            obj = self.objs.get(mid)
            if obj is None:
                obj = protocol.message_obj(codec.decode_message(body))
            item = Item(did, bool(wake), reason, obj, views.get(cid))
            if wake:
                wakes.setdefault(holder, []).append(item)
            else:
                carried.setdefault(carrier, []).append(item)
        for (ib, sink, n), seen in zip(asks, news):
            items = wakes.get(sink.holder, [])
            if items and sink not in ib.sinks:  # it closed while the claim ran: give the leases back
                self.release(sink.holder, ib.participant)
                continue
            for item in items:
                ib.deliver(sink, item, carried.get(item.id, []))
            if len(items) >= n:
                self.want(ib)  # there may be more
            else:
                ib.seen = seen  # all there was (unless announced since): an ack need not claim again


def carried(wakes: list, waiting: list[tuple]) -> tuple[list[int], list[str], list[int]]:
    """Which waiting context deliveries the claimed wakes carry, as (ids, holders, carrier wakes): each wake of an
    agent, in id order, the oldest waiting before it that fit (`inbox.fit`), what does not fit carried over to
    its next wake, as `Inbox.offer` hands them out. `waiting`: per wake row, the (ids, characters) CLAIM_WAKES
    looked at, oldest first (all on one row of each agent)."""
    looked: dict[str, deque] = {}
    for (_, agent, *_), (cids, sizes) in zip(wakes, waiting):
        looked.setdefault(agent, deque()).extend(zip(cids, sizes))
    left: dict[str, list] = {}  # agent -> what waited before its wakes so far and did not fit
    out: tuple[list, list, list] = ([], [], [])
    for wid, agent, _, _, holder, *_ in wakes:
        before, pending = looked[agent], left.get(agent, [])
        while before and before[0][0] < wid:
            pending.append(before.popleft())
        take, left[agent] = paging.fit(pending, size=lambda c: c[1])
        for cid, _ in take:
            out[0].append(cid)
            out[1].append(holder)
            out[2].append(wid)
    return out


class PgGateway(Gateway):
    """A gateway node on PostgreSQL (`ygg-server serve --db postgresql://…`)."""

    def __init__(self, engine, limits: Limits | None = None):
        self.store: PgStore = engine.store  # the writer's store: its pool, node, listener
        super().__init__(engine, limits)
        self.claimer = Claimer(self.store, self.store.lease, self._party_views)
        self._views: dict[str, tuple[tuple, Any]] = {}  # conversation -> ((members, lead), PartyView)
        self._dirs: dict[str, Any] = {}  # workspace -> Directory, for party views; dropped by every rescan
        self.beat = min(max(self.store.lease / 3, 0.2), 5.0)  # heartbeat, lease renewal, expired-lease sweep
        self.node_timeout = self.store.node_timeout = 4 * self.beat  # a node silent this long is gone
        self.store.presence_timeout = self.limits.presence_timeout  # an agent silent this long is offline (scoring)
        self._tasks: set[asyncio.Task] = set()
        self.store.on_notify = self._remote

    def _connect(self):
        return pg.SyncConnection(self.store.url, self.store.prepared)

    # --- lifecycle ---

    async def start(self, host: str = "127.0.0.1", port: int = 8765):
        await self.engine.open()
        self.claimer.start()
        server = await super().start(host, port)
        self._heart = asyncio.ensure_future(self._heartbeat())
        return server

    async def close(self) -> None:
        """Stop serving; return this node's leases and sign it off; then the embedded gateway's close."""
        if getattr(self, "_heart", None) is not None:
            self._heart.cancel()
        if self._server:
            self._server.close()
            await self._server.wait_closed()  # every connection detached: their leases are being returned
        await self.claimer.stop()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=5)
        if self.store.pool is not None:
            try:
                async with self.store.pool.acquire() as c:
                    await c.execute("DELETE FROM presence WHERE node = $1", self.store.node)
                    await c.execute("DELETE FROM nodes WHERE id = $1", self.store.node)
            except Exception:
                log.exception("could not sign this node off")
        await super().close()  # the engine (the writer's store) and the reader and admin connections

    def _spawn(self, coro) -> None:
        t = asyncio.ensure_future(coro)
        self._tasks.add(t)
        t.add_done_callback(self._done)

    def _done(self, t: asyncio.Task) -> None:
        self._tasks.discard(t)
        if not t.cancelled() and t.exception() is not None:
            log.error("%s failed", t.get_coro().__qualname__, exc_info=t.exception())

    # --- inboxes ---

    async def _inbox(self, pid: str, is_agent: bool):
        if is_agent:
            inbox = self.inboxes.get(pid)
            if inbox is None:
                inbox = self.inboxes[pid] = ClaimInbox(pid, self.claimer)
            return inbox
        return await super()._inbox(pid, is_agent)  # (a person's: each device reads what is owed from the store)

    async def _rescan(self) -> None:
        self._views.clear()
        self._dirs.clear()  # a membership or a profile may have changed: the rosters with it
        await super()._rescan()

    async def _party_views(self, rows) -> dict:
        """The party of each conversation claimed rows are in, as its agents are shown it (the roster; who is
        still there), as `loaders.party_views` makes it: kept until its members or Lead change, or a rescan.

        The claim reads the conversation's row as committed, by whichever node changed it, so a party that
        moved (an op, or a conversation grown to everyone addressed in it) shows here before the wake goes
        out: the directives' cached blocks are dropped then (as `Gateway._party_moves` does on one node), not
        when their ttl runs out."""
        out: dict = {}
        moved = False
        for *_, ws, cid, kind, name, members, party in rows:
            if cid is None or cid in out:
                continue
            conv = codec.conversation(cid, ws, kind, name, members, party)
            key = (conv.members, conv.lead)
            hit = self._views.get(cid)
            if hit is None or hit[0] != key:
                d = self._dirs.get(ws)
                if d is None:
                    d = self._dirs[ws] = await self.read(loaders.load_directory, ws)
                moved = moved or hit is not None
                hit = self._views[cid] = (key, core_party.party_view(d, conv))
            out[cid] = hit[1]
        if moved:
            self.issuer.invalidate()
        return out

    async def _offer_again(self, pid: str, inbox) -> None:
        """After a rescan (`Gateway._rescan`: memberships, sessions, then this): an agent claims again, and
        its claims check its memberships and key in the database (`store.postgres.RECEIVABLE`), so a
        revocation holds for what it claims next; a person's unacked deliveries are read again."""
        if isinstance(inbox, ClaimInbox):
            inbox.offer()
        else:
            await super()._offer_again(pid, inbox)

    # --- news from the other nodes ---

    def _remote(self, msg: dict) -> None:
        if msg.get("x") == "rescan":
            self._spawn(self._rescan())
            return
        if "p" in msg:
            pid, online, workspaces = msg["p"]
            if pid not in self.conns:
                self._tell_presence(pid, frozenset(workspaces), online)
        people: dict[str, int] = {}
        for pid, first in (msg.get("d") or {}).items():
            inbox = self.inboxes.get(pid)
            if isinstance(inbox, ClaimInbox):
                inbox.offer()
            elif inbox is not None and inbox.announced(first):  # (else its devices' page reads reach them)
                people[pid] = first
        if people:
            self._spawn(self._people(people))
        topics = balances = messages = ()
        if msg.get("t") or msg.get("b"):  # (the workspaces followed here, once per news, not once per item)
            followed = self.following.followed()
            if followed:
                topics = [x for x in msg.get("t") or () if x[0] in followed]
                balances = [tuple(x) for x in msg.get("b") or () if x[0] in followed]
        if msg.get("m"):
            monitored = self.following.monitored()
            if monitored:
                messages = [x for x in msg["m"] if x[0] in monitored]
        if topics or balances or messages:
            self._spawn(self._relay(list(topics), list(balances), list(messages)))

    async def _people(self, first: dict[str, int]) -> None:
        """People connected here with new deliveries from another node: read them, push them."""
        pids = sorted(first)
        async with self.store.pool.acquire() as c:
            rows = await c.fetch(
                """SELECT d.id, d.recipient, d.wake, d.reason, m.body
                   FROM unnest($1::text[], $2::bigint[]) AS r(who, since)
                   JOIN deliveries d ON d.recipient = r.who AND d.id >= r.since AND d.acked_at IS NULL
                   JOIN messages m ON m.id = d.message ORDER BY d.id""", pids, [first[p] for p in pids])
        got: dict[str, list[Item]] = {}
        objs: dict[bytes, dict] = {}
        for did, who, wake, reason, body in rows:
            obj = objs.get(body)
            if obj is None:
                obj = objs[body] = protocol.message_obj(codec.decode_message(body))
            got.setdefault(who, []).append(Item(did, bool(wake), reason, obj))
        for pid, items in got.items():
            if pid in self.inboxes:
                self.inboxes[pid].add(items)

    async def _relay(self, topics: list, balances: list, messages: list) -> None:
        """Topic and balance events, and monitored messages, committed by another node."""
        out = Published(balances=balances)
        async with self.store.pool.acquire() as c:
            if topics:
                rows = await c.fetch("SELECT state FROM topics WHERE id = ANY($1::text[])", [t for _, t in topics])
                out.topics = [codec.decode_topic(r[0]) for r in rows]
                # who may see each (Gateway._readers): its conversation, read here when this node has not seen it
                seen = self.store.conversations
                followed = self.following.followed()
                unseen = sorted({t.conversation for t in out.topics if t.workspace in followed
                                 and t.conversation not in seen.get(t.workspace, {})})
                if unseen:
                    out.conversations = await fetch_conversations(c, unseen)
            if messages:
                ids = [m for _, m in messages]
                rows = await c.fetch("SELECT id, body, seq FROM messages WHERE id = ANY($1::text[]) ORDER BY seq", ids)
                msgs = {mid: codec.decode_message(body) for mid, body, _ in rows}
                out.messages = [msgs[m] for m in ids if m in msgs]
                for did, mid, who, wake, reason in await c.fetch(
                        "SELECT id, message, recipient, wake, reason FROM deliveries WHERE message_seq = ANY($1::bigint[]) "
                        "ORDER BY id", [seq for *_, seq in rows]):
                    if mid in msgs:
                        out.deliveries.append(codec.Stored(did, who, bool(wake), reason, msgs[mid]))
        if out.messages:
            self._monitor(out)
        if out.topics or out.balances:
            self._events(out)

    # --- presence across nodes ---

    def _silences(self) -> None:
        """(Scoring reads presence rows, with the silence rule: postgres.present_elsewhere.)"""

    def _presence(self, conn: Conn, online: bool) -> None:
        # who follows now is who is told (as the embedded gateway does at this moment)
        targets = self.following.reaching(conn.workspaces)
        self._spawn(self._presence_db(conn.participant, conn.kind, conn.workspaces, online, targets))

    async def _presence_db(self, pid: str, kind: str, workspaces: frozenset[str], online: bool,
                           targets: set[Conn]) -> None:
        """Record this node's part; tell everyone only on the first connection anywhere / the last one."""
        now = now_us()
        try:
            async with self.store.pool.acquire() as c:
                if online:
                    await c.execute(
                        """INSERT INTO presence (node, participant, kind, last_seen) VALUES ($1, $2, $3, $4)
                           ON CONFLICT (node, participant) DO UPDATE SET last_seen = excluded.last_seen""",
                        self.store.node, pid, kind, now)
                else:
                    await c.execute("DELETE FROM presence WHERE node = $1 AND participant = $2", self.store.node, pid)
                elsewhere = await self._elsewhere(c, [pid], now)
                if (pid in self.conns) != online or elsewhere:
                    return  # it came back (or went) meanwhile, or it is still connected to another node
                await self._notify_presence(c, pid, online, workspaces)
        except Exception:
            log.exception("presence of %s not recorded", pid)
            return
        self._tell_presence(pid, workspaces, online, targets)

    async def _notify_presence(self, c, pid: str, online: bool, workspaces: frozenset[str]) -> None:
        """Tell the other nodes that `pid` came or went in `workspaces` (their `_remote` tells their followers)."""
        await c.execute("SELECT pg_notify($1, $2)", pg.CHANNEL, msgspec.json.encode(
            {"n": self.store.node, "p": [pid, online, sorted(workspaces)]}).decode())

    async def _elsewhere(self, c, ids: list[str], now: int) -> set[str]:
        """Those of `ids` online through another node (an agent silent there for presence_timeout is not)."""
        return await pg.present_elsewhere(c, ids, self.store.node, now, self.node_timeout,
                                          self.limits.presence_timeout)

    def _joined(self, pid: str, workspaces: frozenset[str]) -> None:
        """(`Gateway._joined`, and the other nodes' followers told too, as of a first connection.)"""
        super()._joined(pid, workspaces)
        self._spawn(self._announce_joined(pid, workspaces))

    async def _announce_joined(self, pid: str, workspaces: frozenset[str]) -> None:
        try:
            async with self.store.pool.acquire() as c:
                await self._notify_presence(c, pid, True, workspaces)
        except Exception:
            log.exception("presence of %s in a joined workspace not told to the other nodes", pid)

    async def _op_presence(self, conn: Conn, frame) -> dict:
        members = await self.read(queries.members, conn.participant, frame.workspace)
        ids = [m["id"] for m in members]
        now = now_us()
        async with self.store.pool.acquire() as c:
            elsewhere = await self._elsewhere(c, ids, now)
        return replies.presence(frame.ref, {i: self.online(i) or i in elsewhere for i in ids})

    async def _present(self, conn: Conn, frame) -> frozenset[str]:
        """This node's online connections and the workspace's agents online through another live node, as
        the writer scores a send (explain_assignment)."""
        here = await super()._present(conn, frame)
        members = await self.read(queries.members, conn.participant, frame.workspace)
        ids = [m["id"] for m in members if m["kind"] == "agent" and m["id"] not in here]
        async with self.store.pool.acquire() as c:
            return here | await self._elsewhere(c, ids, now_us())

    # --- the heartbeat: this node lives, its leases hold, expired leases are claimed again ---

    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(self.beat)
            try:
                await self._beat()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("heartbeat failed")

    async def _beat(self) -> None:
        now = now_us()
        mono = time.monotonic()
        holders, seen = [], {}
        for pid, conns in self.conns.items():
            for c in conns:
                h = getattr(c, "holder", None)
                if h is not None:
                    holders.append(h)
                seen[pid] = max(seen.get(pid, 0), now - int((mono - c.last_seen) * 1e6))
        async with self.store.pool.acquire() as c:
            await c.execute("UPDATE nodes SET heartbeat_at = $2 WHERE id = $1", self.store.node, now)
            if holders:
                await c.execute(pg.RENEW_DELIVERIES, holders, now + int(self.store.lease * 1e6))
            if seen:
                ps = sorted(seen)
                await c.execute(
                    """UPDATE presence p SET last_seen = s.at FROM unnest($2::text[], $3::bigint[]) AS s(who, at)
                       WHERE p.node = $1 AND p.participant = s.who""", self.store.node, ps, [seen[p] for p in ps])
            gone = now - int(self.node_timeout * 1e6)
            await c.execute("DELETE FROM presence WHERE node IN (SELECT id FROM nodes WHERE heartbeat_at < $1)", gone)
            await c.execute("DELETE FROM nodes WHERE heartbeat_at < $1", now - 86_400_000_000)
        for inbox in list(self.inboxes.values()):
            if isinstance(inbox, ClaimInbox) and inbox.roomiest() is not None:
                self.claimer.want(inbox)  # leases of a vanished node ran out: claim them
        if await self.store.relisten():
            await self._rescan()  # announcements may have been missed while the listener was down
