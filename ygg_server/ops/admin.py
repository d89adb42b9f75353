"""Operations on people, organizations, workspaces, memberships and agents.

Shared by the `ygg-server admin` commands and the socket's management ops; each
takes a connection, runs in one transaction, and returns a JSON-able dict or
raises AdminError with a reason. One that stamps a row takes the time as `now` (microseconds, UTC)
from its caller: it reads no clock itself (`ygg_server/clock.py`).
"""

from __future__ import annotations

import sqlite3
import uuid

import msgspec

from . import accounts, auth, reach
from .refusals import AdminError
from ..protocol import names
from .. import audit, idempotency
from ..core import (PLANS, POOL, SYSTEM, Conversation, ConversationKind, Role, Unresolved, View, fund as core_fund,
                   general_id, plan_of)
from ..store import loaders, writes
from ..store.transactions import Tx, row_lock, serialized


def new_id() -> str:
    return str(uuid.uuid4())


ID_PREFIXES = ("human.", "agent.", "system.")  # participant ids begin so: never a handle's or an agent name's start


def person_id() -> str:
    return f"human.{uuid.uuid4().hex}"


DEFAULT_PLAN = "team"  # a self-hosted server is licensed; `set-plan ORG free` applies the Free limits


# --- lookups ---

def person(conn: sqlite3.Connection, handle_or_id: str) -> str:
    """A person by id, else by handle (a handle may spell another person's id: it never stands for them)."""
    row = conn.execute("SELECT id FROM people WHERE id = ?", (handle_or_id,)).fetchone() or \
        conn.execute("SELECT id FROM people WHERE handle = ?", (handle_or_id.removeprefix("@"),)).fetchone()
    if not row:
        raise AdminError("unknown_person", f"no person {handle_or_id!r}")
    return row[0]


def workspace(conn: sqlite3.Connection, ref: str, lock: str = "SHARE", names: bool = True) -> str:
    """A workspace by id, else (`names`) by a name only one workspace has, or as `ORG/WORKSPACE` (`_in_org`: a
    name is unique only within its organization). A name is anyone's to choose: one that spells another
    workspace's id never stands for it, nor in its way. On PostgreSQL its row is held until the commit
    (`row_lock`: `lock` SHARE to write into it, UPDATE to delete it): a delete waits for the ops writing
    there, and an op that comes during a delete finds the workspace gone."""
    lock = row_lock(conn, lock)
    rows = conn.execute("SELECT id FROM workspaces WHERE id = ?" + lock, (ref,)).fetchall()
    if not rows and names:
        named = {r[0] for r in conn.execute("SELECT id FROM workspaces WHERE name = ?" + lock, (ref,))}
        rows = [(ws,) for ws in named | _in_org(conn, ref, lock)]
    if len(rows) != 1:
        raise AdminError("unknown_workspace", f"no workspace {ref!r}" if not rows else
                         f"{ref!r} names several workspaces; use the id, or ORG/WORKSPACE (the organization's name "
                         "or id, or its owner's handle, then the workspace's name)")
    return rows[0][0]


def _in_org(conn: sqlite3.Connection, ref: str, lock: str) -> set[str]:
    """The workspaces `ref` names as ORG/WORKSPACE: the organization (`_orgs_named`), then the workspace's name in
    it; split at each `/` in turn, since either name may hold one."""
    found: set[str] = set()
    for at in (i for i, ch in enumerate(ref) if ch == "/"):
        for oid in _orgs_named(conn, ref[:at]):
            found |= {r[0] for r in conn.execute("SELECT id FROM workspaces WHERE org = ? AND name = ?" + lock,
                                                 (oid, ref[at + 1:]))}
    return found


def _orgs_named(conn: sqlite3.Connection, ref: str) -> set[str]:
    """The organizations `ref` may stand for: by id, by name (one owner's are told apart by name, two owners' may
    share one), or its owner's handle (their own organization, as `org` takes it)."""
    found = {r[0] for r in conn.execute("SELECT id FROM orgs WHERE id = ? OR name = ?", (ref, ref))}
    row = conn.execute("SELECT id FROM people WHERE handle = ?", (ref,)).fetchone()
    if row and (own := conn.execute("SELECT id FROM orgs WHERE owner = ? ORDER BY created_at LIMIT 1",
                                    (row[0],)).fetchone()):
        found.add(own[0])
    return found


