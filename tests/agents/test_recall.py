"""Layered memory at the start of a turn (issue 23; seed 003 §46): memories and knowledge fetched at once under a
strict time budget; a slow source is dropped, not waited for, and the turn says what was left out."""

from __future__ import annotations

import asyncio

from ygg_server.agents import recall
from ygg_server.agents.backends import Backend
from ygg_server.agents.bridge import Bridge
from ygg_server.agents.types import TurnInput, TurnOutput
from ygg_server.ops import admin, memory

from .conftest import until


async def test_a_slow_source_is_dropped_and_said_so_while_the_others_are_kept():
    """§46: "fetched in parallel under a strict time budget, so a slow search degrades gracefully instead of holding
    up the turn"."""
    never = asyncio.Event()
    cancelled = asyncio.Event()

    async def slow():
        try:
            await never.wait()
        finally:
            cancelled.set()
        return ["never"]

    async def fast():
        return ["a fact"]

    async def broken():
        raise OSError("down")

    got = await asyncio.wait_for(recall.assemble({"notes": slow, "memory": fast, "web": broken}, 0.05), 10)
    assert got.found == {"memory": ["a fact"]}
    assert got.left_out == {"notes": "too slow (over 0.05s)", "web": "failed (OSError)"}
    assert cancelled.is_set()  # its request cancelled, not left running
    text = recall.render({"found": got.found, "left_out": got.left_out})
    assert "## From your long-term memory (this workspace)\n- a fact" in text
    assert "- notes: too slow (over 0.05s); search it yourself if you need it" in text


class Recorder(Backend):
    def __init__(self):
        self.inputs: list[TurnInput] = []

    async def turn(self, inp: TurnInput) -> TurnOutput:
        self.inputs.append(inp)
        return TurnOutput(text="ok", type="response", state="done")


async def test_the_turn_starts_within_budget_with_its_memories_and_says_what_was_left_out(server):
    """§46: "the current conversation's history and the agent's own long-term memory load at once, while relevant
    background knowledge and notes are fetched in parallel under a strict time budget"; memory is per workspace."""
    aid = server.agent("researcher")
    now = server.gw.clock()  # (the server's time: its decay worker forgets what is long unused)
    server.admin(memory.save, aid, server.ws, "Alice wants answers about credits in one paragraph", now)
    other = server.admin(admin.add_workspace, "other", "alice")["id"]
    server.conn.execute("""INSERT INTO memories (id, workspace, agent, text, created_at, used_at)
                           VALUES ('m-other', ?, ?, 'Secret plan about credits in the other workspace', ?, ?)""",
                        (other, aid, now, now))
    backend = Recorder()
    b = Bridge(server.config("researcher", recall_budget=0.3), backend)
    never = asyncio.Event()

    async def slow_notes(message):
        await never.wait()
        return ["never"]

    b.extra_sources = {"notes": slow_notes}
    await server.run(b)
    alice = await server.person("alice")
    await alice.send(workspace=server.ws, conversation="general", topic="new", title="Q", type="request",
                     to=["researcher"], text="How do credits work?")
    await until(lambda: b.stats["acked"] >= 1)
    (inp,) = backend.inputs
    rec = inp.event["recalled"]
    assert rec["found"]["memory"] == ["Alice wants answers about credits in one paragraph"]  # not the other's
    assert rec["left_out"] == {"notes": "too slow (over 0.3s)"}
    assert rec["seconds"] < 5  # it did not wait for the slow one (which never answers)
    assert "Secret plan" not in inp.directive.dynamic
    assert "Alice wants answers about credits" in inp.directive.dynamic
    assert "- notes: too slow" in inp.directive.dynamic
    assert "credits" in " ".join(rec["found"]["knowledge"]).lower()  # the handbook, as background knowledge
    # seed 003 §45: the prompt holds "only a compact list of its skills (each skill's name and one line)"
    answer_block = inp.directive.stable[1]
    assert "## Your skills" in answer_block and "- memory-keeping: What to remember and how to recall it." in answer_block
    assert "Do not keep what the conversation itself holds" not in answer_block  # the body: load_skill's
