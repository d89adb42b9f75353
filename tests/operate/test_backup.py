"""Backup and restore (issue 19): `ygg-server admin backup FILE` copies the database consistently while the server
runs and writes, `restore` puts a copy back, `migrate --status` says where the schema stands, and a migration
keeps a copy of the database it changes."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
import subprocess
import sys
import time

import pytest

from ygg_server.lockfile import DataDirLock
from ygg_server.store import schema
from ygg_server.store import sqlite as db

from tests.backends import PW, serving
from tests.store import legacy


def admin(*args: str, timeout: float = 120) -> tuple[int, dict]:
    out = subprocess.run([sys.executable, "-m", "ygg_server.cli", "admin", *args], capture_output=True, text=True,
                         timeout=timeout)
    return out.returncode, json.loads(out.stdout.splitlines()[-1]) if out.stdout.strip() else {"stderr": out.stderr}


async def _admin_async(*args: str) -> tuple[int, dict]:
    p = await asyncio.create_subprocess_exec(sys.executable, "-m", "ygg_server.cli", "admin", *args,
                                             stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(p.communicate(), 120)
    return p.returncode, json.loads(out.decode().splitlines()[-1]) if out.strip() else {"stderr": err.decode()}


@pytest.mark.backends("process")
async def test_a_backup_under_write_load_restores_every_message_sent_before_it_began(team, tmp_path):
    data = team.path.parent
    sent: list[tuple[float, str]] = []  # (when its `sent` came, the message id)
    stop = asyncio.Event()

    async def write(n: int):
        me = await team.person("alice")
        i = 0
        while not stop.is_set():
            r = await me.send(workspace=team.ws, conversation="general", topic="new", title=f"w{n}.{i}", type="info",
                              text=f"load {n}.{i}")
            assert r["op"] == "sent", r
            sent.append((time.monotonic(), r["message"]["id"]))
            i += 1

    writers = [asyncio.ensure_future(write(n)) for n in range(3)]
    while len(sent) < 30:
        await asyncio.sleep(0.05)
    began = time.monotonic()
    code, out = await _admin_async("--data-dir", str(data), "backup", str(tmp_path / "copy.db"))
    after = len(sent)
    stop.set()
    await asyncio.gather(*writers)
    assert code == 0, out
    before = {mid for t, mid in sent if t < began}
    assert after > len(before), "the writers kept writing while the backup ran"

    restored = tmp_path / "restored"
    code, out = admin("--data-dir", str(restored), "restore", str(tmp_path / "copy.db"))
    assert code == 0 and out["kept"] is None, out
    c = sqlite3.connect(db.db_path(restored))
    try:
        assert c.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        ids = {mid for (mid,) in c.execute("SELECT id FROM messages")}
    finally:
        c.close()
    assert before <= ids, f"{len(before - ids)} messages sent before the backup began are missing"
    assert ids <= {mid for _, mid in sent}
    async with serving("sqlite", db.db_path(restored)) as s:  # and a server runs on it: alice reads them
        me = await s.person("alice", PW)
        page = await me.call("history", workspace=team.ws, conversation="general", limit=200)
        assert page["messages"] and {m["id"] for m in page["messages"]} <= ids


def test_restore_keeps_the_database_it_replaces_and_refuses_while_a_server_runs(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    assert admin("--data-dir", str(a), "add-person", "alice", "--password", PW)[0] == 0
    assert admin("--data-dir", str(b), "add-person", "bob", "--password", PW)[0] == 0
    assert admin("--data-dir", str(a), "backup", str(tmp_path / "a.db"))[0] == 0

    lock = DataDirLock(b)
    assert lock.acquire()
    lock.publish("ws://127.0.0.1:1/")
    code, out = admin("--data-dir", str(b), "restore", str(tmp_path / "a.db"))
    assert code == 1 and out["error"] == "in_use" and "ws://127.0.0.1:1/" in out["detail"]
    lock.release()

    code, out = admin("--data-dir", str(b), "restore", str(tmp_path / "a.db"))
    assert code == 0, out
    handles = lambda p: {h for (h,) in sqlite3.connect(p).execute("SELECT handle FROM people")}
    assert handles(db.db_path(b)) == {"alice"}
    assert handles(out["kept"]) == {"bob"}  # what was there before stays beside it


def test_restore_refuses_what_is_not_a_ygg_database_and_changes_nothing(tmp_path):
    assert admin("--data-dir", str(tmp_path), "add-person", "alice", "--password", PW)[0] == 0
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database at all" * 100)
    code, out = admin("--data-dir", str(tmp_path), "restore", str(junk))
    assert code == 1 and out["error"] == "backup_failed"
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).execute("CREATE TABLE x (y)").connection.close()
    code, out = admin("--data-dir", str(tmp_path), "restore", str(empty))
    assert code == 1 and "not a whole Ygg database" in out["detail"]
    newer = tmp_path / "newer.db"
    assert admin("--data-dir", str(tmp_path), "backup", str(newer))[0] == 0
    c = sqlite3.connect(newer)
    c.execute(f"PRAGMA user_version={schema.latest() + 1}")
    c.close()
    code, out = admin("--data-dir", str(tmp_path), "restore", str(newer))
    assert code == 1 and out["error"] == "backup_failed" and "upgrade" in out["detail"], out
    assert admin("--data-dir", str(tmp_path), "add-person", "alice", "--password", PW)[1]["error"]  # still there


def test_migrate_status_and_the_copy_kept_before_a_migration(tmp_path):
    old_version = len(legacy.SQLITE)
    old = sqlite3.connect(db.db_path(tmp_path), isolation_level=None)
    legacy.sqlite_at(old, old_version)
    old.close()
    code, out = admin("--data-dir", str(tmp_path), "migrate", "--status")
    assert code == 0 and out["state"] == "behind" and out["schema"] == old_version, out
    assert out["pending"] == [n for n, _ in schema.pending(schema.SQLITE, old_version)]

    code, out = admin("--data-dir", str(tmp_path), "migrate")
    assert code == 0 and out["state"] == "current" and out["schema"] == schema.latest(), out
    kept = db.db_path(tmp_path).with_name(f"ygg.sqlite3.schema-{old_version}.bak")
    assert sqlite3.connect(kept).execute("PRAGMA user_version").fetchone() == (old_version,)

    c = sqlite3.connect(db.db_path(tmp_path))
    c.execute(f"PRAGMA user_version={schema.latest() + 1}")
    c.close()
    code, out = admin("--data-dir", str(tmp_path), "migrate", "--status")
    assert out["state"] == "newer", out


async def test_postgres_backs_up_with_pg_dump_and_restores_with_pg_restore(pg_url, tmp_path):
    if not (shutil.which("pg_dump") and shutil.which("pg_restore")):
        pytest.skip("pg_dump/pg_restore are not installed (Debian: postgresql-client)")
    from ygg_server.ops import admin as ops
    from ygg_server.store import postgres as pg

    async with serving("postgres", pg_url) as s:
        s.admin(ops.add_person, "alice", PW)
        ws = s.admin(ops.add_workspace, "team", "alice")["id"]
        me = await s.person("alice")
        ids = []
        for i in range(5):
            r = await me.send(workspace=ws, conversation="general", topic="new", title=f"t{i}", type="info",
                              text=f"kept {i}")
            ids.append(r["message"]["id"])
        code, out = await _admin_async("--db", pg_url, "backup", str(tmp_path / "pg.dump"))  # while it runs
        assert code == 0 and out["tool"] == "pg_dump", out
    code, out = await _admin_async("--db", pg_url, "migrate", "--status")
    assert code == 0 and out["state"] == "current", out
    conn = pg.connect_sync(pg_url)
    try:
        conn.execute("DELETE FROM messages")  # a loss, after the backup
        code, out = await _admin_async("--db", pg_url, "restore", str(tmp_path / "pg.dump"))
        assert code == 0, out
        got = {r[0] for r in conn.execute("SELECT id FROM messages").fetchall()}
    finally:
        conn.close()
    assert set(ids) <= got


def test_a_node_keeps_a_pg_dump_before_it_migrates_an_earlier_postgres_schema(pg_url, tmp_path):
    if not shutil.which("pg_dump"):
        pytest.skip("pg_dump is not installed (Debian: postgresql-client)")
    from ygg_server.store import postgres as pg

    async def at_legacy():
        c = await pg.connect(pg.parse_dsn(pg_url)[0])
        try:
            await legacy.postgres_at(c, len(legacy.POSTGRES))
        finally:
            await c.close()

    asyncio.run(at_legacy())
    code, out = admin("--db", pg_url, "migrate", "--status")
    assert out["state"] == "behind", out
    node = subprocess.Popen([sys.executable, "-m", "ygg_server.cli", "serve", "--db", pg_url, "--port", "0",
                             "--backup-dir", str(tmp_path / "kept")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert "listening" in node.stdout.readline(), node.stderr.read()
    finally:
        node.terminate()
        node.wait(20)
    (kept,) = (tmp_path / "kept").glob(f"ygg-schema-{len(legacy.POSTGRES)}-*.dump")
    listed = subprocess.run(["pg_restore", "--list", str(kept)], capture_output=True, text=True)
    assert listed.returncode == 0 and "TABLE" in listed.stdout
    assert admin("--db", pg_url, "migrate", "--status")[1]["state"] == "current"
