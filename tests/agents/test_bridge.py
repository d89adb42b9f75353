"""The bridge on loopback: idempotent sends across reconnects and restarts, failures, nudges,
needs_human, credits, side topics, and the one-at-a-time supervisor."""

from __future__ import annotations

import asyncio
import time

from ygg_server.ops import admin
from ygg_server.agents.backends import Backend, BuiltinBackend
from ygg_server.agents.bridge import Bridge, Supervisor
from ygg_server.agents.types import ToolCall, TurnInput, TurnOutput

from .conftest import history, topic_status, until


class Counting(Backend):
    """Wraps a backend; counts calls; can fail the first `fail` of them."""

    def __init__(self, inner: Backend, fail: int = 0):
        self.inner, self.fail, self.calls = inner, fail, 0
        self.inputs: list[TurnInput] = []

    async def turn(self, inp: TurnInput) -> TurnOutput:
        self.calls += 1
        self.inputs.append(inp)
        if self.calls <= self.fail:
            return TurnOutput(error="anthropic: HTTP 529 overloaded_error (gave up after 4 attempts)")
        return await self.inner.turn(inp)


async def ask(person, ws, to, text, title="Q", topic="new", conversation="general", **kw):
    sent = await person.send(workspace=ws, conversation=conversation, topic=topic, title=title, type="request",
                             to=[to], text=text, **kw)
    assert sent["op"] == "sent", sent
    return sent["message"]


async def asked_lead_directly(server, alice):
    """alice asks lead in their direct conversation; (her request, the one response to it, once there)."""
    q = await ask(alice, server.ws, "lead", "What is a persona?", conversation="dm:lead")

    async def answered():
        msgs = await history(alice, server.ws, q["topic"], conversation=q["conversation"])
        return responses(msgs, q["id"])

    (final,) = await until(answered)
    return q, final


def responses(msgs, request_id):
    return [m for m in msgs if m["type"] == "response" and m["in_reply_to"] == request_id]


async def test_lost_reply_is_retried_with_the_same_client_id_and_stored_once(server):
    server.agent("researcher")
    b = await server.run(Bridge(server.config("researcher")))
    real_send, dropped = b.client.send, []

    async def send_then_drop(**fields):
        reply = await real_send(**fields)
        if fields.get("type") == "response" and not dropped:
            dropped.append(fields["client_id"])
            await b.client._ws.close()  # the answer is stored, but we never hear so
            raise ConnectionError("connection lost")
        return reply

    b.client.send = send_then_drop
    alice = await server.person("alice")
    q = await ask(alice, server.ws, "researcher", "What is a topic?")
    await until(lambda: b.stats["acked"] >= 1)
    msgs = await history(alice, server.ws, q["topic"])
    assert len(responses(msgs, q["id"])) == 1
    assert b.stats["duplicates"] == 1 and dropped == [f"{b.state.data['done_ids'][0]}:reply"]
    assert b.client.reconnects >= 1


async def test_crash_before_ack_then_restart_replays_from_the_journal(server):
    server.agent("researcher")
    first = Counting(BuiltinBackend("researcher"))
    b1 = Bridge(server.config("researcher"), first)
    crashed = []

    async def crash_on_ack(did):
        crashed.append(did)
        raise RuntimeError("the process died here")

    b1._ack = crash_on_ack
    await server.run(b1)
    alice = await server.person("alice")
    q = await ask(alice, server.ws, "researcher", "How do credits work?")
    await until(lambda: crashed)
    assert first.calls == 2  # a search_corpus round, then the answer
    await b1.stop()

    second = Counting(BuiltinBackend("researcher"))
    b2 = await server.run(Bridge(server.config("researcher"), second))
    await until(lambda: b2.stats["acked"] >= 1)
    assert second.calls == 0  # the journal had the turn: the model is not asked again
    msgs = await history(alice, server.ws, q["topic"])
    assert len(responses(msgs, q["id"])) == 1
    assert not b2.state.data["journal"]


async def test_failed_turn_is_surfaced_then_retried(server):
    server.agent("researcher")
    backend = Counting(BuiltinBackend("researcher"), fail=1)
    cfg = server.config("researcher", retry_failed_after=0.2)
    b = await server.run(Bridge(cfg, backend))
    alice = await server.person("alice")
    q = await ask(alice, server.ws, "researcher", "What are wakes?")

    async def answered():
        return responses(await history(alice, server.ws, q["topic"]), q["id"])

    (answer,) = await until(answered)
    msgs = await history(alice, server.ws, q["topic"])
    informs = [m for m in msgs if m["type"] == "inform" and m["author"] == answer["author"]]
    assert len(informs) == 1 and "could not answer" in informs[0]["text"] and "529" in informs[0]["text"]
    assert b.stats["failed_turns"] == 1 and b.stats["retried_turns"] == 1
    await until(lambda: q["id"] not in b.state.owed)  # once the bridge has read its `sent` (history may show it first)


