"""A real Ygg server for the TUI tests, in-process on loopback, in its own thread.

Its own thread and event loop (unlike tests/net's) because snapshot tests run the app
with `App.run()`, which makes its own loop; Pilot tests use it the same way. Agents
and other people are `ygg_server.client.Client`s on the test's loop.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

from ygg_server import admin
from ygg_server.client import Client
from ygg_server.engine import Engine
from ygg_server.net.gateway import Gateway, Limits
from ygg_server.store import sqlite as db
from ygg_tui.app import make_app
from ygg_tui.config import Config

PW = "pw-" + "x" * 8
SIZE = (150, 42)


class ServerThread:
    def __init__(self, data_dir: Path):
        self.path = db.db_path(data_dir)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="ygg-test-server", daemon=True)
        self.thread.start()
        self.gw: Gateway | None = None
        self.port = 0
        self.conn = db.connect(self.path)

    def _run(self, coro, timeout: float = 15.0):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    async def _start(self) -> None:
        self.gw = Gateway(Engine(self.path), Limits(auth_timeout=2.0))
        await self.gw.start("127.0.0.1", self.port)
        self.port = self.gw.port

    def start(self) -> "ServerThread":
        self._run(self._start())
        return self

    def stop(self) -> None:
        if self.gw is not None:
            self._run(self.gw.close())
            self.gw = None

    def restart(self) -> None:
        self.stop()
        time.sleep(0.2)
        self.start()

    def close(self) -> None:
        self.stop()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.conn.close()

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/"

    def admin(self, fn, *args, **kw):
        return fn(self.conn, *args, **kw)


class Team:
    """alice owns workspace 'team' (agents researcher and reviewer, 1000 credits each, pool 500);
    bob is a member; carol is a viewer."""

    def __init__(self, server: ServerThread, tmp: Path):
        self.server, self.tmp = server, tmp
        self.alice = server.admin(admin.add_person, "alice", PW)["id"]
        self.bob = server.admin(admin.add_person, "bob", PW)["id"]
        self.carol = server.admin(admin.add_person, "carol", PW)["id"]
        self.ws = server.admin(admin.add_workspace, "team", "alice")["id"]
        server.admin(admin.add_member, self.ws, "bob")
        server.admin(admin.add_member, self.ws, "carol", "viewer")
        self.keys: dict[str, str] = {}
        self.ids: dict[str, str] = {}
        for name in ("researcher", "reviewer"):
            out = server.admin(admin.add_agent, name, "alice", self.ws)
            self.keys[name], self.ids[name] = out["api_key"], out["id"]
            server.admin(admin.fund, name, 1000)
        server.admin(admin.fund, None, 500, pool_ws=self.ws)
        self.clients: list[Client] = []

    @property
    def url(self) -> str:
        return self.server.url

    def config(self, name: str = "alice") -> Config:
        return Config(url=self.url, handle=name, clock=False, config_dir=self.tmp / name / "cfg",
                      data_dir=self.tmp / name / "data")

    def app(self, handle: str = "alice", **kw):
        return make_app(url=self.url, handle=handle, password=PW, config=self.config(handle), presence_every=0, **kw)

    async def agent(self, name: str) -> Client:
        c = Client(self.url, api_key=self.keys[name], timeout=10)
        await c.connect()
        self.clients.append(c)
        return c

    async def person(self, handle: str) -> Client:
        c = Client(self.url, handle=handle, password=PW, timeout=10)
        await c.connect()
        self.clients.append(c)
        return c

    async def close_clients(self) -> None:
        for c in self.clients:
            await c.close()
        self.clients.clear()


@pytest.fixture
def server(tmp_path):
    s = ServerThread(tmp_path / "server").start()
    yield s
    s.close()


@pytest.fixture
async def team(server, tmp_path):
    t = Team(server, tmp_path)
    yield t
    await t.close_clients()


@pytest.fixture
def sync_team(server, tmp_path):
    """The same team for synchronous (snapshot) tests."""
    t = Team(server, tmp_path)
    yield t
    asyncio.run(t.close_clients()) if t.clients else None


async def wait_for(pilot, cond, timeout: float = 8.0, what: str = ""):
    """Let the app run until `cond()` is true."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            got = cond()
        except Exception:
            got = False
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or cond}")
        await pilot.pause(0.03)


async def ready(pilot):
    app = pilot.app
    await wait_for(pilot, lambda: app.ready.is_set() and app.main is not None and app.main.is_mounted, what="app ready")
    await wait_for(pilot, lambda: not app.main.messages.loading, what="first page")
    await pilot.pause()
    return app.main
