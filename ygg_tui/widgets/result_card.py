"""A message's result card, drawn with Rich (seed 003 §11-13; issue 21): the layout the server stamped into the
message (`message["card"]`, docs/protocol.md "Result cards"), never re-resolved here, so it looks the same on every
client. Title, subtitle, price and rating; an image as its reference (a terminal shows no picture); labelled rows;
chips; coloured callouts; Markdown sections; up/down indicators; trends as sparklines (Textual's `Sparkline`
renderable); the buttons, pressed with `b` on the message (an in-place card shows its state instead once sent).
"""

from __future__ import annotations

from rich.color import Color
from rich.console import Console, Group, RenderableType
from rich.markdown import Markdown
from rich.panel import Panel
from rich.segment import Segment
from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.renderables.sparkline import Sparkline
from textual.strip import Strip

from ..words import printable

TONES = {"info": ("ℹ", "cyan"), "good": ("✓", "green"), "warn": ("!", "yellow"), "bad": ("✗", "red")}
STATES = {"draft": "draft, not sent", "saved": "draft saved", "sent": "sent"}
INDENT = 2


def _t(s) -> str:
    return printable(str(s or ""), one_line=True)


def _stars(rating: float) -> str:
    full = int(round(rating))
    return "★" * full + "☆" * (5 - full) + f" {rating:.1f}"


def renderable(card: dict, namer=lambda p: p, clock=lambda iso: "") -> RenderableType:
    """The card as one Rich renderable (a rounded panel titled with its kind)."""
    parts: list[RenderableType] = []
    head = Table.grid(expand=True)
    head.add_column(ratio=1)
    head.add_column(justify="right")
    head.add_row(Text(_t(card.get("title")), style="bold"), Text(_t(card.get("price")), style="bold green"))
    sub, rating = _t(card.get("subtitle")), card.get("rating")
    if sub or rating is not None:
        head.add_row(Text(sub, style="dim"), Text(_stars(rating) if rating is not None else "", style="yellow"))
    parts.append(head)
    if card.get("image"):
        parts.append(Text(f"▨ image: {_t(card['image'])}", style="dim"))
    if card.get("rows"):
        rows = Table.grid(padding=(0, 2))
        rows.add_column(style="dim")
        rows.add_column()
        for r in card["rows"]:
            rows.add_row(_t(r.get("label")), _t(r.get("value")))
        parts.append(rows)
    if card.get("chips"):
        chips = Text()
        for c in card["chips"]:
            chips.append(f" {_t(c)} ", style="reverse")
            chips.append(" ")
        parts.append(chips)
    for c in card.get("callouts") or ():
        mark, colour = TONES.get(c.get("tone"), TONES["info"])
        parts.append(Text(f"{mark} {_t(c.get('text'))}", style=colour))
    for s in card.get("sections") or ():
        if s.get("heading"):
            parts.append(Text(_t(s["heading"]), style="bold underline"))
        parts.append(Markdown(printable(s.get("text") or "")))
    if card.get("indicators") or card.get("trends"):
        grid = Table.grid(padding=(0, 2))
        grid.add_column()
        grid.add_column()
        for i in card.get("indicators") or ():
            ch = i.get("change") or 0
            mark, colour = ("▲", "green") if ch > 0 else ("▼", "red") if ch < 0 else ("■", "dim")
            grid.add_row(Text(f"{mark} {_t(i.get('label'))}", style=colour), Text(_t(i.get("value")), style=colour))
        for tr in card.get("trends") or ():
            pts = [float(p) for p in tr.get("points") or () if isinstance(p, (int, float))]
            if len(pts) >= 2:
                grid.add_row(Text(f"~ {_t(tr.get('label'))}", style="dim"),
                             Sparkline(pts, width=min(24, len(pts)), min_color=Color.parse("red"),
                                       max_color=Color.parse("green")))
        parts.append(grid)
    footer = _footer(card, namer, clock)
    if footer.plain:
        parts.append(footer)
    kind = _t(card.get("kind") or "result")
    title = f"{kind} · default layout" if card.get("fallback") else kind
    return Panel(Group(*parts), title=title, title_align="left", border_style="blue", expand=True)


def _footer(card: dict, namer, clock) -> Text:
    out = Text()
    state = card.get("state")
    if state and state != "draft":
        who = namer(card["state_by"]) if card.get("state_by") else ""
        when = clock(card.get("state_at") or "")
        out.append(f"✓ {STATES.get(state, state)}" + (f" by {who}" if who else "") + (f" {when}" if when else ""),
                   style="bold green")
        if state == "sent":
            return out
        out.append("   ")
    for b in card.get("buttons") or ():
        out.append(f"[ {_t(b.get('label'))} ]", style="bold cyan")
        out.append(" ")
    if card.get("buttons"):
        out.append(" b: press", style="dim")
    return out


def strips(card: dict, width: int, console: Console, base: Style, namer=lambda p: p,
           clock=lambda iso: "") -> list[Strip]:
    """The card's lines at `width` (indented under its message), as the message list draws them."""
    inner = max(width - INDENT, 20)
    lines = console.render_lines(renderable(card, namer, clock), console.options.update_width(inner), style=base,
                                 pad=True)
    pad = Segment(" " * INDENT, base)
    return [Strip([pad, *line]).crop(0, width).extend_cell_length(width, base) for line in lines]
