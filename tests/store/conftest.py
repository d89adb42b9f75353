"""One server fixture for both stores: `store` is "sqlite" or "postgres".

PostgreSQL: the server at $YGG_TEST_PG (default postgresql://postgres@127.0.0.1:5432/test,
trust auth). A database `ygg_test_<random>` is made for the run and dropped after it; each
test gets a fresh schema in it (`?search_path=` in the URL the servers use). Where no server
is reachable the PostgreSQL tests are skipped, saying why, unless $YGG_REQUIRE_PG is set (CI
sets it), which makes that a failure.
"""

from __future__ import annotations

import asyncio
import os
import secrets
from pathlib import Path

import pytest

from ygg_server.ops import admin
from ygg_server.client import Client
from ygg_server.compose import on_sqlite as Engine
from ygg_server.net.gateway import Gateway, Limits
from ygg_server.store import sqlite as db

PG_ADMIN = os.environ.get("YGG_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
PW = "pw-" + "x" * 8


def _pg_available() -> tuple[bool, str]:
    """Is a server reachable? (PG_ADMIN falls back to the `postgres` database when `test` is missing.)"""
    global PG_ADMIN
    try:
        import asyncpg
    except ImportError:
        return False, "asyncpg is not installed"

    async def probe(url):
        c = await asyncpg.connect(url, timeout=5)
        await c.close()

    try:
        asyncio.run(probe(PG_ADMIN))
    except asyncpg.InvalidCatalogNameError:
        fallback = PG_ADMIN.rsplit("/", 1)[0] + "/postgres"
        try:
            asyncio.run(probe(fallback))
        except Exception as e:  # noqa: BLE001
            return False, f"no PostgreSQL at {fallback} ({type(e).__name__}: {e})"
        PG_ADMIN = fallback
    except Exception as e:  # noqa: BLE001
        return False, f"no PostgreSQL at {PG_ADMIN} ({type(e).__name__}: {e})"
    return True, ""


@pytest.fixture(scope="session")
def pg_database():
    """The run's scratch database URL (made once, dropped at the end)."""
    ok, why = _pg_available()
    if not ok:
        if os.environ.get("YGG_REQUIRE_PG"):
            pytest.fail(f"YGG_REQUIRE_PG is set but {why}")
        pytest.skip(why)
    from ygg_server.store import postgres as pg

    url = asyncio.run(pg.create_database(PG_ADMIN))
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


@pytest.fixture(params=["sqlite", "postgres"])
def store(request) -> str:
    return request.param


@pytest.fixture
def database(store, tmp_path, request):
    """Where the server keeps its data: a SQLite file path, or a PostgreSQL URL."""
    if store == "sqlite":
        return db.db_path(tmp_path)
    return request.getfixturevalue("pg_url")


def admin_connection(store: str, database):
    if store == "sqlite":
        return db.connect(database)
    from ygg_server.store import postgres as pg

    return pg.connect_sync(database)


def make_gateway(store: str, database, limits: Limits | None = None, **engine_kw) -> Gateway:
    if store == "sqlite":
        return Gateway(Engine(database, **engine_kw), limits)
    from ygg_server.net.cluster import PgGateway
    from ygg_server.compose import on_postgres

    engine_kw.setdefault("lease", 3.0)
    return PgGateway(on_postgres(database, **engine_kw), limits)


class Server:
    def __init__(self, store: str, database, gw: Gateway, conn):
        self.store, self.database, self.gw, self.conn = store, database, gw, conn
        self.url = f"ws://127.0.0.1:{gw.port}/"
        self.clients: list[Client] = []

    def admin(self, fn, *args, **kw):
        return fn(self.conn, *args, **kw)

    async def client(self, url: str | None = None, **creds) -> Client:
        c = Client(url or self.url, **creds)
        await c.connect()
        self.clients.append(c)
        return c

    async def person(self, handle: str, password: str = PW, url: str | None = None) -> Client:
        return await self.client(url, handle=handle, password=password)

    async def node(self, **engine_kw) -> Gateway:
        """Another server process' worth on the same database (PostgreSQL only)."""
        gw = make_gateway(self.store, self.database, Limits(auth_timeout=5.0), **engine_kw)
        await gw.start("127.0.0.1", 0)
        self.extra.append(gw)
        return gw


async def _serve(store, database, **engine_kw) -> Server:
    gw = make_gateway(store, database, Limits(auth_timeout=5.0), **engine_kw)
    await gw.start("127.0.0.1", 0)
    s = Server(store, database, gw, admin_connection(store, database))
    s.extra = []
    return s


async def _shutdown(s: Server) -> None:
    for c in s.clients:
        await c.close()
    for gw in [*s.extra, s.gw]:
        await gw.close()
    s.conn.close()


@pytest.fixture
async def server(store, database):
    s = await _serve(store, database)
    yield s
    await _shutdown(s)


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