async def test_nudge_gets_the_owed_answer(server):
    server.agent("researcher")
    backend = Counting(BuiltinBackend("researcher"), fail=1)
    b = await server.run(Bridge(server.config("researcher", on_failure="silent", failed_retries=0), backend))
    alice = await server.person("alice")
    q = await ask(alice, server.ws, "researcher", "Tell me about loops", state="waiting", waiting_for=["researcher"])
    await until(lambda: b.stats["failed_turns"] == 1 and b.stats["acked"] == 1)
    assert not responses(await history(alice, server.ws, q["topic"]), q["id"])
    server.advance(11 * 60)  # alice waits; the researcher stays silent: system.ygg nudges it

    async def answered():
        return responses(await history(alice, server.ws, q["topic"]), q["id"])

    (answer,) = await until(answered)
    msgs = await history(alice, server.ws, q["topic"])
    assert any(m.get("notice") == "nudge" for m in msgs)
    assert "Loops" in answer["text"] and answer["state"] == "done"


async def test_reviewer_asks_a_person_and_answers_after_they_decide(server):
    server.agent("reviewer")
    b = await server.run(Bridge(server.config("reviewer")))
    alice = await server.person("alice")
    q = await ask(alice, server.ws, "reviewer", "Please review: deploy the new gateway to production tonight.")

    async def asked_alice():
        msgs = await history(alice, server.ws, q["topic"])
        return next((m for m in msgs if m["type"] == "request" and m["state"] == "needs_human"), None)

    question = await until(asked_alice)
    assert question["to"] == [alice.me["id"]] and "approve" in question["text"]
    t = await topic_status(alice, server.ws, q["topic"])
    assert t["status"] == "paused" and t["pause"] == "needs_human"

    reply = await alice.send(workspace=server.ws, conversation="general", topic=q["topic"], type="response",
                             in_reply_to=question["id"], text="Yes, go ahead.")
    assert reply["op"] == "sent"

    async def verdict():
        return responses(await history(alice, server.ws, q["topic"]), q["id"])

    (v,) = await until(verdict)
    assert v["text"].startswith("Approved") and v["state"] == "done"
    done = await alice.send(workspace=server.ws, conversation="general", topic=q["topic"], type="inform",
                            state="done", text="Thanks.")
    assert done["op"] == "sent"
    assert (await topic_status(alice, server.ws, q["topic"]))["status"] == "closed"


async def test_eager_agent_stops_when_out_of_credits_and_resends_after_funding(server):
    eager_id = server.agent("eager", fund=3)
    b = await server.run(Bridge(server.config("eager")))
    alice = await server.person("alice")
    q = await ask(alice, server.ws, "eager", "Tell me everything about credits and topics")
    await until(lambda: b.state.broke)
    msgs = await history(alice, server.ws, q["topic"])
    assert not responses(msgs, q["id"])  # refused: nothing stored
    t = await topic_status(alice, server.ws, q["topic"])
    assert t["status"] == "paused" and t["pause"] == "credits"
    calls_before = b.stats["refused:credits_exhausted"]

    # While broke, another request is only journaled: no turn runs, nothing is sent.
    q2 = await ask(alice, server.ws, "eager", "And what about states?", title="Q2")
    await until(lambda: b.stats["deferred"] >= 2)
    assert b.stats["refused:credits_exhausted"] == calls_before

    funded = await alice.call("fund", workspace=server.ws, agent="eager", amount=100)
    assert funded["op"] == "funded"

    async def both_answered():
        a = responses(await history(alice, server.ws, q["topic"]), q["id"])
        b_ = responses(await history(alice, server.ws, q2["topic"]), q2["id"])
        return a and b_ and (a, b_)

    (a1,), (a2,) = await until(both_answered)
    assert a1["author"] == eager_id and a1["cost"] >= 2 and not b.state.broke
    msgs = await history(alice, server.ws, q["topic"])
    statuses = [m for m in msgs if m["author"] == eager_id and m["type"] == "inform"]
    assert [s["text"][:6] for s in statuses] == ["On it!", "Still "]  # each status once, even after the replay
    assert not b.state.deferred()


