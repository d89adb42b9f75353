"""People's accounts (issue 18): handles compared as people read them, passwords, sessions, deactivation.

Shared by the admin CLI (an operator's reset, deactivation) and the socket's ops (a person's own password and
sessions: `actions`, `net/handlers.py`). Each runs in one transaction and records what it did in the audit log
(`ygg_server.audit`): ids and handles, never a password, hash or token.

A person's session lasts `lifetime` from when it was made (`ends_at`) and ends sooner when unused for `idle`: its
`expires_at` is the earlier of the two, moved on each time it is used (`touch`), so the checks that read
`expires_at` (`auth.session_participant`, the gateway's clock, `auth.delete_expired`) need nothing more.
"""

from __future__ import annotations

import hashlib
import sqlite3

from . import auth, reach
from .refusals import AdminError, NotFound
from .. import audit
from ..core import Role
from ..protocol import names
from ..protocol.results import ErrorCode as E
from ..store.transactions import Tx, serialized
from ..store.writes import insert_session

MIN_PASSWORD = 8  # characters (NIST SP 800-63B's least for a password a person chose)
SESSION_ID = 16  # the hex characters of a session's token digest that name it in `list_sessions`


def password_rule(password: object) -> str:
    """`password` when it may be one; else `weak_password` saying why."""
    if not isinstance(password, str) or len(password) < MIN_PASSWORD:
        raise AdminError(E.WEAK_PASSWORD, f"a password has at least {MIN_PASSWORD} characters")
    return password


# --- handles ---

def backfill_keys(conn: sqlite3.Connection) -> None:
    """Give the handles older than migration 13 their `handle_key` (SQL has no NFKC, so it is done here, by the
    next `add_person`). Of older handles that clash (`alice`, `Alice`), the oldest gets the key; the others keep
    NULL and go on working as they are, but no new handle may clash with any of them (docs/security.md)."""
    for pid, handle in conn.execute("SELECT id, handle FROM people WHERE handle_key IS NULL ORDER BY created_at, id"
                                    ).fetchall():
        key = names.handle_key(handle)
        if conn.execute("SELECT 1 FROM people WHERE handle_key = ?", (key,)).fetchone() is None:
            conn.execute("UPDATE people SET handle_key = ? WHERE id = ?", (key, pid))


def claim_handle(conn: sqlite3.Connection, handle: str) -> str:
    """Inside a `Tx`: the key of a new `handle`, or `handle_taken` when another handle is it, compared as
    `names.handle_key` compares them. Claims take turns (PostgreSQL: two nodes)."""
    serialized(conn, "handles")
    backfill_keys(conn)
    key = names.handle_key(handle)
    clash = conn.execute("SELECT 1 FROM people WHERE handle = ? OR handle_key = ?", (handle, key)).fetchone()
    if clash is None:  # (a grandfathered handle has no key: compared here, as few as they are)
        clash = next((1 for (h,) in conn.execute("SELECT handle FROM people WHERE handle_key IS NULL")
                      if names.handle_key(h) == key), None)
    if clash is not None:
        raise AdminError(E.HANDLE_TAKEN, f"@{handle} exists, or a handle that reads as it does")
    return key


# --- passwords ---

def _set_password(conn: sqlite3.Connection, pid: str, hashed: str, keep: str | None) -> int:
    """Store a new password hash; end every session of `pid` but the one whose token is `keep`; how many ended."""
    conn.execute("UPDATE people SET password_hash = ? WHERE id = ?", (hashed, pid))
    digest = _digest(keep) if keep else ""
    return conn.execute("DELETE FROM sessions WHERE participant = ? AND token_hash != ?", (pid, digest)).rowcount


def change_password(conn: sqlite3.Connection, pid: str, new_hash: str, keep: str | None, address: str | None = None) -> dict:
    """A person's own new password (checked against the old one by the caller, off the reader): their other
    sessions end (their connections close), this one stays."""
    with Tx(conn):
        ended = _set_password(conn, pid, new_hash, keep)
    audit.record("password_changed", participant=pid, address=address, sessions_ended=ended)
    return {"changed": True, "sessions_ended": ended}


def reset_password(conn: sqlite3.Connection, handle: str, password: str) -> dict:
    """An operator's reset (the admin CLI): a new password, every session of the person ended."""
    password_rule(password)
    hashed = auth.hash_password(password)
    with Tx(conn):
        pid = _person(conn, handle)
        ended = _set_password(conn, pid, hashed, None)
    audit.record("password_reset", participant=pid, by="operator", sessions_ended=ended)
    return {"id": pid, "reset": True, "sessions_ended": ended}


