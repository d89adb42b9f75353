"""The curated card template library (seed 003 §12): each template a pure function from a result's data to the
`Card` stamped into its message (core/cards.py). Data is read through `Data`, which refuses what a template cannot
use with the field's path (`card.data.price: a number`); unknown extra fields are left out, never shown raw.

Every template takes `buttons` too (a list of {"action", "label"}, at most 4), replacing its default buttons; an
email draft's Send and Save draft are always its own and act in place.
"""

from __future__ import annotations

import re
from typing import Any, Callable

import msgspec

from .cards import CardError
from .model import Card, CardButton

MAX_TEXT, MAX_LONG, MAX_ITEMS = 200, 4000, 12
DRAFT_NOTE = ("warn", "Draft: not sent yet")  # an email draft's callout, taken away once it is sent
_ACTION = re.compile(r"[a-z][a-z0-9_]{0,31}")
_TONES = ("info", "good", "warn", "bad")
_SYMBOLS = {"EUR": "€", "USD": "$", "GBP": "£", "JPY": "¥", "INR": "₹"}


class Data:
    """A template's view of `card.data`: typed getters that name the field they refuse."""

    def __init__(self, d: dict, path: str = "card.data"):
        self.d, self.path = d, path

    def _get(self, key: str, required: bool):
        v = self.d.get(key)
        if v is None and required:
            raise CardError(f"{self.path}.{key}", "required")
        return v

    def text(self, key: str, required: bool = False, limit: int = MAX_TEXT) -> str | None:
        v = self._get(key, required)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            raise CardError(f"{self.path}.{key}", "text")
        s = str(v).strip()
        if len(s) > limit:
            raise CardError(f"{self.path}.{key}", f"at most {limit} characters")
        if not s and required:
            raise CardError(f"{self.path}.{key}", "required")
        return s or None

    def num(self, key: str, required: bool = False, lo: float | None = None, hi: float | None = None) -> float | None:
        v = self._get(key, required)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v:
            raise CardError(f"{self.path}.{key}", "a number")
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            raise CardError(f"{self.path}.{key}", f"a number from {lo} to {hi}")
        return float(v)

    def texts(self, key: str) -> tuple[str, ...]:
        v = self._get(key, False)
        if v is None:
            return ()
        if not isinstance(v, list) or len(v) > MAX_ITEMS * 2:
            raise CardError(f"{self.path}.{key}", f"a list of at most {MAX_ITEMS * 2} texts")
        return tuple(Data({"x": x}, f"{self.path}.{key}[{i}]").text("x", True) or "" for i, x in enumerate(v))

    def items(self, key: str) -> list["Data"]:
        v = self._get(key, False)
        if v is None:
            return []
        if not isinstance(v, list) or len(v) > MAX_ITEMS or not all(isinstance(x, dict) for x in v):
            raise CardError(f"{self.path}.{key}", f"a list of at most {MAX_ITEMS} objects")
        return [Data(x, f"{self.path}.{key}[{i}]") for i, x in enumerate(v)]

    def points(self, key: str) -> tuple[float, ...]:
        v = self._get(key, False)
        if v is None:
            return ()
        if not isinstance(v, list) or not 2 <= len(v) <= 120 or \
                not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
            raise CardError(f"{self.path}.{key}", "a list of 2 to 120 numbers")
        return tuple(float(x) for x in v)


def money(d: Data, key: str = "price", per: str | None = None) -> str | None:
    amount = d.num(key, lo=0)
    if amount is None:
        return None
    cur = (d.text("currency") or "EUR").upper()
    s = f"{_SYMBOLS.get(cur, cur + ' ')}{amount:,.2f}".replace(".00", "")
    return f"{s} / {per}" if per else s


def rows(*pairs: tuple[str, str | None]) -> tuple[tuple[str, str], ...]:
    return tuple((k, v) for k, v in pairs if v)


def buttons(d: Data, default: tuple[CardButton, ...]) -> tuple[CardButton, ...]:
    given = d.items("buttons")
    if not given:
        return default
    if len(given) > 4:
        raise CardError(f"{d.path}.buttons", "at most 4 buttons")
    out = []
    for b in given:
        action = b.text("action", True)
        if not _ACTION.fullmatch(action) or action in ("send", "save_draft"):
            raise CardError(f"{b.path}.action", "a lowercase name (a-z, 0-9, _), not send or save_draft")
        out.append(CardButton(action, b.text("label", True, 24)))
    return tuple(out)


