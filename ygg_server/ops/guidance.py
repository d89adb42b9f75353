"""The stored documents a directive is made of: agents' personas and conversations' rulebooks.

Socket ops (docs/protocol.md, "Directives"), each `fn(conn, participant, frame) -> dict` (or `Refused`)
on a sqlite3-shaped connection (SQLite, or PostgreSQL's adapter); the writes run on
the gateway's management connection, so the writer and every node see them at once.
Each write reads and writes its document in one transaction, serialized per document
(`store.transactions.serialized`), so writes through several nodes at once neither fail nor lose a merge.

The writes (`TIMED`) take the time too, `fn(conn, participant, frame, now)`, and stamp what they write with it
(`now` in microseconds, from the gateway's clock).

- `get_persona` / `set_persona`: the agent itself, or its owner. A write that would
  shrink a long persona to less than half is refused `persona_shrink` (seed 003 §57);
  every accepted version is kept.
- `get_rulebook` / `set_rulebook`: anyone who may read the conversation reads it; only
  its people set it (a person, not a viewer, in a direct or party conversation, any
  non-viewer in General or a group, or the workspace's owners and admins); an agent is refused
  `permission_denied` (seed 003 §55: the rulebook is the people's, not the agents').
"""

from __future__ import annotations

import sqlite3
from typing import Any

import msgspec

from . import directives, queries
from .refusals import NotFound, Refused
from ..core import Role
from ..protocol import frames
from ..store.transactions import Tx, serialized


# --- personas ---

def persona(conn: sqlite3.Connection, agent: str) -> tuple[str, int]:
    """An agent's persona and its version (0: none written yet)."""
    row = conn.execute("SELECT text, version FROM personas WHERE agent = ? ORDER BY version DESC LIMIT 1",
                       (agent,)).fetchone()
    return (row[0], row[1]) if row else ("", 0)


def _agent_for(conn: sqlite3.Connection, who: str, ref: Any) -> str:
    """The agent a persona op is about (`ref`): the asker itself, or an agent of the asker's (by id or name)."""
    if ref is None or ref == who:
        if who.startswith("agent."):
            return who
        raise NotFound
    if not isinstance(ref, str):
        raise NotFound
    if who.startswith("agent."):  # an agent names itself by its name too; any other agent is not its to touch
        if conn.execute("SELECT 1 FROM agents WHERE id = ? AND name = ?", (who, ref)).fetchone():
            return who
        raise NotFound
    row = conn.execute("SELECT id FROM agents WHERE owner = ? AND (id = ? OR name = ?) AND revoked = 0",
                       (who, ref, ref)).fetchone()
    if row is None:
        raise NotFound
    return row[0]


def get_persona(conn: sqlite3.Connection, who: str, frame: frames.GetPersona) -> dict:
    agent = _agent_for(conn, who, frame.agent)
    text, version = persona(conn, agent)
    return {"agent": agent, "text": text, "version": version}


def set_persona(conn: sqlite3.Connection, who: str, frame: frames.SetPersona, now: int) -> dict:
    agent = _agent_for(conn, who, frame.agent)
    with Tx(conn):
        serialized(conn, "persona:" + agent)
        return _set_persona(conn, who, agent, frame, now)


def _set_persona(conn: sqlite3.Connection, who: str, agent: str, frame: frames.SetPersona, now: int) -> dict:
    new, why = frame.text, frame.why
    if not isinstance(why, str):
        why = ""
    old, version = persona(conn, agent)
    refusal = directives.persona_refusal(old, new)
    if refusal:
        raise Refused(*refusal)
    if new == old:
        return {"agent": agent, "version": version, "length": len(new), "changed": False}
    conn.execute("INSERT INTO personas (agent, version, text, why, author, created_at) VALUES (?,?,?,?,?,?)",
                 (agent, version + 1, new, why[:500], who, now))
    return {"agent": agent, "version": version + 1, "length": len(new), "changed": True}


# --- rulebooks ---

