"""Removing a person from a workspace or an organization (issue 18): the operation the admin CLI runs, and the
socket's `remove_member` and `remove_org_member` after their role checks (`actions`).

As when the person leaves (`admin.leave_workspace`, `admin.leave_org`), their agents there go with them and their
open connections lose what went (the gateway's rescan); unlike leaving, someone else decides, and an owner is never
removed (seed 003 §66: "set once at creation, never changed or removed"). A workspace their organization opens to
them stays joinable (`join_workspace`): to keep someone out, remove them from the organization, or restrict it.
"""

from __future__ import annotations

import sqlite3

from . import admin, reach
from .refusals import AdminError
from ..core import Role
from ..protocol.results import ErrorCode as E
from ..store.transactions import Tx


def _not_owner(role: str | None, word: str) -> None:
    if role is None:
        raise AdminError(E.NOT_A_MEMBER, f"that person is not in this {word}")
    if role == Role.OWNER:
        raise AdminError(E.OWNER_PERMANENT, f"an owner stays the {word}'s owner: never removed")


def remove_member(conn: sqlite3.Connection, ws_ref: str, who: str) -> dict:
    """`who` (a handle or a person's id) out of the workspace `ws_ref`, with their agents there."""
    with Tx(conn):
        ws = admin.workspace(conn, ws_ref)
        pid = admin.person(conn, who)
        admin.not_personal(conn, ws, "a personal workspace is its person's alone")
        _not_owner(admin.role_in(conn, ws, pid), "workspace")
        reach.leave_workspace(conn, ws, pid)
    return {"id": pid, "workspace": ws, "removed": True}


def remove_org_member(conn: sqlite3.Connection, org_ref: str, who: str) -> dict:
    """`who` out of the organization `org_ref`: the workspaces they reached through it go (with their agents
    there); one they were added to directly stays."""
    with Tx(conn):
        oid = admin.org(conn, org_ref)
        pid = admin.person(conn, who)
        _not_owner(admin.org_role(conn, oid, pid), "organization")
        conn.execute("DELETE FROM org_members WHERE org = ? AND person = ?", (oid, pid))
        left = reach.leave_org(conn, oid, pid)
    return {"id": pid, "org": oid, "removed": True, "left": left}
