"""Who reaches a workspace: its own members, its organization's members, and their agents.

Seed 002: "A restricted workspace is open only to the organization's admins and the people added to it
directly, not to every member" - so a workspace that is not restricted is open to every member of its
organization. Access is kept as membership rows, the one thing the core, the queries and the gateway read:
a row is *direct* (the person was added to that workspace) or comes through the organization (`direct` 0),
and only the latter goes when a workspace is restricted or an organization admin becomes a member again.
A personal workspace (seed 003 §65) is its person's alone: it is never opened to the organization.

Agents follow their owner (seed 003 §19) into every workspace the owner reaches, unless pinned, as long as
the organization's plan has room (seed 002: "An agent counts once per organization it is in, while its
token is valid"); an agent its plan leaves out is reported, not failed.

Leaving keeps what the workspace's admins decided: the role and permissions of the person who leaves, and of
their agents there, are kept (`departed`) and given back when they come back by themselves or through the
organization (`_welcome`), the role no higher than the way back gives: a viewer comes back a viewer, a member
whose send was taken away comes back without it, an agent keeps who it may message and take messages from.
A person added again directly by an admin has the role the admin gives (their agents still keep theirs).
"""

from __future__ import annotations

import sqlite3

import msgspec

from ..core import Role, plan_of
from ..store import loaders
from ..store.transactions import row_lock

ORG_ADMINS = (Role.OWNER, Role.ADMIN)


def workspace_role(org_role: str) -> Role:
    """The role an organization's member has in its workspaces: admins manage everything (seed 002)."""
    return Role.ADMIN if org_role in ORG_ADMINS else Role.MEMBER


def opens(restricted, org_role: str) -> bool:
    """Seed 002: the organization opens a workspace to its member with `org_role` unless it is restricted,
    and a restricted one to its owner and admins."""
    return not restricted or org_role in ORG_ADMINS


def add_direct(conn: sqlite3.Connection, ws: str, pid: str, role: Role, now: int) -> None:
    """`pid` added to `ws` itself: the row stays whatever its organization does (with the role given, whatever
    it had when it left)."""
    conn.execute(
        """INSERT INTO memberships (workspace, participant, role, created_at, direct) VALUES (?,?,?,?,1)
           ON CONFLICT (workspace, participant) DO UPDATE SET role = excluded.role, direct = 1""",
        (ws, pid, role, now),
    )
    conn.execute("DELETE FROM departed WHERE workspace = ? AND participant = ?", (ws, pid))


def _add_through_org(conn: sqlite3.Connection, ws: str, pid: str, role: Role, now: int) -> None:
    """`pid` reaches `ws` through its organization (taking back what it had if it left); a direct row is left as
    it is."""
    added = conn.execute(
        """INSERT INTO memberships (workspace, participant, role, created_at, direct) VALUES (?,?,?,?,0)
           ON CONFLICT (workspace, participant) DO NOTHING""", (ws, pid, role, now)).rowcount
    if added:
        _welcome(conn, ws, pid, role)
    else:
        conn.execute("UPDATE memberships SET role = ? WHERE workspace = ? AND participant = ? AND direct = 0",
                     (role, ws, pid))


# From the most to the least a role may do: one who comes back gets the lesser of the two roles.
_RANK = (Role.OWNER, Role.ADMIN, Role.MEMBER, Role.VIEWER)
_KEPT = ("role", "send", "receive", "monitor", "can_message", "takes_from")


def _remember(conn: sqlite3.Connection, ws: str, pids: list[str]) -> None:
    """`pids` leave `ws`: their role and permissions there are kept for their coming back."""
    cols = ", ".join(_KEPT)
    conn.execute(f"""INSERT INTO departed (workspace, participant, {cols})
                     SELECT workspace, participant, {cols} FROM memberships
                     WHERE workspace = ? AND participant IN ({",".join("?" * len(pids))})
                     ON CONFLICT (workspace, participant) DO UPDATE SET
                     {", ".join(f"{c} = excluded.{c}" for c in _KEPT)}""", (ws, *pids))


def _welcome(conn: sqlite3.Connection, ws: str, pid: str, given: Role) -> None:
    """`pid`'s new row in `ws` (with role `given`) takes back what it had when it left (the lesser role of the two)."""
    kept = conn.execute(f"SELECT {', '.join(_KEPT)} FROM departed WHERE workspace = ? AND participant = ?",
                        (ws, pid)).fetchone()
    if kept is None:
        return
    role = max(Role(kept[0]), Role(given), key=_RANK.index)
    conn.execute(f"UPDATE memberships SET {', '.join(f'{c} = ?' for c in _KEPT)} WHERE workspace = ? AND participant = ?",
                 (role, *kept[1:], ws, pid))
    conn.execute("DELETE FROM departed WHERE workspace = ? AND participant = ?", (ws, pid))


