"""Result cards, the core's rules (seed 003 §11-13; core/cards.py, core/card_templates.py): pure, no I/O."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, settings, strategies as st

from ygg_server.core import Message, MessageType, Post, Refusal
from ygg_server.core.card_templates import LIBRARY
from ygg_server.core.cards import CardError, press, resolve
from ygg_server.core.revise import Revision

SAMPLES = {
    "hotel": {"name": "Hotel Adlon", "address": "Unter den Linden 77", "price": 320, "rating": 4.6,
              "amenities": ["spa", "wifi"], "check_in": "Fri 15:00", "image": "https://img.example/adlon.jpg"},
    "flight": {"from": "FRA", "to": "JFK", "airline": "LH", "number": "400", "depart": "10:05", "arrive": "12:55",
               "price": 612.5, "currency": "USD", "stops": 0, "cabin": "economy"},
    "email": {"subject": "Quarterly numbers", "to": "cfo@example.com", "body": "Here they are.", "draft": True},
    "stock": {"symbol": "acme", "name": "Acme Corp", "price": 41.2, "currency": "USD", "change": -1.8,
              "history": [44, 43.5, 42, 41.2]},
    "job": {"title": "Platform engineer", "company": "Ygg", "location": "Berlin", "remote": True,
            "tags": ["python", "postgres"], "description": "Keep the writer fast."},
    "recipe": {"name": "Shakshuka", "time": "30 min", "servings": 2, "ingredients": ["eggs", "tomatoes"],
               "steps": ["simmer", "crack eggs"], "rating": 4.8},
    "briefing": {"title": "Morning briefing", "date": "Thu 3 Dec", "summary": "Markets calm.",
                 "items": [{"heading": "Ops", "text": "No incidents."}],
                 "metrics": [{"label": "Signups", "value": "1,204", "change": 3.5, "history": [1, 2, 3]}],
                 "alerts": [{"tone": "bad", "text": "CI is red"}]},
}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_each_template_lays_out_its_result(name):
    """Seed 003 §11: "image, title, price and rating where they apply, and the rest as labelled rows, small chips,
    coloured callouts, formatted text sections, up/down indicators and mini trend charts." """
    c = resolve({"template": name, "data": SAMPLES[name]})
    assert c.template == name and c.kind == name and c.title and not c.fallback
    assert c.buttons, "every template carries at least one button"
    assert msgspec.json.decode(msgspec.json.encode(c), type=type(c)) == c, "the layout is plain data"


def test_the_templates_fill_every_part_of_a_card():
    """Seed 003 §11: "image, title, price and rating where they apply, and the rest as labelled rows, small chips,
    coloured callouts, formatted text sections, up/down indicators and mini trend charts"."""
    hotel = resolve({"template": "hotel", "data": SAMPLES["hotel"]})
    assert (hotel.price, hotel.rating, hotel.image, hotel.chips) == \
        ("€320 / night", 4.6, "https://img.example/adlon.jpg", ("spa", "wifi"))
    assert ("Check-in", "Fri 15:00") in hotel.rows
    stock = resolve({"template": "stock", "data": SAMPLES["stock"]})
    assert stock.title == "ACME" and stock.indicators[0][2] < 0 and stock.trends[0][1] == (44, 43.5, 42, 41.2)
    brief = resolve({"template": "briefing", "data": SAMPLES["briefing"]})
    assert ("bad", "CI is red") in brief.callouts and ("Ops", "No incidents.") in brief.sections
    assert brief.indicators[0][2] > 0 and brief.trends[0][0] == "Signups"
    recipe = resolve({"template": "recipe", "data": SAMPLES["recipe"]})
    assert recipe.sections[1] == ("Steps", "1. simmer\n2. crack eggs")


def test_bad_data_is_refused_naming_the_field():
    """Core decision (docs/rules.md, "Result cards"): data a template cannot use is refused, the detail naming the
    field."""
    cases = [({"template": "stock", "data": {"symbol": "X", "price": "cheap"}}, "card.data.price"),
             ({"template": "hotel", "data": {}}, "card.data.name"),
             ({"template": "hotel", "data": {"name": "H", "rating": 9}}, "card.data.rating"),
             ({"template": "briefing", "data": {"title": "B", "alerts": [{"text": "x", "tone": "pink"}]}},
              "card.data.alerts[0].tone"),
             ({"template": "job", "data": {"title": "J", "buttons": [{"action": "send", "label": "S"}]}},
              "card.data.buttons[0].action"),
             ({"template": "Hotel!", "data": {}}, "card.template"),
             ({"template": "hotel", "data": [1]}, "card.data"),
             ({"template": "hotel", "data": {}, "colour": "red"}, "card.colour"),
             ("hotel", "card")]
    for raw, field in cases:
        with pytest.raises(CardError) as e:
            resolve(raw)
        assert e.value.field == field, (raw, e.value)


