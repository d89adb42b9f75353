"""Directives on both stores (issue 6): personas and rulebooks are stored, and reach wakes, on SQLite and on
PostgreSQL, where a change made through one node shows in the next wake another node hands out."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.backends("sqlite", "postgres")

LONG = "Patient and exact; " * 20  # 380 characters


async def wake(client) -> dict:
    while True:
        d = await client.next_delivery(timeout=10)
        await client.ack([d["id"]])
        if d["wake"]:
            return d


async def test_persona_and_rulebook_reach_the_next_wake_on_either_store(team):
    """Seed 003 §53: "It is computed server-side and sent as structured data with the task or message payload";
    §57: "a sudden, large shrink is treated as suspicious and blocked instead of being applied silently"."""
    s = team
    node = s.url
    if s.backend == "postgres":  # the agent on another node than the one the changes go through
        node = f"ws://127.0.0.1:{(await s.node()).port}/"
    alice = await s.person("alice")
    researcher = await s.client(node, api_key=s.keys["researcher"])

    async def ask(text):
        r = await alice.send(workspace=s.ws, topic="new", title=text, type="request", to=["researcher"], text=text)
        assert r["op"] == "sent", r
        return (await wake(researcher))["directive"]

    first = await ask("one")
    assert "at most 800 characters" in first["stable"][1]
    assert (await researcher.request("set_persona", text=LONG))["version"] == 1
    refused = await researcher.request("set_persona", text="Short.")
    assert (refused["op"], refused["reason"]) == ("refused", "persona_shrink")
    r = await alice.request("set_rulebook", workspace=s.ws, conversation="general", rulebook={"length": 250})
    assert r["op"] == "set_rulebook" and r["set"] == {"length": 250}, r
    second = await ask("two")
    assert LONG.strip() in second["stable"][0] and "at most 250 characters" in second["stable"][1]
    assert second["version"] != first["version"]
    third = await ask("three")
    assert third["stable"] == second["stable"] and third["version"] == second["version"]
    assert (await alice.request("get_persona", agent="researcher"))["text"] == LONG