def change(d: Data, key: str = "change") -> float | None:
    return d.num(key, lo=-1e9, hi=1e9)


def _pct(x: float) -> str:
    return f"{x:+.2f}%"


# --- the library ---

def hotel(data: dict) -> Card:
    d = Data(data)
    notes = tuple(("info", n) for n in d.texts("notes"))
    return Card("hotel", "hotel", d.text("name", True), d.text("address"), d.text("image"),
                money(d, per=d.text("per") or "night"), d.num("rating", lo=0, hi=5),
                rows(("Check-in", d.text("check_in")), ("Check-out", d.text("check_out")),
                     ("Distance", d.text("distance")), ("Room", d.text("room"))),
                d.texts("amenities"), notes, buttons=buttons(d, (CardButton("book", "Book"),
                                                                 CardButton("details", "Details"))))


def flight(data: dict) -> Card:
    d = Data(data)
    stops = d.num("stops", lo=0, hi=9)
    chips = ("nonstop",) if stops == 0 else (f"{int(stops)} stop{'s' if stops > 1 else ''}",) if stops else ()
    cabin = d.text("cabin")
    return Card("flight", "flight", f"{d.text('from', True)} → {d.text('to', True)}",
                " ".join(x for x in (d.text("airline"), d.text("number")) if x) or None, None, money(d),
                None, rows(("Departs", d.text("depart", True)), ("Arrives", d.text("arrive", True)),
                           ("Duration", d.text("duration")), ("Baggage", d.text("baggage"))),
                chips + ((cabin,) if cabin else ()), buttons=buttons(d, (CardButton("book", "Book"),)))


def email(data: dict) -> Card:
    d = Data(data)
    draft = d.d.get("draft") is True
    body = d.text("body", limit=MAX_LONG)
    own = (CardButton("send", "Send", True), CardButton("save_draft", "Save draft", True))
    return Card("email", "email", d.text("subject", True), None, None, None, None,
                rows(("From", d.text("from")), ("To", d.text("to", draft)), ("Cc", d.text("cc")),
                     ("Date", d.text("date"))), d.texts("labels"),
                (DRAFT_NOTE,) if draft else (), (("", body),) if body else (),
                buttons=own if draft else buttons(d, (CardButton("reply", "Reply"),)),
                state="draft" if draft else None)


def stock(data: dict) -> Card:
    d = Data(data)
    symbol = d.text("symbol", True).upper()
    price = money(d, "price")
    if price is None:
        raise CardError("card.data.price", "required")
    ch = change(d)
    history = d.points("history")
    return Card("stock", "stock", symbol, d.text("name"), None, price, None,
                rows(("Open", money(d, "open")), ("High", money(d, "high")), ("Low", money(d, "low")),
                     ("Volume", d.text("volume")), ("Market cap", d.text("market_cap"))),
                d.texts("tags"), indicators=((f"{symbol} today", _pct(ch), ch),) if ch is not None else (),
                trends=((d.text("period") or "recent", history),) if history else (),
                buttons=buttons(d, (CardButton("watch", "Watch"),)))


def job(data: dict) -> Card:
    d = Data(data)
    chips = d.texts("tags") + (("remote",) if d.d.get("remote") is True else ())
    desc = d.text("description", limit=MAX_LONG)
    return Card("job", "job", d.text("title", True), d.text("company"), d.text("logo"), d.text("salary"), None,
                rows(("Location", d.text("location")), ("Type", d.text("type")), ("Posted", d.text("posted"))),
                chips, sections=(("About the role", desc),) if desc else (),
                buttons=buttons(d, (CardButton("apply", "Apply"), CardButton("save", "Save"))))


def recipe(data: dict) -> Card:
    d = Data(data)
    ingredients = d.texts("ingredients")
    steps = d.texts("steps")
    sections = (("Ingredients", "\n".join(f"- {x}" for x in ingredients)),) if ingredients else ()
    sections += (("Steps", "\n".join(f"{i}. {x}" for i, x in enumerate(steps, 1))),) if steps else ()
    servings = d.num("servings", lo=1, hi=100)
    return Card("recipe", "recipe", d.text("name", True), d.text("cuisine"), d.text("image"), None,
                d.num("rating", lo=0, hi=5),
                rows(("Time", d.text("time")), ("Serves", f"{int(servings)}" if servings else None)),
                d.texts("tags"), sections=sections, buttons=buttons(d, (CardButton("save", "Save recipe"),)))


