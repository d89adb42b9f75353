"""Loops and pulses (issue 22, seed 003 §33-34, §38-40): made, ended by their verdicts and reports, listed here;
fired by the writer as schedules (core/schedule.py: kinds `loop`, `pulse`, `tell`); decided by core/goals.py.

Socket ops (docs/protocol.md, "Loops and pulses"), each `fn(conn, who, frame[, now]) -> dict` on the gateway's
management connection, like ops/schedules.py (whose `pause_schedule` and `delete_schedule` pause and delete these):

- `add_loop` / `add_pulse`: by the agent's owner, or the agent itself once its owner allowed it (`allow_routines`);
  attached to the workspace they are made in. A loop's first iteration runs at once; a pulse's after its interval.
- `loop_verdict`: the agent ends the iteration waiting for it (continue, done, stuck, with a report); the server
  decides whether the loop goes on and sets its next run, or stops it with its reason (and tells the owner).
- `pulse_report`: the agent's structured report of a pulse; stored, and told to the owner only if worth telling.
- `list_loops`: the loops and pulses the asker may see in a workspace, each with its latest reports.

What is told to an owner is a one-off schedule (`tell`, due now): the writer sends it through the one pipeline.
`sweep` (the gateway's sweeper) stops loops whose deadline passed or whose iteration could not be sent.
"""

from __future__ import annotations

import json
import sqlite3
import uuid

from ..core import goals as core
from ..core.goals import Iteration, Loop
from ..core.schedule import LOOP, PULSE, TELL, Schedule
from ..protocol import frames
from ..store import schedules as rows
from ..store.transactions import Tx
from .refusals import NotFound, Refused
from .schedules import _agent, _granted, _member, _text, as_dict, may_manage

LOOP_COLS = "id, max_iterations, budget, deadline, stall_after, spent, done, status, reason, detail, ended_at"
REPORT_COLS = "schedule, n, kind, verdict, report, report_digest, result_digest, credits, told, at"
RECENT = 20  # reports listed per loop or pulse
LIST_LIMIT = 100


def _loop(row) -> Loop:
    return Loop(**dict(zip(LOOP_COLS.split(", "), row)))


def _schedule(conn: sqlite3.Connection, sid: str) -> Schedule | None:
    row = conn.execute(f"SELECT {rows.COLUMNS} FROM schedules WHERE id = ?", (sid,)).fetchone()
    return rows.schedule_of(row) if row else None


def _maker(conn: sqlite3.Connection, who: str, ws, agent_ref) -> tuple[str, str]:
    """(agent, owner) of a new loop or pulse, refused unless `who` is its owner or the agent allowed its own."""
    _member(conn, ws, who)
    agent, owner = _agent(conn, ws, agent_ref if agent_ref is not None or not who.startswith("agent.") else who, who)
    if who != owner and not (who == agent and _granted(conn, agent)):
        raise Refused("permission_denied", "loops and pulses are made by the agent's owner, or by the agent once its "
                      "owner allowed it (allow_routines)")
    _member(conn, ws, owner)
    return agent, owner


def add_loop(conn: sqlite3.Connection, who: str, f: frames.AddLoop, now: int) -> dict:
    agent, owner = _maker(conn, who, f.workspace, f.agent)
    _text(f.goal, f.name)
    values = {"max_iterations": f.max_iterations, "budget": f.budget, "hours": f.hours, "stall_after": f.stall_after,
              "every": f.every}
    problem = core.limits_problem(values)
    if problem:
        raise Refused("bad_schedule", problem)
    got = {k: (v if v is not None else core.LIMITS[k][2]) for k, v in values.items() if k != "every"}
    s = Schedule(id=str(uuid.uuid4()), kind=LOOP, workspace=f.workspace, agent=agent, owner=owner, created_by=who,
                 text=f.goal.strip(), name=(f.name or "").strip(), every=f.every, next_at=now, created_at=now)
    loop = Loop(id=s.id, max_iterations=got["max_iterations"], budget=got["budget"],
                deadline=now + got["hours"] * 3600 * 1_000_000, stall_after=got["stall_after"])
    with Tx(conn):
        conn.execute(rows.INSERT, rows.row_of(s))
        conn.execute(f"INSERT INTO loops (workspace, {LOOP_COLS}) VALUES (?, {', '.join('?' * 11)})",
                     (s.workspace, *_loop_row(loop)))
        return {"loop": _as_dict(conn, s, loop, True)}


