"""Setting an agent's permissions in a workspace (seed 002, "Permissions").

Each membership of an agent has send, receive, can message, takes messages from, and monitor; the core
checks them on every send (`core.recipients.permission_denial`) and the gateway on every delivery and subscription.
Shared by the `ygg-server admin set-permissions` command and the socket's `set_permissions` op.
"""

from __future__ import annotations

import sqlite3

import msgspec

from . import admin
from ..core import Directory, Kind, Unresolved
from .queries import id_list
from ..store import loaders
from ..store.transactions import Tx

FLAGS = ("send", "receive", "monitor")
LISTS = ("can_message", "takes_from")


def _resolved(d: Directory, ref) -> tuple[str, ...]:
    """The ids a reference names in the workspace (`Directory.resolve`: another's are unknown, as made-up ones)."""
    found = d.resolve((ref,)) if isinstance(ref, str) else Unresolved(str(ref), "not a name or id")
    if isinstance(found, Unresolved):
        raise admin.AdminError("unknown_member", found.detail)
    return found


def target(conn: sqlite3.Connection, ws: str, ref) -> tuple[str, str | None]:
    """(agent id, its owner) of the agent `ref` names in `ws`; anyone else, or an agent elsewhere, is unknown."""
    d = loaders.load_directory(conn, ws)
    found = _resolved(d, ref)
    p = d.participants[found[0]]
    if len(found) != 1 or p.kind != Kind.AGENT:
        raise admin.AdminError("unknown_member", "permissions are an agent's: name an agent of this workspace")
    return p.id, p.owner


def set_permissions(conn: sqlite3.Connection, ws_ref: str, agent_ref: str, changes: dict) -> dict:
    """Change the given permissions of an agent's membership; an empty list means anyone (seed 002:
    "Empty means anyone in the workspace"). Returns the membership's permissions after the change."""
    bad = [k for k in changes if k not in FLAGS + LISTS]
    if bad:
        raise admin.AdminError("bad_frame", f"unknown permissions: {', '.join(sorted(bad))}")
    with Tx(conn):
        ws = admin.workspace(conn, ws_ref)
        aid, _ = target(conn, ws, agent_ref)
        d = loaders.load_directory(conn, ws)
        for k, v in changes.items():
            if k in FLAGS:
                if not isinstance(v, bool):
                    raise admin.AdminError("bad_frame", f"{k} is true or false")
                value = int(v)
            else:
                if not isinstance(v, list):
                    raise admin.AdminError("bad_frame", f"{k} is a list of participants (empty: anyone)")
                ids = sorted({i for ref in v for i in _resolved(d, ref)})
                value = msgspec.json.encode(ids).decode() if ids else None
            conn.execute(f"UPDATE memberships SET {k} = ? WHERE workspace = ? AND participant = ?", (value, ws, aid))
        return {"workspace": ws, "agent": aid, **current(conn, ws, aid)}


def current(conn: sqlite3.Connection, ws: str, aid: str) -> dict:
    send, receive, monitor, can, takes = conn.execute(
        "SELECT send, receive, monitor, can_message, takes_from FROM memberships WHERE workspace = ? AND participant = ?",
        (ws, aid)).fetchone()
    return {"send": bool(send), "receive": bool(receive), "monitor": bool(monitor),
            "can_message": id_list(can), "takes_from": id_list(takes)}
