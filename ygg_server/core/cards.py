"""Result cards (seed 003 §11-13; docs/rules.md, "Result cards"): a structured result drawn as a card.

A send may carry `card: {"template": name, "data": {...}, "kind": optional}`. The template is looked up in the
curated library (core/card_templates.py: each a pure function from data to a `Card`), and the card it returns is
stamped into the message when it is saved (§12): every client draws that layout, and a card already sent keeps
rendering even if the template changes or goes. An unknown template falls back to the default layout of its kind
(`kind`, or the name's part before a dot: `hotel.v2` is a hotel), or of a plain result: labelled rows and chips,
never raw data (§13). Data a template cannot use is refused, the detail naming the field (`bad_card`).

Buttons (§13): an email draft's Send and Save draft act on the card in place (its state changes for everyone who
reads it, no message is added); any other press is handed back to the card's author as a request from whoever
pressed it (who, which action, which card: `Message.press`), through the one send pipeline, paid and bounded as
any message. Pure: the writer loads the card's message, asks `press`, and applies what it says.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from .decision import Delivery, Refusal
from .model import Card, Message, Post, Press
from .revise import Revision
from .vocabulary import ContextReason, MessageType, RefusalReason as R

MAX_DATA = 16_000  # bytes of a card's data, encoded
SENT, SAVED = "sent", "saved"
_IN_PLACE = {"send": SENT, "save_draft": SAVED}
_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{0,39}")


class CardError(Exception):
    """Data a template cannot use: `field` (a path under `card`) and why."""

    def __init__(self, field: str, why: str):
        super().__init__(f"{field}: {why}")
        self.field, self.why = field, why


def resolve(raw: Any) -> Card:
    """The card a send's `card` field stamps into its message, or CardError naming the field."""
    from .card_templates import LIBRARY, default

    if not isinstance(raw, dict):
        raise CardError("card", 'an object: {"template": name, "data": {...}}')
    template, data, kind = raw.get("template"), raw.get("data"), raw.get("kind")
    if not isinstance(template, str) or not _NAME.fullmatch(template):
        raise CardError("card.template", "a template's name (lowercase letters, digits, . _ -)")
    if kind is not None and (not isinstance(kind, str) or not _NAME.fullmatch(kind)):
        raise CardError("card.kind", "a kind's name (lowercase letters, digits, . _ -)")
    if not isinstance(data, dict):
        raise CardError("card.data", "an object")
    if len(msgspec.json.encode(data)) > MAX_DATA:
        raise CardError("card.data", f"at most {MAX_DATA} bytes")
    unknown = set(raw) - {"template", "data", "kind"}
    if unknown:
        raise CardError(f"card.{sorted(unknown)[0]}", "not a card field (template, data, kind)")
    made = LIBRARY.get(template)
    if made is not None:
        return made(data)
    return default(kind or template.split(".")[0], template, data)


def size(card: Card) -> int:
    """A card's characters as its message pays for them (seed 000: like text)."""
    return len(msgspec.json.encode(card))


def press(found: Message | None, who: str, action: Any, reached: tuple[str, ...], now: int,
          new_id: str) -> Revision | Post | Refusal:
    """`who` (who may read `found`) presses `action` on `found`'s card: an in-place button's Revision (the card's
    new state; those the message reached told as context), or the request handing the press to its author."""
    if found is None:
        return Refusal(R.UNKNOWN_MESSAGE, "no such message")
    if found.deleted:
        return Refusal(R.MESSAGE_DELETED, "this message was deleted")
    card = found.card
    button = next((b for b in card.buttons if b.action == action), None) if card is not None else None
    if button is None:
        return Refusal(R.UNKNOWN_ACTION, "no such button on this card" if card else "this message has no card")
    if button.in_place:
        if card.state == SENT:
            return Refusal(R.CARD_DONE, "this draft was sent")
        from .card_templates import DRAFT_NOTE
        state = _IN_PLACE.get(button.action, button.action)
        callouts = tuple(c for c in card.callouts if c != DRAFT_NOTE) if state == SENT else card.callouts
        now_card = msgspec.structs.replace(card, state=state, state_by=who, state_at=now, callouts=callouts)
        now_msg = msgspec.structs.replace(found, card=now_card)
        told = tuple(Delivery(r, False, ContextReason.CARD_UPDATED) for r in dict.fromkeys(reached) if r != who)
        return Revision(now_msg, found, told)
    if found.author == who:
        return Refusal(R.UNKNOWN_ACTION, "your own card's buttons hand the click back to you: nothing to do")
    p = Press(found.id, button.action, button.label, card.title, card.template)
    text = f"pressed “{button.label}” on the {card.kind} card “{card.title}” (action {button.action})"
    return Post(new_id, who, found.workspace, found.topic or "new", MessageType.REQUEST, text,
                title=f"{button.label}: {card.title}"[:200], to=(found.author,), in_reply_to=None, press=p)
