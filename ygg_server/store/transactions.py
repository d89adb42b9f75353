"""Transactions over either store's sqlite3-shaped connection (a `sqlite3.Connection`, or PostgreSQL's
`postgres.SyncConnection`), for the management operations, queries and auth that run on both: one
transaction, turns taken per key, rows held until the COMMIT.
"""

from __future__ import annotations

import sqlite3


class Tx:
    """`with Tx(conn):` runs BEGIN IMMEDIATE ... COMMIT, or ROLLBACK on error.

    `quiet`: a write no other process must react to (a person's session opened or marked used: nothing any cache
    holds). On PostgreSQL it tells no node to rescan. On SQLite every commit of another connection changes the
    writer's `data_version`, which cannot tell a quiet one apart: the writer rescans (docs/security.md)."""

    def __init__(self, conn: sqlite3.Connection, quiet: bool = False):
        self.conn, self.quiet = conn, quiet and getattr(conn, "dialect", "sqlite") == "postgres"

    def __enter__(self):
        if self.quiet:
            self.conn.quiet = True
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type, exc, tb):
        try:
            self.conn.execute("COMMIT" if exc_type is None else "ROLLBACK")
        finally:
            if self.quiet:
                self.conn.quiet = False
        return False


def serialized(conn: sqlite3.Connection, key: str) -> None:
    """Inside a `Tx`: the transactions that call this with `key` take turns from here to their COMMIT.

    For a write that reads, then writes what it decided from what it read (the next persona version, a
    rulebook merged with the stored one, a person's one Free organization). SQLite's BEGIN IMMEDIATE already
    takes the one write lock; on PostgreSQL (its sqlite3-shaped adapter) two nodes read in parallel, so
    there an advisory lock on `key` is taken first (the reads after it see what the turn before committed)."""
    if getattr(conn, "dialect", "sqlite") == "postgres":
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", (key,))


def row_lock(conn, mode: str = "SHARE") -> str:
    """What a SELECT ends with to hold the rows it reads until the COMMIT: ` FOR SHARE` (or `mode`) on
    PostgreSQL (its sqlite3-shaped adapter), where another node may write them meanwhile; nothing on SQLite,
    whose BEGIN IMMEDIATE already lets one writer at a time judge."""
    return f" FOR {mode}" if getattr(conn, "dialect", "sqlite") == "postgres" else ""
