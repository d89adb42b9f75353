"""Agents as MCP tools (seed 003 §76-77), driven by the official SDK's own client over loopback."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
from pathlib import Path

import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from ygg_server.agents.bridge import Bridge
from ygg_server.client import Client
from ygg_server.net.mcp import JSON_PATH, PATH, McpEndpoint
from ygg_server.ops import admin
from ygg_server.ops.permissions import set_permissions

from .conftest import PW, history


@pytest.fixture
async def endpoint(server):
    mcp = await McpEndpoint(server.gw).start("127.0.0.1", 0)
    yield mcp
    await mcp.close()


@contextlib.asynccontextmanager
async def mcp_session(endpoint: McpEndpoint, token: str, path: str = PATH):
    url = f"http://127.0.0.1:{endpoint.port}{path}"
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
        async with streamable_http_client(url, http_client=http) as (r, w):
            async with ClientSession(r, w) as session:
                await session.initialize()
                yield session


async def test_a_call_is_a_real_task_answered_by_the_agent_with_progress_while_it_works(server, endpoint):
    """Seed 003 §76: "Calling an agent this way does not produce a fake answer: it creates a real task and sends it
    through exactly the same task system a person delegating in a channel would"; §77: "a streaming mode over
    Server-Sent Events, where progress notifications arrive while the work is happening, not only at the end"."""
    rid = server.agent("researcher")
    await server.run(Bridge(server.config("researcher")))
    alice = await server.person("alice")
    seen: list[str] = []

    async def progress(done, total, message):
        seen.append(message)

    async with mcp_session(endpoint, alice.token) as s:
        tools = {t.name: t for t in (await s.list_tools()).tools}
        assert list(tools) == ["researcher"]
        assert tools["researcher"].input_schema["required"] == ["text"]
        out = await s.call_tool("researcher", {"text": "How do credits work?"}, progress_callback=progress)
    assert not out.is_error, out
    res = out.structured_content
    assert res["status"] == "answered" and res["answer"]["author"] == rid
    assert "credit" in out.content[0].text.lower()
    # progress came while it worked: the task opened, then each message of the topic, the answer among them
    assert seen[0].startswith("asked researcher") and any(m.startswith("researcher (response, done)") for m in seen)
    # a real task: the request and its answer are in the person's direct conversation with the agent
    msgs = await history(alice, server.ws, res["topic"], conversation=res["conversation"])
    assert [m["type"] for m in msgs][:2] == ["request", "response"] and msgs[0]["to"] == [rid]
    assert msgs[1]["in_reply_to"] == res["request"]


