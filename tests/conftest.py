"""One set of server fixtures for every loopback test: `backend`, `database`, `server`, `team`.

`backend` is "sqlite" (the writer on a thread), "process" (the writer in its own process) or "postgres"
(tests/backends.py). A test that uses it runs once per backend its module's
`pytestmark = pytest.mark.backends(...)` names, or its own marker (the closest one wins), or on "sqlite"
alone without either; the test id says which (`test_foo[postgres]`).

PostgreSQL: the server at $YGG_TEST_PG (default postgresql://postgres@127.0.0.1:5432/test, trust auth).
A database `ygg_test_<random>` is made for the run and dropped after it; each test gets a fresh schema in
it (`?search_path=` in the URL the servers use). Where no server is reachable the PostgreSQL runs are
skipped, saying why, unless $YGG_REQUIRE_PG is set (CI sets it), which makes that a failure.
"""

from __future__ import annotations

import asyncio
import os
import secrets
from pathlib import Path

import pytest

from ygg_server.ops import admin
from ygg_server.store import sqlite as db

from tests import backends
from tests.backends import BACKENDS, PW, start_server, stop_server


# Tests that hold a deadline on the wall clock or drive whole programs (tmux, several servers, benchmarks, a crash
# loop): marked `solo`, and `./test` runs them after the rest, one at a time, so that a second worker's load does not
# decide them.
SOLO = frozenset({
    "tests/tui/test_tmux.py", "tests/hostile/test_bounds.py", "tests/hostile/test_crash_history.py",
    "tests/hostile/test_signin_bounds.py", "tests/hostile/test_credentials.py", "tests/hostile/test_revocation.py",
    "tests/hostile/test_transport.py", "tests/hostile/test_connection_caps.py", "tests/net/test_limits.py",
    "tests/net/test_agent_keys.py", "tests/store/test_two_nodes.py", "tests/store/test_bench_pg.py",
    "tests/net/test_bench_smoke.py", "tests/operate/test_health.py", "tests/operate/test_local_lock.py",
})
ROOT = Path(__file__).resolve().parent.parent


def pytest_configure(config):
    config.addinivalue_line(
        "markers", f"backends(*names): the backends a test runs on, of {', '.join(BACKENDS)} (default: sqlite)")
    config.addinivalue_line("markers", "solo: run after the rest, alone (`./test`; tests/conftest.py SOLO)")
    if missing := sorted(p for p in SOLO if not (ROOT / p).is_file()):
        raise pytest.UsageError(f"tests/conftest.py SOLO names files that are not there: {missing}")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.relative_to(ROOT).as_posix() in SOLO:
            item.add_marker(pytest.mark.solo)


def pytest_generate_tests(metafunc):
    if "backend" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("backends")
    names = marker.args if marker else ("sqlite",)
    unknown = set(names) - set(BACKENDS)
    assert names and not unknown, f"{metafunc.definition.nodeid}: unknown backends {sorted(unknown)}"
    metafunc.parametrize("backend", names, indirect=True, ids=names)


@pytest.fixture
def backend(request) -> str:
    if request.param == "postgres":
        request.getfixturevalue("pg_database")  # skips (or fails) here when PostgreSQL is not reachable
    return request.param


@pytest.fixture(scope="session")
def pg_database():
    """The run's scratch database URL (made once, dropped at the end)."""
    ok, why = backends.pg_available()
    if not ok:
        if os.environ.get("YGG_REQUIRE_PG"):
            pytest.fail(f"YGG_REQUIRE_PG is set but {why}")
        pytest.skip(why)
    from ygg_server.store import postgres as pg

    url = asyncio.run(pg.create_database(backends.PG_ADMIN))
    yield url
    asyncio.run(pg.drop_database(url))


@pytest.fixture
def pg_url(pg_database):
    """A fresh schema in the run's database, as a URL the servers and the admin connection use."""
    import asyncpg

    schema = f"t_{secrets.token_hex(5)}"

    async def run(sql):
        c = await asyncpg.connect(pg_database)
        try:
            await c.execute(sql)
        finally:
            await c.close()

    asyncio.run(run(f'CREATE SCHEMA "{schema}"'))
    yield f"{pg_database}?search_path={schema}"
    asyncio.run(run(f'DROP SCHEMA "{schema}" CASCADE'))


@pytest.fixture
def database(backend, tmp_path, request):
    """Where the server keeps its data: a SQLite file path, or a PostgreSQL URL."""
    if backend == "postgres":
        return request.getfixturevalue("pg_url")
    return db.db_path(tmp_path)


@pytest.fixture
async def server(backend, database):
    s = await start_server(backend, database)
    yield s
    await stop_server(s)


@pytest.fixture
async def team(server):
    """alice owns workspace 'team' with agents researcher and reviewer, 1000 credits each; bob is a member."""
    a = server.admin(admin.add_person, "alice", PW)
    server.admin(admin.add_person, "bob", PW)
    ws = server.admin(admin.add_workspace, "team", "alice")["id"]
    server.admin(admin.add_member, ws, "bob")
    keys = {}
    for name in ("researcher", "reviewer"):
        out = server.admin(admin.add_agent, name, "alice")
        keys[name] = out["api_key"]
        server.admin(admin.fund, name, 1000)
    server.ws, server.keys, server.alice = ws, keys, a["id"]
    return server