def add_pulse(conn: sqlite3.Connection, who: str, f: frames.AddPulse, now: int) -> dict:
    agent, owner = _maker(conn, who, f.workspace, f.agent)
    _text(f.checklist, f.name)
    if type(f.every) is not int or not core.PULSE_MIN_EVERY <= f.every <= core.MAX_EVERY:
        raise Refused("bad_schedule", f"every is a whole number of seconds from {core.PULSE_MIN_EVERY} to "
                      f"{core.MAX_EVERY}")
    s = Schedule(id=str(uuid.uuid4()), kind=PULSE, workspace=f.workspace, agent=agent, owner=owner, created_by=who,
                 text=f.checklist.strip(), name=(f.name or "").strip(), every=f.every,
                 next_at=now + f.every * 1_000_000, created_at=now)
    with Tx(conn):
        if conn.execute("SELECT 1 FROM schedules WHERE agent = ? AND workspace = ? AND kind = ?",
                        (agent, f.workspace, PULSE)).fetchone():
            raise Refused("bad_schedule", "this agent has its pulse here already: delete it first")
        conn.execute(rows.INSERT, rows.row_of(s))
        return {"pulse": _as_dict(conn, s, None, True)}


def _loop_row(loop: Loop) -> tuple:
    return tuple(getattr(loop, k) for k in LOOP_COLS.split(", "))


def _own(conn: sqlite3.Connection, who: str, ws, ref, kind: str) -> Schedule:
    """The asking agent's loop or pulse `ref` in `ws` (None: its only one waiting for a verdict, or its pulse)."""
    _member(conn, ws, who)
    if ref is not None:
        s = _schedule(conn, ref) if isinstance(ref, str) else None
        if s is None or s.kind != kind or s.workspace != ws or s.agent != who:
            raise NotFound
        return s
    found = conn.execute(f"SELECT {rows.COLUMNS} FROM schedules WHERE workspace = ? AND agent = ? AND kind = ? "
                         "ORDER BY created_at", (ws, who, kind)).fetchall()
    mine = [rows.schedule_of(r) for r in found]
    if kind == LOOP:
        mine = [s for s in mine if core.open_iteration(_state(conn, s.id), s.runs) is not None]
    if len(mine) != 1:
        raise Refused("bad_verdict", f"name the {kind}: {len(mine)} of yours could be meant")
    return mine[0]


def _state(conn: sqlite3.Connection, sid: str) -> Loop:
    row = conn.execute(f"SELECT {LOOP_COLS} FROM loops WHERE id = ?", (sid,)).fetchone()
    if row is None:
        raise NotFound
    return _loop(row)


def _spent(conn: sqlite3.Connection, s: Schedule, since: int | None) -> int:
    """What the agent's wallet in the loop's workspace was charged since its iteration was fired."""
    row = conn.execute("SELECT COALESCE(-SUM(delta), 0) FROM ledger WHERE workspace = ? AND account = ? AND delta < 0 "
                       "AND created_at >= ?", (s.workspace, s.agent, since or 0)).fetchone()
    return int(row[0])


def _tell(conn: sqlite3.Connection, s: Schedule, title: str, text: str, now: int) -> None:
    """A message of the agent to its owner, in their direct conversation here: sent by the writer at once."""
    t = Schedule(id=str(uuid.uuid4()), kind=TELL, workspace=s.workspace, agent=s.agent, owner=s.owner,
                 created_by=s.agent, text=text, name=title[:60], next_at=now, created_at=now)
    conn.execute(rows.INSERT, rows.row_of(t))


