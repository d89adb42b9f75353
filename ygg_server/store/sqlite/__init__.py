"""SQLite, the embedded store: WAL, one writer connection, readers beside it.

What only SQLite has: its connection and pragmas, WAL checkpoints on a thread of their own, its
migrations (PRAGMA user_version), the FTS5 search index fed in chunks, and acks in one statement.
Everything here is synchronous and takes a connection: the writer calls it from its writer thread,
the admin CLI from the command line, queries from a reader thread. What both stores share is beside
this package: `rows.py` (codecs), `loaders.py` (reads), `writes.py` (a Decision's rows),
`transactions.py`, `schema/`.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path

import msgspec

from ..loaders import IN_WORKSPACE
from .. import schema


def db_path(data_dir: str | os.PathLike) -> Path:
    return Path(data_dir) / "ygg.sqlite3"


def private(path: str | os.PathLike) -> None:
    """The data directory 0700 and the database's files 0600 (docs/security.md: at rest), made so or made so now.

    The database file is made before SQLite opens it: SQLite gives its -wal and -shm files the database's mode."""
    path = Path(path)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if path.parent.stat().st_uid == os.geteuid():
        path.parent.chmod(0o700)
    if not path.exists():  # (never open and close a database this process may hold open: closing any descriptor
        try:               # of a file drops every POSIX lock the process holds on it, SQLite's too, and corrupts it)
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600))
        except FileExistsError:
            pass
    for f in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        try:
            f.chmod(0o600)
        except FileNotFoundError:
            pass


def connect(path: str | os.PathLike) -> sqlite3.Connection:
    """A connection in autocommit mode; writers open transactions with BEGIN IMMEDIATE."""
    if str(path) != ":memory:":
        private(path)
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")  # durable across a killed process; see docs/architecture.md
    conn.execute("PRAGMA busy_timeout=30000")
    # pages kept in memory: up to 32 MiB (the default, 2 MiB, is less than the indexes' working set; ids are
    # random, so each message's row lands on a random page of messages.id's index; docs/performance.md)
    conn.execute("PRAGMA cache_size=-32768")
    conn.execute("PRAGMA foreign_keys=OFF")
    try:
        migrate(conn)
    except BaseException:
        conn.close()
        raise
    return conn