def agent(conn: sqlite3.Connection, ref: str) -> str:
    """An agent by id, `name@ownerhandle`, or a name no one else's agent has."""
    if "@" in ref:
        name, handle = ref.split("@", 1)
        rows = conn.execute(
            "SELECT a.id FROM agents a JOIN people p ON p.id = a.owner WHERE a.name = ? AND p.handle = ?", (name, handle)
        ).fetchall()
    else:
        rows = conn.execute("SELECT id FROM agents WHERE id = ? OR name = ?", (ref, ref)).fetchall()
    if len(rows) != 1:
        raise AdminError("unknown_agent", f"no agent {ref!r}" if not rows else f"{ref!r} is ambiguous; say name@owner")
    return rows[0][0]


def org_owned_by(conn: sqlite3.Connection, pid: str) -> tuple[str, str]:
    row = conn.execute("SELECT id, plan FROM orgs WHERE owner = ? ORDER BY created_at LIMIT 1", (pid,)).fetchone()
    if not row:
        raise AdminError("unknown_org", "that person has no organization")
    return row


def org(conn: sqlite3.Connection, ref: str) -> str:
    """An organization by id, or by its owner's handle (their own organization)."""
    row = conn.execute("SELECT id FROM orgs WHERE id = ?", (ref,)).fetchone()
    if row:
        return row[0]
    try:
        return org_owned_by(conn, person(conn, ref))[0]
    except AdminError:
        raise AdminError("unknown_org", f"no organization {ref!r}") from None


def org_role(conn: sqlite3.Connection, org_id: str, pid: str) -> str | None:
    row = conn.execute("SELECT role FROM org_members WHERE org = ? AND person = ?", (org_id, pid)).fetchone()
    return row[0] if row else None


# --- mutations ---

def _named(kind: str, value, trim: bool = True, code: str = "bad_name") -> str:
    """`value` as `names.clean` keeps it; its refusal an AdminError (`code`) naming the rule broken."""
    try:
        return names.clean(kind, value, trim=trim)
    except names.BadName as e:
        raise AdminError(code, e.detail) from None


# Names one place holds once: kind -> (the names already in a place, what the refusal calls that place).
_ONCE = {"workspace": ("SELECT name FROM workspaces WHERE org = ?", "this organization has a workspace"),  # personal too
         "org": ("SELECT name FROM orgs WHERE owner = ?", "this person owns an organization")}


def _name_free(conn: sqlite3.Connection, kind: str, where: str, name: str) -> None:
    """Refused `name_taken` when the place `where` (an organization; an owner) holds a `kind` called `name`
    written another way: compared trimmed and case-folded, as people read names. Checked, then written: on
    PostgreSQL the checks in one place take turns (`serialized`)."""
    sql, what = _ONCE[kind]
    serialized(conn, f"names:{kind}:{where}")
    folded = name.casefold()
    if any(n.strip().casefold() == folded for (n,) in conn.execute(sql, (where,)).fetchall()):
        raise AdminError("name_taken", f"{what} called {name!r} already; pick another name")


def _not_personal(conn: sqlite3.Connection, ws: str, detail: str) -> None:
    """Seed 003 §65: a personal workspace is its person's alone, never deleted, left or shared."""
    if conn.execute("SELECT personal_of FROM workspaces WHERE id = ?", (ws,)).fetchone()[0] is not None:
        raise AdminError("personal_workspace", detail)


not_personal = _not_personal


def _make_workspace(conn, org: str, name: str, owner: str, now: int, personal: bool, restricted: bool = False) -> list[str]:
    """A workspace, its General, its owner (and their agents), and the organization's members it is open to;
    returns [id, *agents the plan left out]."""
    ws = new_id()
    conn.execute(
        "INSERT INTO workspaces (id, org, name, restricted, personal_of, created_at) VALUES (?,?,?,?,?,?)",
        (ws, org, name, int(restricted or personal), owner if personal else None, now),
    )
    conn.execute(
        "INSERT INTO conversations (id, workspace, kind, name, members, created_at) VALUES (?,?,?,?,?,?)",
        (general_id(ws), ws, ConversationKind.GENERAL, "General", "[]", now),
    )
    reach.add_direct(conn, ws, owner, Role.OWNER, now)
    left = reach.bring_agents(conn, ws, owner, now)
    return [ws, *left, *reach.open_workspace(conn, ws, now)]


