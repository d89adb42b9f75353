"""A three-agent party on loopback (issue 4; seed 004, "Running a Party"; docs/rules.md, "Parties")."""

import asyncio
import time

import pytest

from ygg_server.ops import admin

pytestmark = pytest.mark.backends("sqlite", "process", "postgres")


async def setup_party(server):
    server.admin(admin.add_person, "alice", "pw-" + "x" * 8)
    ws = server.admin(admin.add_workspace, "team", "alice")["id"]
    keys = {}
    for name in ("lead", "pike", "nova"):
        keys[name] = server.admin(admin.add_agent, name, "alice")["api_key"]
        server.admin(admin.fund, name, 1000)
    alice = await server.person("alice")
    first = await alice.send(workspace=ws, conversation="dm:lead", topic="new", title="Hi", type="inform", to=["lead"],
                             text="hello")
    cid = first["message"]["conversation"]
    for name in ("pike", "nova"):
        r = await alice.request("add_participant", workspace=ws, conversation=cid, participant=name)
        assert r["op"] == "add_participant" and r["changed"] and len(r["members"]) == (4 if name == "nova" else 3), r
    again = await alice.request("add_participant", workspace=ws, conversation=cid, participant="nova")
    assert again["op"] == "add_participant" and again["changed"] is False  # already there: nothing happens
    r = await alice.request("set_lead", workspace=ws, conversation=cid, lead="lead")
    assert r["lead"] is not None, r
    return ws, cid, alice, keys


async def test_lead_delegates_to_two_who_work_at_once_and_is_woken_once(server):
    """Seed 004: "the Lead can also split a job between the others with delegate, who then work on their parts at
    the same time before the Lead writes the reply"."""
    ws, cid, alice, keys = await setup_party(server)
    lead = await server.client(api_key=keys["lead"])
    helpers = {n: await server.client(api_key=keys[n]) for n in ("pike", "nova")}
    spans: dict[str, tuple[float, float]] = {}
    lead_wakes: list[dict] = []

    async def helper(name, client):
        while True:
            d = await client.next_delivery(timeout=10)
            await client.ack([d["id"]])
            if not d["wake"]:
                continue
            m = d["message"]
            start = time.monotonic()
            await asyncio.sleep(0.4)  # the work
            spans[name] = (start, time.monotonic())
            r = await client.send(workspace=ws, conversation=cid, topic=m["topic"], type="response",
                                  in_reply_to=m["id"], text=f"{name}'s part")
            assert r["op"] == "sent", r
            return

    async def run_lead():
        while True:
            d = await lead.next_delivery(timeout=10)
            await lead.ack([d["id"]])
            if not d["wake"]:
                continue
            lead_wakes.append(d)
            m = d["message"]
            if m["author"].startswith("human."):  # the person's job: split it
                r = await lead.send(workspace=ws, conversation=cid, topic=m["topic"], type="request",
                                    to=["pike", "nova"], text="pike: research; nova: translate", state="waiting")
                assert r["op"] == "sent" and sum(x["wake"] for x in r["deliveries"]) == 2, r  # both at once
                continue
            r = await lead.send(workspace=ws, conversation=cid, topic=m["topic"], type="inform", to=["@alice"],
                                text="both parts are in: " + ", ".join(
                                    [c["text"] for c in d["context"] if c["author"] != m["author"]] + [m["text"]]))
            assert r["op"] == "sent", r
            return r

    tasks = [asyncio.create_task(helper(n, c)) for n, c in helpers.items()]
    lead_task = asyncio.create_task(run_lead())
    sent = await alice.send(workspace=ws, conversation=cid, topic="new", title="Job", type="request",
                            text="research this and translate it")
    assert sent["op"] == "sent" and sent["message"]["to"] != [] , sent
    woke = {x["to"] for x in sent["deliveries"] if x["wake"]}
    assert len(woke) == 1  # the Lead alone; the others get it as context
    final = await asyncio.wait_for(lead_task, 15)
    await asyncio.gather(*tasks)
    # concurrent: each helper started before the other finished
    (a0, a1), (b0, b1) = spans["pike"], spans["nova"]
    assert a0 < b1 and b0 < a1, spans
    # the Lead was woken once by the person and once when the last answer came in, that wake carrying the first
    assert len(lead_wakes) == 2, [w["message"]["text"] for w in lead_wakes]
    last = lead_wakes[1]
    assert last["message"]["type"] == "response"
    assert "wake_coalesced" in last["context_reasons"]
    assert "pike's part" in final["message"]["text"] and "nova's part" in final["message"]["text"]


async def test_removing_the_last_participant_is_refused_and_hops_are_a_setting(server):
    """Seed 004: "You can remove a participant at any time, except the last one" """
    ws, cid, alice, keys = await setup_party(server)
    for name in ("pike", "nova"):
        r = await alice.request("remove_participant", workspace=ws, conversation=cid, participant=name)
        assert r["op"] == "remove_participant", r
    r = await alice.request("remove_participant", workspace=ws, conversation=cid, participant="lead")
    assert r["op"] == "refused" and r["reason"] == "last_participant", r
    r = await alice.request("set_setting", workspace=ws, key="party.maxHops", value=2)
    assert r["op"] == "set_setting" and r["value"] == 2, r
    r = await alice.request("set_setting", workspace=ws, key="party.maxHops", value=-1)
    assert r["op"] == "refused", r



