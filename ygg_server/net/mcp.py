"""Agents as MCP tools (seed 003 §76-77): an MCP endpoint (the official `mcp` SDK, streamable HTTP) beside the
WebSocket port, on which every agent a caller may address is a tool.

- Who calls: the bearer of a session token (`Authorization: Bearer yggs_…`), a person's or an agent's, checked on
  every HTTP request as `auth` checks a token (an API key is never a credential here, seed 003 §68; failures
  count toward the same sign-in limits). The MCP session id confers nothing: each request is its bearer's.
- `tools/list`: the agents the caller may send to (`ops.agent_tools.callable_agents`: membership, role, seed 002's
  permissions), each a tool taking `text` (and `title`, `workspace` where it may be called in several,
  `conversation`, `wait`).
- `tools/call`: a request to that agent, opening a topic, submitted to the writer exactly as the socket's `send`
  (the same rate limit, then credits, wakes, hops and permissions decided by the core), in the caller's direct
  conversation with the agent unless `conversation` names another. The call then follows the topic: each message
  in it goes to the caller as a progress notification when the call carries a progress token (`/mcp` answers as
  Server-Sent Events), and the call returns the agent's answer (a response to the request), or what it has when
  the topic closes or `wait` seconds pass (the task goes on; the topic is named in the result).
- `/mcp/json`: the same server answering each request with one JSON body (no stream, no progress): the plain
  request-and-response mode.

The endpoint learns of new messages in a topic from what the writer publishes on this node (`net/mcp_watch.py`), and
reads the topic again every POLL seconds besides, so an answer committed by another node is found too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from typing import Any

import mcp_types as types
import uvicorn
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.routing import Route

from .. import audit
from ..ops import agent_tools, auth, queries
from ..protocol import frames, replies
from .signin import sign_in_keys


log = logging.getLogger("ygg.net.mcp")
PATH, JSON_PATH = "/mcp", "/mcp/json"
POLL = 2.0  # seconds between reads of a followed topic when nothing was published here
WAIT = 300.0  # seconds a call waits for the answer by default…
MAX_WAIT = 3600.0  # …and at most
CALLER = "ygg.caller"  # the ASGI scope's key for (participant, kind, handle)


class McpEndpoint:
    """The MCP endpoint of one gateway: `await start(host, port)`, `url`, `await close()`."""

    def __init__(self, gateway) -> None:
        self.gw = gateway
        self.server: Server = Server("ygg", version="1", instructions=(
            "Each tool is an agent of Ygg. Calling one sends it a request as a task (a new topic): it costs the "
            "credits a send costs, and the agent answers in its own time; progress notifications carry each "
            "message of the task while it works."), on_list_tools=self._list_tools, on_call_tool=self._call_tool)
        self._uvicorn: uvicorn.Server | None = None
        self._task: asyncio.Task | None = None
        self.port = 0
        self.host = ""
        self.scheme = "http"

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}{PATH}"

    # --- serving ---

    def app(self, host: str) -> Starlette:
        local = host in ("127.0.0.1", "localhost", "::1")  # DNS rebinding: only local Host headers then
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True, allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]) if local else None
        streaming = StreamableHTTPSessionManager(self.server, security_settings=security)
        plain = StreamableHTTPSessionManager(self.server, json_response=True, security_settings=security)

        @contextlib.asynccontextmanager
        async def lifespan(_app):
            async with streaming.run(), plain.run():
                yield

        return Starlette(routes=[Route(PATH, _Authenticated(StreamableHTTPASGIApp(streaming), self)),
                                 Route(JSON_PATH, _Authenticated(StreamableHTTPASGIApp(plain), self))],
                         lifespan=lifespan)

    async def start(self, host: str = "127.0.0.1", port: int = 0, tls_cert: str | None = None,
                    tls_key: str | None = None) -> "McpEndpoint":
        """Listen on `host:port` (0: any free port; HTTPS with `tls_cert` and `tls_key`, as `serve`'s own TLS);
        OSError when it cannot."""
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
            sock.listen(128)
        except OSError:
            sock.close()
            raise
        sock.setblocking(False)
        self.host, self.port = host, sock.getsockname()[1]
        config = uvicorn.Config(self.app(host), log_level="warning", access_log=False, lifespan="on",
                                timeout_graceful_shutdown=2, ssl_certfile=tls_cert, ssl_keyfile=tls_key)
        self.scheme = "https" if tls_cert else "http"
        self._uvicorn = _Quiet(config)
        self._task = asyncio.ensure_future(self._uvicorn.serve(sockets=[sock]))
        while not self._uvicorn.started:
            if self._task.done():
                self._task.result()
                raise OSError(f"the MCP endpoint did not start on {host}:{port}")
            await asyncio.sleep(0.01)
        return self

    async def close(self) -> None:
        if self._uvicorn is not None and self._task is not None:
            self._uvicorn.should_exit = True
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._task, 5)

    # --- who calls ---

    async def caller(self, header: str, address: str) -> tuple[str, str, str] | None:
        """(participant, kind, handle) of a bearer session token, or None (counted as a failed sign-in)."""
        gw = self.gw
        token = header[7:].strip() if header[:7].lower() == "bearer " else ""
        frame = frames.Auth(token=token)
        keys = sign_in_keys((address,), frame)
        if gw._limiter.retry_after(keys, time.monotonic()) > 0:
            return None
        found = await gw.read(auth.credentials, frame, gw.clock()) if token else None
        if found is None or not isinstance(found, tuple):
            gw._limiter.failed(keys, time.monotonic())
            audit.record("sign_in", outcome="failed", address=address, method="mcp_token")
            return None
        return found[0], found[1], found[2]

    # --- the MCP handlers ---

    async def _list_tools(self, ctx, params) -> types.ListToolsResult:
        pid = _caller(ctx)[0]
        agents = await self.gw.read(agent_tools.callable_agents, pid)
        return types.ListToolsResult(tools=[_tool(a) for a in agents])

    async def _call_tool(self, ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        pid = _caller(ctx)[0]
        args = params.arguments or {}
        agents = await self.gw.read(agent_tools.callable_agents, pid)
        agent = next((a for a in agents if a["tool"] == params.name), None)
        if agent is None:  # (unknown and not callable alike)
            return _error(f"no agent {params.name!r} you may call: tools/list names those you may")
        text = args.get("text")
        if not isinstance(text, str) or not text.strip():
            return _error("text: what you ask of the agent, is required")
        spaces = {w["id"]: w for w in agent["workspaces"]}
        ws = args.get("workspace") or (agent["workspaces"][0]["id"] if len(spaces) == 1 else None)
        ws = next((w["id"] for w in agent["workspaces"] if ws in (w["id"], w["name"])), None)
        if ws is None:
            return _error("workspace: one of " + ", ".join(f"{w['id']} ({w['name']})" for w in spaces.values()))
        wait = args.get("wait", WAIT)
        wait = min(MAX_WAIT, max(0.0, float(wait))) if isinstance(wait, (int, float)) else WAIT
        title = args.get("title") if isinstance(args.get("title"), str) else None
        send = frames.Send(workspace=ws, conversation=args.get("conversation") or f"dm:{agent['id']}", topic="new",
                           title=title or _title(text), type="request", to=[agent["id"]], text=text,
                           client_id=f"mcp:{ctx.request.headers.get('mcp-session-id', '')}:{ctx.request_id}"[:120])
        try:
            out = self.gw.submit_send(pid, send)
            if not isinstance(out, dict):
                out = replies.render(None, await out)
        except Exception as e:  # (the writer restarted, …: answered as the socket answers it)
            out = self.gw._failed(send, e)
        if out.get("op") != "sent":
            return _error(f"{out.get('reason') or out.get('code')}: {out.get('detail', '')}".strip(": "))
        progress = _Progress(ctx)
        request = out["message"]
        woken = [d["to"] for d in out.get("deliveries", ()) if d.get("wake")]
        await progress.say(f"asked {agent['name']} (cost {out.get('cost', 0)}): topic {request['topic']}"
                           + ("" if self.gw.online(agent["id"]) or agent["id"] not in woken
                              else f"; {agent['name']} is not connected: the task waits for it"))
        status, answer, names = await self._follow(pid, ws, request, wait, progress)
        return _result(status, answer, request, names)

    async def _follow(self, pid: str, ws: str, request: dict, wait: float, progress: "_Progress"):
        """Follow the request's topic until it is answered, closed, or `wait` seconds passed."""
        gw, loop = self.gw, asyncio.get_running_loop()
        deadline = loop.time() + wait
        topic, conv = request["topic"], request["conversation"]
        names = {m["id"]: m["name"] for m in await gw.read(queries.members, pid, ws)}
        seen, last = {request["id"]}, None
        woken = gw.topic_watch.add(topic)
        try:
            while True:
                page = await gw.read(queries.history, pid, frames.History(
                    workspace=ws, conversation=conv, topic=topic, limit=50), gw.clock())
                for m in reversed(page["messages"]):
                    if m["id"] in seen:
                        continue
                    seen.add(m["id"])
                    last = m
                    await progress.say(_line(m, names))
                    if m["type"] == "response" and m.get("in_reply_to") == request["id"] and m["author"] != pid:
                        return "answered", m, names
                if loop.time() >= deadline:
                    return "working", last, names
                t = (await gw.read(queries.topic, pid, frames.GetTopic(workspace=ws, topic=topic)))["topic"]
                if t["status"] == "closed":
                    return "closed", last, names
                woken.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(woken.wait(), min(POLL, max(0.0, deadline - loop.time())))
        finally:
            gw.topic_watch.remove(topic, woken)


class _Quiet(uvicorn.Server):
    """uvicorn, leaving the process's signals to its owner (ygg-server serve's own handlers)."""

    @contextlib.contextmanager
    def capture_signals(self):
        yield


class _Authenticated:
    """ASGI: a request without a live session token is answered 401; others carry their caller in the scope."""

    def __init__(self, app, endpoint: McpEndpoint) -> None:
        self.app, self.endpoint = app, endpoint

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            headers = Headers(scope=scope)
            peer = (scope.get("client") or ("?",))[0]
            address = self.endpoint.gw.address_of(_Peer(peer), _Forwarded(headers))
            who = await self.endpoint.caller(headers.get("authorization", ""), address)
            if who is None:
                await JSONResponse({"error": "unauthenticated", "detail": "send Authorization: Bearer <a session "
                                    "token> (a person's or an agent's, from auth over the socket)"}, 401,
                                   {"WWW-Authenticate": 'Bearer realm="ygg"'})(scope, receive, send)
                return
            scope[CALLER] = who
        await self.app(scope, receive, send)


class _Peer:
    """What `HttpEndpoints.address_of` reads of a connection: its remote address."""

    def __init__(self, host: str) -> None:
        self.remote_address = (host, 0)


class _Forwarded:
    """What `HttpEndpoints.address_of` reads of a request: its X-Forwarded-For headers."""

    def __init__(self, headers: Headers) -> None:
        self.headers = _All(headers)


class _All:
    def __init__(self, headers: Headers) -> None:
        self._h = headers

    def get_all(self, name: str) -> list[str]:
        return self._h.getlist(name)


class _Progress:
    """Progress notifications for one call, when its request carried a progress token."""

    def __init__(self, ctx) -> None:
        meta = ctx.meta or {}
        self.token = meta.get("progress_token", meta.get("progressToken")) if isinstance(meta, dict) else \
            getattr(meta, "progress_token", None)
        self.ctx, self.n = ctx, 0

    async def say(self, message: str) -> None:
        if self.token is None:
            return
        self.n += 1
        try:
            await self.ctx.session.send_progress_notification(self.token, self.n, None, message,
                                                              related_request_id=self.ctx.request_id)
        except Exception:  # (the client went away: the task goes on, as any send's)
            log.debug("a progress notification did not go out", exc_info=True)


def _caller(ctx) -> tuple[str, str, str]:
    return ctx.request.scope[CALLER]


def _tool(a: dict) -> types.Tool:
    where = a["workspaces"]
    props: dict[str, Any] = {
        "text": {"type": "string", "description": f"what you ask of {a['name']}"},
        "title": {"type": "string", "description": "the task's title (default: the start of the text)"},
        "conversation": {"type": "string", "description": "where to ask: general, group:<name>, a conversation id "
                         f"(default: your direct conversation with {a['name']})"},
        "wait": {"type": "number", "minimum": 0, "maximum": MAX_WAIT,
                 "description": f"seconds to wait for the answer (default {WAIT:.0f}); the task goes on after"},
    }
    required = ["text"]
    if len(where) > 1:
        props["workspace"] = {"type": "string", "enum": [w["id"] for w in where],
                              "description": "the workspace: " + ", ".join(f"{w['id']} is {w['name']}" for w in where)}
        required.append("workspace")
    about = " ".join(x for x in (a["title"], a["description"]) if x) or "an agent of Ygg"
    return types.Tool(name=a["tool"], title=a["name"], description=f"{a['name']} ({a['owner']}'s agent): {about}",
                      input_schema={"type": "object", "properties": props, "required": required})


def _title(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= 80 else line[:79] + "…"


def _line(m: dict, names: dict[str, str]) -> str:
    who = names.get(m["author"], m["author"])
    what = m.get("notice") or f"{m['type']}, {m['state']}"
    return f"{who} ({what}): {m.get('text') or ''}"[:1000]


def _result(status: str, answer: dict | None, request: dict, names: dict[str, str]) -> types.CallToolResult:
    where = {"workspace": request["workspace"], "conversation": request["conversation"], "topic": request["topic"],
             "request": request["id"]}
    if status == "answered":
        text = answer["text"] or ""
    elif status == "closed":
        text = "the task's topic closed without an answer to the request" + (
            f"; last: {_line(answer, names)}" if answer else "")
    else:
        text = f"still working: the task is topic {request['topic']}; its answer will be there" + (
            f" (last: {_line(answer, names)})" if answer else "")
    answer_obj = {k: answer.get(k) for k in ("id", "author", "type", "state", "text")} if answer else None
    if answer_obj:
        answer_obj["author_name"] = names.get(answer["author"], answer["author"])
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                structured_content={"status": status, **where, "answer": answer_obj})


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)

