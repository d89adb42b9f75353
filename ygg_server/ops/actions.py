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

from . import admin, hosting, invitations, listings, membership, permissions, queries
from .refusals import AdminError, NotFound, person_only
from .. import audit
from ..core import Role
from ..protocol import frames
from ..protocol.results import ErrorCode as E

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
    only the owner makes admins or changes a role. Issue 18: a person not in the organization is invited
    (`invitations.invite`: they join by accepting); a member's role is changed at once."""
    person_only(who)
    mine = _role(conn, admin.org_role, f.org, who)
    handle = f.handle.removeprefix("@")
    if mine not in ADMINS or (mine != Role.OWNER and f.role != "member"):
        raise AdminError("forbidden", "admins invite members; only the owner gives or changes roles")
    oid = admin.org(conn, f.org)
    pid = _member(conn, admin.org_role, oid, handle)
    if pid is None:
        invitations.check_role(f.role, invitations.ORG)
        return invitations.invite(conn, invitations.ORG, oid, who, handle, f.role, now)
    if mine != Role.OWNER:
        raise AdminError("forbidden", "admins invite members; only the owner gives or changes roles")
    out = admin.add_org_member(conn, oid, "@" + handle, f.role, now=now)
    audit.record("role_changed", participant=who, org=oid, member=pid, role=f.role)
    return out


def add_member(conn, who: str, f: frames.AddMember, now: int) -> dict:
    """Seed 003 §66: owners and admins invite; only the owner gives or changes roles above member. Issue 18: a
    person not in the workspace is invited (`invitations.invite`: they join by accepting, as themselves, with
    their agents only if they say so); a member's role is changed at once, by the owner."""
    person_only(who)
    handle = f.handle.removeprefix("@")
    mine = _role(conn, admin.role_in, f.workspace, who)
    if mine not in ADMINS or (f.role in ADMINS and mine != Role.OWNER):
        raise AdminError("forbidden", "admins invite members and viewers; only the owner gives roles")
    pid = _member(conn, admin.role_in, f.workspace, handle)
    if pid is None:
        admin.not_personal(conn, f.workspace, "a personal workspace is its person's alone")
        invitations.check_role(f.role, invitations.WORKSPACE)
        return invitations.invite(conn, invitations.WORKSPACE, f.workspace, who, handle, f.role, now)
    if mine != Role.OWNER:
        raise AdminError("forbidden", "only the owner changes a member's role")
    out = admin.add_member(conn, f.workspace, "@" + handle, f.role, now=now)
    audit.record("role_changed", participant=who, workspace=f.workspace, member=pid, role=f.role)
    return out


def _member(conn, role_of: Callable, where: str, handle: str) -> str | None:
    """The id of the person @`handle` when they are in the workspace or organization `where`; None for anyone
    else (a handle that is no one's included: the same answer follows)."""
    row = conn.execute("SELECT id FROM people WHERE handle = ?", (handle,)).fetchone()
    return row[0] if row and role_of(conn, where, row[0]) is not None else None


def remove_member(conn, who: str, f: frames.RemoveMember) -> dict:
    """Issue 18: a workspace's owners and admins remove a person from it (with their agents there); only the owner
    removes an admin, and an owner is never removed (seed 003 §66). A person not in it, or no person at all, is
    `not_a_member` alike."""
    return _remove(conn, who, admin.role_in, f.workspace, f.handle, membership.remove_member, "workspace")


def remove_org_member(conn, who: str, f: frames.RemoveOrgMember) -> dict:
    """Issue 18: an organization's owners and admins remove a person from it (the workspaces they reached through
    it go, as when they leave it); only the owner removes an admin; its owner is never removed."""
    return _remove(conn, who, admin.org_role, f.org, f.handle, membership.remove_org_member, "org")


def _remove(conn, who: str, role_of: Callable, where: str, handle: str, remove: Callable, kind: str) -> dict:
    person_only(who)
    mine = _role(conn, role_of, where, who)
    if mine not in ADMINS:
        raise AdminError("forbidden", "owners and admins remove members")
    if kind == "org":
        where = admin.org(conn, where)
    pid = _member(conn, role_of, where, handle.removeprefix("@"))
    if pid is None:
        raise AdminError(E.NOT_A_MEMBER, "that person is not in it")
    if role_of(conn, where, pid) == Role.ADMIN and mine != Role.OWNER:
        raise AdminError("forbidden", "only the owner removes an admin")
    out = remove(conn, where, pid)
    audit.record("member_removed", participant=who, kind=kind, place=where, member=pid)
    return out


