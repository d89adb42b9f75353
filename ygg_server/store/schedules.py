"""Reminders' and routines' rows (migration 18), as core.schedule.Schedule, for both stores.

The writer reads the due ones inside its batch (`DUE`, PostgreSQL: `DUE_PG`, locked and skipped by the other
nodes) and writes each back as its run left it (`UPDATE`), in the same transaction as the send it made.
"""

from __future__ import annotations

from typing import Iterable

from ..core.schedule import Schedule

COLUMNS = ("id, kind, workspace, agent, owner, created_by, name, text, every, cron, tz, next_at, paused, runs, "
           "last_run_at, last_result, created_at")
DUE_LIMIT = 100  # a batch fires at most this many (the rest are due at the next one)
DUE = f"SELECT {COLUMNS} FROM schedules WHERE next_at IS NOT NULL AND paused = 0 AND next_at <= ? " \
      f"ORDER BY next_at LIMIT {DUE_LIMIT}"
DUE_PG = f"SELECT {COLUMNS} FROM schedules WHERE next_at IS NOT NULL AND paused = 0 AND next_at <= $1 " \
         f"ORDER BY next_at LIMIT {DUE_LIMIT} FOR UPDATE SKIP LOCKED"
NEXT = "SELECT MIN(next_at) FROM schedules WHERE next_at IS NOT NULL AND paused = 0"
UPDATE = "UPDATE schedules SET next_at = ?, runs = ?, last_run_at = ?, last_result = ? WHERE id = ?"
UPDATE_PG = "UPDATE schedules SET next_at = $1, runs = $2, last_run_at = $3, last_result = $4 WHERE id = $5"
INSERT = f"INSERT INTO schedules ({COLUMNS}) VALUES ({', '.join('?' * 17)})"


def schedule_of(row) -> Schedule:
    (sid, kind, ws, agent, owner, by, name, text, every, cron, tz, next_at, paused, runs, last_run_at, last_result,
     created_at) = row
    return Schedule(id=sid, kind=kind, workspace=ws, agent=agent, owner=owner, created_by=by, name=name, text=text,
                    every=every, cron=cron, tz=tz, next_at=next_at, paused=bool(paused), runs=runs,
                    last_run_at=last_run_at, last_result=last_result, created_at=created_at)


def row_of(s: Schedule) -> tuple:
    return (s.id, s.kind, s.workspace, s.agent, s.owner, s.created_by, s.name, s.text, s.every, s.cron, s.tz,
            s.next_at, int(s.paused), s.runs, s.last_run_at, s.last_result, s.created_at)


def updates(done: Iterable[Schedule]) -> list[tuple]:
    return [(s.next_at, s.runs, s.last_run_at, s.last_result, s.id) for s in done]
