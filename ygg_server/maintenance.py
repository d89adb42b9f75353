"""The admin CLI's maintenance verbs, which work on the database as a whole rather than through `ops`:
`backup FILE`, `restore FILE` and `migrate [--status]` (SQLite: store/sqlite/backup.py; PostgreSQL: pg_dump,
store/postgres/backup.py)."""

from __future__ import annotations

import argparse
from enum import StrEnum

from .clock import now_us
from .lockfile import DataDirLock
from .startup import need
from .store import sqlite as db
from .store.schema import NewerSchema

VERBS = ("backup", "restore", "migrate")


class Failure(StrEnum):
    """Why a maintenance verb did nothing (its JSON answer's `error`)."""

    IN_USE = "in_use"  # a server holds the data dir (restore)
    BACKUP_FAILED = "backup_failed"  # not a whole Ygg database, a newer one, pg_dump/pg_restore failed or missing
    IO = "io"  # a file could not be read or written


class MaintenanceError(Exception):
    def __init__(self, code: Failure, detail: str):
        super().__init__(detail)
        self.code, self.detail = code, detail


def add_parsers(asub) -> None:
    x = asub.add_parser("backup", help="a consistent copy of the database, made while the server runs "
                                       "(SQLite: its online backup API; PostgreSQL: pg_dump)")
    x.add_argument("file")
    x = asub.add_parser("restore", help="put a backup in place of the database (stop the server first); "
                                        "SQLite keeps the database it replaces beside it")
    x.add_argument("file")
    x = asub.add_parser("migrate", help="bring the database to this version's schema (a server does at start, "
                                        "after keeping a copy: <database>.schema-N.bak)")
    x.add_argument("--status", action="store_true", help="only say the schema's version against this code's")


def run(args: argparse.Namespace) -> dict:
    try:
        return _run(args)
    except OSError as e:
        raise MaintenanceError(Failure.IO, f"{e.filename or ''}: {e.strerror or e}") from None


def _run(args: argparse.Namespace) -> dict:
    act = args.action
    if args.db:
        need("asyncpg")
        from .store.postgres import backup as pg_backup

        try:
            if act == "backup":
                return pg_backup.dump(args.db, args.file)
            if act == "restore":
                return pg_backup.restore(args.db, args.file)
            if args.status:
                return pg_backup.status(args.db)
            from .store import postgres as pg

            pg.connect_sync(args.db).close()
            return pg_backup.status(args.db)
        except pg_backup.DumpError as e:
            raise MaintenanceError(Failure.BACKUP_FAILED, str(e)) from None
    from .store.sqlite import backup

    path = db.db_path(args.data_dir)
    try:
        if act == "backup":
            return backup.backup(path, args.file)
        if act == "restore":
            lock = DataDirLock(args.data_dir)
            if not lock.acquire():
                raise MaintenanceError(Failure.IN_USE, f"{lock.held_by()} runs on {args.data_dir}: stop it first")
            try:
                return backup.restore(args.file, path, now_us())
            except NewerSchema as e:
                raise MaintenanceError(Failure.BACKUP_FAILED, f"{e}: upgrade Ygg to restore it") from None
            finally:
                lock.release()
        if args.status:
            return backup.status(path)
        db.connect(path).close()
        return backup.status(path)
    except backup.BackupError as e:
        raise MaintenanceError(Failure.BACKUP_FAILED, str(e)) from None
