"""Reads both stores run: plain SQL written once, in SQLite's dialect, that PostgreSQL runs through its
sqlite3-shaped adapter (`postgres.SyncConnection`, which turns `?` into `$n` and swaps the few statements
in `postgres.OVERRIDES` whole). Each takes a connection of either kind and returns the core's structs
(decoded by `rows.py`): the directory, conversations, topics, balances, flags, plans, usage, fitness.
"""

from __future__ import annotations

import msgspec

from ..core import Conversation, Directory, Kind, Membership, Participant, Profile, Role, Topic
from ..core.lifecycle import OPEN_SLOT, unfunded
from ..core.model import Fitness
from ..core.party import party_view
from . import rows as codec

# A workspace's messages (and topics), found through its conversations: `messages_conversation` and
# `topics_conversation` hold them in order, where `workspace = ?` reads every message of every workspace (no
# index by workspace: one less to write per message). Both stores take it.
IN_WORKSPACE = "conversation IN (SELECT id FROM conversations WHERE workspace = ?)"


def load_directory(conn, workspace: str) -> Directory:
    """Who is in a workspace, as the core judges against: its people, its agents not revoked (with their
    profiles), their owners outside it, its groups."""
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
                profiles[pid] = codec.profile(prof)
        else:
            continue
        memberships.append(Membership(pid, Role(role), bool(send), bool(receive), codec.ids(can_msg), codec.ids(takes),
                                      bool(monitor)))
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


def load_conversations(conn, workspace: str) -> dict[str, Conversation]:
    return {
        cid: codec.conversation(cid, workspace, kind, name, members, party)
        for cid, kind, name, members, party in conn.execute(
            "SELECT id, kind, name, members, party FROM conversations WHERE workspace = ?", (workspace,)
        )
    }


def load_conversation(conn, cid: str) -> Conversation | None:
    row = conn.execute("SELECT id, workspace, kind, name, members, party FROM conversations WHERE id = ?",
                       (cid,)).fetchone()
    return codec.conversation(*row) if row else None


def party_views(conn, pairs) -> dict:
    """(workspace, conversation) pairs -> each conversation's PartyView, as its agents are shown it."""
    out, dirs = {}, {}
    for ws, cid in pairs:
        if cid in out:
            continue
        d = dirs.get(ws) or dirs.setdefault(ws, load_directory(conn, ws))
        row = conn.execute("SELECT id, kind, name, members, party FROM conversations WHERE id = ?", (cid,)).fetchone()
        out[cid] = party_view(d, codec.conversation(row[0], ws, *row[1:]) if row else None)
    return out


def settings(conn, workspace: str) -> dict:
    row = conn.execute("SELECT settings FROM workspaces WHERE id = ?", (workspace,)).fetchone()
    try:
        out = msgspec.json.decode(row[0]) if row and row[0] else {}
    except msgspec.DecodeError:
        out = {}
    return out if isinstance(out, dict) else {}

def load_topic(conn, topic_id: str) -> Topic | None:
    row = conn.execute("SELECT state FROM topics WHERE id = ?", (topic_id,)).fetchone()
    return codec.decode_topic(row[0]) if row else None


def open_opened(conn, agent: str) -> int:
    return conn.execute(f"SELECT count(*) FROM topics WHERE opener = ? AND {OPEN_SLOT}", (agent,)).fetchone()[0]


def due_topics(conn) -> list[tuple[int, str]]:
    return conn.execute("SELECT next_due, id FROM topics WHERE next_due IS NOT NULL").fetchall()


def credit_paused(conn, workspace: str | None = None, agent: str | None = None) -> list[Topic]:
    """Topics where agents wait for funds: a workspace's (pool funding) or an agent's anywhere.

    Paused for credits, or open again with agents still listed in `unfunded` (core.lifecycle.unfunded;
    a row stored before `unfunded` names only `paused_by`)."""
    rows = conn.execute("SELECT state FROM topics WHERE waits_funds IS NOT NULL AND workspace = ?", (workspace,)) \
        if workspace is not None else conn.execute("SELECT state FROM topics WHERE waits_funds IS NOT NULL")
    topics = [t for t in (codec.decode_topic(r[0]) for r in rows.fetchall()) if unfunded(t)]
    return [t for t in topics if agent is None or agent in unfunded(t)]

