"""A Decision's rows, written through either store's sqlite3-shaped connection: SQLite's writer writes each
batch so (`executemany`); the management operations write their decisions so on either store (a funding,
`ops/admin.fund`, through `postgres.SyncConnection` on PostgreSQL, whose writer has its own one statement).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

import msgspec

from ..core import Conversation, Decision, Message, Topic, next_due
from .rows import Stored, encode_message, encode_topic, party_json, waits_funds, wallet_key


def apply(conn: sqlite3.Connection, d: Decision, now: int, workspace: str,
          org: str | None = None, month: str | None = None) -> list[Stored]:
    """Write one decision; return its delivery rows. The caller holds the transaction."""
    return apply_many(conn, [(d, now, org, month)])


def apply_many(conn: sqlite3.Connection, decisions: list[tuple[Decision, int, str | None, str | None]]) -> list[Stored]:
    """Write decisions (each with its time, org and month), in order, as if one by one; return their
    delivery rows, in id order. The caller holds the transaction.

    Rows that several decisions change are written once: a conversation or a topic in its last state,
    a wallet or a month's usage by the sum of the deltas, a flag as last set. Messages, deliveries and
    ledger entries are inserted in the decisions' order, each kind in one `executemany`."""
    convs: dict[str, tuple[Conversation, int]] = {}
    topics: dict[str, tuple[Topic, int]] = {}
    msgs: list[Message] = []
    seen: set[str] = set()
    dl: list[tuple[Message, object]] = []
    ledger: list[tuple] = []
    deltas: dict[tuple[str, str], int] = {}
    usage: dict[tuple[str, str], int] = {}
    flags: dict[tuple[str, str], bool] = {}
    for d, now, org, month in decisions:
        if d.conversation is not None:
            convs[d.conversation.id] = (d.conversation, now)
        for t in d.topics:
            topics[t.id] = (t, now)
        for r in d.routed:
            m = r.message
            if m.id in seen:
                continue  # a notice decided twice (same derived id): one row, one set of deliveries
            seen.add(m.id)
            if m.notice is not None and conn.execute("SELECT 1 FROM messages WHERE id = ?", (m.id,)).fetchone():
                continue  # ... also when the first was written by an earlier batch (only notices have derived ids)
            msgs.append(m)
            dl += [(m, x) for x in r.deliveries]
        for e in d.ledger:
            key = wallet_key(e.workspace, e.account)
            deltas[key] = deltas.get(key, 0) + e.delta
            ledger.append((e.workspace, e.account, e.delta, e.cause, now))
        for f in d.flags:
            flags[(f.name, f.agent)] = f.on
        if d.usage and org is not None:
            usage[(org, month)] = usage.get((org, month), 0) + d.usage
    many = conn.executemany if isinstance(conn, sqlite3.Connection) else (
        lambda sql, rows: [conn.execute(sql, r) for r in rows])
    if convs:
        many(
            """INSERT INTO conversations (id, workspace, kind, name, members, created_at, party) VALUES (?,?,?,?,?,?,?)
               ON CONFLICT (id) DO UPDATE SET members = excluded.members, party = excluded.party""",
            [(c.id, c.workspace, c.kind, c.name, msgspec.json.encode(sorted(c.members)).decode(), now, party_json(c))
             for c, now in convs.values()],
        )
    if topics:
        many(
            """INSERT INTO topics (id, workspace, conversation, opener, status, next_due, state, created_at, updated_at,
                                   waits_funds)
               VALUES (?,?,?,?,?,?,?,?,?,?)
               ON CONFLICT (id) DO UPDATE SET status = excluded.status, next_due = excluded.next_due,
               state = excluded.state, updated_at = excluded.updated_at, waits_funds = excluded.waits_funds""",
            [(t.id, t.workspace, t.conversation, t.opener, t.status, next_due(t), encode_topic(t), t.created_at, now,
              waits_funds(t)) for t, now in topics.values()],
        )
    out: list[Stored] = []
    if msgs:
        seqs = _insert(conn, """INSERT INTO messages (id, workspace, conversation, topic, author, type, text, body,
                                created_at) VALUES (?,?,?,?,?,?,?,?,?)""",
                       [(m.id, m.workspace, m.conversation, m.topic, m.author, m.type, m.text, encode_message(m),
                         m.created_at) for m in msgs])
        seq = {id(m): s for m, s in zip(msgs, seqs)}
    if dl:
        ids = _insert(conn, "INSERT INTO deliveries (message, message_seq, recipient, wake, reason) VALUES (?,?,?,?,?)",
                      [(m.id, seq[id(m)], x.recipient, int(x.wake), x.reason) for m, x in dl])
        out = [Stored(i, x.recipient, x.wake, x.reason, m) for i, (m, x) in zip(ids, dl)]
    if deltas:
        many(
            """INSERT INTO wallets (workspace, account, balance) VALUES (?,?,?)
               ON CONFLICT (workspace, account) DO UPDATE SET balance = balance + excluded.balance""",
            [(*k, v) for k, v in deltas.items()],
        )
        many(
            "INSERT INTO ledger (workspace, account, delta, cause, created_at) VALUES (?,?,?,?,?)", ledger)
    on = [k for k, v in flags.items() if v]
    off = [k for k, v in flags.items() if not v]
    if on:
        many("INSERT OR IGNORE INTO flags (workspace, name, agent) VALUES ('*',?,?)", on)
    if off:
        many("DELETE FROM flags WHERE workspace = '*' AND name = ? AND agent = ?", off)
    if usage:
        many(
            """INSERT INTO usage (org, month, count) VALUES (?,?,?)
               ON CONFLICT (org, month) DO UPDATE SET count = count + excluded.count""",
            [(*k, v) for k, v in usage.items()],
        )
    return out


def _insert(conn, sql: str, rows: list[tuple]) -> Sequence[int]:
    """Insert `rows` into a table with an AUTOINCREMENT key; return their keys, in order."""
    if isinstance(conn, sqlite3.Connection):
        conn.executemany(sql, rows)
        # one writer holding the write lock: the rows just inserted have consecutive keys
        last = conn.execute("SELECT last_insert_rowid()").fetchone()[0]
        return range(last - len(rows) + 1, last + 1)
    return [conn.execute(sql, r).lastrowid for r in rows]  # the admin CLI on PostgreSQL (postgres.SyncConnection)
