"""Persona documents live on the server: read and rewritten through tools; a sudden large shrink is refused."""

from __future__ import annotations

from ygg_server.agents.backends import Backend
from ygg_server.agents.bridge import Bridge
from ygg_server.agents.types import ToolCall, TurnInput, TurnOutput

from .conftest import until

LONG = "I am careful and kind. " * 20  # 460 characters


class Scripted(Backend):
    """Answers each round from a list of TurnOutputs and keeps what it was given."""

    def __init__(self, rounds):
        self.rounds, self.inputs = list(rounds), []

    async def turn(self, inp: TurnInput) -> TurnOutput:
        self.inputs.append(inp)
        return self.rounds.pop(0)


async def test_agent_reads_and_rewrites_its_persona_through_tools(server, tmp_path):
    """Seed 003 §56: "Every agent's persona lives in a single document that it can read and rewrite about itself";
    §57: "a sudden, large shrink is treated as suspicious and blocked instead of being applied silently"."""
    server.agent("researcher")
    rewrite = LONG + "I also love maps."
    backend = Scripted([
        TurnOutput(tool_calls=[ToolCall(id="1", name="persona_read"),
                               ToolCall(id="2", name="persona_write", arguments={"text": "Terse."})]),
        TurnOutput(tool_calls=[ToolCall(id="3", name="persona_write", arguments={"text": rewrite, "why": "maps"})]),
        TurnOutput(text="Updated who I am.", type="response", state="done"),
        TurnOutput(text="Second answer.", type="response", state="done"),
    ])
    b = await server.run(Bridge(server.config("researcher", persona=LONG), backend))
    alice = await server.person("alice")
    await alice.send(workspace=server.ws, conversation="general", topic="new", title="P", type="request",
                     to=["researcher"], text="Please add that you love maps to your persona.")
    await until(lambda: b.stats["acked"] >= 1)

    read, shrink = backend.inputs[1].steps[0].results
    assert read.content == LONG and not read.is_error
    assert shrink.is_error and "persona_shrink" in shrink.content and "less than half" in shrink.content
    accepted = backend.inputs[2].steps[1].results[0]
    assert not accepted.is_error and "persona saved" in accepted.content
    assert b.persona == rewrite and b.stats["persona_refused"] == 1
    # stored on the server (every version kept), not in the bridge's files
    rows = server.admin(lambda c: c.execute("SELECT version, text FROM personas ORDER BY version").fetchall())
    assert [(v, t) for v, t in rows] == [(1, LONG), (2, rewrite)]
    assert not (tmp_path / "agents" / "researcher" / "persona.md").exists()
    # within the turn the stable part did not move; the next turn carries the new persona
    assert backend.inputs[0].directive.stable == backend.inputs[2].directive.stable
    await alice.send(workspace=server.ws, conversation="general", topic="new", title="P2", type="request",
                     to=["researcher"], text="Anything else?")
    await until(lambda: b.stats["acked"] >= 2)
    assert "I also love maps." in backend.inputs[3].directive.stable[0]
    assert "I also love maps." not in backend.inputs[0].directive.stable[0]
