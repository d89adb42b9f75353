"""Reminders and routines: made, listed, paused and deleted here; run by the writer (core/schedule.py).

Socket ops (docs/protocol.md, "Reminders and routines"), each `fn(conn, who, frame[, now]) -> dict` on a
sqlite3-shaped connection; the writes run on the gateway's management connection, so the writer sees them
at its next batch (SQLite's data_version; PostgreSQL's writer looks for due rows every second).

- `add_reminder`: a person sets one for themselves, naming the agent that delivers it; an agent sets one for
  its owner, or for a person of the workspace who asked (seed 003 §41). Either way it is delivered in the
  direct conversation of that agent and that person, in the workspace it was made in (§42).
- `add_routine`: by the agent's owner, or by the agent itself once its owner allowed it (`allow_routines`);
  at most ten per agent (§35); attached to the workspace it was made in (§36).
- `list_schedules`: what the asker may see in a workspace: a person, their reminders and their agents'
  routines and reminders; an agent, its own. `may_manage` says whether the asker may pause or delete it.
- `pause_schedule` / `delete_schedule`: by whoever may manage it (the agent's owner; the person reminded; the
  agent, for the reminders it set and, while allowed, its routines). Anything else is answered `not_found`.
"""

from __future__ import annotations

import sqlite3
import uuid

from ..core import schedule as core
from ..core.schedule import LOOP, PULSE, REMINDER, ROUTINE, Schedule
from ..protocol import frames
from ..store import schedules as rows
from ..store.transactions import Tx, serialized
from .refusals import NotFound, Refused

LIST_LIMIT = 200
KINDS = "kind IN ('reminder', 'routine')"  # (loops and pulses are listed by ops/goals.py; tells are not listed)


def _member(conn: sqlite3.Connection, ws: str, pid: str) -> None:
    if not isinstance(ws, str) or conn.execute(
            "SELECT 1 FROM memberships WHERE workspace = ? AND participant = ?", (ws, pid)).fetchone() is None:
        raise NotFound


def _agent(conn: sqlite3.Connection, ws: str, ref, who: str) -> tuple[str, str]:
    """(id, owner) of the agent of workspace `ws` that `ref` names (its id, or its name: the asker's first)."""
    if not isinstance(ref, str) or not ref:
        raise Refused("unknown_recipient", "name the agent (its id or name)")
    found = conn.execute(
        "SELECT a.id, a.owner FROM agents a JOIN memberships m ON m.participant = a.id AND m.workspace = ? "
        "WHERE (a.id = ? OR a.name = ?) AND a.revoked = 0 ORDER BY a.id", (ws, ref, ref)).fetchall()
    mine = [r for r in found if r[1] == who]
    if mine or len(found) == 1:
        return tuple((mine or found)[0])
    raise Refused("unknown_recipient", f"no single agent {ref!r} in this workspace")


def _person(conn: sqlite3.Connection, ws: str, ref) -> str:
    if not isinstance(ref, str) or not ref:
        raise Refused("unknown_recipient", "name the person (their id or @handle)")
    row = conn.execute(
        "SELECT p.id FROM people p JOIN memberships m ON m.participant = p.id AND m.workspace = ? "
        "WHERE p.id = ? OR p.handle = ?", (ws, ref, ref.removeprefix("@"))).fetchone()
    if row is None:
        raise Refused("unknown_recipient", f"no person {ref!r} in this workspace")
    return row[0]


def _granted(conn: sqlite3.Connection, agent: str) -> bool:
    return conn.execute("SELECT 1 FROM routine_grants WHERE agent = ?", (agent,)).fetchone() is not None


def _owner_of(conn: sqlite3.Connection, agent: str) -> str | None:
    row = conn.execute("SELECT owner FROM agents WHERE id = ?", (agent,)).fetchone()
    return row[0] if row else None


