"""SQLite, the embedded store: WAL, one writer connection, readers beside it.

Everything here is synchronous and takes a connection: the engine calls it from
its writer thread, the admin CLI from the command line, queries from a reader
thread. `apply` writes one Decision; the caller owns the transaction.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import msgspec

from ...core import (
    POOL, Conversation, ConversationKind, Decision, Directory, Kind, Membership, Message, Participant, Profile,
    Role, Topic, next_due,
)
from ...core.lifecycle import unfunded
from ...core.model import Fitness
from ..schema import MIGRATIONS
from ..writeset import WriteSet, wallet_key

_topic_enc = msgspec.json.Encoder()
_topic_dec = msgspec.json.Decoder(Topic)
_msg_dec = msgspec.json.Decoder(Message)
_PARTY_KEYS = ("lead", "hops", "run", "hop_noticed", "throttle_noticed", "origin", "origin_topic")


def profile(raw: str | bytes | None) -> Profile:
    """An agent's profile from agents.profile (JSON); what does not fit is left out."""
    try:
        p = msgspec.json.decode(raw or "{}")
    except msgspec.DecodeError:
        return Profile()
    if not isinstance(p, dict):
        return Profile()
    caps = p.get("capabilities")
    caps = tuple(c for c in caps if isinstance(c, str)) if isinstance(caps, list) else ()
    s = lambda k: p.get(k) if isinstance(p.get(k), str) else ""  # noqa: E731
    tools = p.get("tools")
    tools = tuple(t for t in tools if isinstance(t, str)) if isinstance(tools, list) else ()
    cost = p.get("cost")
    cost = cost if type(cost) is int and cost >= 0 else 0
    return Profile(s("title"), s("description"), caps, p.get("generalist") is True, tools, cost)


TRUST_WINDOW = 200  # the wakes an agent's earned trust and usual response time are judged over
# ... among the most recent deliveries and messages only: without an index by recipient or author (one more to
# write per delivery), an agent with few wakes had its history looked for through every delivery and message
# ever stored, inside the writer's batch (about 0.1 s per agent per 300,000 messages, at every capability send)
RECENT_ROWS = 20_000


