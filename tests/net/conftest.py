"""A real server on loopback, in-process, on a fresh SQLite data dir."""

from __future__ import annotations

import sqlite3

import pytest

from ygg_server.ops import admin
from ygg_server.client import Client
from ygg_server.compose import on_sqlite
from ygg_server.writer.process import WriterProcess as EngineProcess
from ygg_server.net.gateway import Gateway, Limits
from ygg_server.store import sqlite as db


class Server:
    def __init__(self, path, gw: Gateway):
        self.path, self.gw = path, gw
        self.url = f"ws://127.0.0.1:{gw.port}/"
        self.conn = db.connect(path)
        self.clients: list[Client] = []

    def admin(self, fn, *args, **kw):
        return fn(self.conn, *args, **kw)

    async def client(self, **creds) -> Client:
        c = Client(self.url, **creds)
        await c.connect()
        self.clients.append(c)
        return c

    async def person(self, handle: str, password: str = "pw-" + "x" * 8) -> Client:
        return await self.client(handle=handle, password=password)


def reaches_into_engine(server) -> None:
    """For a test that changes the engine's clock or reads its memory: skip it where the engine is
    another process (tests/net/test_suite_on_writer_process.py)."""
    if isinstance(server.gw.engine, EngineProcess):
        pytest.skip("reaches into the engine, which runs in another process here")


@pytest.fixture
def writer() -> str:
    """Where the SQLite writer runs: "thread" (beside the event loop) or "process" (`ygg-server serve`'s)."""
    return "thread"


@pytest.fixture
async def server(tmp_path, writer):
    path = db.db_path(tmp_path)
    gw = Gateway(on_sqlite(path, process=writer == "process"), Limits(auth_timeout=2.0))
    await gw.start("127.0.0.1", 0)
    s = Server(path, gw)
    yield s
    for c in s.clients:
        await c.close()
    await gw.close()
    s.conn.close()


@pytest.fixture
async def team(server):
    """alice owns workspace 'team' with agents researcher and reviewer, 1000 credits each; bob is a member."""
    a = server.admin(admin.add_person, "alice", "pw-" + "x" * 8)
    server.admin(admin.add_person, "bob", "pw-" + "x" * 8)
    ws = server.admin(admin.add_workspace, "team", "alice")["id"]
    server.admin(admin.add_member, ws, "bob")
    keys = {}
    for name in ("researcher", "reviewer"):
        out = server.admin(admin.add_agent, name, "alice")
        keys[name] = out["api_key"]
        server.admin(admin.fund, name, 1000)
    server.ws, server.keys, server.alice = ws, keys, a["id"]
    return server


def migrated_before(path, marker: str) -> sqlite3.Connection:
    """A database at `path` as an older server left it: the migrations of the old list (tests/store/legacy.py)
    before the first one whose SQL holds `marker`. Returns a connection to it in autocommit mode."""
    from ..store import legacy

    c = sqlite3.connect(path, isolation_level=None)
    legacy.sqlite_before(c, marker)
    return c