def may_manage(conn: sqlite3.Connection, who: str, s: Schedule) -> bool:
    """The agent's owner; the person reminded; the agent itself: the reminders it set, and its routines while its
    owner allows it."""
    if who == s.agent:
        return _granted(conn, who) if s.kind == ROUTINE else s.created_by == who
    return who == _owner_of(conn, s.agent) or (s.kind == REMINDER and who == s.owner)


def _text(text, name="") -> None:
    problem = core.text_problem(text, name)
    if problem:
        raise Refused("bad_schedule", problem)


def _insert(conn: sqlite3.Connection, s: Schedule) -> dict:
    conn.execute(rows.INSERT, rows.row_of(s))
    return {"schedule": as_dict(conn, s, may=True)}


def add_reminder(conn: sqlite3.Connection, who: str, f: frames.AddReminder, now: int) -> dict:
    ws = f.workspace
    _member(conn, ws, who)
    _text(f.text)
    if type(f.at) is not int or not now - 3600 * 10**6 <= f.at <= now + 5 * 366 * 86400 * 10**6:
        raise Refused("bad_schedule", "at is a time in microseconds since the epoch, within five years")
    if who.startswith("agent."):
        agent = who
        person = _person(conn, ws, f.person) if f.person is not None else _owner_of(conn, who)
        _member(conn, ws, person)  # (its owner must be here too: the reminder is delivered here, §42)
    else:
        agent, person = _agent(conn, ws, f.agent, who)[0], who
    s = Schedule(id=str(uuid.uuid4()), kind=REMINDER, workspace=ws, agent=agent, owner=person, created_by=who,
                 text=f.text.strip(), next_at=max(f.at, now), created_at=now)
    with Tx(conn):
        return _insert(conn, s)


def add_routine(conn: sqlite3.Connection, who: str, f: frames.AddRoutine, now: int) -> dict:
    ws = f.workspace
    _member(conn, ws, who)
    agent, owner = _agent(conn, ws, f.agent if f.agent is not None or not who.startswith("agent.") else who, who)
    if who != owner and not (who == agent and _granted(conn, agent)):
        raise Refused("permission_denied", "routines are made by the agent's owner, or by the agent once its "
                      "owner allowed it (allow_routines)")
    _member(conn, ws, owner)
    _text(f.text, f.name)
    problem = core.spec_problem(f.cron, f.every, f.tz)
    if problem:
        raise Refused("bad_schedule", problem)
    first = core.next_run(f.cron, f.every, f.tz, now)
    s = Schedule(id=str(uuid.uuid4()), kind=ROUTINE, workspace=ws, agent=agent, owner=owner, created_by=who,
                 text=f.text.strip(), name=(f.name or "").strip(), every=f.every, cron=f.cron, tz=f.tz,
                 next_at=first, created_at=now)
    with Tx(conn):
        serialized(conn, "routines:" + agent)
        held = conn.execute("SELECT COUNT(*) FROM schedules WHERE agent = ? AND kind = ?", (agent, ROUTINE)).fetchone()
        problem = core.routine_problem(held[0])
        if problem:
            raise Refused("routine_limit", problem)
        return _insert(conn, s)


def _find(conn: sqlite3.Connection, who: str, ws: str, sid) -> Schedule:
    _member(conn, ws, who)
    row = conn.execute(f"SELECT {rows.COLUMNS} FROM schedules WHERE id = ? AND workspace = ?",
                       (sid if isinstance(sid, str) else "", ws)).fetchone()
    if row is None:
        raise NotFound
    s = rows.schedule_of(row)
    if not may_manage(conn, who, s):
        raise NotFound  # (as one that does not exist: the asker learns nothing of another's)
    return s


def pause_schedule(conn: sqlite3.Connection, who: str, f: frames.PauseSchedule, now: int) -> dict:
    with Tx(conn):
        s = _find(conn, who, f.workspace, f.id)
        if f.paused:
            s = Schedule(**{**_fields(s), "paused": True})
        elif s.paused:
            s = core.resumed(s, now)
        conn.execute("UPDATE schedules SET paused = ?, next_at = ? WHERE id = ?", (int(s.paused), s.next_at, s.id))
        return {"schedule": as_dict(conn, s, may=True)}


