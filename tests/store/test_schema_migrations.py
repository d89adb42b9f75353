"""One schema (store/schema): a database any earlier version of either store made (tests/store/legacy.py: the
main branch's two migration lists and its migrate functions, frozen) migrates forward to what a new database
gets, table for table, column for column, index for index, and keeps its rows."""

from __future__ import annotations

import asyncio
import secrets
import sqlite3

import asyncpg
import pytest

from ygg_server.store import loaders, postgres as pg, schema, sqlite as db
from ygg_server.store.schema import legacy as runtime_legacy
from ygg_server.store.schema.ddl import add_column
from ygg_server.store.schema.tables import TABLES

from . import legacy
from .schema_shape import (MESSAGES, SEQ, TOPICS, insert, postgres_columns, postgres_shape, rows, sqlite_columns,
                           sqlite_shape)


def test_the_old_steps_kept_are_those_main_ran():
    """The runtime keeps each old list from its second step on (a database at version 1 has the first)."""
    for dialect, old, kept in (("sqlite", legacy.SQLITE, runtime_legacy.SQLITE_STEPS),
                               ("postgres", legacy.POSTGRES, runtime_legacy.POSTGRES_STEPS)):
        assert sorted(kept) == list(range(2, len(old) + 1)), dialect
        for n in kept:
            assert kept[n] == old[n - 1], (dialect, n)


def _steps(dialect: str) -> list:
    """What the steps after the baseline run on `dialect`, each with the version it brings a database to."""
    return [(schema.BASELINE + n, list(getattr(s, dialect))) for n, s in enumerate(schema.STEPS, 1)]


def test_each_version_runs_what_it_has_not_run():
    old_sqlite = [legacy.SQLITE[n - 1] for n in range(6, 12)]
    assert schema.pending("sqlite", 0) == [(schema.latest(), schema.create("sqlite"))]
    assert schema.pending("sqlite", 5) == [(schema.BASELINE, old_sqlite)] + _steps("sqlite")
    assert schema.pending("sqlite", 11) == [(schema.BASELINE, [])] + _steps("sqlite")
    assert schema.pending("postgres", 9) == [(schema.BASELINE, [])] + _steps("postgres")
    assert schema.pending("postgres", schema.latest()) == schema.pending("postgres", 99) == []
    with pytest.raises(ValueError):
        schema.pending("postgres", 10)  # (PostgreSQL's old list stopped at 9)


def test_a_step_after_the_baseline_runs_once_on_each_dialect(monkeypatch):
    monkeypatch.setattr(schema, "STEPS", [schema.Step("a test", ("SELECT 'sqlite'",), ("SELECT 'postgres'",))])
    assert schema.latest() == schema.BASELINE + 1
    assert schema.pending("sqlite", 3) == [(schema.BASELINE, [legacy.SQLITE[n - 1] for n in range(4, 12)]),
                                           (schema.BASELINE + 1, ["SELECT 'sqlite'"])]
    assert schema.pending("postgres", schema.BASELINE) == [(schema.BASELINE + 1, ["SELECT 'postgres'"])]
    assert schema.pending("postgres", 0) == [(schema.BASELINE + 1, schema.create("postgres"))]
    orgs = next(t for t in TABLES if t.name == "orgs")  # (a step adding a column renders it per dialect)
    assert [add_column(orgs, "licensed", d) for d in schema.DIALECTS] == [
        "ALTER TABLE orgs ADD COLUMN licensed INTEGER", "ALTER TABLE orgs ADD COLUMN licensed BIGINT"]


# --- SQLite ---

def _fill_sqlite(c: sqlite3.Connection) -> dict:
    """Rows in every table the database has; returns them as read back, per table."""
    tables = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    seen = {}
    for table, rs in rows().items():
        if table in tables:
            cols = sqlite_columns(c, table)
            for r in rs:
                c.execute(*insert(table, r, cols, lambda i: "?"))
            seen[table] = (cols, sorted(c.execute(f"SELECT {', '.join(cols)} FROM {table}").fetchall(), key=repr))
    return seen


def _kept(read, seen: dict) -> None:
    """Every row kept, but an agent's one wallet (workspace '*'), moved by step 14 to the workspace it joined first,
    and its one broke flag, made by step 16 a flag in each workspace it works in where it cannot pay (ws.2: its
    wallet is in ws.1, and ws.2 has no pool)."""
    for table, (cols, before) in seen.items():
        if table in ("wallets", "flags"):
            to = "ws.1" if table == "wallets" else "ws.2"
            before = sorted([tuple(to if c == "workspace" and v == "*" else v for c, v in zip(cols, r))
                             for r in before], key=repr)
        assert sorted(read(f"SELECT {', '.join(cols)} FROM {table}"), key=repr) == before, table


