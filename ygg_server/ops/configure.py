"""Configuring agents and workspaces after they are made: profiles, settings, a party's members and Lead, pins.

The socket's writes of profiles, settings and parties are the writer's (`set_profile`, `set_setting`,
`add_participant`, `remove_participant`, `set_lead`); here are the reads a client shows before changing them
(`get_profile`, `get_settings`), `set_pins` (memberships, as `add_agent` makes them), and the operator's
commands for all of them (`ygg-server admin set-profile`, `set-setting`, `add-participant`, …), checked by the same
rules (`protocol.configurable`, `core.party`) and written on the admin connection, which the writer notices
(SQLite's `data_version`, PostgreSQL's config version) and reads again before its next decision.
"""

from __future__ import annotations

import sqlite3
from typing import Any, Callable

import msgspec

from . import admin, reach
from .refusals import AdminError, NotFound, person_only
from ..core import RefusalReason as R, View, party as core_party
from ..protocol import ErrorCode as E, configurable, frames, names
from ..protocol.replies import profile_obj
from ..store import loaders, writes
from ..store.rows import profile
from ..store.transactions import Tx


# --- profiles ---

def _visible_agent(conn: sqlite3.Connection, who: str, ref: str) -> str:
    """`ref`: one of `who`'s agents (id or name), or by id an agent in a workspace `who` is in; else not found."""
    aid = admin.own_agent(conn, who, ref)
    if aid is None and conn.execute(
            """SELECT 1 FROM memberships a JOIN memberships m ON m.workspace = a.workspace
               JOIN agents g ON g.id = a.participant
               WHERE a.participant = ? AND m.participant = ? AND g.revoked = 0 LIMIT 1""", (ref, who)).fetchone():
        aid = ref
    if aid is None:
        raise NotFound
    return aid


def agent_profile(conn: sqlite3.Connection, aid: str) -> dict:
    name, raw = conn.execute("SELECT name, profile FROM agents WHERE id = ?", (aid,)).fetchone()
    return {"agent": aid, "name": name, "profile": profile_obj(profile(raw))}


def get_profile(conn: sqlite3.Connection, who: str, f: frames.GetProfile) -> dict:
    """An agent's profile: its owner's (by id or name), or by id that of an agent in a workspace the asker is in
    (rosters show it to them anyway)."""
    return agent_profile(conn, _visible_agent(conn, who, f.agent))


def set_profile(conn: sqlite3.Connection, agent_ref: str, changes: dict[str, Any]) -> dict:
    """The operator sets an agent's profile fields (`set_profile`'s rules; nothing stored when one is refused)."""
    try:
        given = configurable.check_profile(changes)
    except names.BadName as e:
        raise AdminError(E.BAD_NAME, e.detail) from None
    with Tx(conn):
        aid = admin.agent(conn, agent_ref)
        raw = conn.execute("SELECT profile FROM agents WHERE id = ?", (aid,)).fetchone()[0]
        prof = msgspec.structs.replace(profile(raw), **given)
        conn.execute("UPDATE agents SET profile = ? WHERE id = ?", (msgspec.json.encode(prof).decode(), aid))
    return agent_profile(conn, aid)


# --- workspace settings ---

def get_settings(conn: sqlite3.Connection, who: str, f: frames.GetSettings) -> dict:
    """A workspace's settings: those its owners and admins set, and every one in force (defaults filled in). Anyone
    in it reads them (its agents too: the rules they are decided by); another workspace's are not found."""
    if admin.role_in(conn, f.workspace, who) is None:
        raise NotFound
    stored = loaders.settings(conn, f.workspace)
    return {"workspace": f.workspace, "set": stored, "settings": configurable.settings_in_force(stored)}


def set_setting(conn: sqlite3.Connection, ws_ref: str, key: str, value: Any) -> dict:
    """The operator sets (or, with None, removes) a workspace setting, as `set_setting` does."""
    try:
        problem = configurable.setting_problem(key, value)
    except configurable.UnknownSetting:
        raise AdminError(E.BAD_FRAME, f"unknown setting {key!r}; the settings: {', '.join(configurable.SETTINGS)}") \
            from None
    if problem:
        raise AdminError(R.BAD_AMOUNT, problem)
    with Tx(conn):
        ws = admin.workspace(conn, ws_ref)
        stored = loaders.settings(conn, ws)
        if value is None:
            stored.pop(key, None)
        else:
            stored[key] = value
        conn.execute("UPDATE workspaces SET settings = ? WHERE id = ?", (msgspec.json.encode(stored).decode(), ws))
    return {"workspace": ws, "key": key, "value": value, "settings": configurable.settings_in_force(stored)}


