"""The socket's management verbs: who may, then the operation the admin CLI runs too (`admin`, `permissions`).

One function per op (as zulip's `zerver/actions/`), `fn(conn, who, frame) -> dict`, run on the gateway's
management connection; the role check is inside it. A workspace or an organization the asker is not in is
`NotFound`, exactly as one that does not exist; a role that does not allow it is `AdminError("forbidden", …)`.
Only a person manages (`person_only`). `ACTIONS`: op -> (function, whether it writes). The ops of `TIMED`
stamp what they make: they take the time too, `fn(conn, who, frame, now)` (`now` in microseconds, from the
gateway's clock).
"""

from __future__ import annotations

import sqlite3
from typing import Callable

from . import admin, permissions, queries
from .refusals import AdminError, NotFound, person_only
from ..core import Role
from ..protocol import frames

ADMINS = (Role.OWNER, Role.ADMIN)


def _role(conn: sqlite3.Connection, role_of: Callable, where: str, who: str) -> str:
    """`who`'s role in a workspace or an organization (`admin.role_in`, `admin.org_role`); one it is not in is
    answered as one that does not exist."""
    mine = role_of(conn, where, who)
    if mine is None:
        raise NotFound
    return mine


def _hidden(unknown: str, fn: Callable, *args, **kw) -> dict:
    """`fn(*args, **kw)`, its `unknown` refusal answered `not_found`, exactly as an id one may not see."""
    try:
        return fn(*args, **kw)
    except AdminError as e:
        if e.code == unknown:
            raise NotFound from None
        raise


def _handle(handle: str) -> str:
    return "@" + handle.removeprefix("@")  # by handle only: a participant id from elsewhere is not found


def create_org(conn, who: str, f: frames.CreateOrg, now: int) -> dict:
    """Seed 002: everyone "can create or join more" organizations, and "Each person gets one Free
    organization": one made here is Free (a Team plan is licensed, so the operator sets it)."""
    person_only(who)
    return admin.add_org(conn, f.name, who, "free", now=now)


def create_workspace(conn, who: str, f: frames.CreateWorkspace, now: int) -> dict:
    """In the person's own organization, or in `org` if they are in it (admin.add_workspace checks their role)."""
    person_only(who)
    if f.org is not None:
        _role(conn, admin.org_role, f.org, who)
    return admin.add_workspace(conn, f.name.strip(), who, f.restricted, f.org, now=now)


def add_org_member(conn, who: str, f: frames.AddOrgMember, now: int) -> dict:
    """Seed 002: invite people from Organizations; as for workspaces (seed 003 §66), admins invite members,
    only the owner makes admins or changes a role."""
    person_only(who)
    mine = _role(conn, admin.org_role, f.org, who)
    handle = _handle(f.handle)
    pid = admin.person(conn, handle)
    if mine not in ADMINS or (mine != Role.OWNER and (f.role != "member" or admin.org_role(conn, f.org, pid) is not None)):
        raise AdminError("forbidden", "admins invite members; only the owner gives or changes roles")
    return admin.add_org_member(conn, f.org, handle, f.role, now=now)


def add_member(conn, who: str, f: frames.AddMember, now: int) -> dict:
    """Seed 003 §66: owners and admins invite; only the owner gives or changes roles above member."""
    person_only(who)
    handle = _handle(f.handle)
    mine = _role(conn, admin.role_in, f.workspace, who)
    if mine not in ADMINS or (f.role in ADMINS and mine != Role.OWNER):
        raise AdminError("forbidden", "admins invite members and viewers; only the owner gives roles")
    pid = admin.person(conn, handle)
    if admin.role_in(conn, f.workspace, pid) is not None and mine != Role.OWNER:
        raise AdminError("forbidden", "only the owner changes a member's role")
    return admin.add_member(conn, f.workspace, handle, f.role, now=now)


def leave_org(conn, who: str, f: frames.LeaveOrg) -> dict:
    """A person leaves an organization they are in (not its last owner: `last_owner`)."""
    person_only(who)
    _role(conn, admin.org_role, f.org, who)
    return admin.leave_org(conn, f.org, who)


def leave_workspace(conn, who: str, f: frames.LeaveWorkspace) -> dict:
    """A person leaves one workspace, as one leaves a channel (not a personal one, nor as its last owner); their
    other connections lose what went as on any revocation (`workspace_gone`, the gateway's rescan)."""
    person_only(who)
    _role(conn, admin.role_in, f.workspace, who)
    return admin.leave_workspace(conn, f.workspace, who)


def join_workspace(conn, who: str, f: frames.JoinWorkspace, now: int) -> dict:
    """A person joins, by themselves, a workspace their organization opens to them (`list_joinable`), by its id;
    any other is `not_found` exactly as a made-up id; their other connections get `workspace_added`."""
    person_only(who)
    return _hidden("unknown_workspace", admin.join_workspace, conn, f.workspace, who, True, now=now)


