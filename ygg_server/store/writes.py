"""A Decision's rows, written through either store's sqlite3-shaped connection: SQLite's writer writes each
batch so (`executemany`); the management operations write their decisions so on either store (a funding,
`ops/admin.fund`, through `postgres.SyncConnection` on PostgreSQL, whose writer has its own one statement).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

import msgspec

from ..core import Decision, next_due
from .rows import Stored, encode_message, encode_topic, party_json, waits_funds
from .transactions import row_lock
from .writeset import WriteSet


def apply(conn: sqlite3.Connection, d: Decision, now: int, workspace: str,
          org: str | None = None, month: str | None = None) -> list[Stored]:
    """Write one decision; return its delivery rows. The caller holds the transaction."""
    return apply_many(conn, [(d, now, org, month)])


def apply_many(conn: sqlite3.Connection, decisions: list[tuple[Decision, int, str | None, str | None]]) -> list[Stored]:
    """Write decisions (each with its time, org and month), in order, as if one by one; return their
    delivery rows, in id order. The caller holds the transaction."""
    return write(conn, WriteSet.of(decisions))


def write(conn, w: WriteSet) -> list[Stored]:
    """Write a batch's rows (store/writeset.py), each kind in one `executemany`; return the delivery rows, in id
    order. A notice's message (a derived id) already stored by an earlier batch is not stored again."""
    many = conn.executemany if isinstance(conn, sqlite3.Connection) else (
        lambda sql, rows: [conn.execute(sql, r) for r in rows])
    if w.conversations:
        many(
            """INSERT INTO conversations (id, workspace, kind, name, members, created_at, party) VALUES (?,?,?,?,?,?,?)
               ON CONFLICT (id) DO UPDATE SET members = excluded.members, party = excluded.party""",
            [(c.id, c.workspace, c.kind, c.name, msgspec.json.encode(sorted(c.members)).decode(), now, party_json(c))
             for c, now in w.conversations.values()],
        )
    if w.topics:
        many(
            """INSERT INTO topics (id, workspace, conversation, opener, status, next_due, state, created_at, updated_at,
                                   waits_funds)
               VALUES (?,?,?,?,?,?,?,?,?,?)
               ON CONFLICT (id) DO UPDATE SET status = excluded.status, next_due = excluded.next_due,
               state = excluded.state, updated_at = excluded.updated_at, waits_funds = excluded.waits_funds""",
            [(t.id, t.workspace, t.conversation, t.opener, t.status, next_due(t), encode_topic(t), t.created_at, now,
              waits_funds(t)) for t, now in w.topics.values()],
        )
    msgs = [m for m in w.messages
            if m.notice is None or not conn.execute("SELECT 1 FROM messages WHERE id = ?", (m.id,)).fetchone()]
    out: list[Stored] = []
    if msgs:
        seqs = _insert(conn, """INSERT INTO messages (id, workspace, conversation, topic, author, type, text, body,
                                created_at) VALUES (?,?,?,?,?,?,?,?,?)""",
                       [(m.id, m.workspace, m.conversation, m.topic, m.author, m.type, m.text, encode_message(m),
                         m.created_at) for m in msgs])
        seq = {id(m): s for m, s in zip(msgs, seqs)}
        dl = [(m, x) for m, x in w.deliveries if id(m) in seq]
        if dl:
            ids = _insert(conn, "INSERT INTO deliveries (message, message_seq, recipient, wake, reason) VALUES (?,?,?,?,?)",
                          [(m.id, seq[id(m)], x.recipient, int(x.wake), x.reason) for m, x in dl])
            out = [Stored(i, x.recipient, x.wake, x.reason, m) for i, (m, x) in zip(ids, dl)]
    if w.deltas:
        many(
            """INSERT INTO wallets (workspace, account, balance) VALUES (?,?,?)
               ON CONFLICT (workspace, account) DO UPDATE SET balance = balance + excluded.balance""",
            [(*k, v) for k, v in w.deltas.items()],
        )
        many("INSERT INTO ledger (workspace, account, delta, cause, created_at) VALUES (?,?,?,?,?)",
             [(e.workspace, e.account, e.delta, e.cause, now) for e, now in w.ledger])
    on = [k for k, v in w.flags.items() if v]
    off = [k for k, v in w.flags.items() if not v]
    if on:
        many("INSERT OR IGNORE INTO flags (name, agent, workspace) VALUES (?,?,?)", on)
    if off:
        many("DELETE FROM flags WHERE name = ? AND agent = ? AND workspace = ?", off)
    if w.usage:
        many(
            """INSERT INTO usage (org, month, count) VALUES (?,?,?)
               ON CONFLICT (org, month) DO UPDATE SET count = count + excluded.count""",
            [(*k, v) for k, v in w.usage.items()],
        )
    return out