def add_person(conn: sqlite3.Connection, handle: str, password: str, plan: str = DEFAULT_PLAN, *, now: int) -> dict:
    """A person, their own organization, and their one personal workspace (seed 002, seed 003 §65)."""
    _named("handle", handle, trim=False, code="bad_handle")
    if not handle or not handle.replace("_", "").replace("-", "").replace(".", "").isalnum() \
            or handle.startswith(ID_PREFIXES):
        raise AdminError("bad_handle", "a handle is letters, digits, '-', '_' and '.', and does not begin as an id "
                                       f"does ({', '.join(ID_PREFIXES)})")
    if plan not in PLANS:
        raise AdminError("bad_plan", f"plans: {', '.join(PLANS)}")
    hashed = auth.hash_password(accounts.password_rule(password))
    with Tx(conn):
        key = accounts.claim_handle(conn, handle)
        pid = person_id()
        conn.execute("INSERT INTO people (id, handle, password_hash, created_at, handle_key) VALUES (?,?,?,?,?)",
                     (pid, handle, hashed, now, key))
        org = new_id()
        conn.execute("INSERT INTO orgs (id, name, plan, owner, created_at) VALUES (?,?,?,?,?)",
                     (org, f"{handle}'s organization", plan, pid, now))
        conn.execute("INSERT INTO org_members (org, person, role) VALUES (?,?,?)", (org, pid, Role.OWNER))
        ws = _make_workspace(conn, org, f"{handle} (personal)", pid, now, personal=True)[0]
    return {"id": pid, "handle": handle, "org": org, "personal_workspace": ws}


def _licence(plan: str, licensed) -> int | None:
    """A plan and its licensed messages a month (seed 002: Team's are "as licensed"; Free's are 300)."""
    if plan not in PLANS:
        raise AdminError("bad_plan", f"plans: {', '.join(PLANS)}")
    if licensed is not None and (plan != "team" or type(licensed) is not int or not 0 <= licensed <= 10**12):
        raise AdminError("bad_plan", "only a Team plan is licensed, for 0 to 10^12 messages a month")
    return licensed


def _one_free(conn: sqlite3.Connection, owner: str, org: str | None = None) -> None:
    """Seed 002: "Each person gets one Free organization": refused `free_org_limit` when `owner` already owns
    a Free organization (other than `org`). Checked, then inserted: a person's checks take turns (two nodes)."""
    serialized(conn, "free-org:" + owner)
    row = conn.execute("SELECT id FROM orgs WHERE owner = ? AND plan = 'free' AND id != ? LIMIT 1",
                       (owner, org or "")).fetchone()
    if row is not None:
        raise AdminError("free_org_limit", "each person gets one Free organization, and this person has one; "
                                           "an operator gives another a Team plan (ygg-server admin add-org/set-plan)")


def add_org(conn: sqlite3.Connection, name: str, owner: str, plan: str = DEFAULT_PLAN, licensed: int | None = None, *,
            now: int) -> dict:
    """Seed 002: everyone "can create or join more" organizations; the creator is its owner. "Each person gets
    one Free organization": a second Free one is refused (`free_org_limit`)."""
    name = _named("org", name)
    licensed = _licence(plan, licensed)
    with Tx(conn):
        pid = person(conn, owner)
        if plan == "free":
            _one_free(conn, pid)
        _name_free(conn, "org", pid, name)
        oid = new_id()
        conn.execute("INSERT INTO orgs (id, name, plan, owner, created_at, licensed) VALUES (?,?,?,?,?,?)",
                     (oid, name, plan, pid, now, licensed))
        conn.execute("INSERT INTO org_members (org, person, role) VALUES (?,?,?)", (oid, pid, Role.OWNER))
    return {"id": oid, "name": name, "plan": plan, "licensed": licensed}