def list_invitations(conn, who: str, f: frames.ListInvitations) -> dict:
    """A person's invitations waiting for their answer (`accept_invitation`, `decline_invitation`)."""
    person_only(who)
    found = invitations.mine(conn, who, limit=invitations.SHOWN + 1)
    return {"invitations": found[:invitations.SHOWN], "more": len(found) > invitations.SHOWN}


def accept_invitation(conn, who: str, f: frames.AcceptInvitation, now: int) -> dict:
    person_only(who)
    return invitations.accept(conn, who, f.invitation, f.agents, now)


def decline_invitation(conn, who: str, f: frames.DeclineInvitation) -> dict:
    person_only(who)
    return invitations.decline(conn, who, f.invitation)


def leave_org(conn, who: str, f: frames.LeaveOrg) -> dict:
    """A person leaves an organization they are in (not its last owner: `last_owner`)."""
    person_only(who)
    _role(conn, admin.org_role, f.org, who)
    out = admin.leave_org(conn, f.org, who)
    audit.record("org_left", participant=who, org=out["org"])
    return out


def leave_workspace(conn, who: str, f: frames.LeaveWorkspace) -> dict:
    """A person leaves one workspace, as one leaves a channel (not a personal one, nor as its last owner); their
    other connections lose what went as on any revocation (`workspace_gone`, the gateway's rescan)."""
    person_only(who)
    _role(conn, admin.role_in, f.workspace, who)
    out = admin.leave_workspace(conn, f.workspace, who)
    audit.record("workspace_left", participant=who, workspace=f.workspace)
    return out


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
    out = admin.delete_workspace(conn, f.workspace)
    audit.record("workspace_deleted", participant=who, workspace=f.workspace)
    return out


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
    out = permissions.set_permissions(conn, f.workspace, aid, changes)
    audit.record("permissions_changed", participant=who, workspace=f.workspace, agent=aid, changes=sorted(changes))
    return out


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


# --- where agents run, and the public directory (issue 24: ops/hosting.py, ops/listings.py) ---

def add_host(conn, who: str, f: frames.AddHost, now: int) -> dict:
    """A person's host for `ygg-agent host`; its key is shown once."""
    person_only(who)
    return hosting.add_host(conn, who, f.name, now=now)


def list_hosts(conn, who: str, f: frames.ListHosts) -> dict:
    person_only(who)
    return {"hosts": hosting.list_hosts(conn, who)}


def set_runtime(conn, who: str, f: frames.SetRuntime, now: int) -> dict:
    """Where one's own agent runs: on a host of one's own, or locally (its host assignment cleared)."""
    return hosting.set_runtime(conn, _own_agent(conn, who, f.agent), f.runtime, f.host, who, now=now)


def publish_agent(conn, who: str, f: frames.PublishAgent, now: int) -> dict:
    return listings.publish(conn, who, f.agent, now=now)


def unpublish_agent(conn, who: str, f: frames.UnpublishAgent) -> dict:
    return listings.unpublish(conn, who, f.agent)


def list_directory(conn, who: str, f: frames.ListDirectory) -> dict:
    return {"listings": listings.directory(conn)}


def copy_agent(conn, who: str, f: frames.CopyAgent, now: int) -> dict:
    if f.workspace is not None:
        _role(conn, admin.role_in, f.workspace, who)
    return listings.copy(conn, who, f.listing, f.name, f.workspace, now=now)


ACTIONS: dict[str, tuple[Callable, bool]] = {
    "create_org": (create_org, True), "create_workspace": (create_workspace, True),
    "add_org_member": (add_org_member, True), "add_member": (add_member, True), "leave_org": (leave_org, True),
    "leave_workspace": (leave_workspace, True), "join_workspace": (join_workspace, True),
    "delete_workspace": (delete_workspace, True), "set_permissions": (set_permissions, True),
    "set_restricted": (set_restricted, True), "add_agent": (add_agent, True), "revoke_agent": (revoke_agent, True),
    "rotate_key": (rotate_key, True), "add_group": (add_group, True), "remove_group": (remove_group, True),
    "remove_member": (remove_member, True), "remove_org_member": (remove_org_member, True),
    "list_invitations": (list_invitations, False), "accept_invitation": (accept_invitation, True),
    "decline_invitation": (decline_invitation, True),
    "add_host": (add_host, True), "list_hosts": (list_hosts, False), "set_runtime": (set_runtime, True),
    "publish_agent": (publish_agent, True), "unpublish_agent": (unpublish_agent, True),
    "list_directory": (list_directory, False), "copy_agent": (copy_agent, True),
}
# the ops that take the time (`fn(conn, who, frame, now)`)
TIMED = frozenset({"create_org", "create_workspace", "add_org_member", "add_member", "join_workspace",
                   "set_restricted", "add_agent", "accept_invitation", "add_host", "set_runtime", "publish_agent",
                   "copy_agent"})