def delete_workspace(conn, who: str, f: frames.DeleteWorkspace) -> dict:
    """Seed 003 §66: the owner keeps "deleting the workspace"; §65: a personal one never is."""
    person_only(who)
    if _role(conn, admin.role_in, f.workspace, who) != Role.OWNER:
        raise AdminError("forbidden", "only the workspace's owner deletes it")
    return admin.delete_workspace(conn, f.workspace)


def set_permissions(conn, who: str, f: frames.SetPermissions) -> dict:
    """Seed 002: "Admins manage everything in it; members add and change only their own agents", and
    "Monitor: set by a workspace admin"."""
    person_only(who)
    changes = f.changes()
    mine = _role(conn, admin.role_in, f.workspace, who)
    aid, owner = permissions.target(conn, f.workspace, f.agent)
    if mine not in ADMINS:
        if mine == Role.VIEWER or owner != who:
            raise AdminError("forbidden", "members change only their own agents' permissions")
        if "monitor" in changes:
            raise AdminError("forbidden", "monitor is set by a workspace admin")
    return permissions.set_permissions(conn, f.workspace, aid, changes)


def set_restricted(conn, who: str, f: frames.SetRestricted, now: int) -> dict:
    """Seed 002: "A restricted workspace is open only to the organization's admins and the people added to
    it directly"; the workspace's owners and admins decide."""
    person_only(who)
    if _role(conn, admin.role_in, f.workspace, who) not in ADMINS:
        raise AdminError("forbidden", "only the workspace's owners and admins restrict it")
    return admin.set_restricted(conn, f.workspace, f.restricted, now=now)


def add_agent(conn, who: str, f: frames.AddAgent, now: int) -> dict:
    """A person makes an agent of their own (in all their workspaces, or pinned to one); the key is shown once."""
    person_only(who)
    if f.workspace is not None:
        _role(conn, admin.role_in, f.workspace, who)
    return admin.add_agent(conn, f.name, who, f.workspace, now=now)


def _own_agent(conn, who: str, agent: str) -> str:
    """The id of `who`'s agent `agent` (id or name); another's, or a revoked one, is answered as one that does
    not exist."""
    person_only(who)
    aid = admin.own_agent(conn, who, agent)
    if aid is None:
        raise NotFound
    return aid


def revoke_agent(conn, who: str, f: frames.RevokeAgent) -> dict:
    """Seed 002: agents belong to a person; its owner retires one (or a leaked key): its key is refused from
    now on and its open connections close (the gateway's rescan, on every node)."""
    return admin.revoke_agent(conn, _own_agent(conn, who, f.agent))


def rotate_key(conn, who: str, f: frames.RotateKey) -> dict:
    """A new key for one's own agent, shown once; the old key is refused at once and the sessions it opened
    end, so its open connections close and sign in again with the new key."""
    return admin.rotate_key(conn, _own_agent(conn, who, f.agent))


def _group_admin(conn, who: str, ws: str) -> None:
    """A workspace's owners and admins make and remove its groups."""
    person_only(who)
    if _role(conn, admin.role_in, ws, who) not in ADMINS:
        raise AdminError("forbidden", "the workspace's owners and admins make and change its groups")


def add_group(conn, who: str, f: frames.AddGroup) -> dict:
    """Seed 000: "Agents can be gathered in groups (group:<name>) to address several at once": a workspace's
    owners and admins make a group, or name its members anew (adding and removing them)."""
    _group_admin(conn, who, f.workspace)
    return admin.add_group(conn, f.workspace, f.name, f.members)


def remove_group(conn, who: str, f: frames.RemoveGroup) -> dict:
    """A workspace's owners and admins remove one of its groups; a group that does not exist is `not_found`,
    exactly as one in a workspace one is not in."""
    _group_admin(conn, who, f.workspace)
    return _hidden("unknown_group", admin.remove_group, conn, f.workspace, f.name)


def my_agents(conn, who: str, f: frames.MyAgents) -> list[dict]:
    """A person's own agents, wherever they are (pinned to a workspace they left too): what they may revoke
    or rotate (the gateway adds whether each is online)."""
    person_only(who)
    return queries.my_agents(conn, who)


ACTIONS: dict[str, tuple[Callable, bool]] = {
    "create_org": (create_org, True), "create_workspace": (create_workspace, True),
    "add_org_member": (add_org_member, True), "add_member": (add_member, True), "leave_org": (leave_org, True),
    "leave_workspace": (leave_workspace, True), "join_workspace": (join_workspace, True),
    "delete_workspace": (delete_workspace, True), "set_permissions": (set_permissions, True),
    "set_restricted": (set_restricted, True), "add_agent": (add_agent, True), "revoke_agent": (revoke_agent, True),
    "rotate_key": (rotate_key, True), "add_group": (add_group, True), "remove_group": (remove_group, True),
}
# the ops that take the time (`fn(conn, who, frame, now)`)
TIMED = frozenset({"create_org", "create_workspace", "add_org_member", "add_member", "join_workspace",
                   "set_restricted", "add_agent"})
