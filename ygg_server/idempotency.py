"""How long a send's `client_id` is remembered, and forgetting (docs/protocol.md, "Sending": `client_id`).

A send with a `client_id` keeps its answer (its `Sent` result, `protocol.results.keep`) in `idempotency`, so
the same send again (a reconnect, the TUI's outbox, the agent bridge's journal replayed after a restart) is
answered from there and stored once. The TUI and the bridge put a `client_id` on every send, so the table would grow with every
message for good: rows older than WINDOW are deleted by a sweep, a small chunk at a time, oldest first, run by
the writer inside its batches (SQLite: `SqliteStore.write`) or beside them by one node at a time (PostgreSQL:
`PgStore._sweep`, on the pool).
"""

from __future__ import annotations

import msgspec

from .protocol import results
from .store import loaders

# A week: the bridge replays its journal with the same client_ids however long it was down, so one stopped
# over a long weekend (or a laptop closed for days) must still find its sends stored; a resend later than a
# week after the first try is stored again. The cost is one reply per message sent in the week.
WINDOW_US = 7 * 24 * 3600 * 1_000_000
CHUNK = 500  # rows per sweep: 2-3 ms of the SQLite writer's time (1.2 kB answers)
AGAIN_US = 50_000  # between chunks while older rows remain: up to 10,000 rows a second, under 5% of the writer
EVERY_US = 60 * 1_000_000  # between sweeps once none remain


def next_sweep(now: int, gone: int) -> int:
    """When to sweep again, after one at `now` that deleted `gone` rows (a full chunk: more may be waiting)."""
    return now + (AGAIN_US if gone >= CHUNK else EVERY_US)


def sweep_sqlite(conn, now: int, window: int = WINDOW_US) -> int:
    """Delete the rows written before `now - window` among the CHUNK written first (by rowid: the order they were
    written in, so no index on created_at is needed, and never more than CHUNK rows are read); how many went."""
    return conn.execute(
        "DELETE FROM idempotency WHERE rowid IN (SELECT rowid FROM idempotency ORDER BY rowid LIMIT ?) "
        "AND created_at < ?", (CHUNK, now - window)).rowcount


# PostgreSQL: the CHUNK oldest rows before the cutoff, found by the created_at index (PostgreSQL migration 8), and skipped
# when another transaction holds them; `$1` the cutoff. Run under SWEEP_LOCK, so one node sweeps at a time.
SWEEP_PG = """DELETE FROM idempotency WHERE ctid = ANY(ARRAY(
    SELECT ctid FROM idempotency WHERE created_at < $1 ORDER BY created_at LIMIT %d FOR UPDATE SKIP LOCKED))""" % CHUNK
SWEEP_LOCK = "SELECT pg_try_advisory_xact_lock(hashtextextended('idempotency-sweep', 0))"


def forget_workspace(conn, ws: str) -> None:
    """Delete the stored answers that replay messages of workspace `ws` (called as it is deleted, before its
    messages): they hold the messages' text, and the same client_id would be answered with them. They are
    the rows of the messages' authors (the key's first part) whose message is in `ws`."""
    authors = [a for (a,) in conn.execute(f"SELECT DISTINCT author FROM messages WHERE {loaders.IN_WORKSPACE}", (ws,))
               .fetchall()]
    for author in authors:
        rows = conn.execute("SELECT client_id, reply FROM idempotency WHERE participant = ?", (author,)).fetchall()
        for cid in [cid for cid, reply in rows if _workspace(reply) == ws]:
            conn.execute("DELETE FROM idempotency WHERE participant = ? AND client_id = ?", (author, cid))


def _workspace(kept: bytes) -> str | None:
    """The workspace of the message a kept answer replays: a `Sent` (`results.keep`), or in a row written before
    answers were kept typed, the `sent` reply's JSON."""
    sent = results.kept(kept)
    if sent is not None:
        return sent.message.workspace
    reply = msgspec.json.decode(bytes(kept))
    return reply.get("message", {}).get("workspace") if isinstance(reply, dict) else None