def _stopped(conn: sqlite3.Connection, s: Schedule, loop: Loop, now: int) -> None:
    conn.execute(f"UPDATE loops SET {', '.join(k + ' = ?' for k in LOOP_COLS.split(', ')[1:])} WHERE id = ?",
                 (*_loop_row(loop)[1:], loop.id))
    if loop.status != core.RUNNING:
        conn.execute("UPDATE schedules SET next_at = NULL WHERE id = ?", (s.id,))
        _tell(conn, s, f"Loop: {s.name or s.text[:40]}", core.told(loop), now)


def loop_verdict(conn: sqlite3.Connection, who: str, f: frames.LoopVerdict, now: int) -> dict:
    if f.verdict not in core.VERDICTS:
        raise Refused("bad_verdict", "verdict is continue, done or stuck")
    if not isinstance(f.report, str) or not f.report.strip() or len(f.report) > core.MAX_REPORT:
        raise Refused("bad_verdict", f"report is 1 to {core.MAX_REPORT} characters")
    if f.result is not None and (not isinstance(f.result, str) or len(f.result) > 100_000):
        raise Refused("bad_verdict", "result is text (what the iteration produced)")
    with Tx(conn):
        s = _own(conn, who, f.workspace, f.loop, LOOP)
        loop = _state(conn, s.id)
        n = core.open_iteration(loop, s.runs)
        if n is None or (f.iteration is not None and f.iteration != n):
            raise Refused("bad_verdict", "no iteration of this loop is waiting for a verdict" if n is None else
                          f"iteration {n} is the one waiting for a verdict")
        recent = [_iteration(r) for r in reversed(conn.execute(
            f"SELECT {REPORT_COLS} FROM goal_reports WHERE schedule = ? ORDER BY n DESC LIMIT ?",
            (s.id, loop.stall_after)).fetchall())]
        got = core.after_verdict(loop, n, f.verdict, f.report.strip(), f.result, _spent(conn, s, s.last_run_at),
                                 recent, s.every, now)
        it = got.iteration
        conn.execute(f"INSERT INTO goal_reports (workspace, {REPORT_COLS}) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                     (s.workspace, s.id, n, LOOP, it.verdict, it.report, it.report_digest, it.result_digest,
                      it.credits, int(got.tell is not None), now))
        _stopped(conn, s, got.loop, now)
        if got.next_at is not None:
            conn.execute("UPDATE schedules SET next_at = ? WHERE id = ?", (got.next_at, s.id))
        return {"loop": s.id, "iteration": n, "status": got.loop.status, "reason": got.loop.reason,
                "detail": got.loop.detail, "next_at": got.next_at, "spent": got.loop.spent}


def _iteration(row) -> Iteration:
    sid, n, _, verdict, report, rd, resd, credits, _, at = row
    return Iteration(loop=sid, n=n, verdict=verdict, report=report, report_digest=rd, result_digest=resd,
                     credits=credits, at=at)


def pulse_report(conn: sqlite3.Connection, who: str, f: frames.PulseReport, now: int) -> dict:
    items = f.items if f.items is not None else []
    problem = core.report_problem(f.summary, items)
    if problem or (f.tell is not None and (not isinstance(f.tell, str) or len(f.tell) > core.MAX_REPORT)):
        raise Refused("bad_report", problem or f"tell is text of at most {core.MAX_REPORT} characters")
    with Tx(conn):
        s = _own(conn, who, f.workspace, f.pulse, PULSE)
        if s.runs == 0 or conn.execute("SELECT 1 FROM goal_reports WHERE schedule = ? AND n = ?",
                                       (s.id, s.runs)).fetchone():
            raise Refused("bad_report", "no pulse of yours is waiting for its report")
        tell = core.worth_telling(f.summary, items, f.tell)
        report = json.dumps({"summary": f.summary, "items": items}, ensure_ascii=False)
        conn.execute(f"INSERT INTO goal_reports (workspace, {REPORT_COLS}) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                     (s.workspace, s.id, s.runs, PULSE, "report", report, core.digest(report), None,
                      _spent(conn, s, s.last_run_at), int(tell is not None), now))
        if tell is not None:
            _tell(conn, s, f"Pulse: {s.name or 'report'}", tell, now)
        return {"pulse": s.id, "run": s.runs, "told": tell is not None}