def briefing(data: dict) -> Card:
    d = Data(data)
    summary = d.text("summary", limit=MAX_LONG)
    sections = (("Summary", summary),) if summary else ()
    sections += tuple((s.text("heading", True), s.text("text", True, MAX_LONG)) for s in d.items("items"))
    indicators, trends = [], []
    for m in d.items("metrics"):
        label, value, ch = m.text("label", True), m.text("value", True), change(m)
        indicators.append((label, value + (f" ({_pct(ch)})" if ch is not None else ""), ch or 0.0))
        history = m.points("history")
        if history:
            trends.append((label, history))
    callouts = []
    for a in d.items("alerts"):
        tone = a.text("tone") or "warn"
        if tone not in _TONES:
            raise CardError(f"{a.path}.tone", f"one of {', '.join(_TONES)}")
        callouts.append((tone, a.text("text", True)))
    return Card("briefing", "briefing", d.text("title", True), d.text("date"), None, None, None,
                rows(*((r.text("label", True), r.text("value", True)) for r in d.items("rows"))), d.texts("tags"),
                tuple(callouts), sections, tuple(indicators), tuple(trends),
                buttons(d, (CardButton("follow_up", "Follow up"),)))


LIBRARY: dict[str, Callable[[dict], Card]] = {
    "hotel": hotel, "flight": flight, "email": email, "stock": stock, "job": job, "recipe": recipe,
    "briefing": briefing,
}
_TITLE_KEYS = {"hotel": "name", "flight": "number", "email": "subject", "stock": "symbol", "job": "title",
               "recipe": "name", "briefing": "title"}


def _label(key: str) -> str:
    return key.replace("_", " ").replace("-", " ").strip().capitalize()[:40] or "Field"


def default(kind: str, template: str, data: dict) -> Card:
    """Seed 003 §13: an unknown template's card, "a sensible default layout for that kind of result, never raw
    data": the kind's own template if the data fits it; else a title (the kind's title field, or the first of
    title, name, subject), the scalar fields as labelled rows, lists of texts as chips, nested objects counted;
    the buttons given, none otherwise."""
    if kind in LIBRARY:
        try:
            return msgspec.structs.replace(LIBRARY[kind](data), template=template, fallback=True)
        except CardError:
            pass
    d = Data(data)
    first = _TITLE_KEYS.get(kind)
    key = next((k for k in (first, "title", "name", "subject", "headline") if k and isinstance(data.get(k), str)),
               None)
    title = d.text(key) if key else None
    out_rows, chips = [], []
    for k, v in data.items():
        if k in (key, "buttons", "image", "price", "currency", "rating") or not isinstance(k, str):
            continue
        if isinstance(v, (str, int, float)) and not isinstance(v, bool):
            text = str(v).strip()
            if text and len(out_rows) < MAX_ITEMS:
                out_rows.append((_label(k), text[:MAX_TEXT] + ("…" if len(text) > MAX_TEXT else "")))
        elif isinstance(v, bool):
            if v and len(chips) < MAX_ITEMS:
                chips.append(_label(k).lower())
        elif isinstance(v, list) and v and all(isinstance(x, str) for x in v):
            chips += [x.strip()[:40] for x in v if x.strip()][:MAX_ITEMS - len(chips)]
        elif isinstance(v, (list, dict)) and v and len(out_rows) < MAX_ITEMS:
            out_rows.append((_label(k), f"{len(v)} item{'s' if len(v) != 1 else ''}"))
    rating = d.num("rating") if isinstance(data.get("rating"), (int, float)) and 0 <= data["rating"] <= 5 else None
    price = money(d) if isinstance(data.get("price"), (int, float)) and data["price"] >= 0 else None
    return Card(template, kind, title or f"{kind.capitalize()} result", None, d.text("image") if
                isinstance(data.get("image"), str) else None, price, rating, tuple(out_rows), tuple(chips),
                buttons=buttons(d, ()), fallback=True)
