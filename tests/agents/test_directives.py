"""Directives: the stable part is byte-identical from turn to turn; the dynamic part carries the wake."""

from __future__ import annotations

import json

import httpx

from ygg_server.agents import directives
from ygg_server.agents.backends import AnthropicBackend, RetryPolicy
from ygg_server.agents.bridge import Bridge
from ygg_server.agents.config import BackendConfig
from ygg_server.agents.tools import select

from .conftest import history, until


def event(text: str, mid: str, topic: str) -> dict:
    return {
        "me": {"id": "agent.1", "name": "researcher"}, "why": "request",
        "message": {"id": mid, "author": "human.1", "author_name": "@alice", "type": "request", "to": ["agent.1"],
                    "to_names": ["researcher"], "text": text, "topic": topic, "conversation": "c1"},
        "topic": {"id": topic, "title": "T", "conversation": "c1"}, "context": [], "roster": ["@alice", "researcher"],
        "expect": {"type": "response", "in_reply_to": mid, "state": "done"},
    }


def test_fallback_stable_part_is_identical_and_dynamic_part_carries_the_wake():
    """Without a server directive the bridge builds the same shape: identical stable blocks, the wake in the rest."""
    tools = select(["search_corpus", "persona_read"])
    one = directives.compute(name="researcher", role="Answers from the handbook.", persona="Curious.",
                             rulebook=directives.rulebook_for("c1"), event=event("What is a topic?", "m1", "t1"),
                             tools=tools, tools_in_prompt=True)
    # a different wake, a rulebook dict built in another order, tools listed in another order
    rb = dict(reversed(list(directives.rulebook_for("c1").items())))
    two = directives.compute(name="researcher", role="Answers from the handbook.", persona="Curious.",
                             rulebook=rb, event=event("And credits?", "m2", "t2"), tools=tools[::-1],
                             tools_in_prompt=True)
    assert one.stable == two.stable and len(one.stable) == 3
    assert one.dynamic != two.dynamic and "And credits?" in two.dynamic and "in_reply_to=m2" in two.dynamic
    assert "What is a topic?" not in "".join(one.stable)
    assert "Curious." in one.stable[0] and "search_corpus" in one.stable[1]
    assert one.stable[2].startswith("## This conversation's rulebook") and "at most 800 characters" in one.stable[2]


def test_the_servers_directive_is_followed_with_the_bridges_answer_block_and_memory():
    """The server's stable blocks go first and last, the bridge's answer block between them; its memory ends the
    dynamic part. A turn for another message than the wake's describes that message itself."""
    issued = {"stable": ["CORE", "PARTY"], "dynamic": "## Now\nserver's view", "rulebook": {"length": 5}}
    ev = {**event("q", "m1", "t1"), "notes": ["remember the milk"]}
    d = directives.compute(name="r", role="", persona="", rulebook={}, event=ev, issued=issued)
    assert d.stable == ("CORE", directives.ANSWER_FORMAT, "PARTY")
    assert d.dynamic.startswith("## Now\nserver's view") and "remember the milk" in d.dynamic
    other = directives.compute(name="r", role="", persona="", rulebook={}, event=ev, issued=issued, own_turn=False)
    assert other.stable == d.stable and "server's view" not in other.dynamic and "It is your turn, researcher" in other.dynamic


def test_fallback_rulebook_layers_and_persona_changes_only_the_core():
    per = {"general": {"length": 300}, "conv-x": {"style": "formal"}}
    base = directives.rulebook_for("g-id", general="g-id", default={"length": 500}, per_conversation=per)
    assert base["length"] == 300
    x = directives.rulebook_for("conv-x", general="g-id", default={"length": 500}, per_conversation=per)
    assert (x["length"], x["style"]) == (500, "formal")
    a = directives.compute(name="r", role="", persona="Old persona.", rulebook=base, event=event("q", "m", "t"))
    b = directives.compute(name="r", role="", persona="New persona.", rulebook=base, event=event("q", "m", "t"))
    assert a.stable[0] != b.stable[0] and a.stable[1:] == b.stable[1:]


ANSWER = {"content": [{"type": "text", "text": '{"text": "A topic is one unit of work.", "type": "response", "state": "done"}'}],
          "stop_reason": "end_turn", "usage": {"input_tokens": 50, "output_tokens": 9, "cache_read_input_tokens": 1500}}


async def test_stable_part_is_byte_identical_across_real_turns(server):
    """Three wakes through the bridge to an Anthropic backend (MockTransport): the server's directive makes the
    cached system blocks the same bytes in General; in a DM the agent-wide blocks are the same and only the
    conversation's block (its party and rulebook, set by its people) differs."""
    bodies: list[dict] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(200, json=ANSWER)

    backend = AnthropicBackend(model="claude-test", api_key="k", http=httpx.AsyncClient(transport=httpx.MockTransport(handler)),
                               retry=RetryPolicy(max_retries=0))
    server.agent("researcher")
    cfg = server.config("researcher", tools=["search_corpus", "persona_read", "persona_write"], persona="Curious.")
    cfg.backend = BackendConfig(kind="anthropic", model="claude-test")
    b = await server.run(Bridge(cfg, backend))
    alice = await server.person("alice")
    r = await alice.request("set_rulebook", workspace=server.ws, conversation="general", rulebook={"length": 400})
    assert r["op"] == "set_rulebook", r
    topics = []
    for i, (conv, text) in enumerate([("general", "What is a topic?"), ("general", "What are credits?"),
                                       ("dm:researcher", "And states?")]):
        sent = await alice.send(workspace=server.ws, conversation=conv, topic="new", title=f"Q{i}", type="request",
                                to=["researcher"], text=text)
        topics.append(sent["message"])
        await until(lambda n=i + 1: b.stats["acked"] >= n)

    assert len(bodies) == 3
    systems = [json.dumps(body["system"], sort_keys=True).encode() for body in bodies]
    assert systems[0] == systems[1]  # byte-identical: the prompt cache hits on the second turn
    assert bodies[2]["system"][:2] == bodies[0]["system"][:2]  # the core and the answer block: every conversation
    assert bodies[2]["system"][2] != bodies[0]["system"][2]  # the DM has the default rulebook, not General's
    core, _, party = (blk["text"] for blk in bodies[0]["system"])
    assert core.startswith("You are researcher,") and "Curious." in core  # the persona, seeded on the server
    assert "at most 400 characters" in party and "@alice, a person" in party
    assert all(blk["cache_control"] == {"type": "ephemeral"} for body in bodies for blk in body["system"])
    assert "What are credits?" in bodies[1]["messages"][0]["content"] and "What is a topic?" not in bodies[1]["messages"][0]["content"]
    assert [t["name"] for t in bodies[0]["tools"]] == ["search_corpus", "persona_read", "persona_write"]

    # The answers went out as responses to each request, state done.
    msgs = await history(alice, server.ws, topics[0]["topic"])
    (r,) = [m for m in msgs if m["type"] == "response"]
    assert r["in_reply_to"] == topics[0]["id"] and r["state"] == "done" and r["text"] == "A topic is one unit of work."
