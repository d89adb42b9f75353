"""Connected accounts (issue 24; seed 003 §62-64): the rows behind them. The OAuth exchanges themselves (HTTP, off
any transaction) are `net/connected.py`'s and `tools/oauth.py`'s; this module holds the SQL and who may do what.

- A connection belongs to the person who made it, or to a workspace (§63: "or to the whole workspace if added
  there, so agents share one connection"): a workspace's are connected and revoked by its admins and owner (§66:
  they "manage credentials"); its members see that it has one (provider and login), never a token.
- Which one an agent uses is decided where it acts (§64, `resolve`): a person's own account only where nobody but
  that person is in the conversation (their personal workspace, or a direct or side conversation of theirs and
  their agents); anywhere else, the workspace's. So one agent pinned to two workspaces uses each one's account,
  and nothing one workspace connected reaches another, nor a person's account anyone else's conversation.
- Tokens are stored sealed (tools/vault.py: the key is outside the database); a flow under way is kept by its
  state's digest, with its PKCE verifier sealed, for `FLOW_TTL_US`.
"""

from __future__ import annotations

import sqlite3
from enum import StrEnum
from typing import Any

import msgspec

from ..core import ConversationKind, Role
from ..protocol.ids import new_id
from ..protocol.times import iso
from ..store.transactions import Tx
from .queries import _member
from .refusals import NotFound, Refused

FLOW_TTL_US = 10 * 60 * 1_000_000  # a person has ten minutes to sign in at the provider
FLOWS = 5  # flows a person may have under way at once (a sixth forgets the oldest)


class AccountRefusal(StrEnum):
    UNKNOWN_PROVIDER = "unknown_provider"  # not github or google, or the operator registered no client for it
    BAD_REDIRECT = "bad_redirect"  # not a loopback redirect (RFC 8252 §7.3)
    BAD_STATE = "bad_state"  # no flow of this person's under way with that state (used, expired, or never made)
    PROVIDER_REFUSED = "provider_refused"  # the provider refused the code (or did not answer)


_COLUMNS = "id, provider, owner, owner_kind, added_by, login, scope, expires_at, created_at"


def owner_of(conn: sqlite3.Connection, who: str, workspace: Any) -> tuple[str, str]:
    """(owner, owner kind) of an account `who` connects: theirs, or a workspace's they administer."""
    if not who.startswith("human."):
        raise Refused("permission_denied", "accounts are connected by people")
    if workspace is None:
        return who, "person"
    if not isinstance(workspace, str):
        raise NotFound
    role, _ = _member(conn, workspace, who)
    if role not in (Role.OWNER, Role.ADMIN):
        raise Refused("permission_denied", "a workspace's accounts are connected and revoked by its admins")
    return workspace, "workspace"


def begin_flow(conn: sqlite3.Connection, who: str, provider: str, workspace: Any, redirect_uri: str,
               state_hash: str, verifier_sealed: str, now: int) -> dict:
    owner, kind = owner_of(conn, who, workspace)
    with Tx(conn, quiet=True):
        conn.execute("DELETE FROM oauth_flows WHERE expires_at < ?", (now,))
        conn.execute("""DELETE FROM oauth_flows WHERE person = ? AND state_hash NOT IN (SELECT state_hash FROM
                        oauth_flows WHERE person = ? ORDER BY expires_at DESC LIMIT ?)""", (who, who, FLOWS - 1))
        conn.execute("""INSERT INTO oauth_flows (state_hash, person, provider, owner, owner_kind, redirect_uri,
                        verifier_sealed, expires_at) VALUES (?,?,?,?,?,?,?,?)""",
                     (state_hash, who, provider, owner, kind, redirect_uri, verifier_sealed, now + FLOW_TTL_US))
    return {"owner": owner, "owner_kind": kind}


def take_flow(conn: sqlite3.Connection, who: str, state_hash: str, now: int) -> tuple[str, str, str, str, str]:
    """(provider, owner, owner kind, redirect_uri, verifier_sealed) of `who`'s flow under `state`: used once."""
    with Tx(conn, quiet=True):
        row = conn.execute("""SELECT provider, owner, owner_kind, redirect_uri, verifier_sealed, expires_at
                              FROM oauth_flows WHERE state_hash = ? AND person = ?""", (state_hash, who)).fetchone()
        if row is not None:
            conn.execute("DELETE FROM oauth_flows WHERE state_hash = ?", (state_hash,))
    if row is None or row[5] < now:
        raise Refused(AccountRefusal.BAD_STATE, "no connection of yours is under way with this state (it was used, "
                      "it expired after 10 minutes, or it is not yours): connect again")
    return row[:5]


def store_account(conn: sqlite3.Connection, who: str, provider: str, owner: str, kind: str, login: str, scope: str,
                  access_sealed: str, refresh_sealed: str, expires_at: int | None, now: int) -> dict:
    """The account connected (a reconnection of the same provider for the same owner replaces its tokens)."""
    owner_of(conn, who, owner if kind == "workspace" else None)  # (still an admin there, after the sign-in)
    with Tx(conn, quiet=True):
        conn.execute(f"""INSERT INTO connected_accounts ({_COLUMNS}, access_sealed, refresh_sealed, updated_at)
                         VALUES (?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT (provider, owner) DO UPDATE SET
                         added_by = excluded.added_by, login = excluded.login, scope = excluded.scope,
                         access_sealed = excluded.access_sealed, refresh_sealed = excluded.refresh_sealed,
                         expires_at = excluded.expires_at, updated_at = excluded.updated_at""",
                     (new_id(), provider, owner, kind, who, login, scope, expires_at, now, access_sealed,
                      refresh_sealed, now))
        row = conn.execute(f"SELECT {_COLUMNS} FROM connected_accounts WHERE provider = ? AND owner = ?",
                           (provider, owner)).fetchone()
    return _wire(row, who, manages=True)