class Checkpointer:
    """Copies the WAL back into the database on a thread of its own, so the writer's COMMIT never does.

    SQLite checkpoints inside the COMMIT that crosses `wal_autocheckpoint` pages (copying them and, with
    synchronous=NORMAL, an fsync: milliseconds, now and then, in the commit path of whoever is waiting
    for `sent`). Here the writer turns that off and this thread runs a PASSIVE checkpoint (it never
    blocks the writer or a reader) whenever the WAL grew, every `every` s; sqlite3 lets go of the GIL
    meanwhile. Durability is unchanged: a commit is in the WAL either way.
    """

    def __init__(self, path, writer: sqlite3.Connection, every: float = 0.2):
        writer.execute("PRAGMA wal_autocheckpoint=0")
        self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30)
        self._every = every
        self.last: tuple[int, int, int] | None = None  # (busy, WAL pages, pages copied back) of the last round
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ygg-checkpoint", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.wait(self._every):
            self.checkpoint()

    def checkpoint(self) -> tuple[int, int, int] | None:
        try:
            self.last = self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.Error:  # busy or closing: the next round tries again
            return None
        return self.last

    def stop(self) -> None:
        self._done.set()
        self._thread.join(timeout=10)
        self.checkpoint()
        self._conn.close()


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the database to the latest schema version (store/schema: a new one made as described, an older
    one migrated forward, after a copy of it is kept beside it: `backup.before_migration`), in one transaction;
    return its version. A newer one is refused (`schema.NewerSchema`), left as it is."""
    (version,) = conn.execute("PRAGMA user_version").fetchone()
    schema.refuse_newer(version, file_of(conn))
    if version >= schema.latest():
        return version
    if version > 0:
        from .backup import before_migration

        before_migration(conn, version)
    conn.execute("BEGIN IMMEDIATE")
    try:
        (version,) = conn.execute("PRAGMA user_version").fetchone()
        for version, statements in schema.pending(schema.SQLITE, version):
            for sql in statements:
                for stmt in _statements(sql):
                    conn.execute(stmt)
            conn.execute(f"PRAGMA user_version={version}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return version


def file_of(conn: sqlite3.Connection) -> str:
    """The file of a connection's main database ("" in memory)."""
    return next((row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main"), "")


def _statements(sql: str) -> list[str]:
    """Split a migration into statements, keeping trigger bodies whole (the old steps are scripts)."""
    out, buf = [], []
    for line in sql.strip().splitlines():
        buf.append(line)
        joined = "\n".join(buf).strip()
        if joined.endswith(";") and sqlite3.complete_statement(joined):
            out.append(joined)
            buf = []
    if "\n".join(buf).strip():
        out.append("\n".join(buf))
    return out


# --- search: the FTS5 index is fed in chunks, and search reads what it does not hold yet ---

def index_messages(conn: sqlite3.Connection) -> int:
    """Index the messages above the search index's watermark (meta fts_seq) and move it past them, in the
    caller's transaction, so the index and its watermark move together; return how many were indexed."""
    (done,) = conn.execute("SELECT value FROM meta WHERE key = 'fts_seq'").fetchone()
    (top,) = conn.execute("SELECT coalesce(max(seq), 0) FROM messages").fetchone()
    if top <= done:
        return 0
    n = conn.execute("INSERT INTO messages_fts (rowid, text) SELECT seq, text FROM messages WHERE seq > ? AND seq <= ?",
                     (done, top)).rowcount
    conn.execute("UPDATE meta SET value = ? WHERE key = 'fts_seq'", (top,))
    return n


def reindex(conn: sqlite3.Connection, revisions) -> None:
    """Edited and deleted messages (store/writes.revision_rows) in the search index: the text it holds goes (FTS5's
    'delete' takes the very text it indexed), an edit's new text comes in; a message above the watermark is not
    in the index yet, and its chunk takes its text as it is then."""
    (done,) = conn.execute("SELECT value FROM meta WHERE key = 'fts_seq'").fetchone()
    for r, seq, _ in revisions:
        if seq > done:
            continue
        conn.execute("INSERT INTO messages_fts (messages_fts, rowid, text) VALUES ('delete', ?, ?)", (seq, r.before.text))
        if not r.message.deleted:
            conn.execute("INSERT INTO messages_fts (rowid, text) VALUES (?, ?)", (seq, r.message.text))


def unindex_workspace(conn: sqlite3.Connection, workspace: str) -> None:
    """Take a workspace's messages out of the search index, before they are deleted: only those it holds
    (up to its watermark; removing a row it never held would corrupt it)."""
    conn.execute(f"""INSERT INTO messages_fts (messages_fts, rowid, text)
                     SELECT 'delete', seq, text FROM messages
                     WHERE {IN_WORKSPACE} AND seq <= (SELECT value FROM meta WHERE key = 'fts_seq')""", (workspace,))


def search_tail(conn: sqlite3.Connection, workspace: str, floor: int) -> None:
    """The workspace's messages (from `floor` on) that the search index does not hold yet, put in this
    connection's temp.messages_tail: an FTS5 table tokenizing as messages_fts does (the default, unicode61),
    matched by the same query. In the caller's read transaction, so the watermark and the index agree."""
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.messages_tail USING fts5 (text)")
    conn.execute("DELETE FROM temp.messages_tail")
    conn.execute(
        """INSERT INTO temp.messages_tail (rowid, text) SELECT seq, text FROM messages
           WHERE seq > (SELECT value FROM meta WHERE key = 'fts_seq') AND workspace = ? AND created_at >= ?""",
        (workspace, floor))


_ACK = """UPDATE deliveries SET acked_at = ?
   FROM (SELECT json_extract(value, '$[0]') AS id, json_extract(value, '$[1]') AS who FROM json_each(?)) AS a
   WHERE deliveries.id = a.id AND deliveries.recipient = a.who AND deliveries.acked_at IS NULL
   RETURNING deliveries.id, deliveries.recipient"""


def ack(conn: sqlite3.Connection, acks: list[tuple[str, list[int], list[int]]], now: int) -> None:
    """Retire deliveries, in one statement for several acks: each (participant, ids, done) retires only
    the participant's own unacked rows, and `done` gets the ids it retired, in the order asked, each once
    (an id two acks ask for goes to the first)."""
    pairs = [(i, who) for who, ids, _ in acks for i in ids]
    if not pairs:
        return
    retired = set(conn.execute(_ACK, (now, msgspec.json.encode(pairs))).fetchall())
    for who, ids, done in acks:
        for i in ids:
            if (i, who) in retired:
                retired.discard((i, who))
                done.append(i)
