"""The bridge over the one tool registry (issue 23; seed 003 §51-52): the tools offered are those the server says
are attached; each call is checked against the registry's schema; the server's tools are routed there."""

from __future__ import annotations

from ygg_server.agents.backends import Backend
from ygg_server.agents.bridge import Bridge
from ygg_server.agents.types import ToolCall, TurnInput, TurnOutput
from ygg_server.ops import toolkit

from .conftest import until


class Scripted(Backend):
    """Calls the tools it is given, one round each, then answers; records what it was offered and told."""

    def __init__(self, rounds: list[list[ToolCall]]):
        self.rounds, self.inputs = rounds, []

    async def turn(self, inp: TurnInput) -> TurnOutput:
        self.inputs.append(inp)
        k = len(inp.steps)
        if k < len(self.rounds):
            return TurnOutput(tool_calls=self.rounds[k])
        return TurnOutput(text="done", type="response", state="done")


async def test_the_model_is_offered_the_attached_tools_and_calls_are_validated_then_routed(server):
    """§52: "An agent sees only the tools attached to it, not the whole catalog every turn." §51: "A directive or
    tool call is validated against this registry, which also routes the call to the right handler." """
    aid = server.agent("researcher")
    owner = server.conn.execute("SELECT owner FROM agents WHERE id = ?", (aid,)).fetchone()[0]
    server.admin(toolkit.set_tools, aid, owner, add=["remember", "memory_search"],
                 drop=["persona_write", "handoff", "send_message", "settle_thread", "search_corpus", "search_history",
                       "load_skill", "file_read"])
    backend = Scripted([[ToolCall(id="a", name="remember", arguments={"note": "Alice prefers short answers"})],
                        [ToolCall(id="b", name="remember", arguments={"note": 5})],
                        [ToolCall(id="c", name="send_message", arguments={"text": "hi"})],
                        [ToolCall(id="d", name="memory_search", arguments={"query": "alice short"})]])
    b = await server.run(Bridge(server.config("researcher"), backend))
    alice = await server.person("alice")
    await alice.send(workspace=server.ws, conversation="general", topic="new", title="Q", type="request",
                     to=["researcher"], text="Remember how I like answers.")
    await until(lambda: b.stats["acked"] >= 1)
    offered = sorted(t.name for t in backend.inputs[0].tools)
    assert offered == ["memory_search", "persona_read", "remember"]
    results = [r for s in backend.inputs[-1].steps for r in s.results]
    assert [r.is_error for r in results] == [False, True, True, False]
    assert results[1].content == "remember: note must be a string"  # checked before it ran
    assert results[2].content == "you have no tool called send_message"
    assert "Alice prefers short answers" in results[3].content  # routed to the server: stored, then found there
    stored = server.conn.execute("SELECT text, workspace FROM memories WHERE agent = ?", (aid,)).fetchall()
    assert stored == [("Alice prefers short answers", server.ws)]