def _wire(row: tuple, who: str, manages: bool) -> dict:
    id_, provider, owner, kind, added_by, login, scope, expires_at, created_at = row
    return {"id": id_, "provider": provider, "owner_kind": kind, **({"workspace": owner} if kind == "workspace" else {}),
            "login": login, "scope": scope, "added_by": added_by, "created_at": iso(created_at),
            **({"expires_at": iso(expires_at)} if expires_at else {}), "can_revoke": manages}


def list_accounts(conn: sqlite3.Connection, who: str, f) -> dict:
    """The asker's own accounts and those of the workspaces they are in (with `workspace`: that one's only)."""
    if not who.startswith("human."):
        raise Refused("permission_denied", "connected accounts are listed by people")
    if f.workspace is not None:
        if not isinstance(f.workspace, str):
            raise NotFound
        roles = {f.workspace: _member(conn, f.workspace, who)[0]}
    else:
        roles = dict(conn.execute("SELECT workspace, role FROM memberships WHERE participant = ?", (who,)).fetchall())
    rows = conn.execute(f"SELECT {_COLUMNS} FROM connected_accounts WHERE owner = ? ORDER BY provider", (who,)).fetchall()
    for ws in sorted(roles):
        rows += conn.execute(f"SELECT {_COLUMNS} FROM connected_accounts WHERE owner = ? ORDER BY provider",
                             (ws,)).fetchall()
    return {"accounts": [_wire(r, who, r[2] == who or roles.get(r[2]) in (Role.OWNER, Role.ADMIN)) for r in rows]}


def remove_account(conn: sqlite3.Connection, who: str, account: Any) -> tuple[str, str, str, dict]:
    """Forget an account (its owner, or an admin of its workspace): (provider, access and refresh sealed, its
    wire), for the provider to be told. One the asker cannot see is `not_found`, as one that does not exist."""
    if not isinstance(account, str) or not who.startswith("human."):
        raise NotFound
    with Tx(conn, quiet=True):
        row = conn.execute(f"SELECT {_COLUMNS}, access_sealed, refresh_sealed FROM connected_accounts WHERE id = ?",
                           (account,)).fetchone()
        if row is None or (row[3] == "person" and row[2] != who):
            raise NotFound
        if row[3] == "workspace":
            owner_of(conn, who, row[2])  # (NotFound for a non-member; refused for a member who is not an admin)
        conn.execute("DELETE FROM connected_accounts WHERE id = ?", (account,))
    return row[1], row[9], row[10], _wire(row[:9], who, manages=True)


def acting_privately(conn: sqlite3.Connection, agent: str, owner: str, ws: str, conversation: Any) -> bool:
    """Whether nobody but `owner` (and their agents) is where `agent` acts: `owner`'s personal workspace, or a
    direct or side conversation of `ws` with `agent` in it and no one else's participant."""
    row = conn.execute("SELECT personal_of FROM workspaces WHERE id = ?", (ws,)).fetchone()
    if row is not None and row[0] == owner:
        return True
    if not isinstance(conversation, str):
        return False
    row = conn.execute("SELECT kind, members FROM conversations WHERE id = ? AND workspace = ?",
                       (conversation, ws)).fetchone()
    if row is None or row[0] not in (ConversationKind.DIRECT, ConversationKind.SIDE):
        return False
    members = set(msgspec.json.decode(row[1]))
    if agent not in members or owner not in members:
        return False
    others = [m for m in members - {owner} if not m.startswith("agent.")]
    agents = [m for m in members if m.startswith("agent.")]
    mine = {r[0] for r in conn.execute(f"SELECT id FROM agents WHERE owner = ? AND id IN ({','.join('?' * len(agents))})",
                                       (owner, *agents))} if agents else set()
    return not others and mine == set(agents)


def resolve(conn: sqlite3.Connection, agent: str, owner: str, ws: str, conversation: Any,
            provider: str) -> tuple | None:
    """Seed 003 §64: the account `agent` uses for `provider`, acting in `conversation` of `ws`: (id, access sealed,
    refresh sealed, expires_at, login, owner kind), or None. Acting privately for its owner, the owner's own account
    first, then the workspace's; anywhere else, only the workspace's."""
    _member(conn, ws, agent)
    owners = (owner, ws) if acting_privately(conn, agent, owner, ws, conversation) else (ws,)
    for o in owners:
        row = conn.execute("""SELECT id, access_sealed, refresh_sealed, expires_at, login, owner_kind
                              FROM connected_accounts WHERE provider = ? AND owner = ?""", (provider, o)).fetchone()
        if row is not None:
            return tuple(row)
    return None


def save_refreshed(conn: sqlite3.Connection, account: str, access_sealed: str, refresh_sealed: str,
                   expires_at: int | None, now: int) -> bool:
    """A refreshed token kept (False: the account was revoked meanwhile, and stays so)."""
    with Tx(conn, quiet=True):
        return conn.execute("""UPDATE connected_accounts SET access_sealed = ?, refresh_sealed = ?, expires_at = ?,
                               updated_at = ? WHERE id = ?""",
                            (access_sealed, refresh_sealed, expires_at, now, account)).rowcount > 0


OPS = {"list_accounts": (list_accounts, False)}
TIMED: frozenset[str] = frozenset()