def rulebook(conn: sqlite3.Connection, conversation: str) -> dict[str, Any]:
    """What a conversation's people set (only the rules they set; the defaults fill the rest)."""
    row = conn.execute("SELECT body FROM rulebooks WHERE conversation = ?", (conversation,)).fetchone()
    if not row:
        return {}
    try:
        body = msgspec.json.decode(row[0])
    except msgspec.DecodeError:
        return {}
    return body if isinstance(body, dict) and directives.rulebook_problem(body) is None else {}


def _conversation(conn: sqlite3.Connection, who: str, frame: frames.GetRulebook | frames.SetRulebook
                  ) -> tuple[str, str, str, frozenset[str], Role]:
    """(workspace, conversation id, kind, members, role) of a conversation `who` may read, or NotFound."""
    ws = frame.workspace
    role, monitor = queries._member(conn, ws, who)
    cid = queries._conversation(conn, ws, frame.conversation, who, monitor)
    kind, members = conn.execute("SELECT kind, members FROM conversations WHERE id = ?", (cid,)).fetchone()
    return ws, cid, kind, frozenset(msgspec.json.decode(members)), Role(role)


def get_rulebook(conn: sqlite3.Connection, who: str, frame: frames.GetRulebook) -> dict:
    _, cid, *_ = _conversation(conn, who, frame)
    stored = rulebook(conn, cid)
    return {"conversation": cid, "set": stored, "rulebook": directives.rulebook_in_force(stored)}


def set_rulebook(conn: sqlite3.Connection, who: str, frame: frames.SetRulebook, now: int) -> dict:
    ws, cid, kind, members, role = _conversation(conn, who, frame)
    if not who.startswith("human."):
        raise Refused("permission_denied", "a conversation's rulebook is set by its people; agents cannot")
    if role == Role.VIEWER:  # a viewer reads only (docs/rules.md), in a party it was added to as anywhere
        raise Refused("permission_denied", "a viewer reads a conversation's rulebook but does not set it")
    if not (kind in ("general", "group") or who in members or role in (Role.OWNER, Role.ADMIN)):
        raise Refused("permission_denied", "only the people of this conversation (or an admin) set its rulebook")
    change = frame.rulebook
    if change is frames.UNSET:  # a misspelt field is not a reset: only an explicit null resets
        raise Refused("bad_rulebook", "set_rulebook needs rulebook: the rules to change, or null for all defaults")
    if change is not None and not isinstance(change, dict):
        raise Refused("bad_rulebook", "rulebook is an object of rules (a rule set to null returns to its default), "
                      "or null for all defaults")
    with Tx(conn):
        serialized(conn, "rulebook:" + cid)
        return _merge_rulebook(conn, who, ws, cid, change, now)


def _merge_rulebook(conn: sqlite3.Connection, who: str, ws: str, cid: str, change: dict | None, now: int) -> dict:
    merged = {} if change is None else {**rulebook(conn, cid), **change}
    merged = {k: v for k, v in merged.items() if v is not None}
    problem = directives.rulebook_problem(merged)
    if problem:
        raise Refused("bad_rulebook", problem)
    if merged:
        conn.execute("""INSERT INTO rulebooks (conversation, workspace, body, set_by, updated_at) VALUES (?,?,?,?,?)
                        ON CONFLICT (conversation) DO UPDATE SET body = excluded.body, set_by = excluded.set_by,
                        updated_at = excluded.updated_at""",
                     (cid, ws, msgspec.json.encode(dict(sorted(merged.items()))).decode(), who, now))
    else:
        conn.execute("DELETE FROM rulebooks WHERE conversation = ?", (cid,))
    return {"conversation": cid, "set": merged, "rulebook": directives.rulebook_in_force(merged)}


# op: (function, writes?)
OPS = {
    "get_persona": (get_persona, False),
    "set_persona": (set_persona, True),
    "get_rulebook": (get_rulebook, False),
    "set_rulebook": (set_rulebook, True),
}
TIMED = frozenset({"set_persona", "set_rulebook"})  # the ops that take the time: `fn(conn, who, frame, now)`