# an edit or a delete (core/revise.py): the message's text and body now, and the older text kept as a version
# (a delete takes the older texts away too); then its context deliveries (`write_revisions`)
REVISE_MESSAGE = "UPDATE messages SET text = ?, body = ? WHERE seq = ?"
KEEP_VERSION = "INSERT INTO message_versions (message, version, text, created_at) VALUES (?,?,?,?)"
DROP_VERSIONS = "DELETE FROM message_versions WHERE message = ?"
REVISION_DELIVERY = "INSERT INTO deliveries (message, message_seq, recipient, wake, reason) VALUES (?,?,?,?,?)"


DROP_FILES = "DELETE FROM files WHERE message = ?"


def revision_rows(revisions) -> list[tuple[str, tuple]]:
    """The statements (SQL, parameters) of a batch's edits and deletes, their deliveries apart."""
    out: list[tuple[str, tuple]] = []
    for r, seq, _ in revisions:
        m, before = r.message, r.before
        out.append((REVISE_MESSAGE, (m.text, encode_message(m), seq)))
        if m.deleted:
            out.append((DROP_VERSIONS, (m.id,)))
            if before.files:  # its files go with its text (their bytes, once no upload names them: ops.files.sweep)
                out.append((DROP_FILES, (m.id,)))
        elif m.version != before.version:  # (a card acted on in place keeps its text: no version)
            out.append((KEEP_VERSION, (m.id, before.version, before.text, before.edited_at or before.created_at)))
    return out


def write_revisions(conn: sqlite3.Connection, revisions) -> list[Stored]:
    """A batch's edits and deletes on SQLite; return their delivery rows (context, never a wake)."""
    for sql, params in revision_rows(revisions):
        conn.execute(sql, params)
    dl = [(r.message, seq, x) for r, seq, _ in revisions for x in r.deliveries]
    if not dl:
        return []
    ids = _insert(conn, REVISION_DELIVERY, [(m.id, seq, x.recipient, int(x.wake), x.reason) for m, seq, x in dl])
    return [Stored(i, x.recipient, x.wake, x.reason, m) for i, (m, _, x) in zip(ids, dl)]


def _insert(conn, sql: str, rows: list[tuple]) -> Sequence[int]:
    """Insert `rows` into a table with an AUTOINCREMENT key; return their keys, in order."""
    if isinstance(conn, sqlite3.Connection):
        conn.executemany(sql, rows)
        # one writer holding the write lock: the rows just inserted have consecutive keys
        last = conn.execute("SELECT last_insert_rowid()").fetchone()[0]
        return range(last - len(rows) + 1, last + 1)
    return [conn.execute(sql, r).lastrowid for r in rows]  # the admin CLI on PostgreSQL (postgres.SyncConnection)


def insert_session(conn, row: tuple, key: str | None = None) -> None:
    """With `key` (the id of the API key an agent signed in with), the row is written only while that key is still
    the agent's, unrevoked: a key rotated or revoked after it was checked opens no session (the gateway finds none as
    it attaches the connection). PostgreSQL: the agent's row is locked (FOR SHARE), so a rotation not yet committed
    is waited for and judged after."""
    if len(row) == 8:  # a person's (ops.accounts.session_row): its device, address, last use and end too
        conn.execute("""INSERT INTO sessions (token_hash, participant, expires_at, created_at, device, address, last_seen,
                        ends_at) VALUES (?,?,?,?,?,?,?,?)""", row)
    elif key is None:
        conn.execute("INSERT INTO sessions (token_hash, participant, expires_at, created_at) VALUES (?,?,?,?)", row)
    else:
        conn.execute("INSERT INTO sessions (token_hash, participant, expires_at, created_at) SELECT ?,?,?,? "
                     "FROM agents WHERE id = ? AND key_id = ? AND revoked = 0" + row_lock(conn),
                     (*row, row[1], key))


