"""Where an agent runs (seed 003 §21-25, §29, §69): on its owner's machine (local, the default) or hosted, its
bridge started by a supervisor on a host (agents/hosting.py).

- A host belongs to a person and has a long-lived host key (`yggh_<id>_<secret>`, shown once, stored hashed). The
  key opens only the host's own connection (`/host`, net/hosting.py): it is no agent's credential.
- An agent of that person is assigned to one host (`agent_hosts`), or none: switching it back to local deletes the
  assignment, the tokens its host was given for it and its sessions, at once: no in-between state (§24).
- Over its connection the host asks for a narrow token per agent it starts (`yggx_<id>_<secret>`, §69): good only
  for `auth` (in `api_key`, exchanged for that agent's session, renewals too) and only while the agent is still
  assigned to that host. The bridge never holds the agent's API key.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import sqlite3

from .. import audit
from ..store.transactions import Tx
from . import admin
from ..protocol import ErrorCode as E
from .refusals import AdminError

HOST_KEY_PREFIX = "yggh"
EXCHANGE_PREFIX = "yggx"
RUNTIMES = ("local", "hosted")


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _split(credential, prefix: str) -> tuple[str, str] | None:
    parts = credential.split("_", 2) if isinstance(credential, str) else []
    return (parts[1], parts[2]) if len(parts) == 3 and parts[0] == prefix else None


def add_host(conn: sqlite3.Connection, owner: str, name: str, *, now: int) -> dict:
    """A host of the person `owner` (handle or id): {"id", "name", "host_key"} (the key shown this once)."""
    name = admin._named("host", name, trim=False)
    key_id, secret = secrets.token_hex(8), secrets.token_urlsafe(32)
    with Tx(conn):
        pid = admin.person(conn, owner)
        if conn.execute("SELECT 1 FROM hosts WHERE owner = ? AND name = ?", (pid, name)).fetchone():
            raise AdminError(E.BAD_NAME, f"you already have a host named {name}")
        hid = "host." + secrets.token_hex(16)
        conn.execute("INSERT INTO hosts (id, owner, name, key_id, key_hash, created_at) VALUES (?,?,?,?,?,?)",
                     (hid, pid, name, key_id, _digest(secret), now))
    audit.record("host_added", participant=pid, host=hid)
    return {"id": hid, "name": name, "host_key": f"{HOST_KEY_PREFIX}_{key_id}_{secret}"}


def host(conn: sqlite3.Connection, ref: str, owner: str | None = None) -> str:
    """A host by id or name (of `owner`, when given: another's is unknown alike)."""
    sql, args = "SELECT id FROM hosts WHERE (id = ? OR name = ?)", [ref, ref]
    if owner is not None:
        sql += " AND owner = ?"
        args.append(owner)
    rows = conn.execute(sql, args).fetchall()
    if len(rows) != 1:
        raise AdminError(E.UNKNOWN_HOST, f"no host {ref!r}" if not rows else f"{ref!r} is ambiguous: give its id")
    return rows[0][0]


def set_runtime(conn: sqlite3.Connection, agent_ref: str, runtime: str, host_ref: str | None = None,
                who: str | None = None, *, now: int) -> dict:
    """Run the agent locally or on a host of its owner's; `who` (a person) must own the agent (None: the operator).
    Local clears the host assignment completely: the row, the host's tokens for the agent, its sessions."""
    if runtime not in RUNTIMES:
        raise AdminError(E.BAD_FRAME, "runtime is local or hosted")
    with Tx(conn):
        aid = admin.agent(conn, agent_ref)
        owner, revoked = conn.execute("SELECT owner, revoked FROM agents WHERE id = ?", (aid,)).fetchone()
        if (who is not None and owner != who) or revoked:
            raise AdminError("unknown_agent", f"no agent {agent_ref!r} of yours")
        if runtime == "local":
            if host_ref is not None:
                raise AdminError(E.BAD_FRAME, "a local agent has no host")
            had = conn.execute("DELETE FROM agent_hosts WHERE agent = ?", (aid,)).rowcount
            conn.execute("DELETE FROM host_tokens WHERE agent = ?", (aid,))
            if had:  # its hosted bridge's sessions end (its connections close: the gateway's rescan)
                conn.execute("DELETE FROM sessions WHERE participant = ?", (aid,))
            return {"agent": aid, "runtime": "local", "host": None}
        if host_ref is None:
            raise AdminError(E.BAD_FRAME, "hosted: name the host")
        hid = host(conn, host_ref, owner)
        conn.execute("DELETE FROM host_tokens WHERE agent = ? AND host <> ?", (aid, hid))
        conn.execute("INSERT INTO agent_hosts (agent, host, assigned_at) VALUES (?,?,?) "
                     "ON CONFLICT (agent) DO UPDATE SET host = excluded.host, assigned_at = excluded.assigned_at",
                     (aid, hid, now))
    audit.record("agent_runtime", participant=aid, host=hid)
    return {"agent": aid, "runtime": "hosted", "host": hid}


def runtime(conn: sqlite3.Connection, aid: str) -> dict:
    row = conn.execute("SELECT host FROM agent_hosts WHERE agent = ?", (aid,)).fetchone()
    return {"agent": aid, "runtime": "hosted" if row else "local", "host": row[0] if row else None}


def host_for_key(conn: sqlite3.Connection, key) -> str | None:
    """The host whose key this is, compared in constant time."""
    parts = _split(key, HOST_KEY_PREFIX)
    row = conn.execute("SELECT id, key_hash FROM hosts WHERE key_id = ?", (parts[0],)).fetchone() if parts else None
    ok = hmac.compare_digest(row[1] if row else _digest(""), _digest(parts[1] if parts else ""))
    return row[0] if row and ok else None


def hosted_agents(conn: sqlite3.Connection, hid: str) -> list[dict]:
    """The agents assigned to host `hid`: {"id", "name", "pending": wakes not yet acknowledged}."""
    rows = conn.execute(
        """SELECT a.id, a.name, (SELECT COUNT(*) FROM deliveries d WHERE d.recipient = a.id AND d.wake = 1)
           FROM agent_hosts h JOIN agents a ON a.id = h.agent AND a.revoked = 0 WHERE h.host = ?
           ORDER BY h.assigned_at, a.id""", (hid,)).fetchall()
    return [{"id": i, "name": n, "pending": p} for i, n, p in rows]


def issue_token(conn: sqlite3.Connection, hid: str, aid: str, *, now: int) -> str | None:
    """A new narrow token for the agent `aid` assigned to host `hid` (its older ones from this host end), or None
    when it is not assigned there."""
    with Tx(conn):
        if conn.execute("SELECT 1 FROM agent_hosts WHERE agent = ? AND host = ?", (aid, hid)).fetchone() is None:
            return None
        tid, secret = secrets.token_hex(8), secrets.token_urlsafe(32)
        conn.execute("DELETE FROM host_tokens WHERE agent = ? AND host = ?", (aid, hid))
        conn.execute("INSERT INTO host_tokens (id, host, agent, token_hash, created_at) VALUES (?,?,?,?,?)",
                     (tid, hid, aid, _digest(secret), now))
    return f"{EXCHANGE_PREFIX}_{tid}_{secret}"


def agent_for_token(conn: sqlite3.Connection, token) -> str | None:
    """The agent a host's narrow token exchanges for: while the agent is assigned to that host, unrevoked."""
    parts = _split(token, EXCHANGE_PREFIX)
    row = conn.execute(
        """SELECT t.agent, t.token_hash FROM host_tokens t JOIN agent_hosts h ON h.agent = t.agent AND h.host = t.host
           JOIN agents a ON a.id = t.agent AND a.revoked = 0 WHERE t.id = ?""", (parts[0],)).fetchone() if parts else None
    ok = hmac.compare_digest(row[1] if row else _digest(""), _digest(parts[1] if parts else ""))
    return row[0] if row and ok else None


def list_hosts(conn: sqlite3.Connection, pid: str) -> list[dict]:
    """`pid`'s hosts, each with the agents assigned to it."""
    hosts = conn.execute("SELECT id, name FROM hosts WHERE owner = ? ORDER BY created_at, id", (pid,)).fetchall()
    return [{"id": h, "name": n, "agents": [{"id": a["id"], "name": a["name"]} for a in hosted_agents(conn, h)]}
            for h, n in hosts]
