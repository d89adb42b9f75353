"""At rest (issue 18): "the data dir is 0755 and the database 0644": the data directory 0700, the database and its
WAL and shared-memory files 0600, when they are made and when an older data directory is opened."""

from __future__ import annotations

from pathlib import Path

import os
import stat

from ygg_server.store import sqlite as db


def mode(p) -> int:
    return stat.S_IMODE(os.stat(p).st_mode)


def test_the_data_dir_is_0700_and_the_database_files_0600(tmp_path):
    old = os.umask(0o022)  # a usual umask: files 0644 and directories 0755 unless we say otherwise
    try:
        fresh = tmp_path / "fresh"
        conn = db.connect(db.db_path(fresh))
        conn.execute("CREATE TABLE t (x)")  # (the WAL and its shared memory exist now)
        files = [db.db_path(fresh), f"{db.db_path(fresh)}-wal", f"{db.db_path(fresh)}-shm"]
        assert mode(fresh) == 0o700
        assert [mode(f) for f in files] == [0o600] * 3
        conn.close()
        older = tmp_path / "older"  # made before this: opened, it is made private
        older.mkdir(mode=0o755)
        path = db.db_path(older)
        path.touch(mode=0o644)
        os.chmod(path, 0o644)
        db.connect(path).close()
        assert mode(older) == 0o700 and mode(path) == 0o600
    finally:
        os.umask(old)


def test_opening_the_database_again_keeps_the_locks_this_process_holds(tmp_path):
    """Closing any descriptor of a file drops every POSIX lock the process holds on it: making the database's
    file 0600 on each connect (by opening and closing it) dropped the shared lock an open connection holds, so
    another process that closed its own connection took itself for the last one, checkpointed and deleted the
    WAL under the server (the admin CLI tests then found an index missing rows)."""
    import subprocess
    import sys

    from ygg_server.store import sqlite as db

    path = db.db_path(tmp_path)
    server = db.connect(path)
    server.execute("CREATE TABLE t (x)")
    db.connect(path).close()  # another connection of this process, opened and closed
    script = ("import sqlite3, sys\nc = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
              "c.execute('INSERT INTO t VALUES (1)')\nc.close()\n")
    subprocess.run([sys.executable, "-c", script, str(path)], check=True)
    assert Path(f"{path}-wal").exists(), "another process deleted the WAL of a database this process has open"
    server.close()