def add_workspace(conn: sqlite3.Connection, name: str, owner: str, restricted: bool = False,
                  org_ref: str | None = None, *, now: int) -> dict:
    """A workspace in `owner`'s own (first) organization, or in `org_ref`, where `owner` must be its owner or an
    admin: open to all its members, or `restricted` (seed 002) to its admins and the people added directly."""
    name = _named("workspace", name)
    with Tx(conn):
        pid = person(conn, owner)
        if org_ref is None:
            oid, plan = org_owned_by(conn, pid)
        else:
            oid = org(conn, org_ref)
            if org_role(conn, oid, pid) not in reach.ORG_ADMINS:
                raise AdminError("forbidden", "the organization's owner and admins make its workspaces")
            plan = conn.execute("SELECT plan FROM orgs WHERE id = ?", (oid,)).fetchone()[0]
        limit = PLANS[plan].workspaces
        count = conn.execute("SELECT count(*) FROM workspaces WHERE org = ? AND personal_of IS NULL", (oid,)).fetchone()[0]
        if limit is not None and count >= limit:
            raise AdminError("plan_limit", f"the {plan} plan allows {limit} workspace(s) besides each personal one")
        _name_free(conn, "workspace", oid, name)
        ws, *left = _make_workspace(conn, oid, name, pid, now, personal=False, restricted=restricted)
    return {"id": ws, "name": name, "org": oid, "restricted": restricted, "left_out": left}


def add_member(conn: sqlite3.Connection, ws_ref: str, handle: str, role: str = "member", *, now: int) -> dict:
    if role not in Role._value2member_map_:
        raise AdminError("bad_role", "roles: owner, admin, member, viewer")
    with Tx(conn):
        ws = workspace(conn, ws_ref)
        pid = person(conn, handle)
        if role != Role.OWNER and role_in(conn, ws, pid) == Role.OWNER:  # seed 003 §66
            raise AdminError("owner_permanent", "an owner stays the owner: set once at creation, never changed or removed")
        reach.add_direct(conn, ws, pid, Role(role), now)
        left = reach.bring_agents(conn, ws, pid, now)
    return {"id": pid, "workspace": ws, "role": role, "left_out": left}


def add_org_member(conn: sqlite3.Connection, org_ref: str, handle: str, role: str = "member", *, now: int) -> dict:
    """Invite a person into an organization (seed 002), or change their role there: they reach its workspaces
    that are not restricted, and as an admin the restricted ones too (never anyone's personal workspace)."""
    if role not in (Role.ADMIN, Role.MEMBER):
        raise AdminError("bad_role", "an organization's roles: admin, member (its owner stays its owner)")
    with Tx(conn):
        oid = org(conn, org_ref)
        pid = person(conn, handle)
        if org_role(conn, oid, pid) == Role.OWNER:
            raise AdminError("bad_role", "the organization's owner stays its owner")
        conn.execute(
            """INSERT INTO org_members (org, person, role) VALUES (?,?,?)
               ON CONFLICT (org, person) DO UPDATE SET role = excluded.role""", (oid, pid, role))
        left = reach.open_org_to(conn, oid, pid, role, now)
    return {"id": pid, "org": oid, "role": role, "left_out": left}


# Who is in what, as leaving reads it: (table, its column of the place, its column of the person, the word).
_MEMBERS = {"org": ("org_members", "org", "person", "organization"),
            "workspace": ("memberships", "workspace", "participant", "workspace")}


def _may_leave(conn: sqlite3.Connection, kind: str, where: str, pid: str) -> None:
    """`pid` is in the organization or workspace `where` (else `unknown_org`/`unknown_workspace`), and not its
    last owner (`last_owner`)."""
    table, col, who, word = _MEMBERS[kind]
    mine = conn.execute(f"SELECT role FROM {table} WHERE {col} = ? AND {who} = ?", (where, pid)).fetchone()
    if mine is None:
        raise AdminError(f"unknown_{kind}", f"that person is not in this {word}")
    # PostgreSQL: the owners' rows locked, so a leave another connection has written but not committed is
    # waited for and counted (SQLite's BEGIN IMMEDIATE already lets one writer at a time judge)
    owners = conn.execute(f"SELECT {who} FROM {table} WHERE {col} = ? AND role = 'owner'" + row_lock(conn, "UPDATE"),
                          (where,)).fetchall()
    if mine[0] == Role.OWNER and len(owners) <= 1:
        raise AdminError("last_owner", f"the {word}'s last owner cannot leave it")