def balance(conn, workspace: str, account: str) -> int | None:
    row = conn.execute(
        "SELECT balance FROM wallets WHERE workspace = ? AND account = ?", codec.wallet_key(workspace, account)
    ).fetchone()
    return row[0] if row else None


def load_flags(conn) -> set[tuple[str, str]]:
    """Per-agent marks (core.decision.Flag), as (name, agent, workspace): '*' for a mark in every workspace."""
    return {tuple(r) for r in conn.execute("SELECT name, agent, workspace FROM flags")}


def org_of(conn, workspace: str) -> tuple[str, str, int | None] | None:
    """(organization, plan, licensed messages a month) of a workspace: `core.plan_of(*org[1:])` its limits."""
    return conn.execute(
        "SELECT o.id, o.plan, o.licensed FROM workspaces w JOIN orgs o ON o.id = w.org WHERE w.id = ?", (workspace,)
    ).fetchone()


def usage(conn, org: str, month: str) -> int:
    row = conn.execute("SELECT count FROM usage WHERE org = ? AND month = ?", (org, month)).fetchone()
    return row[0] if row else 0


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


# the message an edit or a delete names, and everyone it reached (its delivery rows, edits' included); PostgreSQL's
# writer runs these too, the message's row locked (store/postgres/writer_store.PgStore.load)
REVISED_MESSAGE = "SELECT seq, body FROM messages WHERE id = ?"
# an artifact as its latest version left it (core.artifacts.Head; PostgreSQL locks its row)
ARTIFACT_HEAD = ("SELECT a.id, a.workspace, a.conversation, a.title, a.kind, a.language, a.version, v.body "
                 "FROM artifacts a JOIN artifact_versions v ON v.artifact = a.id AND v.version = a.version "
                 "WHERE a.id = ?")
# an upload a send names (core.files.Upload; PostgreSQL locks its row: two nodes never send one upload twice)
UPLOAD = "SELECT id, workspace, uploader, name, size, type, sha256, message FROM files WHERE id = ?"
REACHED = "SELECT DISTINCT recipient FROM deliveries WHERE message_seq = ? ORDER BY recipient"
READERS = "SELECT kind, members FROM conversations WHERE id = ?"


def readers(row) -> frozenset[str] | None:
    """Who may read a conversation's messages, from its (kind, members): None for everyone in the workspace."""
    if row is None or row[0] in ("general", "group"):
        return None
    return frozenset(msgspec.json.decode(row[1]))


def revisable(conn, ids) -> dict[str, tuple]:
    """id -> (the message as stored, its seq, who it reached, who may read it: None for everyone), for the
    messages of `ids` that exist."""
    out = {}
    for mid in sorted(ids):
        row = conn.execute(REVISED_MESSAGE, (mid,)).fetchone()
        if row is not None:
            m = codec.decode_message(row[1])
            reached = tuple(r for (r,) in conn.execute(REACHED, (row[0],)).fetchall())
            out[mid] = (m, row[0], reached, readers(conn.execute(READERS, (m.conversation,)).fetchone()))
    return out


def artifact_heads(conn, ids) -> dict:
    """id -> core.artifacts.Head of the artifacts of `ids` that exist."""
    from ..core.artifacts import Head
    out = {}
    for aid in sorted(ids):
        row = conn.execute(ARTIFACT_HEAD, (aid,)).fetchone()
        if row is not None:
            out[aid] = Head(*row)
    return out


def uploads(conn, ids) -> dict:
    """id -> core.files.Upload of the uploads of `ids` that exist."""
    from ..core.files import Upload
    out = {}
    for fid in sorted(ids):
        row = conn.execute(UPLOAD, (fid,)).fetchone()
        if row is not None:
            out[fid] = Upload(*row)
    return out
