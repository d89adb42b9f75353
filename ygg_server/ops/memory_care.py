"""The background work that keeps agents' memory healthy (seed 003 §47-48), each `fn(conn, now) -> counts`, run
on its own schedule by `Workers` (the gateway's sweeper ticks it) and testable with any clock:

- `condense`: a long conversation (a topic of `CONDENSE_AT` messages or more) becomes one reusable memory for
  each agent that wrote in it: its title, how it opened and how it ended (extractive: no model). Once a topic.
- `decay`: a memory fades with time unless it is used: its strength is (1 + uses) halved every `HALF_LIFE`
  since it was last used; below `FLOOR` it is forgotten (a memory never used goes after two half-lives).
- `consolidate`: what a family learned (the agents of one owner, in one workspace) is kept once: the same memory
  held by two of them or more becomes one family memory (agent `family:<owner>`), uses added up.

`family` is the layer a turn adds (the family's memories, and each sibling's), before the bridge removes what
the fresh context already covers (agents/recall.py, `uncovered`). Never across workspaces: every statement here
is per workspace.
"""

from __future__ import annotations

import re
import sqlite3
import time
from dataclasses import dataclass, field
from typing import Awaitable, Callable

from ..protocol.ids import new_id
from ..store import loaders
from ..store.transactions import Tx, serialized

DAY = 86_400_000_000
HALF_LIFE = 30 * DAY
FLOOR = 0.25
CONDENSE_AT = 40
_WORD = re.compile(r"[^\W_]+")


def strength(uses: int, used_at: int, now: int, half_life: int = HALF_LIFE) -> float:
    return (1 + uses) * 0.5 ** (max(0, now - used_at) / half_life)


def decay(conn: sqlite3.Connection, now: int, half_life: int = HALF_LIFE, floor: float = FLOOR) -> dict:
    gone = [i for i, uses, used in conn.execute("SELECT id, uses, used_at FROM memories")
            if strength(uses, used, now, half_life) < floor]
    for k in range(0, len(gone), 500):
        part = gone[k:k + 500]
        conn.execute(f"DELETE FROM memories WHERE id IN ({','.join('?' * len(part))})", part)
    return {"forgotten": len(gone)}


def _key(text: str) -> str:
    return " ".join(sorted(set(w.lower() for w in _WORD.findall(text))))


def consolidate(conn: sqlite3.Connection, now: int) -> dict:
    rows = conn.execute("""SELECT m.id, m.workspace, m.agent, m.text, m.uses, m.used_at, a.owner FROM memories m
                           JOIN agents a ON a.id = m.agent""").fetchall()
    groups: dict[tuple[str, str, str], list[tuple]] = {}
    for r in rows:
        groups.setdefault((r[1], r[6], _key(r[3])), []).append(r)
    merged = 0
    for (ws, owner, _), same in groups.items():
        if len({r[2] for r in same}) < 2:
            continue
        family = "family:" + owner
        text = min((r[3] for r in same), key=len)
        uses, used = sum(r[4] for r in same), max(r[5] for r in same)
        held = conn.execute("SELECT id FROM memories WHERE workspace = ? AND agent = ? AND text = ?",
                            (ws, family, text)).fetchone()
        if held:
            conn.execute("UPDATE memories SET uses = uses + ?, used_at = ? WHERE id = ?", (uses, used, held[0]))
        else:
            conn.execute("""INSERT INTO memories (id, workspace, agent, text, source, created_at, used_at, uses)
                            VALUES (?,?,?,?,?,?,?,?)""", (new_id(), ws, family, text, "consolidated", now, used, uses))
        ids = [r[0] for r in same]
        conn.execute(f"DELETE FROM memories WHERE id IN ({','.join('?' * len(ids))})", ids)
        merged += len(ids)
    return {"merged": merged}


