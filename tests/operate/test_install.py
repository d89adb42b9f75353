"""Installs (issue 19): what a wheel carries, `--version`, and start-up errors in one line with what to do."""

from __future__ import annotations

import socket
import sqlite3
import subprocess
import sys
import zipfile

import pytest

from ygg_server import about
from ygg_server.store import schema
from ygg_server.store import sqlite as db

from tests.operate.wheel import ROOT, built_wheel


def _run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, timeout=timeout)


def test_the_wheel_carries_the_themes_the_stylesheet_and_the_handbook(tmp_path):
    names = set(zipfile.ZipFile(built_wheel(tmp_path)).namelist())
    for needed in ("ygg_tui/theme_files/ygg-dark.toml", "ygg_tui/theme_files/ygg-light.toml",
                   "ygg_tui/theme_files/ygg-mono.toml", "ygg_tui/ygg.tcss", "ygg_server/agents/data/handbook.md"):
        assert needed in names, needed
    # and every data file the packages hold (a new one not named in pyproject.toml's package data fails here)
    for package in ("ygg_server", "ygg_tui"):
        for path in (ROOT / package).rglob("*"):
            rel = path.relative_to(ROOT).as_posix()
            if path.is_file() and path.suffix not in (".py", ".pyc") and "__pycache__" not in rel \
                    and path.name != "README.md":
                assert rel in names, f"{rel} is not in the wheel: add it to [tool.setuptools.package-data]"


def test_the_bundled_themes_come_from_the_package_not_the_repository():
    import ygg_tui
    from ygg_tui.themes import BUILTIN, load_themes

    assert str(BUILTIN).startswith(str(ygg_tui.__path__[0]))
    assert {"ygg-dark", "ygg-light", "ygg-mono"} <= {t.name for t in load_themes()}


@pytest.mark.parametrize("module", ["ygg_server.cli", "ygg_tui.cli", "ygg_server.agents.cli"])
def test_each_command_says_its_version(module):
    out = _run(module, "--version")
    assert out.returncode == 0, out.stderr
    assert about.version() in out.stdout and about.version() != "unknown"


def _one_line_error(out: subprocess.CompletedProcess) -> str:
    assert out.returncode == 2, (out.returncode, out.stdout, out.stderr)
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    return lines[0]


def test_a_busy_port_is_one_line_saying_what_to_do(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        line = _one_line_error(_run("ygg_server.cli", "serve", "--data-dir", str(tmp_path), "--port", str(port),
                                    "--writer", "thread"))
    assert f"port {port}" in line and "--port" in line


def test_an_unreadable_data_dir_is_one_line_saying_what_to_do(tmp_path):
    import os

    if os.geteuid() == 0:
        pytest.skip("root reads any directory: an unreadable data dir cannot be made here")
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o000)
    try:
        line = _one_line_error(_run("ygg_server.cli", "serve", "--data-dir", str(locked), "--writer", "thread"))
    finally:
        locked.chmod(0o700)
    assert str(locked) in line and "--data-dir" in line


def test_a_data_dir_that_is_a_file_is_one_line_saying_what_to_do(tmp_path):
    f = tmp_path / "afile"
    f.write_text("x")
    line = _one_line_error(_run("ygg_server.cli", "serve", "--data-dir", str(f), "--writer", "thread"))
    assert str(f) in line and "--data-dir" in line


def test_a_database_newer_than_the_code_is_refused_in_one_line(tmp_path):
    db.connect(db.db_path(tmp_path)).close()
    c = sqlite3.connect(db.db_path(tmp_path))
    c.execute(f"PRAGMA user_version={schema.latest() + 3}")
    c.close()
    line = _one_line_error(_run("ygg_server.cli", "serve", "--data-dir", str(tmp_path), "--writer", "thread"))
    assert str(schema.latest() + 3) in line and "upgrade" in line
    line = _one_line_error(_run("ygg_server.cli", "admin", "--data-dir", str(tmp_path), "add-person", "x",
                                "--password", "pw-long-enough"))
    assert "upgrade" in line


def test_a_missing_optional_dependency_is_named_with_its_extra(tmp_path):
    # asyncpg hidden: as in an install without the postgres extra
    code = ("import sys; sys.modules['asyncpg'] = None; from ygg_server.cli import main; "
            "sys.exit(main(['serve', '--db', 'postgresql://127.0.0.1:1/x']))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    line = _one_line_error(out)
    assert "pip install 'ygg[postgres]'" in line and "asyncpg" in line


def test_a_postgres_database_newer_than_the_code_is_refused_in_one_line(pg_url):
    import asyncio

    import asyncpg

    from ygg_server.store import postgres as pg

    pg.connect_sync(pg_url).close()  # made at the latest version

    async def bump():
        c = await asyncpg.connect(pg.parse_dsn(pg_url)[0])
        try:
            await c.execute("UPDATE meta SET value = $1 WHERE key = 'schema'", schema.latest() + 2)
        finally:
            await c.close()

    asyncio.run(bump())
    line = _one_line_error(_run("ygg_server.cli", "serve", "--db", pg_url, "--port", "0"))
    assert str(schema.latest() + 2) in line and "upgrade" in line
