"""A host's connection (`ws://…/host`, seed 003 §29 and §69): how a supervisor learns that a hosted agent that is
not running has work, and gets the narrow token its bridge signs in with (ops/hosting.py). A mixin of `Gateway`.

A small protocol of its own, one JSON object a frame:

    → {"op":"auth","ref":1,"host_key":"yggh_…"}      ← {"op":"host_session","ref":1,"host":…,"agents":[{id,name,pending}]}
    → {"op":"agents","ref":2}                         ← {"op":"agents","ref":2,"agents":[…]}     (the same list, now)
    → {"op":"token","ref":3,"agent":"<id>"}           ← {"op":"token","ref":3,"agent":…,"token":"yggx_…"}
    ←  {"op":"wake","agent":"<id>"}                   a wake was stored for a hosted agent with no connection here

Anything else, a wrong key, an agent not on this host: `{"op":"error","ref":…,"code":…}` (a wrong key closes the
connection, 1008). The key does nothing else: it is no agent's credential, and this connection gets no message.
Wakes are told by the node that stored them to the host's connections on that node, and by the other nodes
(PostgreSQL: their NOTIFY news of new deliveries, `delivery/cluster.py`) to the host's connections there when the
agent has an unacked wake and no connection anywhere; a supervisor that comes back reads `pending` (the wakes
waiting) instead, so nothing is lost while it was away.
"""

from __future__ import annotations

import asyncio
import json
import time

import websockets

from .. import audit
from ..ops import hosting
from ..protocol import ErrorCode as E
from .conn import close_within
from .signin import bucket

HOST_PATH = "/host"


class HostEndpoints:
    """Mixed into the gateway: `self.hosts` (host id -> its connections here), `self.hosted` (agent -> host)."""

    def _hosting_init(self) -> None:
        self.hosts: dict[str, set] = {}
        self.hosted: dict[str, str] = {}

    async def host_handler(self, ws) -> None:
        hid = None
        try:
            raw = await asyncio.wait_for(ws.recv(), self.limits.auth_timeout)
            frame = _frame(raw)
            keys = [("addr", bucket((self.address_of(ws, ws.request),)))]
            if self._limiter.retry_after(keys, time.monotonic()) > 0:
                hid = None
            elif frame.get("op") == "auth":
                hid = await self.read(hosting.host_for_key, frame.get("host_key"))
            if hid is None:
                self._limiter.failed(keys, time.monotonic())
                audit.record("host_sign_in", outcome="failed", address=self.address_of(ws, ws.request))
                await ws.send(_error(frame.get("ref"), E.UNAUTHENTICATED, "that host key is not valid"))
                await close_within(ws, 1008, "unauthenticated", self.limits.close_timeout)
                return
            self.hosts.setdefault(hid, set()).add(ws)
            agents = await self._host_agents(hid)
            await ws.send(json.dumps({"op": "host_session", "ref": frame.get("ref"), "host": hid, "agents": agents}))
            async for raw in ws:
                await ws.send(await self._host_frame(hid, _frame(raw)))
        except (websockets.ConnectionClosed, TimeoutError):
            pass
        finally:
            if hid is not None:
                conns = self.hosts.get(hid, set())
                conns.discard(ws)
                if not conns:
                    self.hosts.pop(hid, None)
                    self.hosted = {a: h for a, h in self.hosted.items() if h != hid}

    async def _host_frame(self, hid: str, frame: dict) -> str:
        op, ref = frame.get("op"), frame.get("ref")
        if op == "agents":
            return json.dumps({"op": "agents", "ref": ref, "agents": await self._host_agents(hid)})
        if op == "token":
            agent = frame.get("agent")
            token = await self.manage(_issue, hid, agent, self.clock()) if isinstance(agent, str) else None
            if token is None:
                return _error(ref, E.NOT_FOUND, "no such agent on this host")
            return json.dumps({"op": "token", "ref": ref, "agent": agent, "token": token})
        if op == "ping":
            return json.dumps({"op": "pong", "ref": ref})
        return _error(ref, E.BAD_FRAME, "a host's connection takes agents, token and ping")

    async def _host_agents(self, hid: str) -> list[dict]:
        """Its agents, read now; who is hosted where is remembered for the wakes."""
        agents = await self.read(hosting.hosted_agents, hid)
        self.hosted = {a: h for a, h in self.hosted.items() if h != hid} | {a["id"]: hid for a in agents}
        return agents

    async def rehost(self) -> None:
        """Another process changed the database (an agent assigned or switched to local): read again."""
        for hid in list(self.hosts):
            await self._host_agents(hid)

    def wake_hosts(self, deliveries) -> None:
        """A wake for a hosted agent with no connection here: its host is told (once per agent per batch)."""
        self.tell_hosts({s.recipient for s in deliveries if s.wake})

    def tell_hosts(self, agents) -> None:
        """Each of `agents` hosted by a host connected here, with no connection here: its host is told."""
        for aid in sorted(agents):
            if aid in self.hosted and aid not in self.conns:
                frame = json.dumps({"op": "wake", "agent": aid})
                for ws in self.hosts.get(self.hosted[aid], ()):
                    asyncio.ensure_future(_send_quietly(ws, frame))


def _issue(conn, hid: str, agent: str, now: int) -> str | None:
    return hosting.issue_token(conn, hid, agent, now=now)


def _frame(raw) -> dict:
    try:
        frame = json.loads(raw)
    except (ValueError, TypeError):
        return {}
    return frame if isinstance(frame, dict) else {}


def _error(ref, code, detail: str) -> str:
    return json.dumps({"op": "error", "ref": ref, "code": str(code), "detail": detail})


async def _send_quietly(ws, text: str) -> None:
    try:
        await ws.send(text)
    except websockets.ConnectionClosed:
        pass
