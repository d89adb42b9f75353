"""Agents' long-term memory (seed 003 §46-48), per workspace: a memory is an agent's in one workspace and is
found only there (it never crosses a workspace's isolation: every read names the workspace and the agent, and
the asker must be that agent, a member of it, or its owner), unless its owner shares it (`share_memory`: what the
agent keeps in one workspace recalled in another where the owner and the agent both are, until taken back).
Searched on the store: SQLite's FTS5 (`memories_fts`, kept by triggers) and PostgreSQL's full text
(`to_tsvector('simple', …)`, index memories_text), with the query words of `ops/search.terms` (each a prefix, "phrases" in order); an optional embedder re-ranks what
the store found (ops/embedding.py).

Used by the server's `remember` and `memory_search` tools (tools/server_tools.py), and the socket ops
`list_memories` (an agent, its own; a person, its agent's; a shared one says `shared_from`), `forget` (the agent
or its owner), `share_memory` and `list_memory_shares` (the owner).
"""

from __future__ import annotations

import sqlite3

from ..protocol import frames
from ..protocol.ids import new_id
from ..store.transactions import Tx
from ..store.writes import write_memory
from . import embedding, memory_care, toolkit
from .queries import _member
from .refusals import NotFound, Refused
from .search import fts5, terms, tsquery

MAX_TEXT = 2000
PER_AGENT = 5000  # memories an agent keeps in one workspace; the least used go first beyond this


def to_save(conn: sqlite3.Connection, agent: str, workspace: str, text: str, now: int,
            source: str = "") -> tuple[dict, tuple | None]:
    """What keeping `text` answers, and the row the writer keeps (store.writes.write_memory's "save"; None: that text
    is kept already). Read only: the `remember` tool has the writer write it (its `memory` command)."""
    _member(conn, workspace, agent)
    text = " ".join(text.split())[:MAX_TEXT]
    if not text:
        raise Refused("bad_arguments", "a memory needs some text")
    same = conn.execute("SELECT id FROM memories WHERE workspace = ? AND agent = ? AND text = ?",
                        (workspace, agent, text)).fetchone()
    if same:
        return {"id": same[0], "kept": False}, None
    mid = new_id()
    return {"id": mid, "kept": True}, (mid, workspace, agent, text, source[:200], now)


def save(conn: sqlite3.Connection, agent: str, workspace: str, text: str, now: int, source: str = "") -> dict:
    """`to_save`, written here (the admin CLI, the memory workers, tests; the socket's tools go through the writer)."""
    answer, row = to_save(conn, agent, workspace, text, now, source)
    if row is not None:
        write_memory(conn, "save", (*row, PER_AGENT))
    return answer


# words a recall does not search by (a question's glue: "how do credits work" recalls by "credits" and "work")
_GLUE = frozenset("""a an and are as at be by can could do does for from has have how i if in is it its me my of on or
our please so that the their them then there this to us was we what when where which who why will with would you
your""".split())


def search(conn: sqlite3.Connection, agent: str, workspace: str, query: str, limit: int = 5,
           now: int | None = None, any_word: bool = False) -> list[dict]:
    """An agent's memories in `workspace` matching `query` (every term, or with `any_word` any of its words but the
    glue), the best first (newest on a tie); those found are marked used at `now` (what is used is kept longest)."""
    ts = terms(query)
    if any_word:
        ts = [t for t in ts if len(t) > 1 or (len(t[0]) > 2 and t[0] not in _GLUE)]
    if not ts:
        return []
    sqlite_store = isinstance(conn, sqlite3.Connection)
    if any_word:
        match = " OR ".join(fts5([t]) for t in ts) if sqlite_store else " | ".join(tsquery([t]) for t in ts)
    else:
        match = fts5(ts) if sqlite_store else tsquery(ts)
    spaces = readable(conn, agent, workspace)
    among = ",".join("?" * len(spaces))
    embedder, wanted = embedding.current(), limit
    if embedder is not None:
        limit = limit * embedding.WIDEN  # (the store finds; the embedder re-ranks what it found)
    if sqlite_store:
        rows = conn.execute(f"""SELECT m.id, m.text, m.created_at, m.workspace FROM memories_fts f
                                JOIN memories m ON m.seq = f.rowid
                                WHERE memories_fts MATCH ? AND m.workspace IN ({among}) AND m.agent = ?
                                ORDER BY f.rank, m.seq DESC LIMIT ?""",
                            (match, *spaces, agent, limit)).fetchall()
    else:
        rows = conn.execute(f"""SELECT id, text, created_at, workspace FROM memories
                                WHERE to_tsvector('simple', text) @@ to_tsquery('simple', ?)
                                AND workspace IN ({among}) AND agent = ?
                                ORDER BY ts_rank(to_tsvector('simple', text), to_tsquery('simple', ?)) DESC, seq DESC
                                LIMIT ?""", (match, *spaces, agent, match, limit)).fetchall()
    if embedder is not None:
        rows = embedding.rerank(embedder, query, rows)[:wanted]
    if rows and now is not None:
        write_memory(conn, "used", (now, *(r[0] for r in rows)))
    return [_found(i, t, c, w, workspace) for i, t, c, w in rows]


def _found(mid: str, text: str, at: int, ws: str, here: str, **more) -> dict:
    return {"id": mid, "text": text, "at": at, **more, **({"shared_from": ws} if ws != here else {})}