def leave_org(conn: sqlite3.Connection, org_ref: str, handle: str) -> dict:
    """A person leaves an organization (seed 002: people "create or join more"): their memberships through
    it go, with their agents' there (`reach.leave_org`); a workspace they were added to directly stays. The
    organization's last owner cannot leave it (`last_owner`)."""
    with Tx(conn):
        oid = org(conn, org_ref)
        pid = person(conn, handle)
        _may_leave(conn, "org", oid, pid)
        conn.execute("DELETE FROM org_members WHERE org = ? AND person = ?", (oid, pid))
        left = reach.leave_org(conn, oid, pid)
    return {"id": pid, "org": oid, "left": left}


def leave_workspace(conn: sqlite3.Connection, ws_ref: str, handle: str) -> dict:
    """A person leaves one workspace, as one leaves a channel: their membership goes (added directly or
    there through the organization), with their agents' there (`reach.leave_workspace`). Never a personal
    workspace (seed 003 §65: "Every person gets exactly one personal workspace": `personal_workspace`); its
    last owner cannot leave it (`last_owner`)."""
    with Tx(conn):
        ws = workspace(conn, ws_ref)
        pid = person(conn, handle)
        _not_personal(conn, ws, "a personal workspace is never left")
        _may_leave(conn, "workspace", ws, pid)
        reach.leave_workspace(conn, ws, pid)
    return {"id": pid, "workspace": ws, "left": [ws]}


def join_workspace(conn: sqlite3.Connection, ws_ref: str, handle: str, by_id: bool = False, *, now: int) -> dict:
    """A person joins, by themselves, a workspace their organization opens to them (as one joins a public
    channel): back in one they left, with the role their organization membership gives and their agents
    (`reach.join_workspace`). Already in it: answered as it is (`joined` false). Any other (another
    organization's, a restricted one they are not an admin of, a personal one, their own too: never joined)
    is `unknown_workspace`, as one that does not exist. `by_id` (the socket's): `ws_ref` is an id only, never a
    name: a name is anyone's to choose, in every tenant (`workspace` looks names up everywhere), so a person joining
    by name would learn whether another organization used it (the operator's CLI names workspaces either way)."""
    with Tx(conn):
        ws = workspace(conn, ws_ref, names=not by_id)
        pid = person(conn, handle)
        personal = conn.execute("SELECT personal_of FROM workspaces WHERE id = ?", (ws,)).fetchone()[0] is not None
        mine = None if personal else role_in(conn, ws, pid)
        if mine is not None:
            return {"id": pid, "workspace": ws, "role": mine, "joined": False, "left_out": []}
        left = None if personal else reach.join_workspace(conn, ws, pid, now)
        if left is None:
            raise AdminError("unknown_workspace", f"no workspace {ws_ref!r} open to {handle}")
        return {"id": pid, "workspace": ws, "role": role_in(conn, ws, pid), "joined": True, "left_out": left}


# What a workspace holds, deleted with it (its messages' deliveries first, by message).
WORKSPACE_TABLES = ("messages", "topics", "conversations", "memberships", "departed", "groups", "wallets", "ledger",
                    "flags", "rulebooks", "schedules", "approvals", "tool_rules", "loops", "goal_reports", "files",
                    "file_blobs")


