"""Migration 22 (issue 22): loops' goal state and the reports of loop iterations and pulses (core/goals.py).

A loop or a pulse is a schedule row (migration 18: kind `loop` or `pulse`, its goal or checklist, its interval and
next run); `loops` holds what a loop's safeguards count, `goal_reports` each iteration's verdict and each pulse's
report, numbered by the schedule's run (a run's report is stored once: the key). Self-contained, like step 18.
"""

from __future__ import annotations

from .ddl import Index, Table, big, integer, text

LOOPS = Table(
    "loops", text("id", key=True), text("workspace"), integer("max_iterations"), big("budget"), big("deadline"),
    integer("stall_after"),
    big("spent", default="0"), integer("done", default="0"), text("status"), text("reason", null=True),
    text("detail", null=True), big("ended_at", null=True))
GOAL_REPORTS = Table(
    "goal_reports", text("schedule"), integer("n"), text("workspace"), text("kind"), text("verdict"), text("report"),
    text("report_digest"), text("result_digest", null=True), big("credits", default="0"), integer("told", default="0"),
    big("at"), key=("schedule", "n"))
GOAL_INDEXES = (Index("goal_reports_workspace", "goal_reports", "workspace"),)