def rehash(conn: sqlite3.Connection, pid: str, old_hash: str, new_hash: str) -> None:
    """A password checked against a hash of older argon2 parameters, stored again with the current ones
    (only if it is still that hash: a change meanwhile wins)."""
    with Tx(conn):
        conn.execute("UPDATE people SET password_hash = ? WHERE id = ? AND password_hash = ?", (new_hash, pid, old_hash))


def stored_hash(conn: sqlite3.Connection, pid: str) -> str | None:
    row = conn.execute("SELECT password_hash FROM people WHERE id = ? AND deactivated = 0", (pid,)).fetchone()
    return row[0] if row else None


# --- sessions ---

def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def session_id(token: str) -> str:
    """The id `list_sessions` gives the session of `token` (the start of its digest: the token is not in it)."""
    return _digest(token)[:SESSION_ID]


def session_row(pid: str, token: str, now: int, lifetime: int, idle: int, device: str | None,
                address: str | None) -> tuple:
    """A person's new session's row (its token made by the caller; only its digest stored), for the writer's
    `session` command (`store.writes.insert_session`): it ends `lifetime` from now, or sooner when unused for `idle`
    (`touch`); its expires_at is row[2].

    Written by the writer, not on the management connection: on SQLite the writer's own commits do not change its
    `data_version`, so a sign-in makes it drop no cache and the gateway rescan nothing (each did: 0.7 s with 100
    agents connected); on PostgreSQL no node is told to rescan either."""
    return _digest(token), pid, now + min(lifetime, idle), now, device, address, now, now + lifetime


def open_session(conn: sqlite3.Connection, pid: str, token: str, now: int, lifetime: int, idle: int,
                 device: str | None, address: str | None) -> int:
    """A person's new session written here (on `conn`: the writer writes the gateway's, `session_row`), quietly;
    returns its expires_at."""
    row = session_row(pid, token, now, lifetime, idle, device, address)
    with Tx(conn, quiet=True):  # (nothing another node caches: transactions.Tx)
        insert_session(conn, row)
    return row[2]


TOUCH_SLACK = 100  # a session's last use is written again once 1/100 of its idle expiry has passed, not more often