def fitness(conn, agents: list[str], online=lambda pid: False) -> dict[str, Fitness]:
    """What assignment scoring knows of each agent now (seed 003 §14), read from the store.

    load: wake deliveries it has not acknowledged; trust: of its last TRUST_WINDOW wakes by a request (among
    the last RECENT_ROWS deliveries), the share it answered with a response (its responses among the last
    RECENT_ROWS messages), smoothed ((answered + 1) / (asked + 2)); response time: the median time from such a
    wake to its acknowledgement (the bridge acks once its answer is stored). One pass over those recent rows
    for all the agents. Plain SQL, so the PostgreSQL reader answers it too.
    """
    if not agents:
        return {}
    marks = ",".join("?" * len(agents))
    load = dict(conn.execute(f"""SELECT recipient, count(*) FROM deliveries
                                 WHERE recipient IN ({marks}) AND wake = 1 AND acked_at IS NULL
                                 GROUP BY recipient""", agents).fetchall())
    (top,) = conn.execute("SELECT coalesce(max(id), 0) FROM deliveries").fetchone()
    waits: dict[str, list] = {a: [] for a in agents}
    for who, took in conn.execute(
            f"""SELECT d.recipient, d.acked_at - m.created_at FROM deliveries d JOIN messages m ON m.seq = d.message_seq
                WHERE d.id > ? AND d.recipient IN ({marks}) AND d.wake = 1 AND m.type = 'request'
                ORDER BY d.id DESC""", (top - RECENT_ROWS, *agents)):
        if len(waits[who]) < TRUST_WINDOW:
            waits[who].append(took)
    (top,) = conn.execute("SELECT coalesce(max(seq), 0) FROM messages").fetchone()
    answered = dict.fromkeys(agents, 0)
    for (who,) in conn.execute(f"""SELECT author FROM messages WHERE seq > ? AND author IN ({marks})
                                   AND type = 'response'""", (top - RECENT_ROWS, *agents)):
        answered[who] += 1
    out: dict[str, Fitness] = {}
    for a in agents:
        rows = waits[a]
        times = sorted(t for t in rows if t is not None)
        out[a] = Fitness(online=online(a), load=load.get(a, 0),
                         trust=min(1.0, (min(answered[a], TRUST_WINDOW) + 1) / (len(rows) + 2)) if rows else None,
                         response_us=times[len(times) // 2] if times else None)
    return out


def conversation(cid, workspace, kind, name, members, party) -> Conversation:
    c = Conversation(cid, workspace, ConversationKind(kind), name, frozenset(msgspec.json.decode(members)))
    if party and party != "{}":
        try:
            extra = msgspec.json.decode(party)
        except msgspec.DecodeError:
            extra = {}
        if isinstance(extra, dict):
            c = msgspec.structs.replace(c, **{k: extra[k] for k in _PARTY_KEYS if k in extra})
    return c


def party_json(c: Conversation) -> str:
    return msgspec.json.encode({k: getattr(c, k) for k in _PARTY_KEYS}).decode()


def db_path(data_dir: str | os.PathLike) -> Path:
    return Path(data_dir) / "ygg.sqlite3"


def connect(path: str | os.PathLike) -> sqlite3.Connection:
    """A connection in autocommit mode; writers open transactions with BEGIN IMMEDIATE."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")  # durable across a killed process; see docs/architecture.md
    conn.execute("PRAGMA busy_timeout=30000")
    # pages kept in memory: up to 32 MiB (the default, 2 MiB, is less than the indexes' working set; ids are
    # random, so each message's row lands on a random page of messages.id's index; docs/performance.md)
    conn.execute("PRAGMA cache_size=-32768")
    conn.execute("PRAGMA foreign_keys=OFF")
    migrate(conn)
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


def migrate(conn: sqlite3.Connection) -> None:
    (version,) = conn.execute("PRAGMA user_version").fetchone()
    if version >= len(MIGRATIONS):
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        (version,) = conn.execute("PRAGMA user_version").fetchone()
        for i, sql in enumerate(MIGRATIONS[version:], start=version + 1):
            for stmt in _statements(sql):
                conn.execute(stmt)
            conn.execute(f"PRAGMA user_version={i}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _statements(sql: str) -> list[str]:
    """Split a migration into statements, keeping trigger bodies whole."""
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


class Tx:
    """`with Tx(conn):` runs BEGIN IMMEDIATE ... COMMIT, or ROLLBACK on error."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn

    def __enter__(self):
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type, exc, tb):
        self.conn.execute("COMMIT" if exc_type is None else "ROLLBACK")
        return False


def serialized(conn: sqlite3.Connection, key: str) -> None:
    """Inside a `Tx`: the transactions that call this with `key` take turns from here to their COMMIT.

    For a write that reads, then writes what it decided from what it read (the next persona version, a
    rulebook merged with the stored one, a person's one Free organization). SQLite's BEGIN IMMEDIATE already
    takes the one write lock; on PostgreSQL (its sqlite3-shaped adapter) two nodes read in parallel, so
    there an advisory lock on `key` is taken first (the reads after it see what the turn before committed)."""
    if getattr(conn, "dialect", "sqlite") == "postgres":
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", (key,))


def row_lock(conn, mode: str = "SHARE") -> str:
    """What a SELECT ends with to hold the rows it reads until the COMMIT: ` FOR SHARE` (or `mode`) on
    PostgreSQL (its sqlite3-shaped adapter), where another node may write them meanwhile; nothing on SQLite,
    whose BEGIN IMMEDIATE already lets one writer at a time judge."""
    return f" FOR {mode}" if getattr(conn, "dialect", "sqlite") == "postgres" else ""


# --- loading what the core judges against ---

def _ids(raw: str | None) -> frozenset[str] | None:
    return None if raw is None else frozenset(msgspec.json.decode(raw))


def load_directory(conn: sqlite3.Connection, workspace: str) -> Directory:
    participants: list[Participant] = []
    memberships: list[Membership] = []
    rows = conn.execute(
        """SELECT m.participant, m.role, m.send, m.receive, m.can_message, m.takes_from, m.monitor,
                  p.handle, a.name, a.owner, a.revoked, a.profile
           FROM memberships m LEFT JOIN people p ON p.id = m.participant
           LEFT JOIN agents a ON a.id = m.participant WHERE m.workspace = ?""",
        (workspace,),
    ).fetchall()
    owners = set()
    profiles: dict[str, Profile] = {}
    for pid, role, send, receive, can_msg, takes, monitor, handle, name, owner, revoked, prof in rows:
        if handle is not None:
            participants.append(Participant(pid, Kind.HUMAN, handle))
        elif name is not None:
            if revoked:
                continue
            participants.append(Participant(pid, Kind.AGENT, name, owner))
            owners.add(owner)
            if prof and prof != "{}":
                profiles[pid] = profile(prof)
        else:
            continue
        memberships.append(Membership(pid, Role(role), bool(send), bool(receive), _ids(can_msg), _ids(takes), bool(monitor)))
    known = {p.id for p in participants}
    for oid in owners - known:  # owners outside the workspace still name their agents (name@handle)
        row = conn.execute("SELECT handle FROM people WHERE id = ?", (oid,)).fetchone()
        if row:
            participants.append(Participant(oid, Kind.HUMAN, row[0]))
    groups = {
        name: frozenset(msgspec.json.decode(members))
        for name, members in conn.execute("SELECT name, members FROM groups WHERE workspace = ?", (workspace,))
    }
    return Directory.build(workspace, participants, memberships, groups, profiles)


def load_conversations(conn: sqlite3.Connection, workspace: str) -> dict[str, Conversation]:
    return {
        cid: conversation(cid, workspace, kind, name, members, party)
        for cid, kind, name, members, party in conn.execute(
            "SELECT id, kind, name, members, party FROM conversations WHERE workspace = ?", (workspace,)
        )
    }


def party_views(conn, pairs) -> dict:
    """(workspace, conversation) pairs -> each conversation's PartyView, as its agents are shown it."""
    from ...core.party import party_view
    out, dirs = {}, {}
    for ws, cid in pairs:
        if cid in out:
            continue
        d = dirs.get(ws) or dirs.setdefault(ws, load_directory(conn, ws))
        row = conn.execute("SELECT id, kind, name, members, party FROM conversations WHERE id = ?", (cid,)).fetchone()
        out[cid] = party_view(d, conversation(row[0], ws, *row[1:]) if row else None)
    return out


def settings(conn: sqlite3.Connection, workspace: str) -> dict:
    row = conn.execute("SELECT settings FROM workspaces WHERE id = ?", (workspace,)).fetchone()
    try:
        out = msgspec.json.decode(row[0]) if row and row[0] else {}
    except msgspec.DecodeError:
        out = {}
    return out if isinstance(out, dict) else {}


def encode_topic(t: Topic) -> bytes:
    """A topic's stored state (both stores): JSON without the fields at their defaults, each loop signature
    an array (core.model: Topic, Member, Sig). About 2.9 KB for a topic of 5 agents that remembers 20
    messages, where every field written out took 4 KB (`decode_topic` still reads that form)."""
    return _topic_enc.encode(t)


def decode_topic(raw: bytes | str) -> Topic:
    try:
        return _topic_dec.decode(raw)
    except msgspec.ValidationError:  # stored before signatures were arrays: each one an object
        d = msgspec.json.decode(raw)
        if not isinstance(d, dict) or not isinstance(d.get("recent"), list):
            raise
        d["recent"] = [[s["author"], s["to"], s["text_hash"]] if isinstance(s, dict) else s for s in d["recent"]]
        return msgspec.convert(d, Topic)


def load_topic(conn: sqlite3.Connection, topic_id: str) -> Topic | None:
    row = conn.execute("SELECT state FROM topics WHERE id = ?", (topic_id,)).fetchone()
    return decode_topic(row[0]) if row else None


def open_opened(conn: sqlite3.Connection, agent: str) -> int:
    return conn.execute("SELECT count(*) FROM topics WHERE opener = ? AND status != 'closed'", (agent,)).fetchone()[0]


def balance(conn: sqlite3.Connection, workspace: str, account: str) -> int | None:
    row = conn.execute(
        "SELECT balance FROM wallets WHERE workspace = ? AND account = ?", wallet_key(workspace, account)
    ).fetchone()
    return row[0] if row else None


def load_flags(conn: sqlite3.Connection) -> set[tuple[str, str]]:
    """Per-agent marks (blocked, broke): agents are one identity, so flags are global."""
    return set(conn.execute("SELECT name, agent FROM flags WHERE workspace = '*'"))


def credit_paused(conn: sqlite3.Connection, workspace: str | None = None, agent: str | None = None) -> list[Topic]:
    """Topics where agents wait for funds: a workspace's (pool funding) or an agent's anywhere.

    Paused for credits, or open again with agents still listed in `unfunded` (core.lifecycle.unfunded;
    a row stored before `unfunded` names only `paused_by`)."""
    rows = conn.execute("SELECT state FROM topics WHERE waits_funds IS NOT NULL AND workspace = ?", (workspace,)) \
        if workspace is not None else conn.execute("SELECT state FROM topics WHERE waits_funds IS NOT NULL")
    topics = [t for t in (decode_topic(r[0]) for r in rows.fetchall()) if unfunded(t)]
    return [t for t in topics if agent is None or agent in unfunded(t)]


def waits_funds(t: Topic) -> int | None:
    """The topics row's `waits_funds` (schema migration 9): 1 while agents wait for funds there, else NULL."""
    return 1 if unfunded(t) else None


def due_topics(conn: sqlite3.Connection) -> list[tuple[int, str]]:
    return conn.execute("SELECT next_due, id FROM topics WHERE next_due IS NOT NULL").fetchall()


def org_of(conn: sqlite3.Connection, workspace: str) -> tuple[str, str, int | None] | None:
    """(organization, plan, licensed messages a month) of a workspace: `core.plan_of(*org[1:])` its limits."""
    return conn.execute(
        "SELECT o.id, o.plan, o.licensed FROM workspaces w JOIN orgs o ON o.id = w.org WHERE w.id = ?", (workspace,)
    ).fetchone()


def usage(conn: sqlite3.Connection, org: str, month: str) -> int:
    row = conn.execute("SELECT count FROM usage WHERE org = ? AND month = ?", (org, month)).fetchone()
    return row[0] if row else 0


# --- applying a decision ---

@dataclass(slots=True)
class Stored:
    """A delivery row as written, for the publisher."""

    id: int
    recipient: str
    wake: bool
    reason: str | None
    message: Message


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
                       [(m.id, m.workspace, m.conversation, m.topic, m.author, m.type, m.text, _topic_enc.encode(m),
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
        many("INSERT OR IGNORE INTO flags (workspace, name, agent) VALUES ('*',?,?)", on)
    if off:
        many("DELETE FROM flags WHERE workspace = '*' AND name = ? AND agent = ?", off)
    if w.usage:
        many(
            """INSERT INTO usage (org, month, count) VALUES (?,?,?)
               ON CONFLICT (org, month) DO UPDATE SET count = count + excluded.count""",
            [(*k, v) for k, v in w.usage.items()],
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


# A workspace's messages (and topics), found through its conversations: `messages_conversation` and
# `topics_conversation` hold them in order, where `workspace = ?` reads every message of every workspace (no
# index by workspace: one less to write per message). Both stores take it.
IN_WORKSPACE = "conversation IN (SELECT id FROM conversations WHERE workspace = ?)"


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


def decode_message(body: bytes) -> Message:
    return _msg_dec.decode(body)