async def test_lead_delegates_a_direct_request_through_a_side_conversation(server):
    """Seed 003 §15: "For a task started inside a direct message, the back-and-forth is not allowed to spill
    into it": the built-in Lead, asked in its direct conversation with alice, writes one request to its team
    there; the server moves it into a side conversation, where the team answers; alice's topic gets each
    result (`side_result`) and then the Lead's answer, and the Lead closes the side topic."""
    server.agent("lead")
    team = {name: server.agent(name) for name in ("researcher", "reviewer")}
    await server.run(Bridge(server.config("lead", options={"team": ["researcher", "reviewer"]})))
    await server.run(Bridge(server.config("researcher")))
    await server.run(Bridge(server.config("reviewer")))
    alice = await server.person("alice")
    q, final = await asked_lead_directly(server, alice)
    assert final["conversation"] == q["conversation"] and "researcher" in final["text"] and "reviewer" in final["text"]
    dm = await history(alice, server.ws, q["topic"], conversation=q["conversation"])
    assert any(m["type"] == "inform" and "side conversation" in m["text"] for m in dm)  # told alice where it went
    results = [m for m in dm if m.get("notice") == "side_result"]
    assert len(results) == 2, dm
    assert not any(m["author"] in team.values() for m in dm), \
        "the team's back-and-forth stays out of the direct conversation"
    convs = (await alice.call("list_conversations", workspace=server.ws))["conversations"]
    (side,) = [c for c in convs if c["kind"] == "side"]
    topics = (await alice.call("list_topics", workspace=server.ws, conversation=side["id"]))["topics"]
    assert [t["status"] for t in topics] == ["closed"]  # the lead closed what it opened


class Delegating(Backend):
    """A model-like backend: asked something, it delegates to researcher with send_message in place, and
    answers the response it gets with plain text (no topic, no conversation: the bridge's defaults)."""

    name = "delegating"
    native_tools = True

    async def turn(self, inp: TurnInput) -> TurnOutput:
        ev = inp.event
        if ev["why"] == "request" and not inp.steps:
            return TurnOutput(tool_calls=[ToolCall(name="send_message", id="d", arguments={
                "to": ["researcher"], "type": "request", "text": "What is a persona? Quote the handbook."})])
        if ev["why"] == "response":
            return TurnOutput(text="Researcher says: " + ev["message"]["text"][:200])
        return TurnOutput(text=None)


async def test_the_bridge_answers_back_where_it_was_asked_after_a_side_task(server):
    """Seed 003 §15: "only the final result is sent back where it was asked for": an agent (any backend)
    delegates from a direct conversation; the server runs the task in a side conversation; when the answer
    wakes it there, the bridge sends its reply as the response to the person's request, in the direct
    conversation's topic, not into the side conversation."""
    server.agent("lead")
    server.agent("researcher")
    lead = Bridge(server.config("lead", tools=["send_message"]), backend=Delegating())
    await server.run(lead)
    await server.run(Bridge(server.config("researcher")))
    alice = await server.person("alice")
    q, final = await asked_lead_directly(server, alice)
    assert final["text"].startswith("Researcher says:") and final["conversation"] == q["conversation"]
    assert not lead.state.owed, "the person's request is answered"


async def test_supervisor_starts_bridges_one_at_a_time(server):
    names = ["a1", "a2", "a3"]
    for n in names:
        server.agent(n)
    events: list[tuple[str, str, float]] = []
    bridges = []
    for n in names:
        br = Bridge(server.config(n, personality="researcher"))
        real = br.connect

        async def connect(real=real, n=n):
            events.append(("start", n, time.monotonic()))
            await asyncio.sleep(0.05)
            await real()
            events.append(("connected", n, time.monotonic()))

        br.connect = connect
        bridges.append(br)
    sup = Supervisor(bridges, connect_timeout=5)
    await sup.start()
    try:
        assert sup.order == names
        assert [e[0] for e in events] == ["start", "connected"] * 3
        assert [e[1] for e in events] == ["a1", "a1", "a2", "a2", "a3", "a3"]
        online = (await (await server.person("alice")).call("presence", workspace=server.ws))["online"]
        assert all(online[b.me["id"]] for b in bridges)
    finally:
        await sup.stop()


async def test_revoked_key_stops_the_bridge_instead_of_spinning(server):
    server.agent("researcher")
    server.admin(admin.revoke_agent, "researcher")
    b = Bridge(server.config("researcher"))
    task = asyncio.create_task(b.run())
    done, _ = await asyncio.wait({task}, timeout=5)
    assert task in done and task.exception() is not None


class Titling(Backend):
    """Answers each wake by opening a new topic under the title a model made up: long, over two lines."""

    async def turn(self, inp: TurnInput) -> TurnOutput:
        return TurnOutput(text="Opened.", type="inform", topic="new", to=["@alice"],
                          title="Follow-up on the question\nabout topics, " + "and more " * 20)