def touch(conn: sqlite3.Connection, tokens: list[str], now: int, idle: int, address: str | None = None) -> dict[str, int]:
    """Sessions used now: their last use is now and they last `idle` more, never past their `ends_at` (a session
    made without one keeps its expiry). Returns {token: its expires_at} for those still live.

    Written only when the last use written is older than idle / TOUCH_SLACK (the expiry is then at least 99 % of
    `idle` away): a token resumed again and again writes nothing (on SQLite each write of this connection makes the
    writer drop its cache and the gateway rescan every connection; docs/security.md)."""
    out: dict[str, int] = {}
    with Tx(conn, quiet=True):
        for token in tokens:
            d = _digest(token)
            conn.execute("""UPDATE sessions SET last_seen = ?, address = coalesce(?, address),
                            expires_at = CASE WHEN ends_at IS NULL THEN expires_at WHEN ends_at < ? THEN ends_at ELSE ? END
                            WHERE token_hash = ? AND expires_at > ? AND coalesce(last_seen, 0) < ?""",
                         (now, address, now + idle, now + idle, d, now, now - idle // TOUCH_SLACK))
            row = conn.execute("SELECT expires_at FROM sessions WHERE token_hash = ? AND expires_at > ?", (d, now)).fetchone()
            if row is not None:
                out[token] = row[0]
    return out


def list_sessions(conn: sqlite3.Connection, pid: str, current: str | None, now: int) -> list[dict]:
    """A person's live sessions, the most recently used first: an id (`end_session` takes it), the device it
    named, its address, when it was made and last used, when it ends, and whether it is the asker's."""
    mine = _digest(current) if current else ""
    rows = conn.execute("""SELECT token_hash, device, address, created_at, coalesce(last_seen, created_at), expires_at
                           FROM sessions WHERE participant = ? AND expires_at > ?
                           ORDER BY coalesce(last_seen, created_at) DESC, token_hash""", (pid, now)).fetchall()
    return [{"id": h[:SESSION_ID], "device": dev, "address": addr, "created_at": made, "last_seen": seen,
             "expires_at": ends, "current": h == mine} for h, dev, addr, made, seen, ends in rows]


def end_sessions(conn: sqlite3.Connection, pid: str, session: str, current: str | None = None,
                 address: str | None = None) -> dict:
    """End one of a person's sessions (by its `list_sessions` id), `others` (all but `current`), or `all`: their
    connections close (the gateway's rescan). Another's session, or none, is `not_found` as an id that does not
    exist."""
    keep = _digest(current) if current else ""
    with Tx(conn):
        if session == "all":
            ended = conn.execute("DELETE FROM sessions WHERE participant = ?", (pid,)).rowcount
        elif session == "others":
            ended = conn.execute("DELETE FROM sessions WHERE participant = ? AND token_hash != ?", (pid, keep)).rowcount
        elif isinstance(session, str) and len(session) == SESSION_ID:
            ended = conn.execute("DELETE FROM sessions WHERE participant = ? AND substr(token_hash, 1, ?) = ?",
                                 (pid, SESSION_ID, session)).rowcount
        else:
            ended = 0
    if ended == 0 and session not in ("all", "others"):
        raise NotFound
    audit.record("sessions_ended", participant=pid, address=address, which=session if session in ("all", "others")
                 else "one", count=ended)
    return {"ended": ended}


# --- deactivation ---

def _person(conn: sqlite3.Connection, handle: str) -> str:
    row = conn.execute("SELECT id FROM people WHERE id = ? OR handle = ?", (handle, handle.removeprefix("@"))).fetchone()
    if row is None:
        raise AdminError("unknown_person", f"no person {handle!r}")
    return row[0]


def deactivate(conn: sqlite3.Connection, handle: str) -> dict:
    """An operator takes a person off the server: their sessions end at once (their connections close), sign-in is
    refused from now on, their memberships (of workspaces and organizations) go, their agents are revoked, their
    invitations (sent and received) are withdrawn. Their messages stay. A workspace or an organization left with no
    owner is listed (`ownerless`): the operator gives it one (`add-member … --role owner`)."""
    with Tx(conn):
        pid = _person(conn, handle)
        agents = [a for (a,) in conn.execute("SELECT id FROM agents WHERE owner = ? AND revoked = 0", (pid,))]
        gone = [pid, *agents]
        marks = ",".join("?" * len(gone))
        owned = [w for (w,) in conn.execute(
            """SELECT m.workspace FROM memberships m JOIN workspaces w ON w.id = m.workspace
               WHERE m.participant = ? AND m.role = 'owner' AND w.personal_of IS NULL""", (pid,))]
        orgs = [o for (o,) in conn.execute("SELECT org FROM org_members WHERE person = ? AND role = 'owner'", (pid,))]
        conn.execute("UPDATE people SET deactivated = 1 WHERE id = ?", (pid,))
        conn.execute(f"UPDATE agents SET revoked = 1 WHERE id IN ({marks})", gone)
        conn.execute(f"DELETE FROM sessions WHERE participant IN ({marks})", gone)
        left = conn.execute(f"DELETE FROM memberships WHERE participant IN ({marks})", gone).rowcount
        conn.execute("DELETE FROM org_members WHERE person = ?", (pid,))
        conn.execute("DELETE FROM invitations WHERE invitee = ? OR inviter = ?", (pid, pid))
        ownerless = [w for w in owned if conn.execute(
            "SELECT 1 FROM memberships WHERE workspace = ? AND role = 'owner'", (w,)).fetchone() is None]
        ownerless += [o for o in orgs if conn.execute(
            "SELECT 1 FROM org_members WHERE org = ? AND role = 'owner'", (o,)).fetchone() is None]
    audit.record("person_deactivated", participant=pid, by="operator", agents_revoked=len(agents), memberships=left)
    return {"id": pid, "deactivated": True, "agents_revoked": agents, "ownerless": ownerless}


def reactivate(conn: sqlite3.Connection, handle: str, now: int) -> dict:
    """An operator lets a deactivated person back: they sign in again (with the password they had: `reset-password`
    gives a new one), and own their personal workspace and its organization again. What deactivation took stays
    taken: other memberships (they are invited again), agents (revoked keys never work again), sessions."""
    with Tx(conn):
        pid = _person(conn, handle)
        if conn.execute("SELECT deactivated FROM people WHERE id = ?", (pid,)).fetchone()[0] == 0:
            raise AdminError("not_deactivated", f"{handle!r} is not deactivated")
        conn.execute("UPDATE people SET deactivated = 0 WHERE id = ?", (pid,))
        personal = conn.execute("SELECT id, org FROM workspaces WHERE personal_of = ?", (pid,)).fetchall()
        for ws, org in personal:
            reach.add_direct(conn, ws, pid, Role.OWNER, now)
            conn.execute("DELETE FROM org_members WHERE org = ? AND person = ?", (org, pid))
            conn.execute("INSERT INTO org_members (org, person, role) VALUES (?,?,?)", (org, pid, Role.OWNER))
    audit.record("person_reactivated", participant=pid, by="operator")
    return {"id": pid, "reactivated": True, "personal_workspace": personal[0][0] if personal else None}
