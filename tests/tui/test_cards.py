"""Result cards in the TUI (issue 21; seed 003 §11-13): a message's card drawn with Rich as the server stamped it,
its buttons pressed from the keyboard (`b`, then 1-4): an email draft's Send in place, any other button handed back
to the posting agent as a wake."""

import asyncio

from .conftest import SIZE, ready, seeded, screen_text, wait_for, wait_text
from .test_snapshots import quiet

HOTEL = {"template": "hotel", "data": {"name": "Hotel Adlon", "address": "Unter den Linden 77", "price": 320,
                                       "rating": 4.6, "amenities": ["spa", "wifi"], "check_in": "Fri 15:00",
                                       "notes": ["Free cancellation until Wednesday"]}}
STOCK = {"template": "stock", "data": {"symbol": "ACME", "name": "Acme Corp", "price": 41.2, "currency": "USD",
                                       "change": -1.8, "history": [44, 43.5, 43.9, 42, 42.4, 41.2], "volume": "1.2M"}}
BRIEFING = {"template": "briefing", "data": {
    "title": "Morning briefing", "date": "Thu 3 Dec", "summary": "Markets are calm; one **incident** overnight.",
    "metrics": [{"label": "Signups", "value": "1,204", "change": 3.5, "history": [900, 1000, 1100, 1204]}],
    "alerts": [{"tone": "bad", "text": "CI is red on main"}]}}
FALLBACK = {"template": "weather.v3", "data": {"city": "Oslo", "temp_c": -3, "windy": True, "tags": ["snow"]}}
DRAFT = {"template": "email", "data": {"subject": "Quarterly numbers", "to": "cfo@example.com",
                                       "body": "Here they are.", "draft": True}}


async def _post(team, *cards, title="Results") -> list[dict]:
    researcher = await team.agent("researcher")
    out, topic = [], "new"
    for card in cards:
        sent = await researcher.send(workspace=team.ws, conversation="general", topic=topic, title=title,
                                     type="inform", to=["@alice"], text="", card=card)
        assert sent["op"] == "sent", sent
        topic = sent["message"]["topic"]
        out.append(sent["message"])
    return out


async def test_a_button_press_reaches_the_posting_agent(team):
    """Seed 003 §13: "other buttons hand the click back to the agent as a signal": b, then the button's number."""
    [card] = await _post(team, HOTEL)
    researcher = team.clients[0]
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        ml = main.messages
        await wait_for(pilot, lambda: ml.select_id(card["id"]), what="the card's message")
        await wait_text(pilot, "Hotel Adlon", "€320 / night", "[ Book ]")
        ml.focus()
        await pilot.press("b")
        await wait_text(pilot, "press a button")
        await pilot.press("1")

        async def woken():
            while True:
                d = await researcher.next_delivery()
                await researcher.ack([d["id"]])
                if d["message"].get("press"):
                    return d
        d = await asyncio.wait_for(woken(), 8)
        assert d["wake"] is True and d["message"]["author"] == team.alice
        assert d["message"]["press"] == {"message": card["id"], "action": "book", "label": "Book",
                                         "card": "Hotel Adlon", "template": "hotel"}
        await wait_text(pilot, "pressed “Book” on the hotel card “Hotel Adlon”")  # (the request, in the topic)


async def test_an_email_draft_is_sent_in_place(team):
    """Seed 003 §13: "an email-draft card has Send and Save draft actions" acting "on a result in place": the card
    shows it was sent; no message is added."""
    [card] = await _post(team, DRAFT)
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        ml = main.messages
        await wait_for(pilot, lambda: ml.select_id(card["id"]), what="the card's message")
        await wait_text(pilot, "Draft: not sent yet", "[ Send ]", "[ Save draft ]")
        shown = len(ml.messages)
        ml.focus()
        await pilot.press("b")
        await wait_text(pilot, "acts on the card here")
        await pilot.press("1")
        await wait_text(pilot, "✓ sent by @alice")
        shown_now = screen_text(app)
        assert "[ Send ]" not in shown_now and "not sent yet" not in shown_now, "a sent draft takes no more presses"
        assert len(ml.messages) == shown, "no message added"


def _snapshot(snap_compare, sync_team, cards):
    seeded(sync_team, _post(sync_team, *cards))

    async def before(pilot):
        main = await ready(pilot)
        ml = main.messages
        await wait_for(pilot, lambda: len([m for m in ml.messages if m.get("card")]) == len(cards), what="the cards")
        ml.focus()
        ml.action_first()
        quiet(pilot)
        await pilot.pause(0.1)

    return snap_compare(sync_team.app(), terminal_size=(SIZE[0], 60), run_before=before)


def test_hotel_and_stock_cards_snapshot(snap_compare, sync_team):
    """Seed 003 §11: "image, title, price and rating where they apply, and the rest as labelled rows, small chips,
    coloured callouts, [...] up/down indicators and mini trend charts." """
    assert _snapshot(snap_compare, sync_team, [HOTEL, STOCK])


def test_briefing_and_fallback_cards_snapshot(snap_compare, sync_team):
    """Seed 003 §13: "an unknown or removed template name falls back to a sensible default layout for that kind of
    result, never raw data on screen." """
    assert _snapshot(snap_compare, sync_team, [BRIEFING, FALLBACK])
