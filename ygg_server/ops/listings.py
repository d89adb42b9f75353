"""The public agent directory (seed 003 §67): a person publishes an agent of theirs; anyone copies a listing into
a new agent of their own.

A listing is a snapshot of what can be copied: the agent's name, profile and persona, as they were when published
(published again, it is brought up to date). A copy is a new agent of the copier's, with its own key, wallet and
memberships, and the listing's profile and persona; nothing of the original's conversations, memory or key.

The rule: an agent pinned to a shared workspace (any workspace that is not its owner's personal one) is not
published (`pinned_to_shared_workspace`): a public listing can be copied by anyone, and would leak that
workspace's agent configuration to people who were never its members. An agent pinned there after it was
published is, from then on, neither listed nor copied (checked as the directory is read, not only at publishing).
"""

from __future__ import annotations

import sqlite3

import msgspec

from .. import audit
from ..protocol import ErrorCode as E
from ..store.transactions import Tx
from . import admin
from .guidance import persona
from .refusals import AdminError, NotFound, person_only

def pinned_to_shared(conn: sqlite3.Connection, aid: str) -> bool:
    row = conn.execute("SELECT pinned FROM agents WHERE id = ?", (aid,)).fetchone()
    pins = msgspec.json.decode(row[0]) if row and row[0] else []
    if not pins:
        return False
    marks = ",".join("?" * len(pins))
    return conn.execute(f"SELECT 1 FROM workspaces WHERE personal_of IS NULL AND id IN ({marks}) LIMIT 1",
                        pins).fetchone() is not None


def publish(conn: sqlite3.Connection, who: str, agent_ref: str, *, now: int) -> dict:
    """`who` (a person) publishes their agent: {"listing": its id, "name"}."""
    person_only(who)
    with Tx(conn):
        aid = admin.own_agent(conn, who, agent_ref)
        if aid is None:
            raise NotFound
        if pinned_to_shared(conn, aid):
            raise AdminError(E.PINNED_TO_SHARED, "this agent is pinned to a shared workspace: a public listing "
                             "would show that workspace's agent to people who are not its members (seed 003 §67)")
        name, profile = conn.execute("SELECT name, profile FROM agents WHERE id = ?", (aid,)).fetchone()
        text, _ = persona(conn, aid)
        conn.execute("DELETE FROM listings WHERE agent = ?", (aid,))
        conn.execute("INSERT INTO listings (agent, publisher, name, profile, persona, published_at) "
                     "VALUES (?,?,?,?,?,?)", (aid, who, name, profile or "{}", text or None, now))
    audit.record("agent_published", participant=who, agent=aid)
    return {"listing": aid, "name": name}


def unpublish(conn: sqlite3.Connection, who: str, agent_ref: str) -> dict:
    person_only(who)
    with Tx(conn):
        aid = admin.own_agent(conn, who, agent_ref)
        if aid is None:
            raise NotFound
        gone = conn.execute("DELETE FROM listings WHERE agent = ?", (aid,)).rowcount
    return {"listing": aid, "removed": bool(gone)}


def directory(conn: sqlite3.Connection) -> list[dict]:
    """Every listing whose agent may still be listed (not revoked, not pinned to a shared workspace), newest first."""
    rows = conn.execute(
        """SELECT l.agent, l.name, p.handle, l.profile, l.persona IS NOT NULL, l.published_at
           FROM listings l JOIN agents a ON a.id = l.agent AND a.revoked = 0 LEFT JOIN people p ON p.id = l.publisher
           ORDER BY l.published_at DESC, l.agent""").fetchall()
    out = []
    for aid, name, handle, profile, has_persona, at in rows:
        if pinned_to_shared(conn, aid):
            continue
        prof = msgspec.json.decode(profile or "{}")
        out.append({"listing": aid, "name": name, "publisher": handle, "title": prof.get("title", ""),
                    "description": prof.get("description", ""), "persona": bool(has_persona), "published_at": at})
    return out


def copy(conn: sqlite3.Connection, who: str, listing: str, name: str | None = None, ws_ref: str | None = None,
         *, now: int) -> dict:
    """A new agent of `who`'s made from a listing (its profile and persona): {"id", "name", "api_key", …}."""
    person_only(who)
    if not any(entry["listing"] == listing for entry in directory(conn)):
        raise NotFound  # (unknown, withdrawn, or its agent pinned to a shared workspace since: alike)
    lname, profile, text = conn.execute("SELECT name, profile, persona FROM listings WHERE agent = ?",
                                        (listing,)).fetchone()
    made = admin.add_agent(conn, name or lname, who, ws_ref, now=now)
    with Tx(conn):
        conn.execute("UPDATE agents SET profile = ? WHERE id = ?", (profile, made["id"]))
        if text:
            conn.execute("INSERT INTO personas (agent, version, text, why, author, created_at) VALUES (?,?,?,?,?,?)",
                         (made["id"], 1, text, f"copied from the directory's {lname}", who, now))
    audit.record("agent_copied", participant=who, agent=made["id"], listing=listing)
    return {**made, "copied_from": listing}