def _leave(conn: sqlite3.Connection, ws: str, pid: str, direct_too: bool = False) -> bool:
    """`pid`, there through the organization only (or at all, `direct_too`), no longer reaches `ws`; nor do
    its agents. False: it stays (added to `ws` directly, or never there)."""
    if conn.execute("SELECT 1 FROM memberships WHERE workspace = ? AND participant = ?"
                    + ("" if direct_too else " AND direct = 0"), (ws, pid)).fetchone() is None:
        return False  # added to it directly (or never there): stays, with its agents
    gone = [pid, *(a for (a,) in conn.execute(
        """SELECT m.participant FROM memberships m JOIN agents a ON a.id = m.participant
           WHERE m.workspace = ? AND a.owner = ?""", (ws, pid)).fetchall())]
    _remember(conn, ws, gone)
    conn.execute(f"DELETE FROM memberships WHERE workspace = ? AND participant IN ({','.join('?' * len(gone))})",
                 (ws, *gone))
    return True


def open_workspace(conn: sqlite3.Connection, ws: str, now: int) -> list[str]:
    """Give everyone of `ws`'s organization who may reach it a row there; return the agents left out."""
    org, restricted, personal = conn.execute(
        "SELECT org, restricted, personal_of FROM workspaces WHERE id = ?", (ws,)).fetchone()
    if personal is not None:
        return []
    left: list[str] = []
    for pid, role, agents in conn.execute("SELECT person, role, agents FROM org_members WHERE org = ? ORDER BY person",
                                          (org,)).fetchall():
        if not opens(restricted, role):
            continue
        _add_through_org(conn, ws, pid, workspace_role(role), now)
        if agents:
            left += bring_agents(conn, ws, pid, now)
    return left


def close_workspace(conn: sqlite3.Connection, ws: str) -> None:
    """`ws` was restricted: who reached it through the organization without being an admin leaves."""
    org = conn.execute("SELECT org FROM workspaces WHERE id = ?", (ws,)).fetchone()[0]
    for (pid,) in conn.execute(
            """SELECT m.participant FROM memberships m LEFT JOIN org_members o ON o.org = ? AND o.person = m.participant
               WHERE m.workspace = ? AND m.direct = 0 AND coalesce(o.role, 'member') NOT IN ('owner', 'admin')""",
            (org, ws)).fetchall():
        _leave(conn, ws, pid)


def open_org_to(conn: sqlite3.Connection, org: str, pid: str, role: str, now: int) -> list[str]:
    """`pid` is now `role` in `org`: it reaches the workspaces that role opens, and no more; agents left out."""
    left: list[str] = []
    for ws, restricted in conn.execute(
            "SELECT id, restricted FROM workspaces WHERE org = ? AND personal_of IS NULL ORDER BY created_at"
            + row_lock(conn), (org,)).fetchall():
        if not opens(restricted, role):
            _leave(conn, ws, pid)
            continue
        _add_through_org(conn, ws, pid, workspace_role(role), now)
        if agents_follow(conn, org, pid):
            left += bring_agents(conn, ws, pid, now)
    return left


def agents_follow(conn: sqlite3.Connection, org: str, pid: str) -> bool:
    """Whether `pid` lets its agents follow it into `org`'s workspaces (issue 18: chosen when it accepted the
    invitation into the organization; yes for a member an operator added)."""
    row = conn.execute("SELECT agents FROM org_members WHERE org = ? AND person = ?", (org, pid)).fetchone()
    return row is None or bool(row[0])


def leave_org(conn: sqlite3.Connection, org: str, pid: str) -> list[str]:
    """`pid` left `org`: it no longer reaches the workspaces it reached through it, nor do its agents (one
    it was added to directly stays); return the workspaces it left."""
    return [ws for (ws,) in conn.execute(
        "SELECT id FROM workspaces WHERE org = ? AND personal_of IS NULL ORDER BY created_at", (org,)).fetchall()
        if _leave(conn, ws, pid)]


def leave_workspace(conn: sqlite3.Connection, ws: str, pid: str) -> bool:
    """`pid` left `ws` itself (as one leaves a channel): its membership goes, direct or through the
    organization, with its agents' there."""
    return _leave(conn, ws, pid, direct_too=True)


def joinable(conn: sqlite3.Connection, pid: str, ws: str | None = None) -> list[tuple[str, str, str, bool, str]]:
    """The workspaces `pid`'s organizations open to it that it is not in (left, or never reached): (id, name,
    org, restricted, its organization role), oldest first; only `ws` if given. Never a personal one."""
    rows = conn.execute(
        """SELECT w.id, w.name, w.org, w.restricted, o.role FROM workspaces w
           JOIN org_members o ON o.org = w.org AND o.person = ?
           WHERE w.personal_of IS NULL"""
        + ("" if ws is None else " AND w.id = ?") +
        """ AND NOT EXISTS (SELECT 1 FROM memberships m WHERE m.workspace = w.id AND m.participant = ?)
           ORDER BY w.created_at, w.id""", (pid, *(() if ws is None else (ws,)), pid)).fetchall()
    return [(i, n, o, bool(r), role) for i, n, o, r, role in rows if opens(r, role)]


