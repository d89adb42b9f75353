"""An agent's work on a node of several: claimed from the database under a lease, one round for all its agents.

Seed 003 §2, §27: an agent's deliveries are claimed with `SELECT … FOR UPDATE SKIP LOCKED`, leased to one of
its connections (`deliveries.leased_by`, `lease_until`). `ClaimInbox` is what the gateway holds for an agent;
one `Claimer` per node runs the claims of all its agents, one transaction a round. Leases are renewed while a
connection lives, returned when it closes, and run out when its node dies.

What this node's writer commits for an agent whose work is all held here (`drained`: its last claim found
less than it could take and left nothing unleased, and nothing was announced since) is leased to one of its
connections here in the very statement that writes it (`PgStore.lease_to`) and handed out from memory
(`ready`), as an embedded inbox would: the node does not claim back what it has just published itself.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections import OrderedDict, deque

from ... import protocol
from ...store.rows import decode_message
from .. import inbox as paging  # (PAGE read at each claim)
from ..conn import Conn
from ..inbox import Item, deliver_frame, fit

log = logging.getLogger("ygg.cluster")


class ClaimInbox:
    """An agent's work on this node: what its connections here hold, claimed from the database."""

    is_agent = True

    def __init__(self, participant: str, claimer: "Claimer", allow=lambda item: True):
        self.participant = participant
        self.claimer = claimer
        # checked as what was leased as written goes out (a claim checks in its statement): a workspace left or
        # receive taken away since holds it back, unacked, as on SQLite (`Gateway.allower`)
        self.allow = allow
        self.sinks: list[Conn] = []
        self.held: dict[int, tuple[Conn, list[int]]] = {}  # wake id -> (connection, context ids it carries)
        self.items: dict[int, Item] = {}  # (the gateway counts a person's backlog here; agents have none)
        self.news = 1  # announcements so far; a claim that found less than it could take, at `seen`, ends them
        self.seen = 0
        self.drained = False  # all its unacked work is leased here: what is written next is leased as written
        self.ready: dict[str, deque[Item]] = {}  # holder -> leased to it as written, not handed out yet
        self._given = 0

    def add(self, items: list[Item]) -> None:
        """Work was published here: what was leased as it was written goes out from memory; the rest, claimed."""
        fresh = [i for i in items if i.holder is None]
        live, gone = {s.holder for s in self.sinks if not s.dropped}, set()
        for i in items:
            if i.holder in live:
                self.ready.setdefault(i.holder, deque()).append(i)
            elif i.holder is not None:
                gone.add(i.holder)
        for holder in gone:  # its connection closed before the commit: the leases go back, to be claimed
            self.claimer.release(holder, self.participant)
        for sink in self.sinks:
            self._hand(sink)
        if fresh or gone:
            self.claimer.remember(fresh)
            self.offer()

    def offer(self) -> None:
        self.news += 1
        self.drained = False
        self.claimer.want(self)

    def taker(self) -> str | None:
        """The holder what is written next for this agent is leased to, if all its work is here (`drained`): the
        connection with the most room left once what waits for it in `ready` is counted, if any has room (else
        the work waits unleased, claimed by whichever connection makes room or attaches first)."""
        if not self.drained:
            return None

        def room(s: Conn) -> int:
            return s.prefetch - len(s.leased) - len(self.ready.get(s.holder, ()))

        best = max((s for s in self.sinks if not s.dropped), key=lambda s: (room(s), -getattr(s, "given", 0)),
                   default=None)
        return best.holder if best is not None and room(best) > 0 else None

    def _hand(self, sink: Conn) -> None:
        """Hand out from `ready` what `sink` has room for: each wake with the context before it that fits."""
        q = self.ready.get(getattr(sink, "holder", None))
        while q and sink.prefetch > len(sink.leased):
            first = next((k for k, x in enumerate(q) if x.wake), None)
            if first is None:
                return  # context only: it waits for the next wake (it is leased here already)
            context = [c for c in (q.popleft() for _ in range(first)) if self.allow(c)]
            wake = q.popleft()
            if self.allow(wake):
                self.deliver(sink, wake, self._fitted(q, context))
            else:
                q.extendleft(reversed(context))

    def deliver_claimed(self, sink: Conn, item: Item, context: list[Item]) -> None:
        """A claimed wake, with the context it was claimed with and what waits before it in `ready`."""
        q = self.ready.get(sink.holder)
        if q and not q[0].wake and q[0].id < item.id:
            waiting = []
            while q and not q[0].wake and q[0].id < item.id:
                if self.allow(c := q.popleft()):
                    waiting.append(c)
            context = sorted(waiting + context, key=lambda c: c.id)
            self.deliver(sink, item, self._fitted(q, context))
        else:
            self.deliver(sink, item, context)

    @staticmethod
    def _fitted(q: deque, context: list[Item]) -> list[Item]:
        """What of `context` a wake carries (`inbox.fit`); the rest goes back to the front of `q`, for the next."""
        take, rest = fit(context)
        q.extendleft(reversed(rest))
        return take

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
            self.ready.pop(holder, None)
            self.claimer.release(holder, self.participant)
        if self.sinks:
            self.offer()  # (what it held is claimable again)

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
            if self.ready:
                self._hand(sink)
        if retired and self.news != self.seen:  # room again, and perhaps more work than was taken
            self.claimer.want(self)
        return retired


