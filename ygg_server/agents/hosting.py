"""The host supervisor (seed 003 §21-25, §29, §69): many agents' bridges on one host, started when they have work.

`HostSupervisor(url, host_key, root)` holds the host's connection (`/host`, net/hosting.py) and runs a bridge for
each hosted agent that has work, each in its own working directory (`ROOT/agents/<agent id>/`: its state, and
`work/`, where a CLI backend runs):

- **Started by a wake** (§29): the server tells the host of a wake stored for one of its agents with no connection;
  the supervisor starts that agent's bridge, which then claims the wake as any bridge does.
- **One at a time** (§25): starts go through one queue; each waits for its bridge to be reachable (signed in, its
  wakes claimable) before the next begins, since the bridges on a host share one login session of their CLI.
- **After the host comes back**: the agents running when it went away (`ROOT/running.json`) and those with wakes
  waiting are started again, in that order, one at a time.
- **A narrow token each** (§69): for every start the supervisor asks its connection for a token good only to sign
  that agent in (`auth`, renewals too) while it is assigned to this host; the bridge never sees the agent's API key
  nor the host key. An agent switched back to local loses the token and its sessions: its bridge stops.

- **Its own OS user** (§21, multi-tenant hosts; `os_users`, root only): each bridge is then a process of the
  agent's own system user, its directory its alone, no other agent's token nor the host key in reach
  (host_users.py).

`configs` gives an agent's bridge its backend, tools and the rest (by agent name); without one it runs the built-in
backend with the personality of its name (the demo's). `starts` records each start's times (monotonic seconds).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

import websockets

from .bridge import Bridge
from .config import AgentConfig, BackendConfig

log = logging.getLogger("ygg.agents.host")


class HostRefused(PermissionError):
    """The server refused the host key."""


class HostSupervisor:
    def __init__(self, url: str, host_key: str, root: str | Path, *, configs: dict[str, AgentConfig] | None = None,
                 reachable_timeout: float = 30.0, os_users: bool = False, bridge_python: str | None = None):
        self.url = url if url.endswith("/") else url + "/"
        self.host_key = host_key
        self.root = Path(root)
        self.configs = configs or {}
        self.reachable_timeout = reachable_timeout
        self.os_users = os_users  # each bridge a process of the agent's own OS user (host_users.py)
        self.bridge_python = bridge_python or sys.executable
        self.host = ""
        self.agents: dict[str, dict] = {}  # id -> {"id", "name", "pending"} as the server last listed them
        self.running: dict[str, tuple[Bridge, asyncio.Task]] = {}
        self.starts: list[dict[str, Any]] = []  # {"agent", "name", "asked", "reachable" (None: it was not)}
        self._ws = None
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._queued: set[str] = set()
        self._answers: dict[int, asyncio.Future] = {}
        self._ref = 0
        self._tasks: list[asyncio.Task] = []

    # --- the host's connection ---

    async def start(self) -> "HostSupervisor":
        """Connect and sign in as the host; queue the restarts; return (the bridges start in the background).
        With `os_users`: refused (host_users.OsUsersRefused) unless root, with useradd, and an interpreter the
        agents' users can run."""
        if self.os_users:
            from . import host_users  # (POSIX only: pwd, grp)

            host_users.check()
            await asyncio.to_thread(host_users.probe, self.bridge_python)
            host_users.private_root(self.root)
        self._ws = await websockets.connect(self.url + "host", max_size=None)
        await self._ws.send(json.dumps({"op": "auth", "ref": 0, "host_key": self.host_key}))
        hello = json.loads(await self._ws.recv())
        if hello.get("op") != "host_session":
            await self._ws.close()
            raise HostRefused(hello.get("detail") or "the host key was refused")
        self.host = hello["host"]
        self.agents = {a["id"]: a for a in hello["agents"]}
        before = [a for a in self._was_running() if a in self.agents]
        for aid in before + [a["id"] for a in hello["agents"] if a["pending"] and a["id"] not in before]:
            self._enqueue(aid)
        self._tasks = [asyncio.ensure_future(self._reader()), asyncio.ensure_future(self._starter())]
        return self

    async def _reader(self) -> None:
        try:
            async for raw in self._ws:
                frame = json.loads(raw)
                if frame.get("op") == "wake":
                    self._enqueue(frame.get("agent"))
                elif (fut := self._answers.pop(frame.get("ref"), None)) is not None and not fut.done():
                    fut.set_result(frame)
        except websockets.ConnectionClosed:
            log.warning("host %s: the server closed the connection", self.host)
        finally:
            for fut in self._answers.values():
                if not fut.done():
                    fut.set_exception(ConnectionError("the host's connection closed"))

    async def _call(self, frame: dict) -> dict:
        self._ref += 1
        fut = self._answers[self._ref] = asyncio.get_running_loop().create_future()
        await self._ws.send(json.dumps({**frame, "ref": self._ref}))
        return await asyncio.wait_for(fut, 30)

    # --- starting bridges, one at a time ---

    def _enqueue(self, aid) -> None:
        if isinstance(aid, str) and aid not in self._queued and not self._alive(aid):
            self._queued.add(aid)
            self._queue.put_nowait(aid)

    def _alive(self, aid: str) -> bool:
        """Its bridge runs and its connection does not stay shut (a refused token ends the client, not the bridge:
        such a bridge is stopped, and the agent started again by its next wake)."""
        run = self.running.get(aid)
        if run is None or run[1].done():
            return False
        client = run[0].client
        if client is not None and client._task is not None and client._task.done():
            asyncio.ensure_future(run[0].stop())
            run[1].cancel()
            return False
        return True

    async def _starter(self) -> None:
        while True:
            aid = await self._queue.get()
            try:
                if not self._alive(aid):
                    await self._start_one(aid)
            except Exception:
                log.exception("host %s: agent %s not started", self.host, aid)
            finally:
                self._queued.discard(aid)
                self._queue.task_done()

    async def _start_one(self, aid: str) -> None:
        if aid not in self.agents:  # (assigned since the list was read)
            self.agents = {a["id"]: a for a in (await self._call({"op": "agents"}))["agents"]}
        agent = self.agents.get(aid)
        got = await self._call({"op": "token", "agent": aid})
        if agent is None or got.get("op") != "token":
            log.warning("host %s: %s is not on this host (any more)", self.host, aid)
            return
        record = {"agent": aid, "name": agent["name"], "asked": time.monotonic(), "reachable": None}
        self.starts.append(record)
        cfg = self._config(agent, got["token"])
        if self.os_users:
            from .host_users import UserBridge

            bridge = UserBridge(cfg, aid, got["token"], self.bridge_python)
        else:
            bridge = Bridge(cfg)
        task = asyncio.ensure_future(bridge.run())
        self.running[aid] = (bridge, task)
        ready = asyncio.ensure_future(bridge.connected.wait())
        done, _ = await asyncio.wait({task, ready}, timeout=self.reachable_timeout, return_when=asyncio.FIRST_COMPLETED)
        if ready in done:
            record["reachable"] = time.monotonic()
            self._save()
            log.info("host %s: %s reachable after %.2fs", self.host, agent["name"], record["reachable"] - record["asked"])
        else:
            ready.cancel()
            if task.done() and not task.cancelled() and task.exception() is not None:
                log.error("host %s: %s's bridge failed: %s", self.host, agent["name"], task.exception())
            log.error("host %s: %s not reachable within %.0fs; going on", self.host, agent["name"],
                      self.reachable_timeout)

    def _config(self, agent: dict, token: str) -> AgentConfig:
        base = self.configs.get(agent["name"]) or AgentConfig(
            name=agent["name"], backend=BackendConfig(kind="builtin", personality=agent["name"]))
        return dataclasses.replace(base, url=self.url, api_key=token, api_key_env=None,
                                   data_dir=str(self.root / "agents" / agent["id"]))

    # --- what was running ---

    def _was_running(self) -> list[str]:
        try:
            return [a for a in json.loads((self.root / "running.json").read_text()) if isinstance(a, str)]
        except (OSError, ValueError):
            return []

    def _save(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        alive = [aid for aid in self.running if self._alive(aid)]
        tmp = self.root / "running.json.tmp"
        tmp.write_text(json.dumps(alive))
        tmp.chmod(0o600)
        tmp.replace(self.root / "running.json")

    async def idle(self) -> None:
        """Until every start queued so far was made (or given up)."""
        await self._queue.join()

    async def stop(self) -> None:
        """Stop the bridges and the connection; `running.json` keeps who ran, for the next start."""
        for t in self._tasks:
            t.cancel()
        for bridge, task in self.running.values():
            await bridge.stop()
            task.cancel()
        await asyncio.gather(*(t for _, t in self.running.values()), *self._tasks, return_exceptions=True)
        if self._ws is not None:
            await self._ws.close()
