"""Credentials: argon2 passwords, hashed API keys, short-lived session tokens (seed 003 §68)."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import sqlite3
from dataclasses import dataclass, field

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from msgspec import UNSET

from ..core import Kind
from ..protocol import frames, names
from ..store.writes import insert_session

_hasher = PasswordHasher()
KEY_PREFIX = "yggk"
TOKEN_PREFIX = "yggs"
AGENT_SESSION = 3600 * 1_000_000  # agents re-exchange their key hourly
PERSON_SESSION = 30 * 24 * 3600 * 1_000_000


def hash_password(pw: str) -> str:
    return _hasher.hash(pw)


def check_password(stored: str | None, pw: str) -> bool:
    if not stored:
        _hasher.hash(pw)  # same cost whether or not the person exists
        return False
    try:
        return _hasher.verify(stored, pw)
    except (VerificationError, InvalidHashError):
        return False


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def new_api_key() -> tuple[str, str, str]:
    """(key, key_id, key_hash): only the hash is stored; the key is shown once."""
    key_id = secrets.token_hex(8)
    secret = secrets.token_urlsafe(32)
    return f"{KEY_PREFIX}_{key_id}_{secret}", key_id, _digest(secret)


def agent_for_key(conn: sqlite3.Connection, key: str) -> str | None:
    """The agent whose (unrevoked) key this is, compared in constant time."""
    kid = key_id(key)
    if kid is None:
        return None
    row = conn.execute("SELECT id, key_hash FROM agents WHERE key_id = ? AND revoked = 0", (kid,)).fetchone()
    expected = row[1] if row else _digest("")
    ok = hmac.compare_digest(expected, _digest(key.split("_", 2)[2]))
    return row[0] if row and ok else None


def key_id(key) -> str | None:
    """The id part of an API key (`yggk_<id>_<secret>`), or None for anything else."""
    parts = key.split("_", 2) if isinstance(key, str) else []
    return parts[1] if len(parts) == 3 and parts[0] == KEY_PREFIX else None


def new_session(conn: sqlite3.Connection, participant: str, now: int, lifetime: int,
                key: str | None = None) -> tuple[str, int]:
    """A session for `participant` (`session_row`, written by `insert_session`)."""
    token, row = session_row(participant, now, lifetime, secrets.token_urlsafe(32))
    insert_session(conn, row, key)
    return token, row[2]


def session_row(participant: str, now: int, lifetime: int, secret: str) -> tuple[str, tuple]:
    """A new session's token and the row that stores it (its digest, never the token)."""
    token = f"{TOKEN_PREFIX}_{secret}"
    return token, (_digest(token), participant, now + lifetime, now)


def session_participant(conn: sqlite3.Connection, token: str, now: int) -> tuple[str, int] | None:
    """(participant, expires_at) for a live session token; API keys are never tokens."""
    if not isinstance(token, str) or not token.startswith(TOKEN_PREFIX + "_"):
        return None
    row = conn.execute("SELECT participant, expires_at FROM sessions WHERE token_hash = ?", (_digest(token),)).fetchone()
    if row is None or row[1] <= now:
        return None
    return row[0], row[1]


# what a connection whose session ended is told before it closes (docs/protocol.md, "Authentication")
REVOKED = "this agent was revoked by its owner: its key and sessions are refused from now on"
REPLACED = "this agent's key was replaced (rotate_key): sign in again with the new key"
ENDED = "this session was ended: sign in again"


def ended(conn: sqlite3.Connection, participant: str) -> str:
    """Why `participant`'s unexpired session is gone: its agent revoked, or its key replaced (`rotate_key`)."""
    row = conn.execute("SELECT revoked FROM agents WHERE id = ?", (participant,)).fetchone()
    return ENDED if row is None else REVOKED if row[0] else REPLACED


def delete_expired(conn: sqlite3.Connection, now: int) -> int:
    """Delete the sessions that expired (by `now`); how many. Nothing is written when none did."""
    if conn.execute("SELECT 1 FROM sessions WHERE expires_at <= ? LIMIT 1", (now,)).fetchone() is None:
        return 0
    return conn.execute("DELETE FROM sessions WHERE expires_at <= ?", (now,)).rowcount


# --- signing in (the gateway's `auth`) ---

def credentials(conn: sqlite3.Connection, f: frames.Auth, now: int):
    """Check an `auth` frame's credentials (read-only) at `now` (microseconds: a token is live until its
    expires_at); return (participant, kind, handle, token or None, expires_at), a `Password` still to check, or None.

    A token is resumed as it is; a key or a password earns a new session, made by the writer.
    """
    if f.api_key is not UNSET:  # an agent's key, or the narrow token its host was given for it (ops/hosting.py)
        from .hosting import agent_for_token

        aid = agent_for_key(conn, f.api_key) or agent_for_token(conn, f.api_key)
        if aid is None:
            return None
        name = conn.execute("SELECT name FROM agents WHERE id = ?", (aid,)).fetchone()[0]
        return aid, Kind.AGENT.value, name, None, AGENT_SESSION
    if f.handle is not UNSET and f.password is not UNSET:
        if not isinstance(f.handle, str) or not isinstance(f.password, str):
            return None
        row = active_person(conn, f.handle)
        return Password(row[:2] if row else None, row[2] if row else f.handle, f.password)  # checked by the caller
    if f.token is not UNSET:
        found = session_participant(conn, f.token, now)
        if found is None:
            return None
        pid, expires = found
        row = conn.execute("SELECT handle FROM people WHERE id = ?", (pid,)).fetchone()
        if row:
            return pid, Kind.HUMAN.value, row[0], f.token, expires
        row = conn.execute("SELECT name FROM agents WHERE id = ? AND revoked = 0", (pid,)).fetchone()
        return (pid, Kind.AGENT.value, row[0], f.token, expires) if row else None
    return None


HANDLE_TYPED = 64  # characters of a typed handle that are compared (a handle has at most 40)


def active_person(conn: sqlite3.Connection, handle: str) -> tuple | None:
    """(id, password_hash, handle) of the person `handle` names, as typed, else as handles are compared (`Alice` is
    `alice`: names.handle_key); None for nobody, or a deactivated person (as for a handle that does not exist)."""
    return conn.execute("SELECT id, password_hash, handle FROM people WHERE handle = ? AND deactivated = 0",
                        (handle,)).fetchone() or \
        conn.execute("SELECT id, password_hash, handle FROM people WHERE handle_key = ? AND deactivated = 0",
                     (names.handle_key(handle[:HANDLE_TYPED]),)).fetchone()


@dataclass(frozen=True)
class Password:
    """A person's sign-in whose password is still to be checked (argon2: slow on purpose)."""

    row: tuple | None  # (id, password_hash) of that handle, or None
    handle: str
    password: str = field(repr=False)

    def check(self):
        if not check_password(self.row[1] if self.row else None, self.password):
            return None
        return self.row[0], Kind.HUMAN.value, self.handle, None, PERSON_SESSION

    def rehashed(self) -> str | None:
        """After a right `check`: the password hashed with the current argon2 parameters when its stored hash was
        made with others (else None); `accounts.rehash` stores it."""
        return _hasher.hash(self.password) if self.row and _hasher.check_needs_rehash(self.row[1]) else None
