"""Left: workspaces and their conversations, with unread counts and attention badges."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from ..state import Store

KIND_ORDER = {"general": 0, "group": 1, "direct": 2}
KIND_MARK = {"general": "#", "group": "⁂", "direct": "@", "side": "↳"}
NAME_ROOM = 24  # the column's width (28) less its border, padding and a conversation's mark


class Sidebar(OptionList):
    """One header per workspace, then its conversations: General, groups, direct ones; a side conversation
    (seed 003 §15) right under the conversation its task came from."""

    DEFAULT_CSS = """
    Sidebar { width: 28; }
    """

    def __init__(self, store: Store, **kw):
        super().__init__(**kw)
        self.store = store
        self.current: str | None = None

    def rebuild(self) -> None:
        s = self.store
        keep = self.current
        options: list[Option] = []
        for w in s.workspaces.values():
            head = Text.assemble(("▾ ", "dim"), (w.name, "bold"), (f"  {w.role}", "dim"))
            options.append(Option(head, id=f"ws:{w.id}", disabled=True))
            sides: dict[str | None, list[dict]] = {}
            for c in w.conversations.values():
                if c["kind"] == "side":
                    sides.setdefault(c.get("origin") if c.get("origin") in w.conversations else None, []).append(c)
            convs = sorted((c for c in w.conversations.values() if c["kind"] != "side"),
                           key=lambda c: (KIND_ORDER.get(c["kind"], 3), s.conversation_name(c).lower()))
            for c in convs + [{"id": None}]:
                if c["id"] is not None:
                    options.append(Option(self._prompt(c), id=c["id"]))
                for sc in sorted(sides.get(c["id"], ()), key=lambda x: s.conversation_name(x).lower()):
                    options.append(Option(self._prompt(sc, "    "), id=sc["id"]))
        highlighted = self.highlighted
        self.clear_options()
        self.add_options(options)
        if keep is not None:
            try:
                self.highlighted = self.get_option_index(keep)
            except Exception:
                self.highlighted = highlighted

    def _prompt(self, c: dict, indent: str = "  ") -> Text:
        """One line: a name too long for the column ends in "…" (its badges stay in view)."""
        s = self.store
        unread = s.unread_by_conv.get(c["id"], 0)
        att = s.attention(c["id"])
        badges = Text()
        if unread:
            badges.append(f" {unread}", "bold reverse")
        if att["needs_human"]:
            badges.append(f" ⚑{att['needs_human']}", "bold red")
        if att["funding"]:
            badges.append(f" ${att['funding']}", "bold yellow")
        name = s.conversation_name(c)
        room = NAME_ROOM - len(indent) - badges.cell_len
        if len(name) > room:
            name = name[:max(1, room - 1)] + "…"
        t = Text.assemble((indent, ""), (KIND_MARK.get(c["kind"], "·") + " ", "dim"), (name, "bold" if unread else ""))
        return t + badges

    def select(self, cid: str) -> None:
        self.current = cid
        try:
            self.highlighted = self.get_option_index(cid)
        except Exception:
            pass
