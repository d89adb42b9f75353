"""The failing-tool guard (issue 4; seed 003 §18): within one turn the same failing call is not run again and again."""

from __future__ import annotations

from ygg_server.agents.backends import Backend
from ygg_server.agents.bridge import Bridge
from ygg_server.agents.tools import FailingCalls
from ygg_server.agents.types import ToolCall, ToolResult, TurnInput, TurnOutput

from .conftest import history, until


class Stubborn(Backend):
    """Keeps calling the same failing tool (a send_message with no text) until the guard says no, then once
    with other arguments; then answers. Records every round's input."""

    def __init__(self):
        self.inputs: list[TurnInput] = []

    async def turn(self, inp: TurnInput) -> TurnOutput:
        self.inputs.append(inp)
        results = [r for s in inp.steps for r in s.results]
        if results and results[-1].content.startswith("not run"):
            if len(inp.steps) < 5:
                return TurnOutput(tool_calls=[ToolCall(id="x", name="send_message", arguments={"text": ""}),
                                              ToolCall(id="y", name="search_corpus", arguments={"query": "topic"})])
            return TurnOutput(text="I could not send it; here is what I have.", type="response", state="done")
        return TurnOutput(tool_calls=[ToolCall(id=str(len(inp.steps)), name="send_message", arguments={"text": ""})])


def test_identical_failures_are_counted_per_tool_and_arguments():
    """Seed 003 §18: "A related but separate safeguard exists only so that one agent does not repeat the same failing
    tool call again and again within one turn"."""
    g = FailingCalls(limit=2)
    call = ToolCall(id="1", name="fetch", arguments={"url": "a", "n": 1})
    same = ToolCall(id="2", name="fetch", arguments={"n": 1, "url": "a"})  # the same arguments in another order
    other = ToolCall(id="3", name="fetch", arguments={"url": "b", "n": 1})
    failed = ToolResult(call_id="1", name="fetch", content="boom", is_error=True)
    fine = ToolResult(call_id="1", name="fetch", content="ok")
    g.record(call, fine)
    assert g.refusal(call) is None  # a call that worked is not a failing call
    g.record(call, failed)
    assert g.refusal(same) is None
    g.record(same, failed)
    refused = g.refusal(same)
    assert refused.is_error and refused.call_id == "2" and "already failed 2 times" in refused.content
    assert g.refusal(other) is None  # other arguments: run


async def test_a_turn_does_not_repeat_the_same_failing_tool_call(server):
    """Seed 003 §18: "that is a different problem from agents talking nonsense to each other and must not be
    conflated with it": the guard refuses the call to the model within the bridge's turn and says why; the
    conversation is not throttled, and the turn still ends with an answer."""
    server.agent("researcher")
    backend = Stubborn()
    b = await server.run(Bridge(server.config("researcher", max_tool_failures=2), backend))
    alice = await server.person("alice")
    sent = await alice.send(workspace=server.ws, conversation="general", topic="new", title="G", type="request",
                            to=["researcher"], text="Please send the report.")
    await until(lambda: b.stats["acked"] >= 1)

    results = [r for s in backend.inputs[-1].steps for r in s.results]
    calls = [(r.name, r.content[:30]) for r in results]
    # two real failures, then refused by the guard (not run), while a different call still runs
    assert [r.content for r in results[:2]] == ["send_message needs a text"] * 2
    assert results[2].content.startswith("not run: this exact call (send_message with these arguments) already "
                                         "failed 2 times"), calls
    assert all(r.content.startswith("not run") for r in results[2:] if r.name == "send_message")
    assert any(r.name == "search_corpus" and not r.is_error for r in results), calls
    assert b.stats["tool:send_message"] == 2 and b.stats["tool_repeat_refused"] >= 2
    msgs = await history(alice, server.ws, sent["message"]["topic"])
    (answer,) = [m for m in msgs if m["type"] == "response"]
    assert answer["in_reply_to"] == sent["message"]["id"] and "here is what I have" in answer["text"]
    assert not any(m.get("notice") in ("hop_limit",) for m in msgs)  # no conversation safeguard involved