async def test_a_models_long_title_is_clipped_to_one_line_within_the_servers_bound(server):
    """docs/protocol.md, "Names and titles": a topic's title is one line of at most 100 characters, else the send
    is a `bad_frame`. A model's title is not the bridge's to refuse: it goes out clipped to one line, in bounds."""
    from ygg_server.protocol.names import TITLE

    server.agent("researcher")
    await server.run(Bridge(server.config("researcher"), Titling()))
    alice = await server.person("alice")
    await ask(alice, server.ws, "researcher", "What is a topic?")

    async def opened():
        topics = (await alice.call("list_topics", workspace=server.ws))["topics"]
        return [t for t in topics if t["title"] != "Q"]

    (t,) = await until(opened)
    assert len(t["title"]) == TITLE and t["title"].startswith("Follow-up on the question about topics, and more")
    assert t["title"].endswith("…") and "\n" not in t["title"]


class HandingOver(Backend):
    """A model-like backend: asked something, it hands it over to researcher with the `handoff` tool, then answers
    with what came back."""

    name = "handing-over"
    native_tools = True

    async def turn(self, inp: TurnInput) -> TurnOutput:
        ev = inp.event
        if ev["why"] == "request" and not inp.steps:
            return TurnOutput(tool_calls=[ToolCall(name="handoff", id="h", arguments={
                "to": "researcher", "text": "This is a handbook question: what is a persona?"})])
        if ev["why"] == "response":
            return TurnOutput(text="From researcher: " + ev["message"]["text"][:200])
        return TurnOutput(text=None)


async def test_the_bridge_hands_off_to_one_colleague_with_its_handoff_tool(server):
    """Issue 20: "the bridge exposes handoff to its backends as a tool" (its directive says: "hand over (a request
    with handoff, to one colleague, saying what you need)"). docs/rules.md: a send with "handoff": true is a request
    to exactly one agent, stored with handoff: true."""
    from ygg_server.agents.tools import DEFAULT_TOOLS, select

    assert "handoff" in DEFAULT_TOOLS and select(["handoff"])[0].parameters["required"] == ["to", "text"]
    server.agent("lead")
    server.agent("researcher")
    lead = Bridge(server.config("lead", tools=["handoff"]), backend=HandingOver())
    await server.run(lead)
    await server.run(Bridge(server.config("researcher")))
    alice = await server.person("alice")
    q = await ask(alice, server.ws, "lead", "What is a persona?")

    async def answered():  # (as after a send_message in place: the lead's answer to what came back)
        msgs = await history(alice, server.ws, q["topic"])
        return msgs if any(m["text"].startswith("From researcher:") for m in msgs) else None

    msgs = await until(answered)
    (handed,) = [m for m in msgs if m.get("handoff")]
    assert handed["type"] == "request" and handed["topic"] == q["topic"]
    researcher = next(a["id"] for a in (await alice.call("list_agents", workspace=server.ws))["agents"]
                      if a["name"] == "researcher")
    assert handed["to"] == [researcher]
    (back,) = [m for m in msgs if m["author"] == researcher and m["type"] == "response"]
    assert back["in_reply_to"] == handed["id"]
    (final,) = [m for m in msgs if m["text"].startswith("From researcher:")]
    assert alice.me["id"] in final["to"]


class Carding(Backend):
    """Answers every request with a model's envelope carrying a result card (`card_json`)."""

    def __init__(self, card_json: str):
        self.card_json = card_json

    async def turn(self, inp: TurnInput) -> TurnOutput:
        from ygg_server.agents.backends.base import parse_envelope
        return parse_envelope('{"text": "Here it is.", "type": "response", "state": "done", "card": '
                              + self.card_json + '}')


async def test_a_models_card_is_posted_and_a_bad_one_does_not_lose_the_answer(server):
    """Seed 003 §11: an agent "posts a structured result and the app renders rich cards"; a card the server cannot
    lay out (`bad_card`) is dropped and the answer sent without it."""
    server.agent("researcher")
    good = '{"template": "job", "data": {"title": "Platform engineer", "company": "Ygg"}}'
    b = await server.run(Bridge(server.config("researcher"), Carding(good)))
    alice = await server.person("alice")
    q = await ask(alice, server.ws, "researcher", "Any jobs?")
    (answer,) = await until(lambda: _responses(alice, server.ws, q))
    assert answer["card"]["title"] == "Platform engineer" and answer["card"]["template"] == "job"
    b.backend.card_json = '{"template": "job", "data": {"company": "Ygg"}}'  # no title: refused bad_card
    q2 = await ask(alice, server.ws, "researcher", "Any more?")
    (answer2,) = await until(lambda: _responses(alice, server.ws, q2))
    assert answer2["text"] == "Here it is." and "card" not in answer2
    assert b.stats["refused:bad_card"] == 1


async def _responses(alice, ws, q):
    return responses(await history(alice, ws, q["topic"]), q["id"])
