"""Assignment scoring on loopback with the embedded writer (seed 003 §14; docs/rules.md, "Assignment scoring")."""

import pytest

from .test_party import setup_party

pytestmark = pytest.mark.backends("sqlite", "postgres")


async def test_a_request_to_a_capability_goes_to_the_best_scoring_agent(server):
    """Seed 003 §14: "The highest score gets the task." Profiles set with set_profile, weights with set_setting
    (assign.weights), presence from the gateway; the message carries the breakdown, and explain_assignment shows
    the workspace's people the same ranking now."""
    ws, cid, alice, keys = await setup_party(server)
    for name, title in (("pike", "Translator"), ("nova", "Translator")):
        owner_side = await alice.request("set_profile", agent=name, title=title, capabilities=["translation"])
        assert owner_side["op"] == "set_profile", owner_side
    nova = await server.client(api_key=keys["nova"])  # nova is online, pike is not
    await nova.request("ping")  # answered once nova's connection is attached (present)
    sent = await alice.send(workspace=ws, conversation=cid, topic="new", title="Job", type="request",
                            to=["capability:translation"], text="translate this")
    assert sent["op"] == "sent", sent
    a = sent["message"]["assignment"]
    assert a["chosen"] == sent["message"]["to"][0] == [s["agent"] for s in a["scores"]][0]
    assert {s["name"] for s in a["scores"]} == {"pike", "nova"} and a["scores"][0]["name"] == "nova"
    online = {s["name"]: p["value"] for s in a["scores"] for p in s["parts"] if p["name"] == "online"}
    assert online == {"nova": 1.0, "pike": 0.0}
    d = await nova.next_delivery(timeout=5)
    assert d["wake"] and d["message"]["assignment"]["chosen"] == a["chosen"]
    # weights are the workspace's: with online weighed 0 and load counting, pike (no wake held) wins now
    r = await alice.request("set_setting", workspace=ws, key="assign.weights", value={"online": 0, "load": 50})
    assert r["op"] == "set_setting", r
    bad = await alice.request("set_setting", workspace=ws, key="assign.weights", value={"luck": 1})
    assert bad["op"] == "refused" and bad["reason"] == "bad_amount", bad
    ex = await alice.request("explain_assignment", workspace=ws, capability="capability:translation", text="translate")
    assert ex["op"] == "explain_assignment" and ex["assignment"]["scores"][0]["name"] == "pike", ex
    assert ex["weights"]["online"] == 0
    nobody = await alice.send(workspace=ws, conversation=cid, topic="new", title="Stars", type="request",
                              to=["capability:astrology"], text="my horoscope")
    assert nobody["op"] == "refused" and nobody["reason"] == "no_eligible_agent", nobody
    ex = await alice.request("explain_assignment", workspace=ws, capability="astrology")
    assert ex["op"] == "refused" and ex["reason"] == "no_eligible_agent", ex
    ex = await nova.request("explain_assignment", workspace=ws, capability="translation")
    assert ex["op"] == "refused" and ex["reason"] == "permission_denied", ex


async def test_assignment_skips_agents_that_do_not_take_the_senders_messages(server):
    """Seed 002: "Takes messages from: the agents that may send to it" and "Can message: the agents it may
    send to. Empty means anyone in the workspace." An assigned request goes to the best agent that may get
    it; explain_assignment names who was left out and why; with nobody left, no_eligible_agent says why."""
    ws, cid, alice, keys = await setup_party(server)
    for name in ("pike", "nova"):
        r = await alice.request("set_profile", agent=name, title="Translator", capabilities=["translation"])
        assert r["op"] == "set_profile", r
    nova = await server.client(api_key=keys["nova"])  # nova is online and would win
    await nova.request("ping")
    r = await alice.request("set_permissions", workspace=ws, agent="nova", takes_from=["lead"])
    assert r["op"] == "set_permissions", r
    sent = await alice.send(workspace=ws, conversation=cid, topic="new", title="Job", type="request",
                            to=["capability:translation"], text="translate this")
    assert sent["op"] == "sent", sent
    a = sent["message"]["assignment"]
    assert [s["name"] for s in a["scores"]] == ["pike"] and sent["message"]["to"] == [a["chosen"]]
    assert [(x["name"], x["reason"]) for x in a["left_out"]] == [("nova", "takes_from")]
    ex = await alice.request("explain_assignment", workspace=ws, capability="translation")
    assert ex["op"] == "explain_assignment" and ex["assignment"]["chosen"] == a["chosen"], ex
    assert ex["assignment"]["left_out"][0]["detail"] == "nova does not take messages from you"
    ex = await alice.request("explain_assignment", workspace=ws, capability="translation", sender="lead")
    assert ex["assignment"]["scores"][0]["name"] == "nova" and ex["assignment"]["left_out"] == [], ex
    r = await alice.request("set_permissions", workspace=ws, agent="pike", takes_from=["lead"])
    assert r["op"] == "set_permissions", r
    nobody = await alice.send(workspace=ws, conversation=cid, topic="new", title="Job 2", type="request",
                              to=["capability:translation"], text="translate this")
    assert nobody["op"] == "refused" and nobody["reason"] == "no_eligible_agent", nobody
    assert "pike does not take messages from you" in nobody["detail"] and "nova" in nobody["detail"]
    ex = await alice.request("explain_assignment", workspace=ws, capability="translation")
    assert ex["op"] == "refused" and {x["name"] for x in ex["left_out"]} == {"pike", "nova"}, ex
