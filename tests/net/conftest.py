"""Helpers of tests/net; the server fixtures (`backend`, `server`, `team`) are tests/conftest.py's."""

from __future__ import annotations

import sqlite3

from ygg_server.store import sqlite as db


def migrated_before(path, marker: str) -> sqlite3.Connection:
    """A database at `path` as an older server left it: the migrations before the first one whose SQL holds
    `marker`. Returns a connection to it in autocommit mode."""
    from ygg_server.store import schema

    c = sqlite3.connect(path, isolation_level=None)
    upto = next(i for i, m in enumerate(schema.MIGRATIONS) if marker in m)
    for i, sql in enumerate(schema.MIGRATIONS[:upto], start=1):
        for stmt in db._statements(sql):
            c.execute(stmt)
        c.execute(f"PRAGMA user_version={i}")
    return c
