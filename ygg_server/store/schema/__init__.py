"""One schema for both stores, and one migration list numbered once.

The tables are described once (`tables.py`, with the portable types of `ddl.py`) and rendered as each
dialect's SQL. Both stores keep one version number: SQLite in PRAGMA user_version, PostgreSQL in meta's
`schema` row. From here on the numbers mean the same on both:

- 0: an empty database. It gets the tables as `tables.py` describes them now, and the latest number.
- BASELINE (12): the schema `tables.py` described when the two stores' lists were made one. The numbers
  below it are each store's old list (`legacy.py`: SQLite's 1-11, PostgreSQL's 1-9, which had drifted
  apart): a database at old version k runs its own list's steps k+1 to the end, then is marked BASELINE.
- BASELINE + n: STEPS[n - 1] has run. A change to the schema is a step appended to STEPS, with SQL for
  both dialects (`ddl.add_column` and `Index.sql` render the portable ones), and the same change made
  to `tables.py`, so that a new database and a migrated one come out alike
  (tests/store/test_schema_migrations.py compares them, from every version an earlier Ygg wrote).

A database with a number above the latest was written by a newer Ygg: it is left as it is and refused
(`NewerSchema`), since this code would misread it.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import goals, legacy, schedules, sharing
from .ddl import DIALECTS, POSTGRES, SQLITE, has
from .tables import CONNECTED, FILE_INDEXES, FILES, HOSTING, INDEXES, MESSAGE_VERSIONS, OTHERS, SEEDS, TABLES

BASELINE = 12  # the first number neither old list reached


@dataclass(frozen=True)
class Step:
    """One change after the baseline: why, and its statements on each dialect."""

    why: str
    sqlite: tuple[str, ...]
    postgres: tuple[str, ...]


def _accounts() -> Step:
    """15: accounts and consent (issue 18): people's compared handles and deactivation, sessions' device, address
    and last use, and invitations. Existing handles get their key from `ops.accounts.backfill_keys` (Python's
    NFKC, which SQL has not), run by the next `add_person`; two older handles that clash keep working."""
    from .ddl import add_column
    from .tables import INDEXES as IX, TABLES as TB

    table = {t.name: t for t in TB}
    index = {i.name: i for i in IX}
    cols = [("people", "handle_key"), ("people", "deactivated"), ("sessions", "device"), ("sessions", "address"),
            ("sessions", "last_seen"), ("sessions", "ends_at"), ("org_members", "agents")]

    def sql(dialect: str) -> tuple[str, ...]:
        return (*(add_column(table[t], c, dialect) for t, c in cols), table["invitations"].sql(dialect),
                index["people_handle_folded"].sql(dialect), index["invitations_invitee"].sql(dialect))

    return Step("15: accounts and consent (issue 18)", sql(SQLITE), sql(POSTGRES))


_WALLETS_PER_WORKSPACE = (
    # an agent's one wallet (workspace '*') becomes its wallet in the workspace it joined first (no credit is
    # made: the others start with none, so the pool pays there until someone funds it); an agent in none keeps it
    "INSERT INTO wallets (workspace, account, balance) "
    "SELECT (SELECT m.workspace FROM memberships m WHERE m.participant = w.account "
    "ORDER BY m.created_at, m.workspace LIMIT 1), w.account, w.balance FROM wallets w "
    "WHERE w.workspace = '*' AND EXISTS (SELECT 1 FROM memberships m WHERE m.participant = w.account) "
    "ON CONFLICT (workspace, account) DO NOTHING",
    "DELETE FROM wallets WHERE workspace = '*' "
    "AND EXISTS (SELECT 1 FROM memberships m WHERE m.participant = wallets.account)",
)

_BROKE_PER_WORKSPACE = (
    # an agent's one `broke` flag (workspace '*': its funders somewhere were asked) becomes a flag in each workspace
    # it works in where it cannot pay a message now (its wallet there, or with none the pool, below 1 credit), so a
    # funding there wakes it; elsewhere its next refusal asks that workspace's own people
    "INSERT INTO flags (workspace, name, agent) "
    "SELECT m.workspace, f.name, f.agent FROM flags f JOIN memberships m ON m.participant = f.agent "
    "WHERE f.workspace = '*' AND f.name = 'broke' AND coalesce("
    "(SELECT w.balance FROM wallets w WHERE w.workspace = m.workspace AND w.account = f.agent), "
    "(SELECT p.balance FROM wallets p WHERE p.workspace = m.workspace AND p.account = 'pool'), 0) < 1 "
    "ON CONFLICT (workspace, name, agent) DO NOTHING",
    "DELETE FROM flags WHERE workspace = '*' AND name = 'broke'",
)


def _artifacts() -> Step:
    """17: artifacts, their versions and comments (issue 21)."""
    from .tables import ARTIFACT_INDEXES, ARTIFACTS

    def sql(dialect: str) -> tuple[str, ...]:
        return (*(t.sql(dialect).replace("CREATE TABLE ", "CREATE TABLE IF NOT EXISTS ", 1) for t in ARTIFACTS),
                *(i.sql(dialect).replace("CREATE INDEX ", "CREATE INDEX IF NOT EXISTS ", 1) for i in ARTIFACT_INDEXES))

    return Step("17: artifacts, their versions and comments (issue 21)", sql(SQLITE), sql(POSTGRES))
def _tools_skills_memory() -> Step:
    """19: what agents can do and remember (issue 23): attached tools, API connections, skills, memories."""
    from .ddl import has
    from .tables import AGENT_TOOLS, CONNECTIONS, MEMORIES, MEMORY_FTS, MEMORY_INDEXES, SKILLS

    def sql(dialect: str) -> tuple[str, ...]:
        tables = tuple(t.sql(dialect).replace("CREATE TABLE ", "CREATE TABLE IF NOT EXISTS ", 1)
                       for t in (AGENT_TOOLS, CONNECTIONS, SKILLS, MEMORIES))
        return (*tables, *(i.sql(dialect) for i in MEMORY_INDEXES if has(i, dialect)),
                *(MEMORY_FTS if dialect == SQLITE else ()))

    return Step("19: tools, skills and memory (issue 23)", sql(SQLITE), sql(POSTGRES))


def _new_tables(tables, dialect: str, indexes=()) -> tuple[str, ...]:
    """New tables and their indexes, each IF NOT EXISTS (`tables.py` makes them in a new database too)."""
    return (*(t.sql(dialect).replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS", 1) for t in tables),
            *(i.sql(dialect).replace("INDEX", "INDEX IF NOT EXISTS", 1) for i in indexes if has(i, dialect)))


def _new(label: str, tables, indexes=()) -> Step:
    """A step that only adds tables (and their indexes), on both stores."""
    return Step(label, *(_new_tables(tables, d, indexes) for d in (SQLITE, POSTGRES)))


STEPS: list[Step] = [  # BASELINE + 1, BASELINE + 2, ...
    Step("13: a message's older texts, kept as its author edits it (edit_message)",
         (MESSAGE_VERSIONS.sql(SQLITE),), (MESSAGE_VERSIONS.sql(POSTGRES),)),
    Step("14: an agent's wallet per workspace (issue 17)", _WALLETS_PER_WORKSPACE, _WALLETS_PER_WORKSPACE),
    _accounts(),
    Step("16: an agent's broke flag per workspace (issue 17)", _BROKE_PER_WORKSPACE, _BROKE_PER_WORKSPACE),
    _artifacts(),
    Step("18: reminders, routines and approvals (issue 22)", schedules.STEP_SQL[SQLITE], schedules.STEP_SQL[POSTGRES]),
    _tools_skills_memory(),
    _new("20: hosted agents and the agent directory (issue 24)", HOSTING),
    _new("21: memory shared by its owner into another workspace; approvals spent by tool calls (issue 23)",
         (sharing.MEMORY_SHARES, sharing.APPROVAL_USES), sharing.SHARING_INDEXES),
    _new("22: loops and the reports of loops and pulses (issue 22)", (goals.LOOPS, goals.GOAL_REPORTS),
         goals.GOAL_INDEXES),
    _new("23: connected GitHub and Google accounts (issue 24)", CONNECTED),
    _new("24: files (issue 21)", FILES, FILE_INDEXES),
]


def latest() -> int:
    return BASELINE + len(STEPS)


class NewerSchema(Exception):
    """The database was written by a newer Ygg (its schema `found` is above the latest this code `known`s)."""

    def __init__(self, found: int, where: str = ""):
        self.found, self.known, self.where = found, latest(), where
        super().__init__(f"the database {where} has schema version {found}; this Ygg knows up to {self.known}")


def refuse_newer(version: int, where: str = "") -> None:
    if version > latest():
        raise NewerSchema(version, where)


def describe(version: int) -> dict:
    """A database's schema `version` against this code's (`migrate --status`): current, behind (and the versions
    a migration brings it through) or newer."""
    state = "current" if version == latest() else "newer" if version > latest() else "behind"
    steps = [n for n, _ in pending(SQLITE, version)] if state == "behind" else []
    return {"schema": version, "latest": latest(), "state": state, "pending": steps}


def create(dialect: str) -> list[str]:
    """The statements that make an empty database's schema on `dialect`, as it is now."""
    return ([t.sql(dialect) for t in TABLES if has(t, dialect)]
            + [i.sql(dialect) for i in INDEXES if has(i, dialect)]
            + list(OTHERS[dialect]) + list(SEEDS[dialect]))


def pending(dialect: str, version: int) -> list[tuple[int, list[str]]]:
    """What a database of `dialect` at `version` runs to be at the latest: (the version each part brings it
    to, that part's statements), in order; [] when it is there (or newer)."""
    assert dialect in DIALECTS, dialect
    if version == 0:
        return [(latest(), create(dialect))]
    out = []
    if version < BASELINE:
        out.append((BASELINE, legacy.after(dialect, version)))
        version = BASELINE
    for n in range(version + 1, latest() + 1):
        step = STEPS[n - BASELINE - 1]
        out.append((n, list(step.sqlite if dialect == SQLITE else step.postgres)))
    return out


__all__ = ["BASELINE", "DIALECTS", "POSTGRES", "SQLITE", "STEPS", "NewerSchema", "Step", "create", "describe", "latest", "pending",
           "refuse_newer"]
