"""What connected participants may receive, follow and monitor, read from their memberships.

The gateway asks these on its reader connection (a connection attaching, a subscribe, a rescan after another
process wrote); it decides nothing about roles itself. Each answers for many participants or workspaces in one
read, a chunk of ids at a time.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Container

from . import queries
from .refusals import AdminError, Forbidden


def chunks(conn: sqlite3.Connection, sql: str, keys: list[str], size: int = 500):
    """The rows of `sql` (its `{}`: the marks of an IN list) for `keys`, a chunk of them at a time."""
    for i in range(0, len(keys), size):
        chunk = keys[i:i + size]
        yield from conn.execute(sql.format(",".join("?" * len(chunk))), chunk)


def access(conn: sqlite3.Connection, pids: list[str]) -> dict[str, dict[str, tuple[bool, bool]]]:
    """For each participant, its workspaces: {workspace: (receive, monitors)}; nothing for a revoked agent."""
    out: dict[str, dict[str, tuple[bool, bool]]] = {p: {} for p in pids}
    rows = chunks(conn, """SELECT m.participant, m.workspace, m.receive, m.monitor OR m.role IN ('owner', 'admin')
                           FROM memberships m LEFT JOIN agents a ON a.id = m.participant
                           WHERE m.participant IN ({}) AND coalesce(a.revoked, 0) = 0""", pids)
    for pid, ws, receive, monitor in rows:
        out[pid][ws] = (bool(receive), bool(monitor))
    return out


def members(conn: sqlite3.Connection, workspaces: list[str]) -> dict[str, dict[str, tuple]]:
    """For each workspace, who is in it with their role and permissions, as `list_members` lists them (a revoked
    agent is not): {workspace: {id: `queries.standing_of`}}."""
    out: dict[str, dict[str, tuple]] = {ws: {} for ws in workspaces}
    cols = ", ".join(f"m.{c}" for c in queries.STANDING)
    rows = chunks(conn, f"""SELECT m.workspace, m.participant, {cols} FROM memberships m
                            LEFT JOIN agents a ON a.id = m.participant
                            WHERE m.workspace IN ({{}}) AND coalesce(a.revoked, 0) = 0""", workspaces)
    for ws, pid, *rest in rows:
        out[ws][pid] = queries.standing_of(queries.standing(*rest))
    return out


def standings(conn: sqlite3.Connection, workspaces: list[str]) -> dict[str, tuple[dict[str, tuple], list[dict]]]:
    """For each workspace still there, its members (`members`) and its groups (`groups`), in one read."""
    here = {ws: m for ws, m in members(conn, workspaces).items() if m}  # (none: deleted; workspace_gone says)
    found = groups(conn, here)
    return {ws: (m, found[ws]) for ws, m in here.items()}


def groups(conn: sqlite3.Connection, here: dict[str, Container[str]]) -> dict[str, list[dict]]:
    """Each workspace's groups as `list_groups` lists them, given who is in it (`here`)."""
    out: dict[str, list[dict]] = {ws: [] for ws in here}
    for ws, name, group in chunks(conn, "SELECT workspace, name, members FROM groups WHERE workspace IN ({}) "
                                        "ORDER BY workspace, name", list(here)):
        out[ws].append(queries.group_row(name, group, here[ws]))
    return out


def follow(conn: sqlite3.Connection, pid: str, ws: str, monitor: bool) -> dict[str, tuple]:
    """Whether `pid` may follow `ws` (subscribe), and monitor it: a member (else NotFound, as for a workspace that
    does not exist) with receive (else Forbidden) and, to monitor, the monitor permission or the owner or admin
    role. Returns who is in it, as its `members` events are told against ({id: `queries.standing_of`})."""
    here = {m["id"]: queries.standing_of(m) for m in queries.members(conn, pid, ws)}  # NotFound if not a member
    if not queries.receives(conn, ws, pid):
        raise Forbidden
    if monitor and not queries.monitors(conn, ws, pid):
        raise AdminError("forbidden", "monitoring needs the monitor permission")
    return here