async def test_the_plain_mode_answers_with_one_json_body(server, endpoint):
    """Seed 003 §77: "The endpoint supports both a plain request-and-response call and a streaming mode"."""
    server.agent("researcher")
    await server.run(Bridge(server.config("researcher")))
    alice = await server.person("alice")
    async with mcp_session(endpoint, alice.token, JSON_PATH) as s:
        out = await s.call_tool("researcher", {"text": "What is a topic?", "title": "Topics"})
    assert out.structured_content["status"] == "answered", out
    # and on the wire: application/json, not an event stream
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {alice.token}",
                                           "Accept": "application/json, text/event-stream"}) as http:
        r = await http.post(f"http://127.0.0.1:{endpoint.port}{JSON_PATH}", json={
            "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")


async def test_tools_list_reflects_permissions(server, endpoint):
    """Seed 002's permissions decide who may be called: an agent that does not take messages from the caller,
    or does not receive, is no tool of theirs; a viewer calls nobody."""
    server.agent("researcher", fund=0)
    server.agent("reviewer", fund=0)
    alice = await server.person("alice")

    async def names(token):
        async with mcp_session(endpoint, token) as s:
            return sorted(t.name for t in (await s.list_tools()).tools)

    assert await names(alice.token) == ["researcher", "reviewer"]
    server.admin(set_permissions, server.ws, "reviewer", {"receive": False})
    assert await names(alice.token) == ["researcher"]
    server.admin(set_permissions, server.ws, "researcher", {"takes_from": ["reviewer"]})
    assert await names(alice.token) == []
    server.admin(set_permissions, server.ws, "researcher", {"takes_from": ["@alice"]})
    assert await names(alice.token) == ["researcher"]
    server.admin(admin.add_person, "bob", PW)
    bob = await server.person("bob")
    assert await names(bob.token) == []  # not a member of the team: nothing
    server.admin(admin.add_member, server.ws, "bob", "viewer")
    assert await names(bob.token) == []  # a viewer reads but cannot send
    async with mcp_session(endpoint, bob.token) as s:
        out = await s.call_tool("researcher", {"text": "hello"})
    assert out.is_error and "no agent 'researcher' you may call" in out.content[0].text


async def test_an_agent_caller_pays_as_for_any_send(server, endpoint):
    """The same send pipeline: an agent calling another with no credits is refused `credits_exhausted`,
    nothing stored; funded, its call goes through."""
    server.agent("researcher")
    caller = server.agent("scout", fund=0)
    scout = Client(server.url, api_key=server.keys["scout"])
    await scout.connect()
    server.clients.append(scout)
    async with mcp_session(endpoint, scout.token) as s:
        assert [t.name for t in (await s.list_tools()).tools] == ["researcher"]
        out = await s.call_tool("researcher", {"text": "Anything on credits?", "wait": 0})
        assert out.is_error and out.content[0].text.startswith("credits_exhausted"), out
        server.admin(admin.fund, caller, 10)
        out = await s.call_tool("researcher", {"text": "Anything on credits?", "wait": 0})
    assert not out.is_error and out.structured_content["status"] == "working"  # not connected: it waits for it


async def test_only_a_session_token_opens_the_endpoint(server, endpoint):
    """Seed 003 §68: "The key is never used directly as the credential of an ordinary request"."""
    server.agent("researcher")
    url = f"http://127.0.0.1:{endpoint.port}{PATH}"
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    async with httpx2.AsyncClient() as http:
        for headers in ({}, {"Authorization": "Bearer nonsense"},
                        {"Authorization": f"Bearer {server.keys['researcher']}"}):
            r = await http.post(url, json=body, headers={"Accept": "application/json, text/event-stream", **headers})
            assert r.status_code == 401 and r.json()["error"] == "unauthenticated"
            assert r.headers["www-authenticate"].startswith("Bearer")


# The MCP Inspector's CLI (npm, @modelcontextprotocol/inspector-cli): .ci/run installs it here when npm is present
INSPECTOR = Path(os.environ.get("YGG_MCP_INSPECTOR") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
                 / "ygg" / "mcp-inspector" / "node_modules" / "@modelcontextprotocol" / "inspector-cli")


async def inspector(*args: str) -> dict:
    proc = await asyncio.create_subprocess_exec("node", str(INSPECTOR / "build" / "index.js"), *args,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                                                cwd=INSPECTOR / "build")  # (it finds its package.json from there)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    return json.loads(out)


@pytest.mark.skipif(not (INSPECTOR / "build" / "index.js").exists() or not shutil.which("node"),
                    reason=f"the MCP Inspector's CLI is not installed at {INSPECTOR} (.ci/run installs it with npm)")
async def test_an_independent_client_the_mcp_inspector_lists_and_calls(server, endpoint):
    """Seed 003 §76: the endpoint speaks MCP, "the open JSON-RPC-based standard many AI tools now understand":
    another implementation than the SDK's (the Inspector, on the TypeScript SDK) lists the agents and calls one."""
    server.agent("researcher")
    await server.run(Bridge(server.config("researcher")))
    alice = await server.person("alice")
    common = (f"http://127.0.0.1:{endpoint.port}{PATH}", "--transport", "http",
              "--header", f"Authorization: Bearer {alice.token}")
    listed = await inspector(*common, "--method", "tools/list")
    assert [t["name"] for t in listed["tools"]] == ["researcher"]
    called = await inspector(*common, "--method", "tools/call", "--tool-name", "researcher",
                             "--tool-arg", "text=How do credits work?")
    assert called["structuredContent"]["status"] == "answered", called
    assert "credit" in called["content"][0]["text"].lower()


async def test_the_local_stack_serves_the_endpoint_and_writes_a_client_config(tmp_path):
    """The README's demo: `./run` serves the MCP endpoint and leaves DATA_DIR/mcp.json, an MCP client's config
    (its URL and the owner's session), readable by its user only."""
    from ygg_server.local import LocalStack

    stack = await asyncio.to_thread(lambda: LocalStack(tmp_path).start(demo=False))
    try:
        path = tmp_path / "mcp.json"
        assert path.stat().st_mode & 0o777 == 0o600
        cfg = json.loads(path.read_text())["mcpServers"]["ygg"]
        assert cfg["url"] == stack.mcp_url and cfg["type"] == "http"
        stack.run(_add_agent(stack))  # an agent in the Demo workspace: a tool of its owner's
        async with httpx2.AsyncClient(headers=cfg["headers"], timeout=30) as http:
            async with streamable_http_client(cfg["url"], http_client=http) as (r, w):
                async with ClientSession(r, w) as s:
                    await s.initialize()
                    assert [t.name for t in (await s.list_tools()).tools] == ["helper"]
    finally:
        await asyncio.to_thread(stack.stop)


async def _add_agent(stack) -> None:
    from ygg_server.store import sqlite as db

    conn = db.connect(db.db_path(stack.dir))
    try:
        admin.add_agent(conn, "helper", stack.handle, stack.workspace, now=stack._gateway.clock())
    finally:
        conn.close()


async def test_serve_serves_the_endpoint_when_given_its_port(tmp_path):
    """`ygg-server serve --mcp-port N` (here `[serve] mcp_port` in its config file): the start line names it."""
    import subprocess
    import sys

    from ygg_server.cli import main as cli_main

    data = tmp_path / "data"
    assert cli_main(["admin", "--data-dir", str(data), "add-person", "alice", "--password", PW]) == 0
    cfg = tmp_path / "ygg.toml"
    cfg.write_text("[serve]\nmcp_port = 0\n")
    p = subprocess.Popen([sys.executable, "-m", "ygg_server.cli", "serve", "--data-dir", str(data), "--port", "0",
                          "--writer", "thread", "--config", str(cfg)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        line = await asyncio.to_thread(p.stdout.readline)
        started = json.loads(line)
        assert started["mcp"].startswith("http://127.0.0.1:") and started["mcp"].endswith("/mcp")
        async with Client(started["listening"], handle="alice", password=PW, timeout=10) as alice:
            token = alice.token
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
            async with streamable_http_client(started["mcp"], http_client=http) as (r, w):
                async with ClientSession(r, w) as s:
                    await s.initialize()
                    assert (await s.list_tools()).tools == []
    finally:
        p.terminate()
        await asyncio.to_thread(p.wait, 20)


async def test_calling_the_demo_lead_streams_its_teams_work_before_the_answer(server, endpoint):
    """Seed 003 §77: "progress notifications arrive while the work is happening, not only at the end": the lead,
    called as a tool, delegates to the researcher and the reviewer (a side conversation, §15); each result coming
    back into the task is a progress notification before the lead's answer is the call's result."""
    from ygg_server.agents.demo import start_demo

    demo = await start_demo(server.url, data_dir=server.tmp, workspace="team", owner="alice")
    try:
        alice = await server.person("alice")
        seen: list[tuple[float, str]] = []
        loop = asyncio.get_running_loop()

        async def progress(done, total, message):
            seen.append((loop.time(), message))

        async with mcp_session(endpoint, alice.token) as s:
            out = await s.call_tool("lead", {"text": "What do our notes say about credits? Get it reviewed."},
                                    progress_callback=progress)
            returned = loop.time()
    finally:
        await demo.stop()
    assert out.structured_content["status"] == "answered", out
    assert "researcher:" in out.content[0].text and "reviewer:" in out.content[0].text
    before = [m for t, m in seen if t < returned and not m.startswith(("asked", "lead (response"))]
    assert any("side_result" in m for m in before), seen  # the team's results, while the lead still worked
