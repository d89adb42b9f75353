"""Left: workspaces and their conversations, with unread counts and attention badges; the first nine numbered
for alt+1…9 (WeeChat's buffer numbers)."""

from __future__ import annotations

import re

from rich.text import Text
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from ..state import Store

KIND_ORDER = {"general": 0, "group": 1, "direct": 2}
KIND_MARK = {"general": "#", "group": "⁂", "direct": "@", "side": "↳"}
CHROME = 8  # the column's border and padding, a conversation's number and mark: the rest is for its name
ASKED_FOR = re.compile(r"^side: For @?[\w.\-]+: ")  # a side conversation's name says whom it is for: its origin does


class Sidebar(OptionList):
    """One header per workspace, then its conversations: General, groups, direct ones. Side conversations (seed 003
    §15) are folded into their origin's line ("↳2") and listed under it, titled by their task, only while the origin
    or one of them is open: every task a lead hands on makes one, and they crowded out the conversations."""

    DEFAULT_CSS = """
    Sidebar { width: 28; }
    """

    def __init__(self, store: Store, **kw):
        super().__init__(**kw)
        self.store = store
        self.current: str | None = None
        self.order: list[str] = []  # the conversations listed, top to bottom (alt+1…9, alt+↑/↓)

    def rebuild(self) -> None:
        s = self.store
        keep = self.current
        options: list[Option] = []
        self.order = []
        for w in s.workspaces.values():
            head = Text.assemble(("▾ ", "dim"), (w.name, "bold"))
            if head.cell_len + len(w.role) + 2 <= self._width() - 4:  # (the role where it fits: one line each)
                head.append(f"  {w.role}", "dim")
            head.truncate(self._width() - 4, overflow="ellipsis")
            options.append(Option(head, id=f"ws:{w.id}", disabled=True))
            sides: dict[str | None, list[dict]] = {}
            for c in w.conversations.values():
                if c["kind"] == "side":
                    sides.setdefault(c.get("origin") if c.get("origin") in w.conversations else None, []).append(c)
            convs = sorted((c for c in w.conversations.values() if c["kind"] != "side"),
                           key=lambda c: (KIND_ORDER.get(c["kind"], 3), s.conversation_name(c).lower()))
            for c in convs + [{"id": None}]:
                mine = sorted(sides.get(c["id"], ()), key=lambda x: s.conversation_name(x).lower())
                open_here = c["id"] is None or keep in {c["id"], *(x["id"] for x in mine)}
                if c["id"] is not None:
                    options.append(Option(self._prompt(c, folded=[] if open_here else mine), id=c["id"]))
                    self.order.append(c["id"])
                for sc in mine if open_here else ():
                    options.append(Option(self._prompt(sc, indent="  "), id=sc["id"]))
                    self.order.append(sc["id"])
        highlighted = self.highlighted
        self.clear_options()
        self.add_options(options)
        if keep is not None:
            try:
                self.highlighted = self.get_option_index(keep)
            except Exception:
                self.highlighted = highlighted

    def _prompt(self, c: dict, indent: str = "", folded: list[dict] = ()) -> Text:
        """One line: a name too long for the column ends in "…" (its badges stay in view); `folded`: the side
        conversations not listed, counted here with their unread messages."""
        s = self.store
        ids = [c["id"], *(x["id"] for x in folded)]
        unread = sum(s.unread_by_conv.get(i, 0) for i in ids)
        atts = [s.attention(i) for i in ids]
        badges = Text()
        if folded:
            badges.append(f" ↳{len(folded)}", "dim")
        if unread:
            badges.append(f" {unread}", "bold reverse")
        needs = sum(a["needs_human"] for a in atts)
        if needs:
            badges.append(f" ⚑{needs}", "bold red")
        funding = sum(a["funding"] for a in atts)
        if funding:
            badges.append(f" ${funding}", "bold yellow")
        name = s.conversation_name(c)
        if c["kind"] == "side":
            name = ASKED_FOR.sub("", name).removeprefix("side: ")
        n = len(self.order)  # (this conversation's place: it is appended after this call)
        number = f"{n + 1}" if n < 9 else " "
        room = self._width() - CHROME - len(indent) - badges.cell_len
        if len(name) > room:
            name = name[:max(1, room - 1)] + "…"
        t = Text.assemble((number, "dim"), (" " + indent, ""), (KIND_MARK.get(c["kind"], "·") + " ", "dim"),
                          (name, "bold" if unread else ""))
        return t + badges

    def _width(self) -> int:
        return self.size.width or 30  # (before the first layout: the wide screen's)

    def on_resize(self) -> None:
        self.rebuild()  # (names cut to the new width)

    def select(self, cid: str) -> None:
        fold_changes = self.current != cid
        self.current = cid
        if fold_changes:
            self.rebuild()  # (the side conversations of what is open unfold, the others fold)
        try:
            self.highlighted = self.get_option_index(cid)
        except Exception:
            pass
