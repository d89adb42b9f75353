"""What a database's backends are doing, sampled (the benchmark's evidence on PostgreSQL).

`WaitSampler(url)` reads `pg_stat_activity` for that database every `interval` seconds, in a
thread with a connection of its own, and counts each backend's state: running (active, no wait
event), waiting for a lock (`Lock:transactionid`, `Lock:tuple`: a row another transaction holds),
waiting on an LWLock or I/O (`IO:WALSync` is a commit's flush), or idle in a transaction (it holds
its locks while the node does its Python work). Waits are also counted by statement, named by
`label`, so a hot row shows as the statement that queues on it.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from urllib.parse import urlsplit

# the first words of each statement the nodes run, and what to call it
LABELS = (
    ("WITH v AS (SELECT value FROM meta", "batch: lock and load"),
    ("WITH\ncg AS (UPDATE conversations", "batch: write"),
    ("WITH want AS", "claim"),
    ("WITH a AS (SELECT d.id FROM deliveries", "ack"),
    ("UPDATE deliveries u SET lease_until", "lease renewal"),
    ("UPDATE deliveries u SET leased_by = NULL", "lease release"),
    ("SELECT workspace, balance FROM wallets", "batch: pool lock"),
    ("SELECT opener, count(*)", "batch: open topics"),
    ("INSERT INTO usage", "batch: usage row"),
    ("COMMIT", "commit"),
)


def label(query: str | None) -> str:
    q = (query or "").lstrip()
    for head, name in LABELS:
        if q.startswith(head):
            return name
    return " ".join(q.split())[:40] or "?"


class WaitSampler:
    def __init__(self, url: str, interval: float = 0.05):
        from ..store import postgres as pg

        self.dsn = pg.parse_dsn(url)[0]
        self.db = urlsplit(url).path.lstrip("/")
        self.interval = interval
        self.states: Counter = Counter()  # backend-samples by state / wait event
        self.waits: Counter = Counter()  # backend-samples waiting for a lock, by statement
        self.samples = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> "WaitSampler":
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), name="pg-waits", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> "WaitSampler":
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
        return self

    async def _run(self) -> None:
        import asyncpg

        conn = await asyncpg.connect(self.dsn)
        try:
            while not self._stop.is_set():
                rows = await conn.fetch(
                    """SELECT state, wait_event_type, wait_event, query FROM pg_stat_activity
                       WHERE datname = $1 AND pid != pg_backend_pid() AND backend_type = 'client backend'""", self.db)
                self.samples += 1
                for state, wtype, wevent, query in rows:
                    if state == "idle":
                        continue
                    if state and state.startswith("idle in transaction"):
                        self.states["idle in transaction"] += 1
                    elif wtype is None:
                        self.states["running"] += 1
                    else:
                        self.states[f"{wtype}:{wevent}"] += 1
                        if wtype == "Lock":
                            self.waits[label(query)] += 1
                await asyncio.sleep(self.interval)
        finally:
            await conn.close()

    def busy(self, key: str) -> float:
        """Backends in that state, on average over the samples (1.0: one backend all the time)."""
        return self.states[key] / max(1, self.samples)

    def summary(self, top: int = 6) -> dict:
        n = max(1, self.samples)
        lock = sum(v for k, v in self.states.items() if k.startswith("Lock:"))
        return {
            "samples": self.samples,
            "running": round(self.states["running"] / n, 3),
            "lock_waits": round(lock / n, 3),
            "idle_in_transaction": round(self.states["idle in transaction"] / n, 3),
            "other_waits": {k: round(v / n, 3) for k, v in self.states.most_common(top)
                            if k not in ("running", "idle in transaction") and not k.startswith("Lock:")},
            "lock_waits_by_statement": {k: round(v / n, 3) for k, v in self.waits.most_common(top)},
        }