def list_loops(conn: sqlite3.Connection, who: str, f: frames.ListLoops, now: int) -> dict:
    ws = f.workspace
    _member(conn, ws, who)
    mine = "agent = ?" if who.startswith("agent.") else \
        "(created_by = ? OR agent IN (SELECT id FROM agents WHERE owner = ?))"
    found = conn.execute(f"SELECT {rows.COLUMNS} FROM schedules WHERE workspace = ? AND kind IN (?, ?) AND {mine} "
                         f"ORDER BY created_at DESC LIMIT {LIST_LIMIT}",
                         (ws, LOOP, PULSE, *((who,) if who.startswith("agent.") else (who, who)))).fetchall()
    out = []
    for s in map(rows.schedule_of, found):
        loop = _state(conn, s.id) if s.kind == LOOP else None
        out.append(_as_dict(conn, s, loop, may_manage(conn, who, s)))
    return {"workspace": ws, "loops": [d for d in out if d["kind"] == LOOP],
            "pulses": [d for d in out if d["kind"] == PULSE]}


def _as_dict(conn: sqlite3.Connection, s: Schedule, loop: Loop | None, may: bool) -> dict:
    reports = conn.execute(f"SELECT {REPORT_COLS} FROM goal_reports WHERE schedule = ? ORDER BY n DESC LIMIT {RECENT}",
                           (s.id,)).fetchall()
    shown = [{"n": r[1], "verdict": r[3], "report": json.loads(r[4]) if r[2] == PULSE else r[4],
              "credits": r[7], "told": bool(r[8]), "at": r[9]} for r in reports]
    out = {**as_dict(conn, s, may), "reports": shown}
    if loop is not None:
        out.update({k: getattr(loop, k) for k in LOOP_COLS.split(", ")[1:]},
                   waiting=core.open_iteration(loop, s.runs))
    return out


def sweep(conn: sqlite3.Connection, now: int) -> int:
    """Stop the running loops whose deadline passed, and those whose iteration the writer could not send (its agent
    out of credits, say: no verdict would ever come); forget the tells sent a day ago. The number stopped."""
    with Tx(conn):  # (the message is in the conversation: the row that sent it is spent)
        conn.execute("DELETE FROM schedules WHERE kind = ? AND next_at IS NULL AND last_run_at < ?",
                     (TELL, now - 86400 * 1_000_000))
    stopped = 0
    for row in conn.execute(f"SELECT {', '.join('l.' + c for c in LOOP_COLS.split(', '))}, s.runs, s.last_result "
                            "FROM loops l JOIN schedules s ON s.id = l.id WHERE l.status = ? AND "
                            "(l.deadline <= ? OR (s.runs > l.done AND s.last_result <> 'sent'))",
                            (core.RUNNING, now)).fetchall():
        loop, runs, result = _loop(row[:-2]), row[-2], row[-1]
        ended = core.expired(loop, now) or core.unsent(loop, runs, result, now)
        if ended is None:
            continue
        with Tx(conn):
            s = _schedule(conn, loop.id)
            if s is not None and _state(conn, loop.id).status == core.RUNNING:
                _stopped(conn, s, ended, now)
                stopped += 1
    return stopped


# op: (function, writes?)
OPS = {
    "add_loop": (add_loop, True),
    "add_pulse": (add_pulse, True),
    "loop_verdict": (loop_verdict, True),
    "pulse_report": (pulse_report, True),
    "list_loops": (list_loops, False),
}
TIMED = frozenset(OPS)
