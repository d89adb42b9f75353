"""The backends a loopback test runs on, and the one place a server is built for one.

- "sqlite":   embedded SQLite, the writer on a thread beside the event loop (`ygg --local`, the fixtures);
- "process":  embedded SQLite, the writer in its own process, as `ygg-server serve` runs it;
- "postgres": PostgreSQL, the writer as a task on the event loop, the gateway delivering by `ClusterDelivery`; `Server.node()` adds another node on the database.

A test module names the backends it concerns with `pytestmark = pytest.mark.backends(...)`, a test can
narrow that with the same marker on itself, and a test without one runs on "sqlite" (tests/conftest.py).

Where the matrix runs: the loopback suite on both stores ("sqlite", "postgres"); "process" differs from
"sqlite" only in the writer's answers and batches crossing a process boundary, so it runs where that crossing
has something to show (the writer process itself, each kind of command once: sends and funding, the party,
settings and profiles, edits, sessions, events, a restart, a backup, and a few basic exchanges), while
tests/writer/test_results_cross.py checks that every result type can cross.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os

from ygg_server.client import Client
from ygg_server.net.gateway import Gateway, Limits
from ygg_server.store import sqlite as db

BACKENDS = ("sqlite", "process", "postgres")
PW = "pw-" + "x" * 8
# $YGG_TEST_PG, trust auth; `pg_available` falls back to the `postgres` database when `test` is missing
PG_ADMIN = os.environ.get("YGG_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


def timed(fn, kw: dict, clock) -> dict:
    """`kw`, with `now=clock()` when `fn` is an operation that takes the time (`now`, keyword-only: `ops.admin`'s)
    and the caller gave none: a test's admin call reads its server's clock, as the admin CLI reads the one clock."""
    p = inspect.signature(fn).parameters.get("now")
    if p is not None and p.kind is p.KEYWORD_ONLY and "now" not in kw:
        return {**kw, "now": clock()}
    return kw


def default_limits(backend: str) -> Limits:
    """PostgreSQL's sign-in takes a round trip to the database, so it gets longer. Tests that build a backlog
    send thousands of messages at once: the send rate is not what they test (tests/hostile/test_bounds.py does)."""
    return Limits(auth_timeout=5.0 if backend == "postgres" else 2.0, send_rate=1e6, send_burst=1e6)


def gateway_for(backend: str, database, limits: Limits | None = None, **writer_kw) -> Gateway:
    """A gateway and its writer for `backend`, not started. `database` is a SQLite file or a PostgreSQL URL;
    `writer_kw` go to the writer (`clock=`, `idempotency_window=`; the process writer takes none)."""
    from ygg_server import compose

    if backend == "sqlite":
        return compose.gateway(compose.on_sqlite(database, **writer_kw), limits)
    if backend == "process":
        return compose.gateway(compose.on_sqlite(database, process=True, **writer_kw), limits)
    if backend == "postgres":
        writer_kw.setdefault("lease", 3.0)
        return compose.gateway(compose.on_postgres(database, **writer_kw), limits)
    raise ValueError(f"no backend {backend!r}: one of {BACKENDS}")


def admin_connection(backend: str, database):
    """A connection of the admin CLI's kind, beside the server."""
    if backend == "postgres":
        from ygg_server.store import postgres as pg

        return pg.connect_sync(database)
    return db.connect(database)


class Server:
    """A running server on loopback, with an admin connection to its database and the clients a test made."""

    def __init__(self, backend: str, database, gw: Gateway, conn):
        self.backend, self.database, self.gw, self.conn = backend, database, gw, conn
        self.url = f"ws://127.0.0.1:{gw.port}/"
        self.clients: list[Client] = []
        self.nodes: list[Gateway] = []

    @property
    def path(self):
        """The SQLite file (the SQLite backends only)."""
        assert self.backend != "postgres", "a PostgreSQL server has no file"
        return self.database

    def admin(self, fn, *args, **kw):
        """`fn` on the admin connection (at the server's clock, if it takes the time: `timed`)."""
        return fn(self.conn, *args, **timed(fn, kw, self.gw.clock))

    async def client(self, url: str | None = None, **creds) -> Client:
        c = Client(url or self.url, **creds)
        await c.connect()
        self.clients.append(c)
        return c

    async def person(self, handle: str, password: str = PW, url: str | None = None) -> Client:
        return await self.client(url, handle=handle, password=password)

    async def node(self, limits: Limits | None = None, **writer_kw) -> Gateway:
        """Another server's worth on the same database (several nodes share one on PostgreSQL only)."""
        gw = gateway_for(self.backend, self.database, limits or default_limits(self.backend), **writer_kw)
        await gw.start("127.0.0.1", 0)
        self.nodes.append(gw)
        return gw


async def start_server(backend: str, database, limits: Limits | None = None, **writer_kw) -> Server:
    """A server for `backend` on `database`, listening on a free loopback port."""
    gw = gateway_for(backend, database, limits or default_limits(backend), **writer_kw)
    await gw.start("127.0.0.1", 0)
    return Server(backend, database, gw, admin_connection(backend, database))


async def stop_server(s: Server) -> None:
    for c in s.clients:
        await c.close()
    for gw in [*s.nodes, s.gw]:
        await gw.close()
    s.conn.close()


@contextlib.asynccontextmanager
async def serving(backend: str, database, limits: Limits | None = None, **writer_kw):
    """`start_server` for the length of a `with` block."""
    s = await start_server(backend, database, limits, **writer_kw)
    try:
        yield s
    finally:
        await stop_server(s)


def pg_available() -> tuple[bool, str]:
    """Is a PostgreSQL server reachable at PG_ADMIN? (If not, why not.)"""
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
