"""A person's deliveries: every one to every device; an ack from any device retires it for all.

Each device reads the person's unacked deliveries from the store itself, a page (`inbox.PAGE`) at a time, in
id order, the next page when what it was sent has mostly gone out (`Sink.drained`), not when it is acked: a
person acks what they read, and what they have not read yet must still reach them, with everything new.
Once a device has caught up, new deliveries are pushed to it as they are published; while it has not, they
are left to its page reads (they are in the store), so each device gets them in id order, and a long-away
person's backlog costs a page of frames per device, not all of it. Each device remembers the ids sent to it
and not acked yet (`Place.sent`), so a rescan's read from the start sends it only what it has not had.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Callable

from . import inbox as paging
from .inbox import Item, Reader, Retired, Sink, deliver_frame, spawn


@dataclass(eq=False)
class Place:
    """Where one device is in its person's backlog."""

    sink: Sink
    horizon: int = 0  # every unacked delivery up to this id was sent here, or held back
    beyond: bool = True  # the store may hold unacked deliveries above `horizon` not sent here
    drops: int = 0  # live deliveries left to the page reads, so far
    sent: set[int] = field(default_factory=set)  # sent here and not acked: never sent here twice
    unsure: set[int] | None = None  # in a rescan's pass: of `sent`, those the store has not shown unacked yet
    until: float = 0  # a rescan's pass reads on, however full the queue, to where the device was (`horizon`)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


@dataclass
class Feed:
    participant: str
    read: Reader
    # May this delivery go out now? (Is the person still in its workspace, with receive?) Asked as each goes out.
    allow: Callable[[Item], bool] | None = None
    places: dict[Sink, Place] = field(default_factory=dict)
    gone: Retired = field(default_factory=Retired)

    def _owed(self, p: Place, i: Item) -> bool:
        return i.id not in p.sent and i.id not in self.gone and (self.allow is None or self.allow(i))

    def attach(self, sink: Sink) -> None:
        p = self.places[sink] = Place(sink)
        sink.drained = lambda: self._more(p)
        self._more(p)

    def detach(self, sink: Sink) -> None:
        if self.places.pop(sink, None) is not None:
            sink.drained = None

    def add(self, items: list[Item]) -> None:
        """Deliveries published or announced: sent to each device that has caught up (or that they precede)."""
        for p in self.places.values():
            fresh = []
            for i in items:
                if not self._owed(p, i):
                    continue
                if not p.beyond or i.id <= p.horizon:
                    fresh.append(i)
                else:
                    p.drops += 1
            self._send(p, fresh)

    def announced(self, first: int) -> bool:
        """New deliveries from id `first` on are in the store (another node's): should they be read now, or
        are they left to the devices' page reads?"""
        if any(not p.beyond or first <= p.horizon for p in self.places.values()):
            return True
        for p in self.places.values():
            p.drops += 1
        return False

    def ack(self, ids: list[int]) -> list[int]:
        """Retire acked deliveries on every device; return those sent to one here."""
        retired = [i for i in ids if any(i in p.sent for p in self.places.values())]
        for i in ids:
            self.gone.add(i)
            for p in self.places.values():
                p.sent.discard(i)
        return retired

    def _send(self, p: Place, items: list[Item]) -> None:
        for i in items:
            p.sink.push(deliver_frame(i, []))
            p.sent.add(i.id)

    # --- paging ---

    def _more(self, p: Place) -> None:
        if (p.beyond and not p.lock.locked() and p.sink.queue.qsize() < paging.LOW and _room(p.sink) > 0
                and self.places.get(p.sink) is p):
            spawn(self.fill(p))

    async def rescan(self) -> None:
        """Another process changed the database (a receive given back, deliveries it made, acks through another
        node): each device reads its backlog again from the start, and is sent what it has not had."""
        for p in list(self.places.values()):
            async with p.lock:
                p.until = p.horizon if p.beyond else float("inf")
                p.horizon, p.beyond, p.unsure = 0, True, set(p.sent)
            await self.fill(p)

    async def fill(self, p: Place) -> None:
        """Read pages for device `p` while it has room for them (and in a rescan's pass, to where it was)."""
        async with p.lock:
            while p.beyond and self.places.get(p.sink) is p and (
                    (forced := p.horizon < p.until) or (p.sink.queue.qsize() < paging.LOW and _room(p.sink) > 0)):
                n = paging.PAGE - (0 if forced else p.sink.queue.qsize())
                after, mark = p.horizon, p.drops
                rows = await self.read(after, n, False)
                full = len(rows) >= n
                if rows:
                    p.horizon = rows[-1].id
                p.beyond = full or p.drops != mark
                if not p.beyond:
                    p.until = 0
                if p.unsure is not None:
                    self._confirm(p, rows, after, full)
                fresh = [i for i in rows if self._owed(p, i)]
                if not forced:  # as many as the device's bytes allow: the rest is read again after them
                    fresh = self._fitting(p, fresh)
                p.sink.backlog += len(fresh)
                self._send(p, fresh)

    @staticmethod
    def _fitting(p: Place, fresh: list[Item]) -> list[Item]:
        """The first of `fresh` that fit in the device's room for bytes (at least one); where they stop, the
        device's horizon goes back to the last of them, so a page's later deliveries are read again."""
        room = _room(p.sink)
        for n, i in enumerate(fresh):
            room -= len((i.message.get("text") or "").encode()) + 512  # (the rest of a frame: far less)
            if room < 0 and n:
                p.horizon, p.beyond = fresh[n - 1].id, True
                return fresh[:n]
        return fresh

    def _confirm(self, p: Place, rows: list[Item], after: int, full: bool) -> None:
        """A rescan's page covered ids (after, horizon] (or all above `after`): what was sent here in that range
        and is no longer unacked in the store was acked elsewhere, and is forgotten."""
        found = {i.id for i in rows}
        for x in [x for x in p.unsure if x > after and (x <= p.horizon or not full)]:
            p.unsure.discard(x)
            if x not in found:
                p.sent.discard(x)
        if not p.beyond:
            p.unsure = None


def _room(sink: Sink) -> float:
    """Bytes the device may still be sent of its backlog (a sink that does not count them: no bound)."""
    room = getattr(sink, "room", None)
    return room() if room is not None else float("inf")
