"""An agent's undelivered work, and who holds which piece of it.

An agent's deliveries are claimed: each wake goes to exactly one of its
connections (a lease), carrying the context that piled up before it; a lease
returns when its connection drops, and the wake is offered again. The database
holds the same rows (unacked), so a reconnect, or a restart, claims through the
very same path. (A person's deliveries go to every device: net/feed.py.)

Paged: an inbox holds at most `PAGE` of its unacked deliveries in memory, the
oldest, in id order; the rest stay in the store and are read a page at a time
(ids above `horizon`) as acks make room. A delivery published while older ones
still wait in the store is left there too (it is durable; a page read reaches
it), so wakes go out in id order, and a long-away agent's backlog costs one page
of memory, not all of it. A wake carries the context before it that is in the
page: at most `PAGE` deliveries, the oldest; the rest rides with the next wakes.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Protocol, TypeVar

from ..core.party import PartyView
from ..protocol import for_agent, roster_for

# characters of context text one wake carries at most (two of the longest messages): a deliver frame stays
# within what docs/protocol.md tells clients to accept; what does not fit comes with the next wake
MAX_CONTEXT = 400_000

log = logging.getLogger("ygg.net")
T = TypeVar("T")

PAGE = 1000  # unacked deliveries an inbox holds in memory at most (and a wake's context at most)
LOW = PAGE // 2  # at or below this many in memory, the next page is read

# (after id, at most n, wakes only) -> the participant's unacked deliveries above that id, in id order
Reader = Callable[[int, int, bool], Awaitable[list["Item"]]]


class Sink(Protocol):
    """A connection as the inbox sees it."""

    prefetch: int
    leased: set[int]
    queue: asyncio.Queue  # frames waiting to be written
    backlog: int  # how many of them are backlog (not slowness)
    drained: Callable[[], None] | None  # called when the queue runs low

    def push(self, frame: dict) -> None: ...


@dataclass(slots=True)
class Item:
    id: int
    wake: bool
    reason: str | None
    message: dict
    party: PartyView | None = None  # an agent's delivery: its conversation's party (roster, who is still there)
    holder: str | None = None  # leased to this connection as it was written (net/delivery/claims.py)


@dataclass
class Retired:
    """Ids acked here, perhaps not yet committed: never handed out again (the latest 100,000)."""

    ids: set[int] = field(default_factory=set)
    order: deque = field(default_factory=deque)

    def __contains__(self, i: int) -> bool:
        return i in self.ids

    def add(self, i: int) -> None:
        self.ids.add(i)
        self.order.append(i)
        if len(self.order) > 100_000:
            self.ids.discard(self.order.popleft())


@dataclass
class Inbox:
    participant: str
    items: dict[int, Item] = field(default_factory=dict)  # unacked, in id order: one page at most
    holder: dict[int, Sink] = field(default_factory=dict)  # wake id -> the connection holding it
    bundle: dict[int, list[int]] = field(default_factory=dict)  # wake id -> context ids it carries
    sinks: list[Sink] = field(default_factory=list)
    gone: Retired = field(default_factory=Retired)
    # May this delivery go out now? (Is its recipient still in its workspace, with receive?) Asked when an
    # item arrives and again when it would be handed out: a membership lost meanwhile holds it back.
    allow: Callable[[Item], bool] | None = None
    read: Reader | None = None  # the store's unacked rows (None: everything owed is handed to `add`)
    horizon: int = 0  # every unacked delivery up to this id is in memory, retired or held back
    beyond: bool = False  # the store may hold unacked deliveries above `horizon` that are not in memory
    drops: int = 0  # deliveries left in the store because they were beyond the page, so far
    starved: bool = False  # its connections have room, and nothing here is left to offer
    peeked: int = 0  # the last wake read ahead of the page (`_wanted`)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def __post_init__(self) -> None:
        self.beyond = self.read is not None  # nothing read yet

    def allows(self, item: Item) -> bool:
        return self.allow is None or self.allow(item)

    def _new(self, i: Item) -> bool:
        return i.id not in self.items and i.id not in self.gone and self.allows(i)

    def add(self, items: list[Item]) -> None:
        """Deliveries published or announced (live, in id order): taken if within the page, else left in the
        store for a page read (one older than the horizon is always taken: it fills a gap the reads passed)."""
        fresh: list[Item] = []
        for i in items:
            if not self._new(i):
                continue
            if i.id <= self.horizon or (not self.beyond and len(self.items) + len(fresh) < PAGE):
                fresh.append(i)
                continue
            if not self.beyond:  # the page is full: this one and what follows it wait in the store
                self.beyond, self.horizon = True, i.id - 1
            self.drops += 1
        self._take(fresh)
        if not fresh and self.drops:
            self.offer()  # (a wake left in the store may be what stuck context waits for)
        self._more()

    def _take(self, fresh: list[Item]) -> None:
        """Put new deliveries in the page, in id order, and hand them out."""
        if not fresh:
            return
        if self.items and fresh[0].id < next(reversed(self.items)):
            merged = {**self.items, **{i.id: i for i in fresh}}
            self.items = dict(sorted(merged.items()))
        else:
            self.items.update((i.id, i) for i in fresh)
        self.offer()

    # --- paging ---

    def _wanted(self, rewind: bool) -> tuple[int, int, bool] | None:
        """What to read next (after id, at most n, wakes only), or None.

        A page when few are left in memory, or when an agent's connections have room and nothing here to
        offer. An agent's page full of context no wake here carries: the next wake in the store, read ahead
        (it carries that context; the context between the page and it rides with a later wake)."""
        if self.read is None or not self.beyond:
            return None
        if rewind:
            return 0, PAGE, False
        room = PAGE - len(self.items)
        if len(self.items) <= LOW or (self.starved and room > 0):
            return self.horizon, room, False
        if self.starved and self._stuck():
            return max(self.horizon, self.peeked), 1, True
        return None

    def _carried(self) -> set[int]:
        """The context ids the wakes handed out carry."""
        return {c for ids in self.bundle.values() for c in ids}

    def _stuck(self) -> bool:
        """Is there context in memory that no wake here carries?"""
        carried = self._carried()
        return any(not i.wake and i.id not in carried for i in self.items.values())

    async def rescan(self) -> None:
        """Another process changed the database (a receive given back, deliveries it made): read again from the
        first page on."""
        await self.fill(rewind=True)

    async def fill(self, rewind: bool = False) -> None:
        """Read pages while this inbox wants them; `rewind`: from the start first."""
        async with self._lock:
            if rewind and self.read is not None:
                self.horizon, self.beyond = 0, True
            while (want := self._wanted(rewind)) is not None:
                after, n, wakes = want
                mark = self.drops
                rows = await self.read(after, n, wakes)
                if wakes:
                    self._ahead(rows, mark)
                else:
                    self._paged(rows, n, mark)
                rewind = False

    def _paged(self, rows: list[Item], n: int, mark: int) -> None:
        """Take a page read above the horizon (a rewind's: what is in memory already counts as read)."""
        last = next(reversed(self.items), 0)
        room, fresh, top, cut = PAGE - len(self.items), [], self.horizon, False
        for i in rows:
            if self._new(i):
                if room <= 0 and i.id > last:  # (a rewind's page, in memory already)
                    cut = True
                    break
                fresh.append(i)
                room -= 1
            top = i.id
        self.horizon, self.beyond = top, cut or len(rows) >= n or self.drops != mark
        self._take(fresh)

    def _ahead(self, rows: list[Item], mark: int) -> None:
        """Take a wake read ahead of the page (none: there is none yet, and a live one starves the inbox again;
        one held back, or one published while this was read: read on)."""
        fresh = [i for i in rows if self._new(i)]
        self.starved = (bool(rows) and not fresh) or self.drops != mark
        if rows:
            self.peeked = rows[-1].id
        self._take(fresh)

    def _more(self) -> None:
        """Read the next page, unless one is being read (that read looks again when it is done)."""
        if self._lock.locked() or self._wanted(False) is None:
            return
        spawn(self.fill())

    # --- connections ---

    def attach(self, sink: Sink) -> None:
        self.sinks.append(sink)
        self.offer()

    def detach(self, sink: Sink) -> None:
        if sink in self.sinks:
            self.sinks.remove(sink)
        for wid in list(sink.leased):
            self.holder.pop(wid, None)
            self.bundle.pop(wid, None)
        sink.leased.clear()
        self.offer()

    def offer(self) -> None:
        """Hand unheld wakes to connections with room, oldest first; each carries the unheld context before it
        in the page. Starved when every connection has room still and nothing is left to offer."""
        if not self.sinks:
            return
        held_context = self._carried()
        context: list[Item] = []
        self.starved = False
        for item in list(self.items.values()):
            if item.id in self.holder or item.id in held_context:
                continue
            if not self.allows(item):  # no longer its to get: held back (still unacked in the store)
                del self.items[item.id]
                continue
            if not item.wake:
                context.append(item)
                continue
            # the least loaded connection with room (the least loaded may be full while another has room)
            sink = min((s for s in self.sinks if len(s.leased) < s.prefetch), key=lambda s: len(s.leased),
                       default=None)
            if sink is None:
                return
            carried, context = fit(context)
            self.holder[item.id] = sink
            self.bundle[item.id] = [c.id for c in carried]
            sink.leased.add(item.id)
            sink.push(deliver_frame(item, carried, self.participant, getattr(sink, "rosters", None)))
        self.starved = self.beyond
        self._more()

    def ack(self, ids: list[int]) -> list[int]:
        """Retire acked deliveries (and the context their wakes carried); return every id retired."""
        retired: list[int] = []
        for i in ids:
            if i not in self.items:
                continue
            retired.append(i)
            self.items.pop(i)
            self.gone.add(i)
            sink = self.holder.pop(i, None)
            if sink is not None:
                sink.leased.discard(i)
            for c in self.bundle.pop(i, []):
                if self.items.pop(c, None) is not None:
                    retired.append(c)
                    self.gone.add(c)
        if retired:
            self.offer()
        self._more()
        return retired


_reading: set[asyncio.Future] = set()  # (a task nothing refers to may be collected before it is done)


def spawn(coro) -> None:
    """Read a page in the background; a failed read is logged (the next ack, page or rescan reads again)."""
    t = asyncio.ensure_future(coro)
    _reading.add(t)
    t.add_done_callback(_failed)


def _failed(t: asyncio.Future) -> None:
    _reading.discard(t)
    if not t.cancelled() and t.exception() is not None:
        log.error("a page of deliveries was not read", exc_info=t.exception())


def chars(item: Item) -> int:
    """Characters of an item's text, as a wake's context counts them (PostgreSQL's `length(text)` counts alike)."""
    return len(item.message.get("text") or "")


def fit(context: list[T], size: Callable[[T], int] = chars) -> tuple[list[T], list[T]]:
    """The context a wake carries and the rest: the oldest, at most PAGE of them and MAX_CONTEXT characters of
    text (`size`), at least one. SQLite's inbox and PostgreSQL's claims (net/delivery/claims.py) both bound wakes here."""
    total = 0
    for n, c in enumerate(context):
        total += size(c)
        if n == PAGE or (total > MAX_CONTEXT and n):
            return context[:n], context[n:]
    return context, []


def deliver_frame(item: Item, context: list[Item], me: str | None = None,
                  sent: dict | None = None) -> dict[str, Any]:
    """A deliver frame; `me`: the agent it is for (people's frames are the stored messages as they are).

    An agent's items carry their party (docs/protocol.md, `roster`): it is told who else is in the party,
    and its messages are shown as agents see them (`protocol.for_agent`). `sent`: the connection's memory
    of the party each conversation's roster was last sent for; a roster it already has is left out.
    """
    if me is None or (item.party is None and not any(c.party is not None for c in context)):  # a person's: as it is
        return {
            "op": "deliver", "id": item.id, "message": item.message, "wake": item.wake, "reason": item.reason,
            "context": [c.message for c in context], "context_ids": [c.id for c in context],
            "context_reasons": [c.reason for c in context],
        }
    frame = {
        "op": "deliver", "id": item.id, "message": for_agent(item.message, item.party), "wake": item.wake,
        "reason": item.reason, "context": [for_agent(c.message, c.party) for c in context],
        "context_ids": [c.id for c in context], "context_reasons": [c.reason for c in context],
    }
    if item.party is not None:
        cid = item.message.get("conversation")
        prev = sent.get(cid) if sent is not None else None
        if prev is not item.party:
            if prev != item.party:
                frame["roster"] = roster_for(item.party, me)
            if sent is not None:
                sent[cid] = item.party
    return frame
