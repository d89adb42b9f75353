"""Migration 18 (issue 22): reminders and routines (core/schedule.py), which agents may make their own routines, and
approvals with their standing rules (core/approvals.py).

Its own module, so that the step is self-contained: `tables.py` adds these to a new database, the step to an
older one (IF NOT EXISTS: a database that has them is left as it is).
"""

from __future__ import annotations

from .ddl import POSTGRES, SQLITE, Index, Table, big, integer, text

SCHEDULES = Table(
    "schedules", text("id", key=True), text("kind"), text("workspace"), text("agent"), text("owner"),
    text("created_by"), text("name"), text("text"), integer("every", null=True), text("cron", null=True),
    text("tz"), big("next_at", null=True), integer("paused", default="0"), integer("runs", default="0"),
    big("last_run_at", null=True), text("last_result", null=True), big("created_at"))
# an agent's owner lets it make and manage its own routines (seed 003 §35: "with the owner's standing permission")
ROUTINE_GRANTS = Table("routine_grants", text("agent", key=True), text("granted_by"), big("created_at"))

APPROVALS = Table(
    "approvals", text("id", key=True), text("workspace"), text("agent"), text("tool"), text("arg"), text("status"),
    big("created_at"), big("expires_at"), text("decided_by", null=True), big("decided_at", null=True))
TOOL_RULES = Table(
    "tool_rules", text("id", key=True), text("workspace"), text("agent"), text("effect"), text("tool"),
    text("specifier", null=True), text("created_by"), big("created_at"))

SCHEDULE_INDEXES = (
    Index("schedules_due", "schedules", "next_at", where="next_at IS NOT NULL AND paused = 0"),
    Index("schedules_agent", "schedules", "agent"),
    Index("schedules_workspace", "schedules", "workspace"),
    Index("approvals_workspace", "approvals", "workspace, status"),
    Index("tool_rules_workspace", "tool_rules", "workspace"),
)


def _sql(dialect: str) -> tuple[str, ...]:
    tables = tuple(t.sql(dialect).replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS", 1)
                   for t in (SCHEDULES, ROUTINE_GRANTS, APPROVALS, TOOL_RULES))
    return tables + tuple(i.sql(dialect).replace("INDEX", "INDEX IF NOT EXISTS", 1) for i in SCHEDULE_INDEXES)


STEP_SQL = {SQLITE: _sql(SQLITE), POSTGRES: _sql(POSTGRES)}
