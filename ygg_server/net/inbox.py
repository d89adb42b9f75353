"""A participant's undelivered work, and who holds which piece of it.

An agent's deliveries are claimed: each wake goes to exactly one of its
connections (a lease), carrying the context that piled up before it; a lease
returns when its connection drops, and the wake is offered again. A person's
deliveries go to every one of their connections; an ack from any retires them.
The database holds the same rows (unacked), so a reconnect, or a restart,
claims through the very same path.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from ..core.party import PartyView
from ..protocol import for_agent, roster_for

# characters of context text one wake carries at most (two of the longest messages): a deliver frame stays
# within what docs/protocol.md tells clients to accept; what does not fit comes with the next wake
MAX_CONTEXT = 400_000


class Sink(Protocol):
    """A connection as the inbox sees it."""

    prefetch: int
    leased: set[int]

    def push(self, frame: dict) -> None: ...


@dataclass(slots=True)
class Item:
    id: int
    wake: bool
    reason: str | None
    message: dict
    party: PartyView | None = None  # an agent's delivery: its conversation's party (roster, who is still there)


@dataclass
class Inbox:
    participant: str
    is_agent: bool
    items: dict[int, Item] = field(default_factory=dict)  # unacked, in id order
    holder: dict[int, Sink] = field(default_factory=dict)  # wake id -> the connection holding it
    bundle: dict[int, list[int]] = field(default_factory=dict)  # wake id -> context ids it carries
    sinks: list[Sink] = field(default_factory=list)
    gone: set[int] = field(default_factory=set)  # acked here, perhaps not yet committed: never re-add
    _gone_order: deque = field(default_factory=deque)
    # May this delivery go out now? (Is its recipient still in its workspace, with receive?) Asked when an
    # item arrives and again when it would be handed out: a membership lost meanwhile holds it back.
    allow: Callable[[Item], bool] | None = None

    def allows(self, item: Item) -> bool:
        return self.allow is None or self.allow(item)

    def add(self, items: list[Item]) -> None:
        fresh = [i for i in items if i.id not in self.items and i.id not in self.gone and self.allows(i)]
        if not fresh:
            return
        if self.items and fresh[0].id < next(reversed(self.items)):
            merged = {**self.items, **{i.id: i for i in fresh}}
            self.items = dict(sorted(merged.items()))
        else:
            self.items.update((i.id, i) for i in fresh)
        if not self.is_agent:
            for sink in self.sinks:
                for i in fresh:
                    sink.push(deliver_frame(i, []))
        else:
            self.offer()

    def attach(self, sink: Sink) -> None:
        self.sinks.append(sink)
        if self.is_agent:
            self.offer()
        else:
            for i in self.items.values():
                if self.allows(i):
                    sink.push(deliver_frame(i, []))

    def detach(self, sink: Sink) -> None:
        if sink in self.sinks:
            self.sinks.remove(sink)
        for wid in list(sink.leased):
            self.holder.pop(wid, None)
            self.bundle.pop(wid, None)
        sink.leased.clear()
        if self.is_agent:
            self.offer()

    def offer(self) -> None:
        """Hand unheld wakes to connections with room, oldest first."""
        if not self.is_agent or not self.sinks:
            return
        held_context = {c for ids in self.bundle.values() for c in ids}
        context: list[Item] = []
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

    def ack(self, ids: list[int]) -> list[int]:
        """Retire acked deliveries (and the context their wakes carried); return every id retired."""
        retired: list[int] = []
        for i in ids:
            if i not in self.items:
                continue
            retired.append(i)
            self.items.pop(i)
            self._forget(i)
            sink = self.holder.pop(i, None)
            if sink is not None:
                sink.leased.discard(i)
            for c in self.bundle.pop(i, []):
                if self.items.pop(c, None) is not None:
                    retired.append(c)
                    self._forget(c)
        if self.is_agent and retired:
            self.offer()
        return retired


    def _forget(self, i: int) -> None:
        self.gone.add(i)
        self._gone_order.append(i)
        if len(self._gone_order) > 100_000:
            self.gone.discard(self._gone_order.popleft())


def fit(context: list[Item]) -> tuple[list[Item], list[Item]]:
    """The context a wake carries (the oldest, up to MAX_CONTEXT characters of text, at least one) and the rest."""
    size = 0
    for n, c in enumerate(context):
        size += len(c.message.get("text") or "")
        if size > MAX_CONTEXT and n:
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
        if prev is not item.party and prev != item.party:
            frame["roster"] = roster_for(item.party, me)
            if sent is not None:
                sent[cid] = item.party
    return frame