def delete_workspace(conn: sqlite3.Connection, ws_ref: str) -> dict:
    """Delete a workspace and everything in it (seed 003 §66: "deleting the workspace" is its owner's); a
    personal one "can never be deleted" (seed 003 §65: `personal_workspace`). Its memberships go with it, so
    open sockets lose it as on any revocation: nothing more of it is delivered, followed or accepted; so do the
    agents' pins to it (`reach.unpin`).

    Its own row goes first: on PostgreSQL a batch of sends holds the rows of its workspaces (`FOR KEY SHARE`,
    store/postgres/batch_sql.LOAD), so the delete waits for a batch writing there and then deletes what it wrote, and a
    batch that comes meanwhile waits for the delete and finds the workspace gone."""
    with Tx(conn):
        ws = workspace(conn, ws_ref, "UPDATE")
        _not_personal(conn, ws, "a personal workspace can never be deleted")
        conn.execute("DELETE FROM workspaces WHERE id = ?", (ws,))
        if isinstance(conn, sqlite3.Connection):  # SQLite's full-text index keeps its own copy of the text
            from ..store import sqlite  # (here: PostgreSQL's path never loads the SQLite store)

            sqlite.unindex_workspace(conn, ws)
        conn.execute(f"DELETE FROM deliveries WHERE message_seq IN (SELECT seq FROM messages WHERE {loaders.IN_WORKSPACE})",
                     (ws,))
        conn.execute("DELETE FROM message_versions WHERE message IN "
                     f"(SELECT id FROM messages WHERE {loaders.IN_WORKSPACE})", (ws,))  # (their older texts)
        for table in ("artifact_versions", "artifact_comments"):  # (its artifacts' versions and comments)
            conn.execute(f"DELETE FROM {table} WHERE artifact IN (SELECT id FROM artifacts WHERE workspace = ?)", (ws,))
        conn.execute("DELETE FROM artifacts WHERE workspace = ?", (ws,))
        idempotency.forget_workspace(conn, ws)  # (the answers that would replay its messages' text)
        reach.unpin(conn, ws)  # (an agent pinned there alone stays in no workspace)
        for table in ("connected_accounts", "oauth_flows"):  # (its connected accounts: seed 003 §63)
            conn.execute(f"DELETE FROM {table} WHERE owner = ?", (ws,))
        for table in WORKSPACE_TABLES:  # (messages and topics before the conversations that find them)
            where = loaders.IN_WORKSPACE if table in ("messages", "topics") else "workspace = ?"
            conn.execute(f"DELETE FROM {table} WHERE {where}", (ws,))
    return {"id": ws, "deleted": True}


def set_restricted(conn: sqlite3.Connection, ws_ref: str, restricted: bool, *, now: int) -> dict:
    """Seed 002: "A restricted workspace is open only to the organization's admins and the people added to it
    directly, not to every member"; lifting the restriction opens it to every member again."""
    with Tx(conn):
        ws = workspace(conn, ws_ref)
        _not_personal(conn, ws, "a personal workspace is its person's alone")
        conn.execute("UPDATE workspaces SET restricted = ? WHERE id = ?", (int(restricted), ws))
        if restricted:
            reach.close_workspace(conn, ws)
            left = []
        else:
            left = reach.open_workspace(conn, ws, now)
    return {"id": ws, "restricted": restricted, "left_out": left}


def add_agent(conn: sqlite3.Connection, name: str, owner: str, ws_ref: str | None = None, *, now: int) -> dict:
    """An agent of `owner`: in all their workspaces, or pinned to one; its API key is shown once."""
    name = _named("agent", name, trim=False)
    if "@" in name or name.startswith(("group:", "dm:", "capability:", *ID_PREFIXES)):
        raise AdminError("bad_name", "an agent's name has no '@' and no reserved prefix")
    key, key_id, key_hash = auth.new_api_key()
    with Tx(conn):
        pid = person(conn, owner)
        if conn.execute("SELECT 1 FROM agents WHERE owner = ? AND name = ?", (pid, name)).fetchone():
            raise AdminError("name_taken", f"you already have an agent called {name}")
        pinned = None
        if ws_ref is not None:
            ws = workspace(conn, ws_ref)
            if not conn.execute("SELECT 1 FROM memberships WHERE workspace = ? AND participant = ?", (ws, pid)).fetchone():
                raise AdminError("unknown_workspace", f"no workspace {ws_ref!r}")
            pinned = msgspec.json.encode([ws]).decode()
        aid = f"agent.{uuid.uuid4().hex}"
        conn.execute(
            "INSERT INTO agents (id, owner, name, key_id, key_hash, pinned, created_at) VALUES (?,?,?,?,?,?,?)",
            (aid, pid, name, key_id, key_hash, pinned, now),
        )
        wanted = [ws for (ws,) in conn.execute(
            "SELECT workspace FROM memberships WHERE participant = ? ORDER BY created_at, workspace", (pid,)).fetchall()
            if pinned is None or ws in msgspec.json.decode(pinned)]
        left = [ws for ws in wanted if aid in reach.bring_agents(conn, ws, pid, now)]
        if len(left) == len(wanted):  # seed 002: "how many agents it can connect"
            raise AdminError("plan_limit", "the plan of every organization this agent would be in has no room for "
                                           "another agent (Free: 5; Team: one per 100 licensed messages, at least 50)")
    return {"id": aid, "name": name, "api_key": key, "left_out": left}


