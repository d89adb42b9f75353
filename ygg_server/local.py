"""The one-command local setup: an embedded server on SQLite in the user's data dir, the built-in
offline demo agents, and the owner signed in automatically.

`LocalStack` runs the server and the agents on an event loop in a background thread, so the TUI
can own the main thread. One server per data dir: a second start while one runs joins it (`joined`: the
lock file names its address, `lockfile.py`) rather than starting another on the same database. The first start creates the owner (your login name), a "Demo" workspace
and the demo agents, and opens a few topics so there is something to watch at once.
"""

from __future__ import annotations

import asyncio
import getpass
import json
import logging
import os
import re
import secrets
import threading
from pathlib import Path

import platformdirs

from .clock import now_us
from .ops import admin, auth
from .client import Client
from . import compose
from .net.gateway import Gateway
from .store import sqlite as db
from .lockfile import DataDirLock
from .startup import StartupError, usable_data_dir
from .store.transactions import Tx

KICKOFF = [  # (conversation, agent, title, text)
    ("dm:lead", "lead", "Plan our launch", "Find out how credits work in Ygg and get the plan reviewed before we ship."),
    ("general", "reviewer", "Deploy to production", "Please approve deploying release 1.0 to production tonight."),
    ("general", "eager", "Tell us about topics", "Tell us everything you know about topics, step by step."),
]


def data_dir() -> Path:
    return Path(os.environ.get("YGG_DATA_DIR") or platformdirs.user_data_dir("ygg")) / "local"


def _handle() -> str:
    name = re.sub(r"[^A-Za-z0-9_.-]", "", getpass.getuser() or "") or "me"
    return name[:32]


class LocalStack:
    def __init__(self, directory: Path | None = None, port: int = 0):
        self.dir = Path(directory or data_dir())
        self.port = port
        self.url = ""
        self.token = ""
        self.workspace = ""
        self.handle = ""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="ygg-local", daemon=True)
        self._gateway: Gateway | None = None
        self._demo = None
        self._mcp = None
        self.mcp_url = ""  # the MCP endpoint (agents as tools), when this process serves
        self.lock = DataDirLock(self.dir)
        self.joined = False  # another process serves this data dir: this one only signs in to it

    def _setup(self) -> bool:
        """Create the owner and the Demo workspace once; return True on the first start."""
        usable_data_dir(self.dir, "YGG_DATA_DIR")  # (or one line saying what to do: startup.py)
        owner_file = self.dir / "owner.json"
        conn = db.connect(db.db_path(self.dir))
        try:
            first, now = not owner_file.exists(), now_us()
            if first:
                handle = _handle()
                admin.add_person(conn, handle, secrets.token_urlsafe(24), now=now)
                ws = admin.add_workspace(conn, "Demo", handle, now=now)["id"]
                owner_file.write_text(json.dumps({"handle": handle, "workspace": ws}))
                os.chmod(owner_file, 0o600)
            owner = json.loads(owner_file.read_text())
            self.handle, self.workspace = owner["handle"], owner["workspace"]
            pid = admin.person(conn, self.handle)
            with Tx(conn):  # the owner is signed in automatically
                self.token, _ = auth.new_session(conn, pid, now, auth.PERSON_SESSION)
        finally:
            conn.close()
        return first

    def start(self, demo: bool = True) -> "LocalStack":
        first = self._setup()
        self._thread.start()
        if not self.lock.acquire():
            url = self.lock.address()
            if url:
                self.url, self.joined = url, True
                return self
            if url == "" or not self.lock.acquire():  # (None: the holder went away meanwhile: take it over)
                raise StartupError(f"the data dir {self.dir} is held by another process that has not said where it "
                                   f"listens ({self.lock.path}): stop it, or choose another YGG_DATA_DIR")
        try:
            asyncio.run_coroutine_threadsafe(self._start(demo, first), self._loop).result(timeout=60)
        except BaseException:
            self.lock.release()
            raise
        return self

    async def _start(self, demo: bool, first: bool) -> None:
        self._gateway = Gateway(compose.on_sqlite(db.db_path(self.dir), process=None))  # as `serve` runs it
        await self._gateway.start("127.0.0.1", self.port)
        self.url = f"ws://127.0.0.1:{self._gateway.port}/"
        self.lock.publish(self.url)
        from .net.mcp import McpEndpoint  # (the MCP SDK's import: only where it serves)

        self._mcp = await McpEndpoint(self._gateway).start("127.0.0.1", 0)
        self.mcp_url = self._mcp.url
        self._write_mcp_config()
        if demo:
            from .agents.demo import start_demo

            self._demo = await start_demo(self.url, data_dir=self.dir, workspace=self.workspace, owner=self.handle)
            if first:
                await self.kickoff()

    def _write_mcp_config(self) -> None:
        """DATA_DIR/mcp.json (0600): the MCP endpoint and the owner's session, as MCP clients take a server
        (`claude --mcp-config …/mcp.json`; the README's "Agents as MCP tools")."""
        path = self.dir / "mcp.json"
        body = {"mcpServers": {"ygg": {"type": "http", "url": self.mcp_url,
                                       "headers": {"Authorization": f"Bearer {self.token}"}}}}
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(body, f, indent=2)
        os.chmod(path, 0o600)

    async def kickoff(self) -> None:
        async with Client(self.url, token=self.token) as me:
            for conversation, agent, title, text in KICKOFF:
                await me.send(workspace=self.workspace, conversation=conversation, topic="new", title=title,
                              type="request", to=[agent], text=text)

    def run(self, coro, timeout: float | None = None):
        """Run a coroutine on the stack's loop from another thread."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def stop(self) -> None:
        quiet = logging.getLogger("ygg")
        level = quiet.level
        quiet.setLevel(logging.CRITICAL)  # turns cut short by the stop are not news (and then as it was)

        async def _stop():
            if self._demo is not None:
                await self._demo.stop()
            if self._mcp is not None:
                await self._mcp.close()
            if self._gateway is not None:
                await self._gateway.close()

        try:
            self.run(_stop(), timeout=30)
        finally:
            self.lock.release()
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
            quiet.setLevel(level)


async def watch(url: str, token: str, workspace: str, seconds: float) -> dict:
    """Headless: follow the workspace until a topic closes (or time runs out); print what happens."""
    seen: dict[str, str] = {}
    async with Client(url, token=token) as me:
        await me.call("subscribe", workspace=workspace)
        for t in (await me.call("list_topics", workspace=workspace))["topics"]:
            seen[t["id"]] = t["status"]
            print(f"topic {t['title']!r}: {t['status']}", flush=True)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        while loop.time() < deadline:
            try:
                ev = await me.next_event(timeout=max(0.1, deadline - loop.time()))
            except asyncio.TimeoutError:
                break
            if ev.get("kind") == "topic":
                t = ev["topic"]
                label = t["status"] + (f" ({t['pause']})" if t.get("pause") else "")
                if seen.get(t["id"]) != label:
                    seen[t["id"]] = label
                    print(f"topic {t['title']!r}: {label}", flush=True)
                if t["status"] == "closed":
                    return {"closed": t["title"], "topics": len(seen)}
            elif ev.get("kind") == "balance":
                print(f"credits: {ev['account']} now {ev['balance']}", flush=True)
    return {"closed": None, "topics": len(seen)}
