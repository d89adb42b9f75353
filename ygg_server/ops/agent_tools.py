"""Agents as tools (seed 003 §76): which agents a participant may call, and where (the MCP endpoint's
`tools/list`, net/mcp.py).

A participant may call an agent in a workspace where both are members, the caller may send (not a viewer, its
send permission on) and no permission of seed 002 bars the send (`core.directory.barred`: the agent receives, the
caller's `can_message` names it, the agent's `takes_from` names the caller). The call itself goes through the send
pipeline, which decides again: this list is what the caller is shown, never what lets a send through.
"""

from __future__ import annotations

import re
import sqlite3
from typing import Any

from ..core import Role
from ..core.directory import barred
from ..core.model import Membership
from ..store import rows as codec

# MCP tool names: letters, digits, `_`, `-` and `.`, at most 128 (the 2025-11-25 specification)
_NOT_IN_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


def callable_agents(conn: sqlite3.Connection, pid: str) -> list[dict[str, Any]]:
    """The agents `pid` may call, each once: {"tool", "id", "name", "owner", "title", "description",
    "workspaces": [{"id", "name"}, …]} (the workspaces where it may be called, oldest membership first), sorted
    by tool name. An agent's tool is its name, made of the characters a tool name may have; two of one name
    are told apart by their person's handle (`name.handle`)."""
    rows = conn.execute(
        """SELECT mine.workspace, w.name, mine.role, mine.send, mine.can_message, theirs.participant, a.name,
                  o.handle, a.profile, theirs.receive, theirs.takes_from
           FROM memberships mine
           JOIN memberships theirs ON theirs.workspace = mine.workspace AND theirs.participant <> mine.participant
           JOIN agents a ON a.id = theirs.participant AND a.revoked = 0
           JOIN workspaces w ON w.id = mine.workspace
           LEFT JOIN people o ON o.id = a.owner
           WHERE mine.participant = ?
           ORDER BY mine.created_at, mine.workspace, theirs.created_at, theirs.participant""", (pid,)).fetchall()
    found: dict[str, dict[str, Any]] = {}
    for ws, ws_name, role, send, can_message, aid, name, owner, profile, receive, takes_from in rows:
        if role == Role.VIEWER or not send:
            continue
        mine = Membership(pid, Role(role), bool(send), True, codec.ids(can_message))
        theirs = Membership(aid, receive=bool(receive), takes_from=codec.ids(takes_from))
        if barred(mine, theirs, pid, aid) is not None:
            continue
        entry = found.get(aid)
        if entry is None:
            p = codec.profile(profile)
            entry = found[aid] = {"id": aid, "name": name, "owner": owner, "title": p.title,
                                  "description": p.description, "workspaces": []}
        entry["workspaces"].append({"id": ws, "name": ws_name})
    return _named(list(found.values()))


def _named(agents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each agent's tool name: its name, or `name.handle` where two share a name (`name.handle.id` past that)."""
    base = {a["id"]: (_NOT_IN_NAME.sub("_", a["name"]).strip("_") or "agent")[:64] for a in agents}
    count: dict[str, int] = {}
    for b in base.values():
        count[b] = count.get(b, 0) + 1
    taken: set[str] = set()
    for a in sorted(agents, key=lambda a: a["id"]):
        tool = base[a["id"]]
        if count[tool] > 1:
            tool = f"{tool}.{_NOT_IN_NAME.sub('_', a['owner'] or '')}"[:100]
        if tool in taken:
            tool = f"{tool}.{a['id'][-8:]}"
        taken.add(tool)
        a["tool"] = tool
    return sorted(agents, key=lambda a: a["tool"])