# --- parties ---

def party(conn: sqlite3.Connection, op: str, ws_ref: str, conv_ref: str, target: str | None, *, now: int) -> dict:
    """The operator adds or removes a party's participant (`op` add_participant / remove_participant) or sets its
    Lead (set_lead; `target` None: none), acting as the workspace's owner, by the core's rules (docs/rules.md)."""
    with Tx(conn):
        ws = admin.workspace(conn, ws_ref)
        owner = conn.execute("SELECT participant FROM memberships WHERE workspace = ? AND role = 'owner' "
                             "ORDER BY created_at LIMIT 1", (ws,)).fetchone()[0]
        directory = loaders.load_directory(conn, ws)
        known = loaders.load_conversations(conn, ws)
        conv = directory.conversation(conv_ref, owner, known)
        if conv is not None and conv.id not in known:
            conv = None
        view = View(directory, conv, flags=frozenset(loaders.load_flags(conn)))
        if op == "set_lead":
            d = core_party.set_lead(view, owner, target)
        else:
            d = core_party.change_members(view, owner, "add" if op == "add_participant" else "remove", target, now)
        if d.refusal:
            raise AdminError(d.refusal.reason, d.refusal.detail)
        c = d.conversation or conv
        if d.conversation is not None:
            writes.apply(conn, d, now, ws)
    return {"conversation": c.id, "members": sorted(c.members), "lead": c.lead, "changed": d.conversation is not None}


# --- pins ---

def pin(conn: sqlite3.Connection, aid: str, owner: str, workspaces: list[str] | None, now: int) -> dict:
    """Seed 003 §19: an agent pinned "to chosen workspaces" is in those of its owner's and no other; unpinned
    (None), it goes with its owner into every workspace they reach. It leaves the workspaces it is no longer pinned
    to (what their admins decided for it is kept for its coming back, as when a person leaves) and joins those it
    now is, as far as each organization's plan has room (`left_out`)."""
    mine = [ws for (ws,) in conn.execute(
        "SELECT workspace FROM memberships WHERE participant = ? ORDER BY created_at, workspace", (owner,))]
    if workspaces is not None:
        unknown = [ws for ws in workspaces if ws not in mine]
        if unknown:
            raise AdminError("unknown_workspace", f"no workspace {unknown[0]!r} of the agent's owner")
        workspaces = list(dict.fromkeys(workspaces))
    conn.execute("UPDATE agents SET pinned = ? WHERE id = ?",
                 (None if workspaces is None else msgspec.json.encode(workspaces).decode(), aid))
    wanted = mine if workspaces is None else workspaces
    for (ws,) in conn.execute("SELECT workspace FROM memberships WHERE participant = ?", (aid,)).fetchall():
        if ws not in wanted:
            reach.leave_agent(conn, ws, aid)
    left_out = [ws for ws in wanted if aid in reach.bring_agents(conn, ws, owner, now)]
    here = [ws for (ws,) in conn.execute("SELECT workspace FROM memberships WHERE participant = ? "
                                         "ORDER BY created_at, workspace", (aid,))]
    return {"id": aid, "pinned": workspaces, "workspaces": here, "left_out": left_out}


def set_pins(conn: sqlite3.Connection, who: str, f: frames.SetPins, now: int) -> dict:
    """A person pins their own agent to some of their workspaces (ids), or unpins it (null)."""
    person_only(who)
    with Tx(conn):
        aid = admin.own_agent(conn, who, f.agent)
        if aid is None:
            raise NotFound
        if f.workspaces is not None:  # one the owner is not in is answered as one that does not exist
            for ws in f.workspaces:
                if admin.role_in(conn, ws, who) is None:
                    raise NotFound
        return pin(conn, aid, who, f.workspaces, now)


def set_pins_admin(conn: sqlite3.Connection, agent_ref: str, ws_refs: list[str] | None, *, now: int) -> dict:
    """The operator pins an agent to workspaces of its owner (ids or names, `admin.workspace`), or unpins it."""
    with Tx(conn):
        aid = admin.agent(conn, agent_ref)
        owner = conn.execute("SELECT owner FROM agents WHERE id = ?", (aid,)).fetchone()[0]
        wanted = None if ws_refs is None else [admin.workspace(conn, ref) for ref in ws_refs]
        return pin(conn, aid, owner, wanted, now)


# op -> (fn, whether it writes); `set_pins` takes the time (`fn(conn, who, frame, now)`)
OPS: dict[str, tuple[Callable, bool]] = {"get_profile": (get_profile, False), "get_settings": (get_settings, False),
                                         "set_pins": (set_pins, True)}
TIMED = frozenset({"set_pins"})