def test_an_unknown_template_falls_back_to_its_kinds_default_never_raw_data():
    """Seed 003 §13: "Templates degrade gracefully: an unknown or removed template name falls back to a sensible
    default layout for that kind of result, never raw data on screen." """
    c = resolve({"template": "hotel.v2", "data": SAMPLES["hotel"]})
    assert c.fallback and c.kind == "hotel" and c.template == "hotel.v2" and c.price == "€320 / night"
    odd = resolve({"template": "weather", "data": {"city": "Oslo", "temp_c": -3, "windy": True,
                                                      "tags": ["snow"], "hours": [{"t": 1}, {"t": 2}]}})
    assert odd.fallback and odd.kind == "weather" and odd.title == "Weather result"
    assert odd.rows == (("City", "Oslo"), ("Temp c", "-3"), ("Hours", "2 items"))
    assert odd.chips == ("windy", "snow")
    assert "{" not in repr(odd.rows), "nested data is counted, never dumped"
    by_kind = resolve({"template": "acme-room", "kind": "hotel", "data": {"title": "Room 12", "price": "?"}})
    assert by_kind.fallback and by_kind.kind == "hotel" and by_kind.title == "Room 12"


def _msg(card, author="agent.r", deleted=False) -> Message:
    return Message("m1", "w", "c", "t1", author, MessageType.INFORM, "", 1, card=card, deleted=deleted)


def test_an_email_drafts_buttons_act_in_place():
    """Seed 003 §13: "Cards can carry buttons to act on a result in place: an email-draft card has Send and Save
    draft actions" """
    draft = _msg(resolve({"template": "email", "data": SAMPLES["email"]}))
    assert [b.action for b in draft.card.buttons if b.in_place] == ["send", "save_draft"]
    saved = press(draft, "human.a", "save_draft", ("human.a", "human.b"), 5, "new")
    assert isinstance(saved, Revision) and saved.message.card.state == "saved"
    assert saved.message.card.state_by == "human.a" and saved.message.text == draft.text
    assert [(d.recipient, d.wake) for d in saved.deliveries] == [("human.b", False)], "the others told, not woken"
    sent = press(saved.message, "human.a", "send", (), 6, "new")
    assert sent.message.card.state == "sent"
    again = press(sent.message, "human.b", "save_draft", (), 7, "new")
    assert isinstance(again, Refusal) and again.reason == "card_done"


def test_other_buttons_hand_the_click_back_to_the_author():
    """Seed 003 §13: "other buttons hand the click back to the agent as a signal": a request to the card's author
    saying who pressed, which action, which card."""
    hotel = _msg(resolve({"template": "hotel", "data": SAMPLES["hotel"]}))
    p = press(hotel, "human.a", "book", (), 5, "new-id")
    assert isinstance(p, Post) and p.author == "human.a" and p.to == ("agent.r",) and p.type == "request"
    assert (p.press.message, p.press.action, p.press.label, p.press.card) == ("m1", "book", "Book", "Hotel Adlon")
    assert p.topic == "t1" and "Book" in p.text
    for who, action, reason in (("human.a", "fly", "unknown_action"), ("agent.r", "book", "unknown_action")):
        r = press(hotel, who, action, (), 5, "x")
        assert isinstance(r, Refusal) and r.reason == reason
    assert press(None, "human.a", "book", (), 5, "x").reason == "unknown_message"
    assert press(_msg(None), "human.a", "book", (), 5, "x").reason == "unknown_action"
    assert press(_msg(hotel.card, deleted=True), "human.a", "book", (), 5, "x").reason == "message_deleted"


def test_the_library_has_the_seeds_templates():
    """Seed 003 §12: "a platform-curated library of response card templates: hotel, flight, email, stock quote,
    job, recipe, briefing and so on." """
    assert {"hotel", "flight", "email", "stock", "job", "recipe", "briefing"} <= set(LIBRARY)


_json = st.recursive(st.none() | st.booleans() | st.integers(-10**12, 10**12) | st.floats(allow_nan=False,
                     allow_infinity=False) | st.text(max_size=30),
                     lambda kids: st.lists(kids, max_size=5) | st.dictionaries(st.text(max_size=12), kids, max_size=5),
                     max_leaves=20)
_keys = st.sampled_from(["name", "title", "subject", "symbol", "price", "rating", "from", "to", "depart", "arrive",
                         "history", "items", "metrics", "alerts", "buttons", "draft", "stops", "servings", "tags"])


@settings(max_examples=300, deadline=None)
@given(template=st.sampled_from(sorted(LIBRARY) + ["hotel.v2", "weather"]),
       data=st.dictionaries(_keys | st.text(max_size=8), _json, max_size=8))
def test_any_data_is_laid_out_or_refused_naming_a_field(template, data):
    """Core decision (docs/rules.md, "Result cards"): bad input gets a refusal naming its reason, never a crash: any
    JSON data gives a card or a CardError."""
    try:
        c = resolve({"template": template, "data": data})
    except CardError as e:
        assert e.field.startswith("card")
    else:
        msgspec.json.encode(c)
