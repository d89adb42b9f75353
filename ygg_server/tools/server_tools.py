"""The handlers of the tools that run on the server, and `run`: a call the registry routed (ops/toolkit.route)
carried out. Each answers `{"ok": true, "result": …}` or `{"ok": false, "error": "…"}`: a tool that fails tells
the model why (the bridge's failing-call guard, agents/tools.FailingCalls, counts those), never the connection.

A handler gets the route and an `Env`: the gateway's `read` and `manage` (the operations run there, on the
store; no SQL here), the web client, and the clock.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

import httpx

from ..ops import memory, skills
from ..ops.toolkit import Route, ToolRefusal
from ..ops.refusals import Refused
from ..skills.format import SkillError
from . import approving, vault, work_tools  # noqa: F401 (work_tools: its handlers register on import)
from .oauth import OAuthClient
from .registry import REGISTRY
from .web import Web, WebError
from .work_tools import ToolError

RESULT_LIMIT = 20_000  # characters of an API's answer given back


@dataclass
class Env:
    read: Callable[..., Awaitable[Any]]
    manage: Callable[..., Awaitable[Any]]
    clock: Callable[[], int]
    web: Web = field(default_factory=Web)
    send: Callable[..., Awaitable[dict]] | None = None  # (participant, frames.Send) -> the send's reply
    notify: Callable[[str, dict], None] = lambda pid, event: None  # an event to a participant's connections
    oauth: OAuthClient = field(default_factory=OAuthClient)  # connected accounts' providers (tools/account_api.py)
    # (op, *args) -> None: an agent's memory kept or marked used by the writer (its `memory` command; the gateway's)
    memory: Callable[..., Awaitable[None]] | None = None


# a memory is kept and marked used by the writer: on SQLite a management commit made it drop its cache and the
# gateway rescan every connection (0.1 to 0.7 s with 10 to 100 agents), and a recall at each turn's start did that
@REGISTRY.handler("remember")
async def remember(env: Env, r: Route) -> Any:
    answer, row = await env.read(memory.to_save, r.agent, r.workspace, r.arguments["note"], env.clock(), "remember")
    if row is not None:
        await env.memory("save", *row, memory.PER_AGENT)
    return answer


@REGISTRY.handler("memory_search")
async def memory_search(env: Env, r: Route) -> Any:
    found = await env.read(memory.search, r.agent, r.workspace, r.arguments["query"], 5)
    if found:
        await env.memory("used", env.clock(), *(m["id"] for m in found))
    return found


@REGISTRY.handler("load_skill")
async def load_skill(env: Env, r: Route) -> Any:
    return await env.read(skills.load, r.agent, r.owner, r.arguments["name"], r.arguments.get("file"))


@REGISTRY.handler("web_search")
async def web_search(env: Env, r: Route) -> Any:
    return await env.web.search(r.arguments["query"], int(r.arguments.get("limit", 5)))


@REGISTRY.handler("fetch_page")
async def fetch_page(env: Env, r: Route) -> Any:
    return await env.web.fetch_page(r.arguments["url"])


async def call_connection(env: Env, r: Route) -> Any:
    """An owner's API connection: its URL (plus `path`), method and auth header (opened from the vault here, sent
    only to that URL's host, never shown to the agent)."""
    url, method, header_name, sealed = r.connection
    path = r.arguments.get("path") or ""
    target = url.rstrip("/") + "/" + path.lstrip("/") if path else url
    if httpx.URL(target).host != httpx.URL(url).host:
        raise WebError("a path cannot leave the connection's host")
    await env.web.check(target)
    headers = {}
    if sealed:
        secret = vault.default().open(sealed)
        if secret is None:
            raise WebError("this connection's secret cannot be read (the server's key changed): set it up again")
        headers[header_name] = secret
    body = r.arguments.get("body")
    try:
        resp = await env.web.client.request(method, target, params=r.arguments.get("query") or None, headers=headers,
                                            json=body if body is not None else None, follow_redirects=False)
    except httpx.HTTPError as e:
        raise WebError(f"the API did not answer: {type(e).__name__}") from None
    text = resp.text
    try:
        data: Any = resp.json()
        text = json.dumps(data, ensure_ascii=False)
    except ValueError:
        data = None
    out: dict[str, Any] = {"status": resp.status_code}
    if data is not None and len(text) <= RESULT_LIMIT:
        out["json"] = data
    else:
        out["text"] = text[:RESULT_LIMIT]
    return out


async def run(route: Route, env: Env, registry=REGISTRY, approval: str | None = None) -> dict:
    """Carry out a routed call: its handler's result, or the error the model is told. The approvals hook judges
    it first (`approval`: the id of the decided request this call runs under)."""
    spec = route.spec
    approver = registry.approver
    if approver is None:
        if spec.approval:
            raise Refused(ToolRefusal.APPROVAL_UNAVAILABLE, f"{spec.name} needs a person's approval, which this "
                          "server cannot ask for yet")
    else:
        held = await approver(route, env, approval)
        if held is not None:
            return held
    try:
        if route.connection is not None:
            result = await call_connection(env, route)
        else:
            result = await spec.handler(env, route)
    except (WebError, SkillError, ToolError) as e:
        return {"ok": False, "error": str(e)}
    return {"ok": True, "result": result}


REGISTRY.set_approver(approving.gate)  # every server call judged by the approvals (seed 003 §59-61)
