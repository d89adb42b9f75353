"""A batch's decisions as the rows they write, each row once (pure).

Rows that several decisions change are written once: a conversation or a topic in its last state,
a wallet or a month's usage by the sum of the deltas, a flag as last set. Messages, deliveries and
ledger entries keep the decisions' order; a message decided twice (a notice's derived id) once.
Both stores write a WriteSet: SQLite in a few `executemany`, PostgreSQL in one statement.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core import Conversation, Decision, Delivery, Entry, Message, Topic
from .rows import wallet_key


@dataclass(slots=True)
class WriteSet:
    conversations: dict[str, tuple[Conversation, int]] = field(default_factory=dict)  # id -> (last state, time)
    topics: dict[str, tuple[Topic, int]] = field(default_factory=dict)
    messages: list[Message] = field(default_factory=list)
    deliveries: list[tuple[Message, Delivery]] = field(default_factory=list)
    ledger: list[tuple[Entry, int]] = field(default_factory=list)
    deltas: dict[tuple[str, str], int] = field(default_factory=dict)  # wallet_key -> credits moved
    usage: dict[tuple[str, str], int] = field(default_factory=dict)  # (organization, month) -> messages counted
    flags: dict[tuple[str, str, str], bool] = field(default_factory=dict)  # (flag, agent, workspace) -> on

    @classmethod
    def of(cls, decisions: list[tuple[Decision, int, str | None, str | None]]) -> "WriteSet":
        w = cls()
        seen: set[str] = set()
        for d, now, org, month in decisions:
            for c in (d.conversation, d.side):
                if c is not None:
                    w.conversations[c.id] = (c, now)
            for t in d.topics:
                w.topics[t.id] = (t, now)
            for r in d.routed:
                m = r.message
                if m.id in seen:
                    continue
                seen.add(m.id)
                w.messages.append(m)
                w.deliveries += [(m, x) for x in r.deliveries]
            for e in d.ledger:
                key = wallet_key(e.workspace, e.account)
                w.deltas[key] = w.deltas.get(key, 0) + e.delta
                w.ledger.append((e, now))
            for f in d.flags:
                w.flags[f.key] = f.on
            if d.usage and org is not None and month is not None:
                w.usage[(org, month)] = w.usage.get((org, month), 0) + d.usage
        return w