def condense(conn: sqlite3.Connection, now: int, at: int = CONDENSE_AT, state: dict | None = None) -> dict:
    """`state` keeps where the last run stopped (the highest message seq it saw): a run reads only the topics
    that grew since, by the messages_topic index, never every message again (the first run of a process reads
    them all once)."""
    state = {} if state is None else state
    after = state.get("seq", 0)
    top = conn.execute("SELECT max(seq) FROM messages").fetchone()[0] or 0
    grown = conn.execute("""SELECT DISTINCT topic, workspace FROM messages WHERE seq > ? AND seq <= ?
                            AND topic IS NOT NULL""", (after, top)).fetchall()
    made = 0
    for topic, ws in grown:
        n = conn.execute("SELECT count(*) FROM messages WHERE topic = ?", (topic,)).fetchone()[0]
        if n < at:
            continue
        source = "condensed:" + topic
        authors = [a for (a,) in conn.execute(
            "SELECT DISTINCT author FROM messages WHERE topic = ? AND author LIKE 'agent.%'", (topic,))]
        done = {a for (a,) in conn.execute("SELECT agent FROM memories WHERE source = ?", (source,))}
        if not set(authors) - done:
            continue
        first = conn.execute("SELECT text FROM messages WHERE topic = ? ORDER BY seq LIMIT 1", (topic,)).fetchone()[0]
        last = conn.execute("SELECT text FROM messages WHERE topic = ? ORDER BY seq DESC LIMIT 1", (topic,)).fetchone()[0]
        t = loaders.load_topic(conn, topic)
        title = (t.title if t is not None else None) or "untitled"
        text = (f"Conversation «{title}» ({n} messages): it opened with “{_cut(first)}” and ended with "
                f"“{_cut(last)}”.")
        for agent in sorted(set(authors) - done):
            conn.execute("""INSERT INTO memories (id, workspace, agent, text, source, created_at, used_at, uses)
                            VALUES (?,?,?,?,?,?,?,0)""", (new_id(), ws, agent, text, source, now, now))
            made += 1
    state["seq"] = top
    return {"condensed": made}


def _cut(text: str, n: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1].rstrip() + "…"


def family(conn: sqlite3.Connection, agent: str, workspace: str, limit: int = 20) -> list[dict]:
    """The family layer for `agent` in `workspace`: its family's consolidated memories and its siblings' (the
    other agents of its owner), the most used first."""
    owner = conn.execute("SELECT owner FROM agents WHERE id = ?", (agent,)).fetchone()[0]
    rows = conn.execute("""SELECT m.id, m.text, m.agent FROM memories m WHERE m.workspace = ? AND m.agent != ?
                           AND (m.agent = ? OR m.agent IN (SELECT id FROM agents WHERE owner = ?))
                           ORDER BY m.uses DESC, m.seq DESC LIMIT ?""",
                        (workspace, agent, "family:" + owner, owner, limit)).fetchall()
    return [{"id": i, "text": t, "from": "family" if a.startswith("family:") else "sibling"} for i, t, a in rows]


# --- the schedule ---

def _alone(conn: sqlite3.Connection, name: str, fn: Callable, now: int, state: dict | None = None) -> dict:
    """One job in one transaction, one node at a time (several nodes on PostgreSQL each have a schedule)."""
    with Tx(conn):
        serialized(conn, "memory-care:" + name)
        return fn(conn, now) if state is None else fn(conn, now, state=state)


@dataclass
class Job:
    name: str
    fn: Callable
    every: float  # seconds
    last: float = field(default=float("-inf"))
    state: dict | None = None  # what the job keeps between runs (condense: where it stopped)


JOBS = (("condense", condense, 600.0), ("decay", decay, 3600.0), ("consolidate", consolidate, 6 * 3600.0))


class Workers:
    """Each job on its own schedule: `tick` runs those due (by `monotonic`), each with the store's time (`clock`),
    one at a time on `run` (the gateway's management connection); one that fails is logged and tried next time."""

    def __init__(self, run: Callable[..., Awaitable], clock: Callable[[], int], jobs=JOBS,
                 monotonic: Callable[[], float] = time.monotonic):
        self.run, self.clock, self.monotonic = run, clock, monotonic
        self.jobs = [Job(n, f, e, state={} if f is condense else None) for n, f, e in jobs]
        self.done: dict[str, dict] = {}

    async def tick(self) -> list[str]:
        ran = []
        for job in self.jobs:
            now = self.monotonic()
            if now - job.last < job.every:
                continue
            job.last = now
            try:
                self.done[job.name] = await self.run(_alone, job.name, job.fn, self.clock(), job.state)
                ran.append(job.name)
            except Exception:
                import logging

                logging.getLogger("ygg.memory").exception("memory job %s failed", job.name)
        return ran