async def test_a_request_to_a_capability_is_assigned_and_explained_on_any_store(server):
    """Seed 003 §14: "The highest score gets the task." (On either store: declarations and weights; presence,
    load, trust and response time are scored by the embedded writer, tests/net/test_assign.py.)"""
    ws, cid, alice, keys = await setup_party(server)
    r = await alice.request("set_profile", agent="pike", title="Translator", capabilities=["translation"])
    assert r["op"] == "set_profile", r
    sent = await alice.send(workspace=ws, conversation=cid, topic="new", title="Job", type="request",
                            to=["capability:translation"], text="translate this")
    assert sent["op"] == "sent" and sent["message"]["assignment"]["chosen"] == sent["message"]["to"][0], sent
    assert [s["name"] for s in sent["message"]["assignment"]["scores"]] == ["pike"]
    ex = await alice.request("explain_assignment", workspace=ws, capability="translation", text="translate")
    assert ex["op"] == "explain_assignment" and ex["assignment"]["chosen"] == sent["message"]["to"][0], ex
    nobody = await alice.send(workspace=ws, conversation=cid, topic="new", title="Stars", type="request",
                              to=["capability:astrology"], text="my horoscope")
    assert nobody["op"] == "refused" and nobody["reason"] == "no_eligible_agent", nobody


async def _lead_and_pike(server):
    """alice's workspace with her agents lead and pike (1,000 credits each), all three connected."""
    server.admin(admin.add_person, "alice", "pw-" + "x" * 8)
    ws = server.admin(admin.add_workspace, "team", "alice")["id"]
    keys = {n: server.admin(admin.add_agent, n, "alice")["api_key"] for n in ("lead", "pike")}
    for n in keys:
        server.admin(admin.fund, n, 1000)
    alice = await server.person("alice")
    return ws, alice, await server.client(api_key=keys["lead"]), await server.client(api_key=keys["pike"])


async def next_wake(client):
    """The client's next wake, every delivery before it acked."""
    while True:
        d = await client.next_delivery(timeout=5)
        await client.ack([d["id"]])
        if d["wake"]:
            return d


async def test_a_task_delegated_from_a_direct_conversation_runs_on_the_side(server):
    """Seed 003 §15: "only the final result is sent back where it was asked for" (a side conversation, linked to
    its origin, holds the back-and-forth)."""
    ws, alice, lead, pike = await _lead_and_pike(server)
    asked = await alice.send(workspace=ws, conversation="dm:lead", topic="new", title="Numbers", type="request",
                             to=["lead"], text="check the numbers")
    cid, tid = asked["message"]["conversation"], asked["message"]["topic"]
    deleg = await lead.send(workspace=ws, conversation=cid, topic=tid, type="request", to=["pike"], state="waiting",
                            text="pike, recompute table 2")
    assert deleg["op"] == "sent" and deleg["message"]["conversation"] != cid, deleg
    side = deleg["message"]["conversation"]
    d = await next_wake(pike)
    assert d["message"]["conversation"] == side
    r = await pike.send(workspace=ws, conversation=side, topic=d["message"]["topic"], type="response",
                        in_reply_to=d["message"]["id"], state="done", text="Table 2 sums to 42.")
    assert r["op"] == "sent", r
    convs = {c["id"]: c for c in (await alice.request("list_conversations", workspace=ws))["conversations"]}
    assert convs[side]["kind"] == "side" and convs[side]["origin"] == cid and convs[side]["origin_topic"] == tid
    assert sorted(convs[cid]["members"]) == sorted(asked["message"]["to"] + [asked["message"]["author"]])
    h = (await alice.request("history", workspace=ws, conversation=cid))["messages"]
    assert [m.get("notice") for m in h][0] == "side_result" and "Table 2 sums to 42." in h[0]["text"], h
    assert not any("recompute" in m["text"] for m in h)  # the delegation itself stayed on the side


async def test_a_task_delegated_in_a_new_topic_comes_back_to_the_conversation_not_to_a_topic_of_the_side(server):
    """Seed 003 §15: "only the final result is sent back where it was asked for". A delegation that opens a new
    topic in the direct conversation has no origin topic there: its result comes back to the conversation itself
    (no topic), never under the side conversation's topic id, which is no topic of the origin (a person answering
    there was refused unknown_topic)."""
    ws, alice, lead, pike = await _lead_and_pike(server)
    hello = await alice.send(workspace=ws, conversation="dm:lead", topic="new", title="Hi", type="inform",
                             to=["lead"], text="hello")
    cid = hello["message"]["conversation"]
    deleg = await lead.send(workspace=ws, conversation=cid, topic="new", title="Fresh", type="request", to=["pike"],
                            text="pike, recompute table 2")
    assert deleg["op"] == "sent" and deleg["message"]["conversation"] != cid, deleg
    d = await next_wake(pike)
    r = await pike.send(workspace=ws, conversation=d["message"]["conversation"], topic=d["message"]["topic"],
                        type="response", in_reply_to=d["message"]["id"], state="done", text="Table 2 sums to 42.")
    assert r["op"] == "sent", r
    h = (await alice.request("history", workspace=ws, conversation=cid))["messages"]
    back = [m for m in h if m.get("notice") == "side_result"]
    assert len(back) == 1 and "Table 2 sums to 42." in back[0]["text"], h
    topics = {t["id"] for t in (await alice.call("list_topics", workspace=ws))["topics"] if t["conversation"] == cid}
    assert back[0]["topic"] is None or back[0]["topic"] in topics, (back[0]["topic"], topics)
