"""Backups of the embedded database: a consistent copy while the server runs, restore, and the schema's state.

A copy is made with SQLite's online backup API in one step: one read transaction, so the copy is the database
as of one commit (WAL: the writer goes on meanwhile and is not blocked), whatever is written during it. It is
written beside its destination and renamed into place, so a copy that exists is whole. Before a migration the
database is copied the same way (`before_migration`), so an upgrade can be undone by restoring that file.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

from .. import schema


class BackupError(Exception):
    """Why a backup or a restore was not made (nothing was changed)."""


def copy(src: sqlite3.Connection, dest: str | os.PathLike) -> dict:
    """Copy the database `src` is connected to into `dest` (0600), consistently, then rename it into place."""
    dest = Path(dest)
    tmp = dest.with_name(dest.name + ".partial")
    tmp.unlink(missing_ok=True)
    out = sqlite3.connect(tmp)
    try:
        os.chmod(tmp, 0o600)
        src.backup(out)  # pages=-1: the whole database in one step, as of one read transaction
        out.execute("PRAGMA journal_mode=DELETE")  # one file: no -wal beside the copy
        (version,) = out.execute("PRAGMA user_version").fetchone()
        (messages,) = out.execute("SELECT count(*) FROM messages").fetchone() if version else (0,)
    finally:
        out.close()
    os.replace(tmp, dest)
    return {"backup": str(dest), "bytes": dest.stat().st_size, "schema": version, "messages": messages}


def backup(path: str | os.PathLike, dest: str | os.PathLike) -> dict:
    """`ygg-server admin backup FILE`: copy the database at `path` (a server may be running on it)."""
    if not Path(path).exists():
        raise BackupError(f"there is no database at {path}")
    src = sqlite3.connect(f"file:{Path(path)}?mode=ro", uri=True, timeout=30)
    try:
        return copy(src, dest)
    finally:
        src.close()


def check(path: str | os.PathLike) -> int:
    """The schema version of a backup file, after checking that it is a whole Ygg database this code can read."""
    try:
        c = sqlite3.connect(f"file:{Path(path)}?mode=ro", uri=True)
        try:
            (ok,) = c.execute("PRAGMA quick_check").fetchone()
            (version,) = c.execute("PRAGMA user_version").fetchone()
            has_meta = c.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone()
        finally:
            c.close()
    except sqlite3.DatabaseError as e:
        raise BackupError(f"{path} is not a Ygg database ({e})") from None
    if ok != "ok" or not has_meta:
        raise BackupError(f"{path} is not a whole Ygg database ({'no meta table' if ok == 'ok' else ok})")
    schema.refuse_newer(version, str(path))
    return version


def restore(src: str | os.PathLike, path: str | os.PathLike, now_us: int) -> dict:
    """`ygg-server admin restore FILE`: put the backup `src` in place of the database at `path` (no server may be
    running on it: the caller holds the data dir's lock). The database it replaces is kept beside it first."""
    version = check(src)
    path = Path(path)
    kept = None
    if path.exists():
        kept = path.with_name(f"{path.name}.before-restore-{time.strftime('%Y%m%dT%H%M%S', time.gmtime(now_us // 1_000_000))}.bak")
        cur = sqlite3.connect(path)
        try:
            copy(cur, kept)
        finally:
            cur.close()
    incoming = sqlite3.connect(f"file:{Path(src)}?mode=ro", uri=True)
    try:
        copy(incoming, path.with_name(path.name + ".restoring"))
    finally:
        incoming.close()
    for side in ("-wal", "-shm"):  # the old database's; the restored one has none
        Path(str(path) + side).unlink(missing_ok=True)
    os.replace(path.with_name(path.name + ".restoring"), path)
    return {"restored": str(src), "schema": version, "kept": str(kept) if kept else None}


def before_migration(conn: sqlite3.Connection, version: int) -> str | None:
    """Keep a copy of a database about to be migrated from `version`: `<file>.schema-<version>.bak`."""
    from . import file_of

    where = file_of(conn)
    if not where:
        return None
    dest = Path(where).with_name(f"{Path(where).name}.schema-{version}.bak")
    if not dest.exists():
        copy(conn, dest)
    return str(dest)


def status(path: str | os.PathLike) -> dict:
    """`migrate --status`: the database's schema version against this code's, without changing anything."""
    if not Path(path).exists():
        return {**schema.describe(0), "state": "missing"}
    c = sqlite3.connect(f"file:{Path(path)}?mode=ro", uri=True)
    try:
        (version,) = c.execute("PRAGMA user_version").fetchone()
    finally:
        c.close()
    return schema.describe(version)

