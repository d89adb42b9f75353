"""The bridge waits for a person's approval before a tool call outside its standing permissions (seed 003 §59-61)."""

from __future__ import annotations

from ygg_server.agents.backends import Backend
from ygg_server.agents.bridge import Bridge
from ygg_server.agents.turn import TurnRunner
from ygg_server.agents.types import ToolCall, TurnInput, TurnOutput
from ygg_server.ops import toolkit

from .conftest import history, until


def _ops_with_deploy(server) -> None:
    """The agent `ops`, its owner having attached `deploy` to it on the server's registry (issue 23)."""
    aid = server.agent("ops")
    owner = server.conn.execute("SELECT owner FROM agents WHERE id = ?", (aid,)).fetchone()[0]
    server.admin(toolkit.set_tools, aid, owner, add=["deploy"])


class Deploying(Backend):
    """Deploys what it is asked to, then says what the tool answered."""

    def __init__(self):
        self.calls = 0

    async def turn(self, inp: TurnInput) -> TurnOutput:
        self.calls += 1
        if not inp.steps:
            return TurnOutput(tool_calls=[ToolCall(id="d", name="deploy", arguments={"target": "staging"})])
        return TurnOutput(text=f"result: {inp.steps[-1].results[0].content}", state="done")


async def test_the_bridge_waits_for_the_person_then_runs_the_call(server, monkeypatch):
    """Seed 003 §61: "That is why an agent sometimes stops mid-task to ask before going on: not confusion, but an
    action outside its standing permissions"; issue 22: "the agent's bridge waits for the decision without burning
    credits and resumes when it comes"."""
    monkeypatch.setattr(TurnRunner, "APPROVAL_POLL", 0.05)
    _ops_with_deploy(server)
    backend = Deploying()
    await server.run(Bridge(server.config("ops", tools=["deploy"]), backend))
    alice = await server.person("alice")
    sent = await alice.send(workspace=server.ws, conversation="dm:ops", topic="new", title="Ship", type="request",
                            to=["ops"], text="deploy staging please")
    events: list[dict] = []

    def the_card():  # (the card's event, pushed to her connections)
        events.extend(alice.pending_events())
        return next((e for e in events if e.get("kind") == "approval"), None)

    card = await until(the_card)
    pending = (await alice.call("list_approvals", workspace=server.ws))["approvals"]
    assert [a["id"] for a in pending] == [card["approval"]["id"]] and pending[0]["arg"] == "staging"
    calls_while_waiting = backend.calls
    await until(lambda: True, timeout=0.3)
    assert backend.calls == calls_while_waiting == 1, "no model call while it waits"
    await alice.call("decide_approval", workspace=server.ws, id=card["approval"]["id"], answer="approve")

    async def answered():
        msgs = await history(alice, server.ws, sent["message"]["topic"], conversation=sent["message"]["conversation"])
        return next((m for m in msgs if m["text"].startswith("result:")), None)

    final = await until(answered)
    assert "deployed to staging" in final["text"]


async def test_a_denied_call_is_not_run(server, monkeypatch):
    """Seed 003 §59: "Others need a person to approve or deny that particular call before it runs"."""
    monkeypatch.setattr(TurnRunner, "APPROVAL_POLL", 0.05)
    _ops_with_deploy(server)
    await server.run(Bridge(server.config("ops", tools=["deploy"]), Deploying()))
    alice = await server.person("alice")
    await alice.call("set_tool_rule", workspace=server.ws, agent="ops", rule="deploy(staging)", effect="deny")
    sent = await alice.send(workspace=server.ws, conversation="dm:ops", topic="new", title="Ship", type="request",
                            to=["ops"], text="deploy staging please")

    async def answered():
        msgs = await history(alice, server.ws, sent["message"]["topic"], conversation=sent["message"]["conversation"])
        return next((m for m in msgs if m["text"].startswith("result:")), None)

    final = await until(answered)
    assert "deploy was not run" in final["text"] and "deployed" not in final["text"]


class Remembering(Backend):
    """Keeps a note with the server's `remember` tool (a registry tool), then says what the tool answered."""

    def __init__(self):
        self.calls = 0

    async def turn(self, inp: TurnInput) -> TurnOutput:
        self.calls += 1
        if not inp.steps:
            return TurnOutput(tool_calls=[ToolCall(id="r", name="remember", arguments={"note": "ship on Fridays"})])
        return TurnOutput(text=f"result: {inp.steps[-1].results[0].content}", state="done")


async def test_a_registry_call_under_an_ask_rule_waits_for_the_person_and_resumes(server, monkeypatch):
    """Issue 23: "Calls that need approval go through the approvals"; seed 003 §61: "an agent sometimes stops
    mid-task to ask before going on": the server holds the registry call, the bridge waits (no model call) and calls
    again once approved; denied, the model is told so."""
    monkeypatch.setattr(TurnRunner, "APPROVAL_POLL", 0.05)
    server.agent("ops")
    alice = await server.person("alice")
    backend = Remembering()
    await server.run(Bridge(server.config("ops", tools=["remember"]), backend))
    await alice.call("set_tool_rule", workspace=server.ws, agent="ops", rule="remember", effect="ask")
    events: list[dict] = []

    def the_card():
        events.extend(alice.pending_events())
        return next((e for e in events if e.get("kind") == "approval" and e["approval"]["id"] not in seen), None)

    async def answer(sent):
        msgs = await history(alice, server.ws, sent["message"]["topic"], conversation=sent["message"]["conversation"])
        return next((m for m in msgs if m["text"].startswith("result:")), None)

    seen: set[str] = set()
    for how in ("approve", "deny"):
        sent = await alice.send(workspace=server.ws, conversation="dm:ops", topic="new", title="Note", type="request",
                                to=["ops"], text="remember our shipping day")
        card = await until(the_card)
        seen.add(card["approval"]["id"])
        assert card["approval"]["tool"] == "remember" and card["approval"]["arg"] == "ship on Fridays"
        kept = server.conn.execute("SELECT count(*) FROM memories").fetchone()[0]
        assert kept == (0 if how == "approve" else 1), "not run before a person decides"
        await alice.call("decide_approval", workspace=server.ws, id=card["approval"]["id"], answer=how)
        final = await until(lambda: answer(sent))
        if how == "approve":
            assert '"kept": true' in final["text"]
            assert server.conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 1
        else:
            assert "remember was not run: a person denied it" in final["text"]
            assert server.conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 1
