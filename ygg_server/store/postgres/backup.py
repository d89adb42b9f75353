"""PostgreSQL's backups are PostgreSQL's own: `pg_dump` (a consistent snapshot while the nodes run) and
`pg_restore`, run here with the URL the nodes use (`?search_path=S` scopes both to the schema S); and the
schema's version without migrating (`migrate --status`)."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import asyncpg

from .. import schema


class DumpError(Exception):
    """pg_dump or pg_restore failed or is missing (nothing was changed by us)."""


def _libpq(url: str) -> tuple[str, str | None]:
    """(a URL libpq's tools take, the schema named by ?search_path), dropping Ygg's own parameters."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    path = next((v for k, v in query if k == "search_path"), None)
    rest = [(k, v) for k, v in query if k not in ("search_path", "prepared")]
    return urlunsplit(parts._replace(query=urlencode(rest))), path


def _tool(name: str) -> str:
    found = shutil.which(name)
    if not found:
        raise DumpError(f"{name} is not installed: install PostgreSQL's client tools (Debian: postgresql-client)")
    return found


def _run(cmd: list[str]) -> None:
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise DumpError(f"{cmd[0].rsplit('/', 1)[-1]} failed: {out.stderr.strip().splitlines()[-1:] or out.returncode}")


def dump(url: str, dest: str) -> dict:
    """`admin backup FILE` on PostgreSQL: pg_dump's custom format (compressed; pg_restore reads it)."""
    dsn, where = _libpq(url)
    _run([_tool("pg_dump"), "--format=custom", "--no-owner", f"--file={dest}", *(["--schema", where] if where else []),
          dsn])
    return {"backup": dest, "tool": "pg_dump"}


def restore(url: str, src: str) -> dict:
    """`admin restore FILE` on PostgreSQL: the dump's objects replace those of the same names (stop the nodes
    first: they hold the tables this drops)."""
    dsn, _ = _libpq(url)
    _run([_tool("pg_restore"), "--clean", "--if-exists", "--no-owner", "--single-transaction", f"--dbname={dsn}",
          src])
    return {"restored": src, "tool": "pg_restore"}


def status(url: str) -> dict:
    """`migrate --status` on PostgreSQL: the schema's version, read without migrating."""
    from . import parse_dsn

    async def read() -> int:
        conn = await asyncpg.connect(parse_dsn(url)[0])
        try:
            if not await conn.fetchval("SELECT to_regclass('meta') IS NOT NULL"):
                return 0
            return await conn.fetchval("SELECT value FROM meta WHERE key = 'schema'") or 0
        finally:
            await conn.close()

    return schema.describe(asyncio.run(read()))


def before_migration(url: str, directory: str, stamp: str) -> str | None:
    """Before the nodes migrate a PostgreSQL schema from an earlier version: a pg_dump of it in `directory`
    (`ygg-schema-<version>-<stamp>.dump`); None when nothing is to be migrated (current, or a new database)."""
    state = status(url)
    if state["state"] != "behind" or state["schema"] == 0:
        return None
    import os

    os.makedirs(directory, mode=0o700, exist_ok=True)
    dest = os.path.join(directory, f"ygg-schema-{state['schema']}-{stamp}.dump")
    dump(url, dest)
    return dest
