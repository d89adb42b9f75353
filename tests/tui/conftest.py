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

from ygg_server.clock import now_us
from ygg_server.ops import admin
from ygg_server.client import Client
from ygg_server.net.gateway import Gateway, Limits
from ygg_server.store import sqlite as db
from ygg_tui.app import make_app
from ygg_tui.config import Config

from tests.backends import gateway_for, timed

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
        self.gw = gateway_for("sqlite", self.path, Limits(auth_timeout=2.0))
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
        """`fn` on the admin connection (at the one clock, if it takes the time: `tests.backends.timed`; the
        server may be stopped)."""
        return fn(self.conn, *args, **timed(fn, kw, now_us))


class Team:
    """alice owns workspace 'team' (her agents researcher and reviewer, 1000 credits each; the pool
    is empty); bob is a member; carol is a viewer."""

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


@pytest.fixture(autouse=True)
def cheap_passwords(monkeypatch):
    """argon2 at its cheapest in these tests: signing in is not what they measure."""
    from argon2 import PasswordHasher

    from ygg_server.ops import auth

    monkeypatch.setattr(auth, "_hasher", PasswordHasher(time_cost=1, memory_cost=8, parallelism=1))


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


async def wait_for(pilot, cond, timeout: float = 15.0, what: str = ""):
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
    await wait_for(pilot, lambda: not app.main.messages.fetching, what="first page")
    await pilot.pause()
    return app.main


def screen_text(app) -> str:
    """What is on the screen, as plain text (the same render as an SVG screenshot)."""
    import io

    from rich.console import Console

    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True,
                      color_system="truecolor", record=True, legacy_windows=False, safe_box=False)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text()


async def seed_topic(team, sender, title: str, texts: list[str]) -> dict:
    """`sender` (a client) opens an inform topic in General with `texts[0]` and writes the rest into it; returns
    the first `sent` reply."""
    first = await sender.send(workspace=team.ws, conversation="general", topic="new", title=title, type="inform",
                              text=texts[0])
    assert first["op"] == "sent", first
    for text in texts[1:]:
        sent = await sender.send(workspace=team.ws, conversation="general", topic=first["message"]["topic"],
                                 type="inform", text=text)
        assert sent["op"] == "sent", sent
    return first


async def open_topic(team, opener, agent: str, title: str, text: str, conversation: str = "general") -> dict:
    """`opener` (a person's client) asks `agent` in a new topic; returns the `sent` reply."""
    sent = await opener.send(workspace=team.ws, conversation=conversation, topic="new", title=title,
                             type="request", to=[agent], text=text)
    assert sent["op"] == "sent", sent
    return sent


async def answer(team, agent_client, state: str = "working", text: str = "on it", **kw) -> dict:
    """The agent takes its next wake and answers it."""
    while True:
        d = await agent_client.next_delivery(timeout=5)
        await agent_client.ack([d["id"]])
        if d["wake"]:
            break
    m = d["message"]
    sent = await agent_client.send(workspace=team.ws, conversation=m["conversation"], topic=m["topic"],
                                   type="response", in_reply_to=m["id"], state=state, text=text, **kw)
    assert sent["op"] == "sent", sent
    return sent


async def read_all(team, handle: str = "alice", expect: int = 0) -> int:
    """Another device of `handle` reads (acks) everything delivered so far."""
    import asyncio

    c = await team.person(handle)
    n = 0
    while True:
        try:
            d = await c.next_delivery(timeout=0.5 if n >= expect else 5)
        except asyncio.TimeoutError:
            return n
        await c.ack([d["id"]])
        n += 1


async def wait_text(pilot, *texts: str, timeout: float = 15.0) -> str:
    """Let the app run until every text is on the screen; return the screen."""
    seen = {"screen": ""}

    def shown():
        seen["screen"] = screen_text(pilot.app)
        return all(t in seen["screen"] for t in texts)

    try:
        await wait_for(pilot, shown, timeout=timeout, what=f"{texts} on screen")
    except AssertionError:
        raise AssertionError(f"not on screen: {texts}\n{seen['screen']}") from None
    return seen["screen"]


async def delivery_with(client, text: str, timeout: float = 5.0) -> dict:
    """The client's next delivery whose message has this text (others are acked and skipped)."""
    while True:
        d = await client.next_delivery(timeout=timeout)
        await client.ack([d["id"]])
        if d["message"].get("text") == text:
            return d


async def edit_selected(pilot, mid: str):
    """Select message `mid` in the main screen's list and press e: the edit dialog is open. Returns the screen."""
    from ygg_tui.screens.revising import EditScreen

    main = await ready(pilot)
    ml = main.messages
    ml.focus()
    await wait_for(pilot, lambda: ml.select_id(mid), what="the message on screen")
    await pilot.press("e")
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, EditScreen), what="the edit dialog")
    return main


def seeded(sync_team, coro):
    """Before a snapshot: `coro` run against the team's server, its clients closed after and the server given a
    moment (what it answers, `coro`'s result)."""
    async def go():
        try:
            return await coro
        finally:
            await sync_team.close_clients()
    out = asyncio.run(go())
    time.sleep(0.3)
    return out
