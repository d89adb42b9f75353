"""What agents are shown of a party, on loopback with the embedded writer (seed 004; docs/rules.md, "What agents see")."""

import pytest

from .test_party import next_wake as _next_wake, setup_party

pytestmark = pytest.mark.backends("sqlite", "postgres")


async def test_agents_are_told_the_roster_and_names_and_lose_removed_authors(server):
    """Seed 004: "Each NPC is told who else is in the Party — names, job titles and a short line from each description"

    Seed 004: "In a Party, replies carry their author's name into the history the others see, so an NPC can tell
    three colleagues apart."

    Seed 004: "Those keep their text but stop carrying an author into what the remaining NPCs see" """
    ws, cid, alice, keys = await setup_party(server)
    for name, title in (("lead", "Lead"), ("pike", "Engineer"), ("nova", "Researcher")):
        r = await alice.request("set_profile", agent=name, title=title, description=f"{name} does things.\nMore.")
        assert r["op"] == "set_profile", r
    pike, nova, lead = [await server.client(api_key=keys[n]) for n in ("pike", "nova", "lead")]
    sent = await alice.send(workspace=ws, conversation=cid, topic="new", title="Script", type="request",
                            text="@nova can you check whether that script still runs?")
    assert sent["op"] == "sent", sent
    d = await _next_wake(nova)
    assert [(e["name"], e["title"], e["description"], e["lead"]) for e in d["roster"]] == [
        ("lead", "Lead", "lead does things.", True), ("pike", "Engineer", "pike does things.", False)]
    assert "author_name" not in d["message"]  # a person's message: people are shown as they are
    r = await nova.send(workspace=ws, conversation=cid, topic=d["message"]["topic"], type="request", to=["pike"],
                        handoff=True, text="pike, you run scripts: please check it")
    assert r["op"] == "sent" and r["message"]["handoff"] is True, r
    d = await _next_wake(pike)
    assert d["message"]["author_name"] == "nova" and d["message"]["handoff"] is True
    assert [e["name"] for e in d["roster"]] == ["lead", "nova"]
    # nova is removed: its message keeps its text, and loses its author in what the remaining agents see
    r = await alice.request("remove_participant", workspace=ws, conversation=cid, participant="nova")
    assert r["op"] == "remove_participant" and r["changed"], r
    h = await pike.request("history", workspace=ws, conversation=cid)
    mine = {m["text"]: m for m in h["messages"]}
    gone = mine["pike, you run scripts: please check it"]
    assert gone["author"] is None and gone["author_removed"] is True and "author_name" not in gone
    person = {m["text"]: m for m in (await alice.request("history", workspace=ws, conversation=cid))["messages"]}
    assert person["pike, you run scripts: please check it"]["author"] == r_author(server, "nova")
    assert "author_removed" not in person["pike, you run scripts: please check it"]
    # search results are messages handed to an agent too (docs/rules.md: "every message an agent is handed")
    found = (await pike.request("search_messages", workspace=ws, query="you run scripts"))["messages"]
    assert [(m["author"], m.get("author_removed")) for m in found] == [(None, True)], found
    found = (await alice.request("search_messages", workspace=ws, query="you run scripts"))["messages"]
    assert [m["author"] for m in found] == [r_author(server, "nova")] and "author_removed" not in found[0]
    r = await pike.send(workspace=ws, conversation=cid, topic=d["message"]["topic"], type="request", to=["lead"],
                        text="it runs")
    assert r["op"] == "sent", r
    w = await _next_wake(lead)
    assert [e["name"] for e in w["roster"]] == ["pike"] and w["message"]["author_name"] == "pike"
    h = await lead.request("history", workspace=ws, conversation=cid)
    assert {m["text"]: m["author"] for m in h["messages"]}["pike, you run scripts: please check it"] is None


def r_author(server, name):
    return server.conn.execute("SELECT id FROM agents WHERE name = ?", (name,)).fetchone()[0]


async def test_a_solo_conversation_is_left_as_it_was(server):
    """Seed 004: "Solo Conversations are left exactly as they were." """
    ws, cid, alice, keys = await setup_party(server)
    pike = await server.client(api_key=keys["pike"])
    first = await alice.send(workspace=ws, conversation="dm:pike", topic="new", title="Solo", type="request",
                             to=["pike"], text="just you")
    assert first["op"] == "sent", first
    d = await _next_wake(pike)
    assert d["roster"] == [] and "author_name" not in d["message"]
    r = await pike.send(workspace=ws, conversation=first["message"]["conversation"], topic=d["message"]["topic"], type="response",
                        in_reply_to=d["message"]["id"], text="done")
    assert r["op"] == "sent", r
    h = await pike.request("history", workspace=ws, conversation=first["message"]["conversation"])
    assert len(h["messages"]) == 2
    assert all("author_name" not in m and "author_removed" not in m for m in h["messages"]), h
    # the roster is sent once per connection and conversation, and again when the party changes
    solo = first["message"]["conversation"]
    again = await alice.send(workspace=ws, conversation=solo, topic="new", title="Again", type="request",
                             to=["pike"], text="once more")
    assert again["op"] == "sent", again
    assert "roster" not in await _next_wake(pike)
    r = await alice.request("add_participant", workspace=ws, conversation=solo, participant="nova")
    assert r["op"] == "add_participant" and r["changed"], r
    third = await alice.send(workspace=ws, conversation=solo, topic="new", title="Third", type="request",
                             to=["pike"], text="and nova is here")
    assert third["op"] == "sent", third
    d = await _next_wake(pike)
    assert [e["name"] for e in d["roster"]] == ["nova"], d
    assert all("author_name" not in m and "author_removed" not in m for m in h["messages"]), h
