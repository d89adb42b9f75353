"""The one fold of a Decision into in-memory state.

The writer's live state (SQLite: kept between batches; PostgreSQL: one batch's snapshot), the core
tests' world and the benchmarks all keep the same things and move them the same way: each decision
is folded in at once, so the next one is judged after it. A decision only touches rows its input
held (the post's topic and conversation, the author's wallet and the workspace's pool, a funding's
account and paused topics, a timer's topic), so the fold needs nothing it was not given; what a
state does not hold (a cache that never loaded a row) it leaves alone.
"""

from __future__ import annotations

from .decision import Decision
from .lifecycle import holds_slot
from .model import Conversation, Topic
from .vocabulary import POOL


class LiveState:
    """Topics, conversations, balances, open-topic counts, flags and a month's usage, as decisions leave them."""

    __slots__ = ("topics", "conversations", "wallets", "pools", "opened", "flags", "usage")

    def __init__(self) -> None:
        self.topics: dict[str, Topic] = {}
        self.conversations: dict[str, dict[str, Conversation]] = {}  # workspace -> id -> conversation
        self.wallets: dict[tuple[str, str], int | None] = {}  # (workspace, agent) -> its wallet there (None: none)
        self.pools: dict[str, int | None] = {}  # workspace -> its pool
        self.opened: dict[str, int] = {}  # agent -> open topics it opened (for the agents counted)
        self.flags: set[tuple[str, str, str]] | None = set()  # (flag, agent, workspace) marks in force; None: not loaded
        self.usage: dict[tuple[str, str], int] = {}  # (organization, month) -> messages counted

    def balance(self, workspace: str, account: str) -> int | None:
        return self.pools.get(workspace) if account == POOL else self.wallets.get((workspace, account))

    def holds_balance(self, workspace: str, account: str) -> bool:
        return workspace in self.pools if account == POOL else (workspace, account) in self.wallets

    def fold(self, d: Decision, org: str | None = None, month: str | None = None) -> None:
        """Move the state by one decision; `org` and `month` count its usage against a plan (None: not counted)."""
        topics, opened = self.topics, self.opened
        for t in d.topics:
            if t.opener in opened:
                before = topics.get(t.id)
                was_open = before is not None and holds_slot(before)
                if was_open != holds_slot(t):
                    opened[t.opener] += -1 if was_open else 1
            topics[t.id] = t
        for c in (d.conversation, d.side):
            if c is not None:
                self.conversations.setdefault(c.workspace, {})[c.id] = c
        for e in d.ledger:
            held = self.pools if e.account == POOL else self.wallets
            key = e.workspace if e.account == POOL else (e.workspace, e.account)
            if key in held:
                held[key] = (held[key] or 0) + e.delta
        if d.flags and self.flags is not None:
            for f in d.flags:
                (self.flags.add if f.on else self.flags.discard)(f.key)
        if d.usage and org is not None and month is not None:
            key = (org, month)
            self.usage[key] = self.usage.get(key, 0) + d.usage