def join_workspace(conn: sqlite3.Connection, ws: str, pid: str, now: int) -> list[str] | None:
    """`pid` joins `ws` by itself, as through its organization when it opened `ws` to it, with its agents;
    return the agents the plan left out, or None: its organizations do not open `ws` to it (or it is in).

    PostgreSQL: the workspace's row and `pid`'s organization membership are locked (`FOR SHARE`) before they
    are judged, so a restriction, a demotion or a leave another connection has written but not committed is
    waited for and judged after (else its rescan of the rows through the organization would miss this one);
    SQLite's BEGIN IMMEDIATE already lets one writer at a time judge."""
    if lock := row_lock(conn):
        conn.execute("""SELECT 1 FROM workspaces w JOIN org_members o ON o.org = w.org AND o.person = ?
                        WHERE w.id = ?""" + lock, (pid, ws)).fetchall()
    found = joinable(conn, pid, ws)
    if not found:
        return None
    _add_through_org(conn, ws, pid, workspace_role(found[0][4]), now)
    return bring_agents(conn, ws, pid, now) if agents_follow(conn, found[0][2], pid) else []


def agents_in_org(conn: sqlite3.Connection, org: str) -> int:
    """Seed 002: "An agent counts once per organization it is in, while its token is valid"."""
    return conn.execute(
        """SELECT count(DISTINCT m.participant) FROM memberships m JOIN workspaces w ON w.id = m.workspace
           JOIN agents a ON a.id = m.participant WHERE w.org = ? AND a.revoked = 0""", (org,)).fetchone()[0]


def _in_org(conn: sqlite3.Connection, org: str, aid: str) -> bool:
    return conn.execute(
        """SELECT 1 FROM memberships m JOIN workspaces w ON w.id = m.workspace
           WHERE m.participant = ? AND w.org = ? LIMIT 1""", (aid, org)).fetchone() is not None


def bring_agents(conn: sqlite3.Connection, ws: str, owner: str, now: int) -> list[str]:
    """Seed 003 §19: `owner`'s agents go with it into `ws`, unless pinned elsewhere or the organization's
    plan has no room for one more agent; return the ids of those left out for the plan. A workspace deleted
    meanwhile (PostgreSQL: its row is held from here, `row_lock`) gets none."""
    if conn.execute("SELECT 1 FROM workspaces WHERE id = ?" + row_lock(conn), (ws,)).fetchone() is None:
        return []
    org, *plan = loaders.org_of(conn, ws)
    limit = plan_of(*plan).agents
    left: list[str] = []
    for aid, pinned in conn.execute(
            "SELECT id, pinned FROM agents WHERE owner = ? AND revoked = 0 ORDER BY created_at, id", (owner,)).fetchall():
        if pinned is not None and ws not in msgspec.json.decode(pinned):
            continue
        if conn.execute("SELECT 1 FROM memberships WHERE workspace = ? AND participant = ?", (ws, aid)).fetchone():
            continue
        if limit is not None and not _in_org(conn, org, aid) and agents_in_org(conn, org) >= limit:
            left.append(aid)
            continue
        conn.execute("INSERT INTO memberships (workspace, participant, role, created_at) VALUES (?,?,?,?)",
                     (ws, aid, Role.MEMBER, now))
        _welcome(conn, ws, aid, Role.MEMBER)
    return left


def unpin(conn: sqlite3.Connection, ws: str) -> None:
    """A deleted workspace's pins go with it (seed 003 §19: pinned "to chosen workspaces"): each agent pinned
    there keeps its other pins, and one pinned there alone is pinned to none (`[]`), never unpinned (NULL, which
    would send it into every workspace of its owner). PostgreSQL: the agents' rows are held (`FOR UPDATE`), so
    two deletes at once each take their own pin from what the other left."""
    for aid, pinned in conn.execute("SELECT id, pinned FROM agents WHERE pinned LIKE ?" + row_lock(conn, "UPDATE"),
                                    (f'%"{ws}"%',)).fetchall():  # (a coarse filter: the ids are compared below)
        kept = [w for w in msgspec.json.decode(pinned) if w != ws]
        conn.execute("UPDATE agents SET pinned = ? WHERE id = ?", (msgspec.json.encode(kept).decode(), aid))


def leave_agent(conn: sqlite3.Connection, ws: str, aid: str) -> None:
    """Agent `aid` no longer in `ws` (unpinned from it): what the workspace's admins decided for it is kept for its
    coming back, as when a person leaves."""
    _remember(conn, ws, [aid])
    conn.execute("DELETE FROM memberships WHERE workspace = ? AND participant = ?", (ws, aid))