class Claimer:
    """Runs this node's claims: every agent inbox with work announced and room, one transaction a round."""

    def __init__(self, db, clock, parties=None):
        self.db = db  # the store's side of deliveries (store.postgres.deliveries.PgDeliveries)
        self.clock = clock
        self.parties = parties  # async (claimed rows) -> {conversation: PartyView}: what agents are shown
        self.pending: dict[str, ClaimInbox] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._count = itertools.count(1)
        self.objs: OrderedDict[str, dict] = OrderedDict()  # message id -> object: recent, built here already
        self.tasks: set[asyncio.Task] = set()

    def holder(self) -> str:
        """A lease holder id: this node, one of its connections."""
        return f"{self.db.node}/{next(self._count)}"

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
        try:
            await self.db.release(holder, participant)
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
                    rows, drained = await self._claim(asks)
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.exception("claim failed; trying again shortly")
                    await asyncio.sleep(0.5)
                    for ib, _, _ in asks:
                        self.pending[ib.participant] = ib
                    continue
                views = await self.parties(rows) if self.parties is not None else {}
                self._dispatch(asks, rows, news, views, drained)

    async def _claim(self, asks: list[tuple[ClaimInbox, Conn, int]]) -> list:
        """Claim the asks' wakes and the context each carries (`carried`), in one transaction (CLAIM_WAKES): a
        wake's context in bytes at most, since UTF-8 takes 4 a character at most."""
        now = self.clock()
        return await self.db.claim(
            [ib.participant for ib, _, _ in asks], [s.holder for _, s, _ in asks], [n for _, _, n in asks],
            now, now + int(self.db.lease * 1e6), paging.PAGE, 4 * paging.MAX_CONTEXT, carried)

    def _dispatch(self, asks, rows, news, views: dict, drained: set[str]) -> None:
        wakes: dict[str, list[Item]] = {}
        carried: dict[int, list[Item]] = {}
        for did, _, wake, reason, holder, carrier, mid, body, _, conv in rows:
            obj = self.objs.get(mid)
            if obj is None:
                obj = protocol.message_obj(decode_message(body))
            item = Item(did, wake, reason, obj, views.get(conv.id) if conv is not None else None)
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
                ib.deliver_claimed(sink, item, carried.get(item.id, []))
            if len(items) >= n:
                self.want(ib)  # there may be more
            else:
                ib.seen = seen  # all there was (unless announced since): an ack need not claim again
                ib.drained = ib.news == seen and ib.participant in drained


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
