"""Result cards (issue 21; seed 003 §11-13; docs/protocol.md, "Result cards") over real websockets, on both stores:
a card stamped into its message by the one writer; its buttons pressed in place or handed back as a wake."""

from __future__ import annotations


import pytest

from ygg_server.core import card_templates

from .conftest import acked_until, drain_acked

pytestmark = pytest.mark.backends("sqlite", "postgres")

HOTEL = {"template": "hotel", "data": {"name": "Hotel Adlon", "price": 320, "rating": 4.6, "amenities": ["spa"]}}
DRAFT = {"template": "email", "data": {"subject": "Numbers", "to": "cfo@example.com", "body": "Attached.",
                                       "draft": True}}


async def _history(client, ws: str, conversation: str, topic: str) -> list[dict]:
    return (await client.call("history", workspace=ws, conversation=conversation, topic=topic))["messages"]


@pytest.mark.backends("sqlite", "process", "postgres")  # (the press command crosses a process once)
async def test_a_button_press_reaches_the_posting_agent_as_a_wake(team):
    """Seed 003 §13: "other buttons hand the click back to the agent as a signal": who pressed, which action,
    which card, as a request through the one send pipeline (paid, bounded, delivered as any message)."""
    alice = await team.person("alice")
    researcher = await team.client(api_key=team.keys["researcher"])
    sent = await researcher.send(workspace=team.ws, topic="new", title="Berlin hotels", to=["@alice"],
                                 type="inform", text="One option", card=HOTEL)
    assert sent["op"] == "sent", sent
    card, mid = sent["message"]["card"], sent["message"]["id"]
    assert card["title"] == "Hotel Adlon" and card["price"] == "€320 / night" and card["chips"] == ["spa"]
    assert [b["action"] for b in card["buttons"]] == ["book", "details"]
    got = await acked_until(alice, lambda d: d["message"]["id"] == mid)
    assert got["message"]["card"] == card, "delivered with its message"

    r = await alice.request("press_card", workspace=team.ws, message=mid, action="book",
                            topic=sent["message"]["topic"])
    assert r["op"] == "press_card" and r["in_place"] is False, r
    req = r["message"]
    assert req["type"] == "request" and req["to"] == [researcher.me["id"]] and req["topic"] == sent["message"]["topic"]
    assert req["press"] == {"message": mid, "action": "book", "label": "Book", "card": "Hotel Adlon",
                            "template": "hotel"}
    woke = await acked_until(researcher, lambda d: d["message"]["id"] == req["id"])
    assert woke["wake"] is True and woke["message"]["author"] == alice.me["id"]
    assert woke["message"]["press"]["action"] == "book"

    bad = await alice.request("press_card", workspace=team.ws, message=mid, action="fly")
    assert bad["op"] == "refused" and bad["reason"] == "unknown_action", bad
    own = await researcher.request("press_card", workspace=team.ws, message=mid, action="book")
    assert own["op"] == "refused" and own["reason"] == "unknown_action", own


async def test_an_email_draft_is_sent_in_place_without_a_new_message(team):
    """Seed 003 §13: "an email-draft card has Send and Save draft actions" that act "on a result in place": the
    card's state changes for everyone reading it; no message is added, the agent is not woken."""
    alice, bob = await team.person("alice"), await team.person("bob")
    researcher = await team.client(api_key=team.keys["researcher"])
    sent = await researcher.send(workspace=team.ws, topic="new", title="Mail", to=["@alice", "@bob"],
                                 type="inform", text="Draft for you", card=DRAFT)
    assert sent["op"] == "sent", sent
    mid, topic, conv = sent["message"]["id"], sent["message"]["topic"], sent["message"]["conversation"]
    assert sent["message"]["card"]["state"] == "draft"
    await acked_until(bob, lambda d: d["message"]["id"] == mid)
    before = await _history(alice, team.ws, conv, topic)

    saved = await alice.request("press_card", workspace=team.ws, message=mid, action="save_draft")
    assert saved["op"] == "press_card" and saved["in_place"] is True, saved
    assert saved["message"]["id"] == mid and saved["message"]["card"]["state"] == "saved"
    told = await acked_until(bob, lambda d: d["message"]["id"] == mid)
    assert told["wake"] is False and told["reason"] == "card_updated" and told["message"]["card"]["state"] == "saved"
    done = await bob.call("press_card", workspace=team.ws, message=mid, action="send")
    assert done["message"]["card"]["state"] == "sent" and done["message"]["card"]["state_by"] == bob.me["id"]
    after = await _history(alice, team.ws, conv, topic)
    assert [m["id"] for m in after] == [m["id"] for m in before], "no message added"
    assert next(m for m in after if m["id"] == mid)["card"]["state"] == "sent", "visible to everyone reading"
    assert "version" not in next(m for m in after if m["id"] == mid), "not an edit of its text"
    again = await alice.request("press_card", workspace=team.ws, message=mid, action="send")
    assert again["op"] == "refused" and again["reason"] == "card_done", again
    assert all(not d["wake"] for d in await drain_acked(researcher)), "the author is not woken by an in-place act"


