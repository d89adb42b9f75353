"""`ygg-agent` as a process, agent configs from TOML, and folded requests answered after a resume."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys

import pytest

from ygg_server.agents import config as agent_config
from ygg_server.agents.backends import AnthropicBackend, BuiltinBackend, ClaudeCodeBackend, CodexBackend, OpenAIBackend, make
from ygg_server.agents.bridge import Bridge
from ygg_server.client import Client

from .conftest import history, until

TOML = """
name = "researcher"
url = "{url}"
api_key_env = "YGG_TEST_AGENT_KEY"
data_dir = "{data}"
role = "Answers from the handbook."
persona = "Curious."
tools = ["search_corpus", "remember"]

[backend]
kind = "builtin"
personality = "researcher"

[rulebook]
length = 300

[rulebooks.general]
style = "terse"
"""


def test_config_from_toml_and_backend_factory(tmp_path, monkeypatch):
    path = tmp_path / "a.toml"
    path.write_text(TOML.format(url="ws://127.0.0.1:1/", data=tmp_path / "d"))
    cfg = agent_config.load(path)
    monkeypatch.setenv("YGG_TEST_AGENT_KEY", "yggk_x_y")
    assert cfg.ygg_key() == "yggk_x_y" and cfg.rulebook == {"length": 300} and cfg.rulebooks["general"]["style"] == "terse"
    assert isinstance(make(cfg), BuiltinBackend)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant")
    for kind, cls in [("anthropic", AnthropicBackend), ("openai", OpenAIBackend), ("claude-cli", ClaudeCodeBackend),
                      ("codex-cli", CodexBackend)]:
        c = agent_config.from_dict({"name": "x", "data_dir": str(tmp_path / "x"),
                                    "backend": {"kind": kind, "api_key_env": "ANTHROPIC_API_KEY", "model": "m"}})
        assert isinstance(make(c), cls)
    assert make(agent_config.from_dict({"name": "x", "backend": {"kind": "anthropic", "api_key_env": "ANTHROPIC_API_KEY"}})).api_key == "sk-ant"
    with pytest.raises(ValueError, match="backend kind"):
        agent_config.from_dict({"name": "x", "backend": {"kind": "gpt-local"}})
    with pytest.raises(ValueError, match="unknown config keys"):
        agent_config.from_dict({"name": "x", "modle": "typo"})
    with pytest.raises(ValueError, match="unknown tools"):
        Bridge(agent_config.from_dict({"name": "researcher", "data_dir": str(tmp_path / "y"), "tools": ["teleport"]}))


async def test_ygg_agent_run_as_a_process(server, tmp_path):
    server.agent("researcher")
    path = tmp_path / "researcher.toml"
    path.write_text(TOML.format(url=server.url, data=tmp_path / "proc-agent"))
    env = {**os.environ, "YGG_TEST_AGENT_KEY": server.keys["researcher"]}
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "ygg_server.agents.cli", "--log-level", "WARNING",
                                                "run", str(path), env=env, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)
    try:
        alice = await server.person("alice")
        # General's people set its rulebook on the server; the config's [rulebook] is only for a server that
        # issues no directive
        await alice.call("set_rulebook", workspace=server.ws, conversation="general", rulebook={"length": 300})
        sent = await alice.send(workspace=server.ws, conversation="general", topic="new", title="Q", type="request",
                                to=["researcher"], text="What happens when credits run out?")
        q = sent["message"]

        async def answered():
            msgs = await history(alice, server.ws, q["topic"])
            return [m for m in msgs if m["in_reply_to"] == q["id"]]

        (a,) = await until(answered, timeout=20)
        assert a["type"] == "response" and "Credits" in a["text"] and len(a["text"]) <= 300
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = await asyncio.wait_for(proc.communicate(), 10)
    assert proc.returncode == 0, err.decode()[-2000:]
    turns = [json.loads(x) for x in (tmp_path / "proc-agent" / "turns.jsonl").read_text().splitlines()]
    assert [t["backend"] for t in turns] == ["builtin", "builtin"] and turns[0]["tool_calls"] == ["search_corpus"]


async def test_folded_requests_are_answered_after_the_resume(server):
    server.agent("researcher")
    server.agent("asker")
    b = Bridge(server.config("researcher"))
    alice = await server.person("alice")
    asker = Client(server.url, api_key=server.keys["asker"])
    await asker.connect()
    server.clients.append(asker)
    first = await asker.send(workspace=server.ws, conversation="general", topic="new", title="Two questions",
                             type="request", to=["researcher"], text="What is a topic?")
    topic = first["message"]["topic"]
    second = await asker.send(workspace=server.ws, conversation="general", topic=topic, type="request",
                              to=["researcher"], text="And what are credits?")
    assert second["deliveries"][0]["reason"] == "wake_coalesced"  # folded into the pending wake
    await server.run(b)  # connects only now: both are waiting for it

    async def both():
        msgs = await history(alice, server.ws, topic)
        got = {q: [m for m in msgs if m["in_reply_to"] == q] for q in (first["message"]["id"], second["message"]["id"])}
        return all(got.values()) and got

    got = await until(both)
    assert [len(v) for v in got.values()] == [1, 1]
    (r1,), (r2,) = got.values()
    assert "Topics" in r1["text"] and "Credits" in r2["text"]
    msgs = await history(alice, server.ws, topic)
    assert any(m.get("notice") == "resume" for m in msgs)


async def test_closure_polls_can_be_left_to_the_model(server):
    from ygg_server.agents.backends import Backend
    from ygg_server.agents.types import TurnOutput

    class Says(Backend):
        def __init__(self):
            self.whys = []

        async def turn(self, inp):
            self.whys.append(inp.event["why"])
            if inp.event["why"] == "closure_poll":
                return TurnOutput(text="All done here.", state="done")
            return TurnOutput(text="Here you go.", state="working")

    server.agent("researcher")
    backend = Says()
    await server.run(Bridge(server.config("researcher", closure_polls="model"), backend))
    alice = await server.person("alice")
    sent = await alice.send(workspace=server.ws, conversation="general", topic="new", title="Q", type="request",
                            to=["researcher"], text="Hello?")
    topic = sent["message"]["topic"]
    await until(lambda: backend.whys == ["request"])
    await alice.send(workspace=server.ws, conversation="general", topic=topic, type="inform", state="done", text="ok")
    await until(lambda: backend.whys == ["request", "closure_poll"])

    async def closed():
        return (await alice.call("topic", workspace=server.ws, topic=topic))["topic"]["status"] == "closed"

    await until(closed)
    msgs = await history(alice, server.ws, topic)
    (answer,) = [m for m in msgs if m["text"] == "All done here."]
    assert answer["type"] == "response" and answer["to"] == ["system.ygg"] and answer["cost"] == 0