def delete_schedule(conn: sqlite3.Connection, who: str, f: frames.DeleteSchedule) -> dict:
    with Tx(conn):
        s = _find(conn, who, f.workspace, f.id)
        conn.execute("DELETE FROM schedules WHERE id = ?", (s.id,))
        if s.kind in (LOOP, PULSE):  # (ops/goals.py's: a loop's state, its iterations' and a pulse's reports)
            conn.execute("DELETE FROM loops WHERE id = ?", (s.id,))
            conn.execute("DELETE FROM goal_reports WHERE schedule = ?", (s.id,))
    return {"deleted": s.id}


def allow_routines(conn: sqlite3.Connection, who: str, f: frames.AllowRoutines, now: int) -> dict:
    """The owner's standing permission for its agent to make and manage its own routines (seed 003 §35)."""
    if not isinstance(f.agent, str) or conn.execute(
            "SELECT 1 FROM agents WHERE owner = ? AND (id = ? OR name = ?) AND revoked = 0",
            (who, f.agent, f.agent)).fetchone() is None:
        raise NotFound
    agent = conn.execute("SELECT id FROM agents WHERE owner = ? AND (id = ? OR name = ?) AND revoked = 0",
                         (who, f.agent, f.agent)).fetchone()[0]
    with Tx(conn):
        conn.execute("DELETE FROM routine_grants WHERE agent = ?", (agent,))
        if f.allow:
            conn.execute("INSERT INTO routine_grants (agent, granted_by, created_at) VALUES (?,?,?)",
                         (agent, who, now))
    return {"agent": agent, "allowed": bool(f.allow)}


def list_schedules(conn: sqlite3.Connection, who: str, f: frames.ListSchedules) -> dict:
    ws = f.workspace
    _member(conn, ws, who)
    if who.startswith("agent."):
        found = conn.execute(f"SELECT {rows.COLUMNS} FROM schedules WHERE workspace = ? AND agent = ? AND {KINDS} "
                             f"ORDER BY kind, created_at LIMIT {LIST_LIMIT}", (ws, who)).fetchall()
    else:
        found = conn.execute(
            f"SELECT {rows.COLUMNS} FROM schedules WHERE workspace = ? AND {KINDS} AND (owner = ? OR created_by = ? OR "
            f"agent IN (SELECT id FROM agents WHERE owner = ?)) ORDER BY kind, created_at LIMIT {LIST_LIMIT}",
            (ws, who, who, who)).fetchall()
    out = [rows.schedule_of(r) for r in found]
    return {"workspace": ws, "schedules": [as_dict(conn, s, may=may_manage(conn, who, s)) for s in out],
            "max_routines": core.MAX_ROUTINES}


def _fields(s: Schedule) -> dict:
    return {k: getattr(s, k) for k in s.__struct_fields__}


def _name(conn: sqlite3.Connection, pid: str) -> str:
    row = conn.execute("SELECT name FROM agents WHERE id = ?", (pid,)).fetchone() if pid.startswith("agent.") else \
        conn.execute("SELECT '@' || handle FROM people WHERE id = ?", (pid,)).fetchone()
    return row[0] if row else pid


def as_dict(conn: sqlite3.Connection, s: Schedule, may: bool) -> dict:
    return {**_fields(s), "agent_name": _name(conn, s.agent), "owner_name": _name(conn, s.owner), "may_manage": may}


# op: (function, writes?)
OPS = {
    "list_schedules": (list_schedules, False),
    "add_reminder": (add_reminder, True),
    "add_routine": (add_routine, True),
    "pause_schedule": (pause_schedule, True),
    "delete_schedule": (delete_schedule, True),
    "allow_routines": (allow_routines, True),
}
TIMED = frozenset({"add_reminder", "add_routine", "pause_schedule", "allow_routines"})