async def test_a_card_is_stamped_when_saved_and_renders_after_its_template_changes(team, monkeypatch, backend):
    """Seed 003 §12: "the layout is resolved and stamped into the message at the moment it is saved. So the same
    card looks the same on every client, and a card already sent keeps rendering even if the template changes
    later." """
    alice = await team.person("alice")
    researcher = await team.client(api_key=team.keys["researcher"])
    sent = await researcher.send(workspace=team.ws, topic="new", title="Stay", to=["@alice"], type="inform",
                                 text="", card=HOTEL)
    m = sent["message"]
    monkeypatch.delitem(card_templates.LIBRARY, "hotel")  # the template is removed (this process's writer)
    later = await _history(alice, team.ws, m["conversation"], m["topic"])
    assert next(x for x in later if x["id"] == m["id"])["card"] == m["card"], "as stamped, not resolved again"
    fresh = await researcher.send(workspace=team.ws, topic=m["topic"], to=["@alice"], type="inform", text="",
                                  card=HOTEL)
    assert fresh["message"]["card"]["fallback"] is True and fresh["message"]["card"]["title"] == "Hotel Adlon", \
        "a removed template falls back to its kind's default, never raw data"


async def test_bad_card_data_is_refused_naming_the_field(team):
    """Docs/protocol.md, "Result cards": a card the template cannot lay out is refused (`bad_card`), naming the
    field; nothing is stored or paid."""
    researcher = await team.client(api_key=team.keys["researcher"])
    r = await researcher.request("send", workspace=team.ws, topic="new", title="Q", to=["@alice"], text="x",
                                 card={"template": "stock", "data": {"symbol": "ACME", "price": "lots"}})
    assert r["op"] == "refused" and r["reason"] == "bad_card" and r["detail"].startswith("card.data.price"), r


async def test_a_card_is_pressed_only_by_those_who_may_read_it(team):
    """Seed 003 §10 (a card is a message's): a press on a card in a conversation one may not read is answered as a
    message that does not exist."""
    alice, bob = await team.person("alice"), await team.person("bob")
    researcher = await team.client(api_key=team.keys["researcher"])
    sent = await researcher.send(workspace=team.ws, conversation="dm:@alice", topic="new", title="Private",
                                 to=["@alice"], type="inform", text="", card=HOTEL)
    assert sent["op"] == "sent", sent
    r = await bob.request("press_card", workspace=team.ws, message=sent["message"]["id"], action="book")
    assert r["op"] == "refused" and r["reason"] == "unknown_message", r
    ok = await alice.request("press_card", workspace=team.ws, message=sent["message"]["id"], action="details")
    assert ok["op"] == "press_card" and ok["message"]["conversation"] == sent["message"]["conversation"], ok


async def test_an_agents_press_is_paid_like_any_message_it_sends(team):
    """Seed 000: "Every message an agent sends costs credits": a press handed back to the card's author is a message
    of the presser's, charged to its wallet (a person's press is a person's message: free, and it wakes)."""
    alice = await team.person("alice")
    researcher = await team.client(api_key=team.keys["researcher"])
    reviewer = await team.client(api_key=team.keys["reviewer"])
    sent = await researcher.send(workspace=team.ws, topic="new", title="Options", to=["reviewer"], type="inform",
                                 text="", card=HOTEL)
    assert sent["op"] == "sent" and sent["message"]["cost"] >= 1, sent
    before = (await alice.call("balances", workspace=team.ws))["agents"][reviewer.me["id"]]
    r = await reviewer.call("press_card", workspace=team.ws, message=sent["message"]["id"], action="book",
                            topic=sent["message"]["topic"])
    assert r["message"]["cost"] == 1 and [d["to"] for d in r["deliveries"] if d["wake"]] == [researcher.me["id"]]
    after = (await alice.call("balances", workspace=team.ws))["agents"][reviewer.me["id"]]
    assert after == before - 1