def write_memory(conn, op: str, args: tuple) -> None:
    """An agent's memory kept (`save`: the row of ops.memory.to_save, then how many it keeps at most: the least used
    go first beyond that; not again if that text is kept already) or marked used (`used`: now, then the ids): flat,
    so that each argument crosses to a writer process as itself (writer/process.py's `Arg`). Written by the
    writer (its `memory` command), so that on SQLite a turn's recall makes it drop no cache and the gateway rescan
    no connection, as a management connection's commit did."""
    if op == "save":
        mid, ws, agent, text, source, now, keep = args
        conn.execute("""INSERT INTO memories (id, workspace, agent, text, source, created_at, used_at, uses)
                        SELECT ?,?,?,?,?,?,?,0 WHERE NOT EXISTS
                        (SELECT 1 FROM memories WHERE workspace = ? AND agent = ? AND text = ?)""",
                     (mid, ws, agent, text, source, now, now, ws, agent, text))
        conn.execute("""DELETE FROM memories WHERE workspace = ? AND agent = ?
                        AND (SELECT count(*) FROM memories WHERE workspace = ? AND agent = ?) > ? AND seq NOT IN
                        (SELECT seq FROM memories WHERE workspace = ? AND agent = ?
                         ORDER BY uses DESC, used_at DESC, seq DESC LIMIT ?)""",
                     (ws, agent, ws, agent, keep, ws, agent, keep))
    elif op == "used":
        now, *ids = args
        conn.execute(f"UPDATE memories SET uses = uses + 1, used_at = ? WHERE id IN ({','.join('?' * len(ids))})",
                     (now, *ids))
    else:
        raise ValueError(f"memory: no such write {op!r}")


# artifacts (core/artifacts.py): a version written with the message that posted it, a comment with its own
NEW_ARTIFACT = ("INSERT INTO artifacts (id, workspace, conversation, title, kind, language, version, author, created_at, "
                "updated_at) VALUES (?,?,?,?,?,?,?,?,?,?)")
MOVE_ARTIFACT = "UPDATE artifacts SET title = ?, version = ?, updated_at = ? WHERE id = ?"
KEEP_ARTIFACT_VERSION = ("INSERT INTO artifact_versions (artifact, version, title, body, author, message, created_at) "
                         "VALUES (?,?,?,?,?,?,?)")
KEEP_COMMENT = ("INSERT INTO artifact_comments (artifact, version, author, text, message, created_at) "
                "VALUES (?,?,?,?,?,?)")


def artifact_rows(artifacts) -> list[tuple[str, tuple]]:
    """The statements of a batch's artifact versions and comments: (action, Head after it, author, message id, now,
    comment text)."""
    out: list[tuple[str, tuple]] = []
    for action, h, author, message, now, comment in artifacts:
        if action == "commented":
            out.append((KEEP_COMMENT, (h.id, h.version, author, comment, message, now)))
            continue
        if action == "created":
            out.append((NEW_ARTIFACT, (h.id, h.workspace, h.conversation, h.title, h.kind, h.language, h.version,
                                       author, now, now)))
        else:
            out.append((MOVE_ARTIFACT, (h.title, h.version, now, h.id)))
        out.append((KEEP_ARTIFACT_VERSION, (h.id, h.version, h.title, h.body, author, message, now)))
    return out


# files (core/files.py): an upload marked as sent with its message, in the message's transaction
FILE_SENT = "UPDATE files SET message = ? WHERE id = ? AND message IS NULL"


def file_rows(files) -> list[tuple[str, tuple]]:
    """The statements of a batch's sent files: (message id, file id)."""
    return [(FILE_SENT, (mid, fid)) for mid, fid in files]