def _as_the_core_reads_them(conn) -> None:
    d = loaders.load_directory(conn, "ws.1")
    assert {p.name for p in d.participants.values()} >= {"alice", "researcher"}
    assert d.profiles["agent.r"].title == "Researcher"
    assert loaders.load_conversations(conn, "ws.1")["c.1"].name == "general"
    assert all(loaders.load_topic(conn, tid) == t for tid, t in TOPICS.items())
    assert {t.id for t in loaders.credit_paused(conn, "ws.1")} == {"t.paused", "t.open"}  # (waits_funds)
    assert loaders.balance(conn, "ws.1", "agent.r") == 100 and loaders.load_flags(conn) == {("broke", "agent.r", "ws.2")}
    got = conn.execute("SELECT d.message, d.message_seq FROM deliveries d ORDER BY d.id").fetchall()
    assert [tuple(r) for r in got] == [("m.2", SEQ["m.2"]), ("m.1", SEQ["m.1"]), ("m.2", SEQ["m.2"])]


@pytest.fixture(scope="module")
def fresh_sqlite(tmp_path_factory) -> dict:
    conn = db.connect(tmp_path_factory.mktemp("fresh") / "ygg.sqlite3")
    try:
        return sqlite_shape(conn)
    finally:
        conn.close()


@pytest.mark.parametrize("version", range(1, len(legacy.SQLITE) + 1))
def test_a_sqlite_database_of_every_earlier_version_migrates_to_the_new_schema(version, tmp_path, fresh_sqlite):
    path = tmp_path / "ygg.sqlite3"
    old = sqlite3.connect(path, isolation_level=None)
    legacy.sqlite_at(old, version)
    seen = _fill_sqlite(old)
    old.close()
    conn = db.connect(path)  # (migrates)
    try:
        assert sqlite_shape(conn) == fresh_sqlite
        assert fresh_sqlite["version"] == schema.latest()
        _kept(lambda sql: conn.execute(sql).fetchall(), seen)
        _as_the_core_reads_them(conn)
        db.index_messages(conn)  # (what the writer does at start) and search finds every message
        for mid, m in MESSAGES.items():
            hit = conn.execute("SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?", (m.text.split()[0],))
            assert hit.fetchall() == [(SEQ[mid],)], (mid, version)
        assert db.migrate(conn) == schema.latest()  # again: nothing to do
    finally:
        conn.close()


def test_a_sqlite_database_of_a_newer_version_is_refused_and_left_as_it_is(tmp_path):
    path = tmp_path / "ygg.sqlite3"
    db.connect(path).close()
    c = sqlite3.connect(path, isolation_level=None)
    c.execute(f"PRAGMA user_version={schema.latest() + 1}")
    before = sqlite_shape(c)
    c.close()
    with pytest.raises(schema.NewerSchema) as refused:
        db.connect(path)
    assert refused.value.found == schema.latest() + 1
    c = sqlite3.connect(path, isolation_level=None)
    try:
        assert sqlite_shape(c) == before
    finally:
        c.close()


# --- PostgreSQL ---

async def _schema_url(pg_database: str) -> str:
    name = f"t_{secrets.token_hex(5)}"
    c = await asyncpg.connect(pg_database)
    try:
        await c.execute(f'CREATE SCHEMA "{name}"')
    finally:
        await c.close()
    return f"{pg_database}?search_path={name}"


@pytest.fixture(scope="module")
def fresh_postgres(pg_database) -> dict:
    async def made() -> dict:
        c = await pg.connect(pg.parse_dsn(await _schema_url(pg_database))[0])
        try:
            assert await pg.migrate(c) == schema.latest()
            return await postgres_shape(c)
        finally:
            await c.close()

    return asyncio.run(made())


async def _fill_postgres(c) -> dict:
    tables = {r[0] for r in await c.fetch(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()")}
    seen = {}
    for table, rs in rows().items():
        if table in tables:
            cols = await postgres_columns(c, table)
            for r in rs:
                sql, args = insert(table, r, cols, lambda i: f"${i}")
                await c.execute(sql, *args)
            got = await c.fetch(f"SELECT {', '.join(cols)} FROM {table}")
            seen[table] = (cols, sorted((tuple(r) for r in got), key=repr))
    return seen


@pytest.mark.parametrize("version", range(1, len(legacy.POSTGRES) + 1))
async def test_a_postgres_database_of_every_earlier_version_migrates_to_the_new_schema(version, pg_url,
                                                                                     fresh_postgres):
    c = await pg.connect(pg.parse_dsn(pg_url)[0])
    try:
        await legacy.postgres_at(c, version)
        seen = await _fill_postgres(c)
        assert await pg.migrate(c) == schema.latest()
        assert await postgres_shape(c) == fresh_postgres
        got = {t: [tuple(r) for r in await c.fetch(f"SELECT {', '.join(cols)} FROM {t}")]
               for t, (cols, _) in seen.items()}
        _kept(lambda sql: got[sql.rsplit(" ", 1)[1]], seen)
        assert await pg.migrate(c) == schema.latest()  # again: nothing to do
    finally:
        await c.close()
    sync = await asyncio.to_thread(pg.connect_sync, pg_url)  # (the admin CLI's connection: migrates too)
    try:
        await asyncio.to_thread(_as_the_core_reads_them, sync)
    finally:
        await asyncio.to_thread(sync.close)
