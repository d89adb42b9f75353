"""A real Ygg server on loopback for the agent tests, plus helpers to run bridges against it."""

from __future__ import annotations

import asyncio
import time

import pytest

from ygg_server.ops import admin
from ygg_server.agents.bridge import Bridge
from ygg_server.agents.config import AgentConfig, BackendConfig
from ygg_server.client import Client
from ygg_server.net.gateway import Gateway, Limits
from ygg_server.store import sqlite as db

from tests.backends import gateway_for, timed

PW = "pw-" + "x" * 8


class Server:
    def __init__(self, tmp_path, path, gw: Gateway):
        self.tmp, self.path, self.gw = tmp_path, path, gw
        self.url = f"ws://127.0.0.1:{gw.port}/"
        self.conn = db.connect(path)
        self.clients: list[Client] = []
        self.bridges: list[Bridge] = []
        self.tasks: list[asyncio.Task] = []
        self.keys: dict[str, str] = {}

    def admin(self, fn, *args, **kw):
        """`fn` on the admin connection (at the server's clock, if it takes the time: `tests.backends.timed`)."""
        return fn(self.conn, *args, **timed(fn, kw, self.gw.clock))

    async def person(self, handle: str) -> Client:
        c = Client(self.url, handle=handle, password=PW)
        await c.connect()
        self.clients.append(c)
        return c

    def agent(self, name: str, fund: int = 100, owner: str = "alice") -> str:
        out = self.admin(admin.add_agent, name, owner, self.ws)
        self.keys[name] = out["api_key"]
        if fund:
            self.admin(admin.fund, out["id"], fund)
        return out["id"]

    def config(self, name: str, personality: str | None = None, **kw) -> AgentConfig:
        tools = kw.pop("tools", ["send_message", "search_corpus", "persona_read", "persona_write", "remember"])
        options = kw.pop("options", {})
        return AgentConfig(name=name, url=self.url, api_key=self.keys[name], data_dir=str(self.tmp / "agents" / name),
                           tools=tools, backend=BackendConfig(kind="builtin", personality=personality or name,
                                                              options=options), max_steps=6, **kw)

    async def run(self, bridge: Bridge) -> Bridge:
        self.bridges.append(bridge)
        self.tasks.append(asyncio.create_task(bridge.run()))
        await asyncio.wait_for(bridge.connected.wait(), 10)
        return bridge

    async def stop_bridges(self) -> None:
        for b in self.bridges:
            await b.stop()
        for t in self.tasks:
            t.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        self.bridges, self.tasks = [], []


@pytest.fixture
async def server(tmp_path):
    path = db.db_path(tmp_path)
    offset = [0]  # the writer's clock runs ahead by this much: nudges and polls come on demand
    gw = gateway_for("sqlite", path, Limits(auth_timeout=2.0), clock=lambda: time.time_ns() // 1000 + offset[0])
    await gw.start("127.0.0.1", 0)
    s = Server(tmp_path, path, gw)
    s.advance = lambda seconds: offset.__setitem__(0, offset[0] + int(seconds * 1_000_000))
    s.admin(admin.add_person, "alice", PW)  # one person: each password hash costs ~0.4 s of argon2
    s.ws = s.admin(admin.add_workspace, "team", "alice")["id"]
    yield s
    await s.stop_bridges()
    for c in s.clients:
        await c.close()
    await gw.close()
    s.conn.close()


async def until(pred, timeout: float = 10.0, every: float = 0.02):
    """Poll an async or sync predicate until it returns something truthy."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        got = pred()
        if asyncio.iscoroutine(got):
            got = await got
        if got:
            return got
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(every)


async def topic_status(client: Client, ws: str, topic: str) -> dict:
    return (await client.call("topic", workspace=ws, topic=topic))["topic"]


async def history(client: Client, ws: str, topic: str, conversation: str = "general") -> list[dict]:
    out = await client.call("history", workspace=ws, conversation=conversation, topic=topic, limit=200)
    return list(reversed(out["messages"]))