def set_plan(conn: sqlite3.Connection, org_ref: str, plan: str, licensed: int | None = None) -> dict:
    """An organization's plan, and for Team its licensed messages a month (None: not metered); `org_ref` is its
    id, or a handle for that person's own (first) organization. A person's second Free one is refused."""
    licensed = _licence(plan, licensed)
    with Tx(conn):
        oid = org(conn, org_ref)
        if plan == "free":
            _one_free(conn, conn.execute("SELECT owner FROM orgs WHERE id = ?", (oid,)).fetchone()[0], oid)
        conn.execute("UPDATE orgs SET plan = ?, licensed = ? WHERE id = ?", (plan, licensed, oid))
    limits = plan_of(plan, licensed)
    return {"id": oid, "plan": plan, "licensed": licensed, "messages_per_month": limits.messages_per_month,
            "agents": limits.agents}


def add_group(conn: sqlite3.Connection, ws_ref: str, name: str, members: list[str]) -> dict:
    """Seed 000: "Agents can be gathered in groups (group:<name>) to address several at once". A group of a
    workspace's agents (and people), addressed as `group:<name>`; named again, its members are replaced (so
    members are added and removed). Members are written as in a send's `to` (`Directory.resolve`): someone
    of another workspace is unknown there exactly as a made-up name is (`unknown_member`)."""
    name = _named("group", name, trim=False)
    if ":" in name or "@" in name or "," in name:
        raise AdminError("bad_name", "a group's name has no ':', '@' or ','")
    if not isinstance(members, list) or not members or not all(isinstance(m, str) for m in members):
        raise AdminError("empty_group", "a group has at least one member: agents, @people or group:s of the workspace")
    with Tx(conn):
        ws = workspace(conn, ws_ref)
        found = loaders.load_directory(conn, ws).resolve(tuple(members))
        if isinstance(found, Unresolved) or SYSTEM in found:
            raise AdminError("unknown_member", found.detail if isinstance(found, Unresolved) else "system.ygg is in no group")
        ids = sorted(set(found))
        conn.execute(
            """INSERT INTO groups (workspace, name, members) VALUES (?,?,?)
               ON CONFLICT (workspace, name) DO UPDATE SET members = excluded.members""",
            (ws, name, msgspec.json.encode(ids).decode()),
        )
    return {"id": f"group:{name}", "workspace": ws, "name": name, "members": ids}


def remove_group(conn: sqlite3.Connection, ws_ref: str, name: str) -> dict:
    """A workspace's group removed: `group:<name>` is then unknown there, in a send's `to` and as a conversation,
    exactly as a name never made (`unknown_group` here; `not_found` on the socket, as a foreign workspace's).
    Its conversation, if written in, stays with its own members (as when members are replaced), reached by its
    id; a group made again under that name addresses it again."""
    if not isinstance(name, str):
        raise AdminError("bad_name", "a group's name is text")
    with Tx(conn):
        ws = workspace(conn, ws_ref)
        if conn.execute("DELETE FROM groups WHERE workspace = ? AND name = ?", (ws, name)).rowcount == 0:
            raise AdminError("unknown_group", f"no group {name!r} in this workspace")
    return {"id": f"group:{name}", "workspace": ws, "name": name, "removed": True}


def role_in(conn: sqlite3.Connection, ws: str, pid: str) -> str | None:
    row = conn.execute("SELECT role FROM memberships WHERE workspace = ? AND participant = ?", (ws, pid)).fetchone()
    return row[0] if row else None


