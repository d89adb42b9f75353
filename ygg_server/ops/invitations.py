"""Invitations (issue 18): a person joins another's workspace or organization only by accepting one.

Over the socket, `add_member` and `add_org_member` for a person not yet in the place invite them (`invite`): the
invitation waits for its invitee's `accept_invitation` or `decline_invitation`, and the inviter is answered the
same whether the handle is a person's or not, whether that person is deactivated or already invited (no handle
can be told from a made-up one). The operator's admin CLI still adds people directly (`admin.add_member`).

Accepting, the invitee chooses whether their agents follow them there (`agents`, default no): into the
workspace now, or, for an organization, into its workspaces now and later (`org_members.agents`, `reach`).
An invitation is good while its inviter may still invite there (an owner or an admin; an owner for a role above
member); else accepting it is `not_found`, and it is gone.
"""

from __future__ import annotations

import sqlite3
import uuid

from . import auth, reach
from .refusals import AdminError, NotFound
from .. import audit
from ..core import Role
from ..store.transactions import Tx

WORKSPACE, ORG = "workspace", "org"
ADMINS = (Role.OWNER, Role.ADMIN)
_ROLES = {WORKSPACE: ("memberships", "workspace", "participant"), ORG: ("org_members", "org", "person")}


def _role(conn: sqlite3.Connection, kind: str, place: str, pid: str) -> str | None:
    table, col, who = _ROLES[kind]
    row = conn.execute(f"SELECT role FROM {table} WHERE {col} = ? AND {who} = ?", (place, pid)).fetchone()
    return row[0] if row else None


def _may_give(inviter_role: str | None, role: str) -> bool:
    """Seed 003 §66: owners and admins invite; only an owner gives a role above member."""
    return inviter_role in ADMINS and (role not in ADMINS or inviter_role == Role.OWNER)


def invite(conn: sqlite3.Connection, kind: str, place: str, inviter: str, handle: str, role: str, now: int) -> dict:
    """Invite @`handle` into the workspace or organization `place` (its id, already checked to be one the inviter
    may invite into) with `role`. The answer says only what was asked, the same for any handle; when an invitation
    was made (or renewed) it carries `_notify` (the invitee and the invitation, for their connections: the gateway
    takes it out of the answer)."""
    with Tx(conn):
        row = auth.active_person(conn, handle)  # (`Alice` invites `alice`)
        pid = row[0] if row else None
        if pid is not None and (pid == inviter or _role(conn, kind, place, pid) is not None):
            pid = None  # (already in: nothing to invite to)
        if pid is not None:
            conn.execute(
                """INSERT INTO invitations (id, kind, place, invitee, inviter, role, created_at) VALUES (?,?,?,?,?,?,?)
                   ON CONFLICT (kind, place, invitee) DO UPDATE SET inviter = excluded.inviter, role = excluded.role,
                   created_at = excluded.created_at""", (str(uuid.uuid4()), kind, place, pid, inviter, role, now))
    audit.record("invited", participant=inviter, kind=kind, place=place, handle=handle, role=role,
                 invitee=pid)  # (the log says whom; the inviter is not told)
    out = {kind: place, "handle": "@" + handle, "role": role, "invited": True}
    if pid is not None:
        made = next(iter(mine(conn, pid, (kind, place))), None)
        if made is not None:
            out["_notify"] = (pid, {"op": "event", "kind": "invitation", "invitation": made})
    return out


SHOWN = 100  # invitations one answer lists at most (the newest): however many places invite one person, the answer
# stays far under the client's frame limit and its reading costs a few hundred queries, not one per invitation


def mine(conn: sqlite3.Connection, pid: str, at: tuple[str, str] | None = None, limit: int = SHOWN) -> list[dict]:
    """A person's invitations waiting for their answer, the newest `limit` first (or only the one to `at`, a (kind,
    place)): what, where, from whom, as what."""
    out = []
    where, args = ("invitee = ?", (pid,)) if at is None else ("invitee = ? AND kind = ? AND place = ?", (pid, *at))
    for iid, kind, place, inviter, role, made in conn.execute(
            f"""SELECT id, kind, place, inviter, role, created_at FROM invitations WHERE {where}
                ORDER BY created_at DESC, id LIMIT ?""", (*args, limit)).fetchall():
        if kind == WORKSPACE:
            found = conn.execute("""SELECT w.name, o.name FROM workspaces w JOIN orgs o ON o.id = w.org
                                    WHERE w.id = ?""", (place,)).fetchone()
        else:
            found = conn.execute("SELECT name, name FROM orgs WHERE id = ?", (place,)).fetchone()
        by = conn.execute("SELECT handle FROM people WHERE id = ?", (inviter,)).fetchone()
        if found is None or by is None:
            continue  # (the place was deleted: accepting it is not_found)
        out.append({"id": iid, "kind": kind, kind: place, "name": found[0], "org_name": found[1],
                    "inviter": "@" + by[0], "role": role, "created_at": made})
    return out


def _take(conn: sqlite3.Connection, pid: str, iid: object) -> tuple[str, str, str, str]:
    """Inside a `Tx`: `pid`'s invitation `iid`, deleted: (kind, place, inviter, role); another's, or none, is
    `NotFound`."""
    row = conn.execute("SELECT kind, place, inviter, role FROM invitations WHERE id = ? AND invitee = ?",
                       (iid if isinstance(iid, str) else "", pid)).fetchone()
    if row is None:
        raise NotFound
    conn.execute("DELETE FROM invitations WHERE id = ?", (iid,))
    return row


def accept(conn: sqlite3.Connection, pid: str, iid: object, agents: bool, now: int) -> dict:
    """`pid` accepts: it joins the place with the role given (its agents with it if `agents`); the invitation goes."""
    with Tx(conn):
        kind, place, inviter, role = _take(conn, pid, iid)
        if not _may_give(_role(conn, kind, place, inviter), role):
            raise NotFound  # (the inviter may no longer invite there, or the place is gone)
        if kind == WORKSPACE:
            reach.add_direct(conn, place, pid, Role(role), now)
            left = reach.bring_agents(conn, place, pid, now) if agents else []
        else:
            conn.execute("""INSERT INTO org_members (org, person, role, agents) VALUES (?,?,?,?)
                            ON CONFLICT (org, person) DO UPDATE SET role = excluded.role, agents = excluded.agents""",
                         (place, pid, role, int(agents)))
            left = reach.open_org_to(conn, place, pid, role, now)
    audit.record("invitation_accepted", participant=pid, kind=kind, place=place, role=role, inviter=inviter,
                 agents=agents)
    return {"id": iid, kind: place, "role": role, "joined": True, "agents": agents, "left_out": left}


def decline(conn: sqlite3.Connection, pid: str, iid: object) -> dict:
    with Tx(conn):
        kind, place, inviter, _ = _take(conn, pid, iid)
    audit.record("invitation_declined", participant=pid, kind=kind, place=place, inviter=inviter)
    return {"id": iid, "declined": True}


def check_role(role: str, kind: str) -> None:
    allowed = ("admin", "member", "viewer") if kind == WORKSPACE else ("admin", "member")
    if role not in allowed:
        raise AdminError("bad_role", f"an invitation's roles: {', '.join(allowed)} (an owner is never invited)")
