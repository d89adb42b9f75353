"""End to end on loopback: bridge-run built-in agents and people take topics to closed."""

from __future__ import annotations

from ygg_server.agents.bridge import Bridge

from .conftest import history, topic_status, until


async def test_person_lead_and_researcher_take_a_topic_to_closed(server):
    server.agent("lead")
    server.agent("researcher")
    await server.run(Bridge(server.config("lead", options={"team": ["researcher"]})))
    await server.run(Bridge(server.config("researcher")))
    alice = await server.person("alice")

    sent = await alice.send(workspace=server.ws, conversation="general", topic="new", title="Credits?",
                            type="request", to=["lead"], text="How do credits work for agents?")
    assert sent["op"] == "sent", sent
    topic, request = sent["message"]["topic"], sent["message"]["id"]

    # The lead delegates to the researcher, the researcher answers from the handbook, the lead answers alice.
    async def answered():
        msgs = await history(alice, server.ws, topic)
        return next((m for m in msgs if m["type"] == "response" and m["in_reply_to"] == request), None)

    final = await until(answered)
    msgs = await history(alice, server.ws, topic)
    lead_id = next(m["author"] for m in msgs if m["id"] == final["id"])
    delegation = [m for m in msgs if m["author"] == lead_id and m["type"] == "request"]
    assert len(delegation) == 1 and delegation[0]["state"] == "waiting"
    research = [m for m in msgs if m["type"] == "response" and m["in_reply_to"] == delegation[0]["id"]]
    assert len(research) == 1 and research[0]["state"] == "done"
    assert "Credits" in research[0]["text"]  # quoted from the handbook's Credits section
    assert final["state"] == "done" and "researcher" in final["text"]
    # Each request was answered exactly once.
    assert sum(1 for m in msgs if m["in_reply_to"] == request and m["type"] == "response") == 1

    t = await topic_status(alice, server.ws, topic)
    assert t["status"] == "open"
    assert all(t["members"][p]["state"] == "done" for p in t["members"] if p != alice.me["id"])

    # Alice is done too: the topic closes.
    done = await alice.send(workspace=server.ws, conversation="general", topic=topic, type="inform",
                            state="done", text="Thanks, that is what I needed.")
    assert done["op"] == "sent", done
    t = await topic_status(alice, server.ws, topic)
    assert t["status"] == "closed", t

    # The bridges acked every wake: nothing is left offered to them.
    for b in server.bridges:
        assert b.stats["acked"] >= b.stats["wakes"] > 0
        assert not [e for e in b.state.data["journal"].values()], b.state.data["journal"]