def readable(conn: sqlite3.Connection, agent: str, workspace: str) -> list[str]:
    """The workspaces whose memories `agent` recalls in `workspace`: that one, and those its owner shared into it
    (issue 23: "memory is per workspace unless its owner shares it"): a share counts only while the one who made it
    still owns the agent and is a member of both workspaces, and the agent of the one it came from."""
    return [workspace] + [r[0] for r in conn.execute(
        """SELECT s.source FROM memory_shares s JOIN agents a ON a.id = s.agent AND a.owner = s.shared_by
           JOIN memberships ms ON ms.workspace = s.source AND ms.participant = s.shared_by
           JOIN memberships mt ON mt.workspace = s.target AND mt.participant = s.shared_by
           JOIN memberships ma ON ma.workspace = s.source AND ma.participant = s.agent
           WHERE s.agent = ? AND s.target = ? ORDER BY s.source""", (agent, workspace))]


def recent(conn: sqlite3.Connection, agent: str, workspace: str, limit: int = 50) -> list[dict]:
    spaces = readable(conn, agent, workspace)
    return [_found(i, t, c, w, workspace, uses=u) for i, t, c, u, w in conn.execute(
        f"""SELECT id, text, created_at, uses, workspace FROM memories
            WHERE workspace IN ({",".join("?" * len(spaces))}) AND agent = ? ORDER BY seq DESC LIMIT ?""",
        (*spaces, agent, limit))]


def _whose(conn: sqlite3.Connection, who: str, ref, workspace: str) -> str:
    agent, owner = toolkit.owned_agent(conn, who, ref)
    _member(conn, workspace, agent)  # an agent's memories are only where it is
    if who != agent:
        _member(conn, workspace, who)  # and its owner reads them only in a workspace of its own too
    return agent


def list_memories(conn: sqlite3.Connection, who: str, f: frames.ListMemories) -> dict:
    agent = _whose(conn, who, f.agent, f.workspace)
    if f.family:
        return {"agent": agent, "workspace": f.workspace, "memories": memory_care.family(conn, agent, f.workspace)}
    q = f.query if isinstance(f.query, str) else ""
    found = search(conn, agent, f.workspace, q, limit=50, any_word=f.any) if q.strip() else \
        recent(conn, agent, f.workspace)
    return {"agent": agent, "workspace": f.workspace, "memories": found}


def forget(conn: sqlite3.Connection, who: str, f: frames.Forget) -> dict:
    agent = _whose(conn, who, f.agent, f.workspace)
    if conn.execute("DELETE FROM memories WHERE id = ? AND workspace = ? AND agent = ?",
                    (f.id, f.workspace, agent)).rowcount == 0:
        raise NotFound
    return {"id": f.id}


def share_memory(conn: sqlite3.Connection, who: str, f: frames.ShareMemory, now: int) -> dict:
    """The agent's owner shares what it keeps in `workspace` into `into` (or, `share` false, takes it back): explicit
    and revocable; only an owner who is a member of both, for an agent in both. Anyone else: `not_found`."""
    if not who.startswith("human."):
        raise NotFound
    agent, _ = toolkit.owned_agent(conn, who, f.agent)
    for ws in (f.workspace, f.into):
        _member(conn, ws, who)
    if f.workspace == f.into:
        raise Refused("bad_share", "a workspace's memory is its own already: share it into another one")
    with Tx(conn):
        conn.execute("DELETE FROM memory_shares WHERE agent = ? AND source = ? AND target = ?",
                     (agent, f.workspace, f.into))
        if f.share:
            for ws in (f.workspace, f.into):
                if not conn.execute("SELECT 1 FROM memberships WHERE workspace = ? AND participant = ?",
                                    (ws, agent)).fetchone():
                    raise Refused("bad_share", "the agent is a member of both workspaces")
            conn.execute("INSERT INTO memory_shares (agent, source, target, shared_by, created_at) VALUES (?,?,?,?,?)",
                         (agent, f.workspace, f.into, who, now))
    return {"agent": agent, "workspace": f.workspace, "into": f.into, "shared": bool(f.share)}


def list_memory_shares(conn: sqlite3.Connection, who: str, f: frames.ListMemoryShares) -> dict:
    """An owner's shares of one agent's memory (or of all its agents'), with the workspaces' names."""
    if not who.startswith("human."):
        raise NotFound
    one = [toolkit.owned_agent(conn, who, f.agent)[0]] if f.agent is not None else []
    rows = conn.execute(
        """SELECT s.agent, s.source, ws.name, s.target, wt.name, s.created_at FROM memory_shares s
           JOIN agents a ON a.id = s.agent AND a.owner = ? JOIN workspaces ws ON ws.id = s.source
           JOIN workspaces wt ON wt.id = s.target WHERE s.shared_by = ?""" + (" AND s.agent = ?" if one else "")
        + " ORDER BY s.agent, ws.name, wt.name", (who, who, *one)).fetchall()
    return {"shares": [{"agent": a, "workspace": s, "workspace_name": sn, "into": t, "into_name": tn, "at": at}
                       for a, s, sn, t, tn, at in rows]}


OPS = {"list_memories": (list_memories, False), "forget": (forget, True), "share_memory": (share_memory, True),
       "list_memory_shares": (list_memory_shares, False)}
TIMED: frozenset[str] = frozenset({"share_memory"})