def own_agent(conn: sqlite3.Connection, owner: str, ref: str) -> str | None:
    """The id of `owner`'s agent (not revoked) named `ref` (its id or its name); None for anyone else's, as for
    one that does not exist."""
    row = conn.execute("SELECT id FROM agents WHERE owner = ? AND (id = ? OR name = ?) AND revoked = 0",
                       (owner, ref, ref)).fetchone()
    return row[0] if row else None


def revoke_agent(conn: sqlite3.Connection, ref: str) -> dict:
    """An agent retired (or its key leaked): its key is refused from now on, its sessions end, so its open
    connections close (the gateway's rescan); it is counted against no plan. Its messages stay."""
    with Tx(conn):
        aid = agent(conn, ref)
        conn.execute("UPDATE agents SET revoked = 1 WHERE id = ?", (aid,))
        conn.execute("DELETE FROM sessions WHERE participant = ?", (aid,))
    audit.record("agent_revoked", participant=aid)
    return {"id": aid, "revoked": True}


def rotate_key(conn: sqlite3.Connection, ref: str) -> dict:
    """A new API key for an agent, shown once, as any API-key page does: the old key is refused from now on and
    the sessions it opened end (open connections close; they sign in again with the new key)."""
    key, key_id, key_hash = auth.new_api_key()
    with Tx(conn):
        aid = agent(conn, ref)
        name, revoked = conn.execute("SELECT name, revoked FROM agents WHERE id = ?", (aid,)).fetchone()
        if revoked:
            raise AdminError("unknown_agent", f"{name} is revoked: make a new agent")
        conn.execute("UPDATE agents SET key_id = ?, key_hash = ? WHERE id = ?", (key_id, key_hash, aid))
        conn.execute("DELETE FROM sessions WHERE participant = ?", (aid,))
    audit.record("key_rotated", participant=aid, key_id=key_id)
    return {"id": aid, "name": name, "api_key": key}


def fund(conn: sqlite3.Connection, account_ref: str | None, amount: int, pool_ws: str | None = None,
         funder: str | None = None, ws_ref: str | None = None, *, now: int) -> dict:
    """Fund an agent's wallet or a workspace pool through the core's rule (only a person funds).

    From the command line the operator acts as the agent's owner, or as the workspace's owner. An agent has a
    wallet per workspace: the one in `ws_ref`, or else in the last made workspace it shares with its owner.
    """
    with Tx(conn):
        if pool_ws is not None:
            ws = workspace(conn, pool_ws)
            account = POOL
            if funder is None:
                funder = conn.execute(
                    "SELECT participant FROM memberships WHERE workspace = ? AND role = 'owner' LIMIT 1", (ws,)
                ).fetchone()[0]
            paused = loaders.credit_paused(conn, workspace=ws)
        else:
            account = agent(conn, account_ref)
            funder = funder or conn.execute("SELECT owner FROM agents WHERE id = ?", (account,)).fetchone()[0]
            only, args = ("", (account, funder)) if ws_ref is None else \
                (" AND a.workspace = ?", (account, funder, workspace(conn, ws_ref)))
            row = conn.execute(
                """SELECT a.workspace FROM memberships a JOIN memberships o ON o.workspace = a.workspace
                   JOIN workspaces w ON w.id = a.workspace WHERE a.participant = ? AND o.participant = ?""" + only
                + " ORDER BY w.created_at DESC, w.id DESC LIMIT 1", args).fetchone()
            if row is None:
                raise AdminError("unknown_agent", "the agent shares no such workspace with its owner")
            ws = row[0]
            paused = loaders.credit_paused(conn, workspace=ws, agent=account)
        view = View(loaders.load_directory(conn, ws), None, flags=frozenset(loaders.load_flags(conn)))
        d = core_fund(view, funder, account, amount, tuple(paused), now, f"fund:{new_id()}")
        if d.refusal:
            raise AdminError(d.refusal.reason, d.refusal.detail)
        writes.apply(conn, d, now, ws)
        bal = loaders.balance(conn, ws, account)
    return {"id": account, "workspace": ws, "balance": bal}


def conversation_row(c: Conversation) -> dict:
    return {"id": c.id, "kind": c.kind, "name": c.name, "members": sorted(c.members)}
