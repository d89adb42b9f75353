"""Left: workspaces and their conversations, with unread counts and attention badges."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from ..state import Store

KIND_ORDER = {"general": 0, "group": 1, "direct": 2}
KIND_MARK = {"general": "#", "group": "⁂", "direct": "@"}


class Sidebar(OptionList):
    """One header per workspace, then its conversations: General, groups, direct ones."""

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
            convs = sorted(w.conversations.values(),
                           key=lambda c: (KIND_ORDER.get(c["kind"], 3), s.conversation_name(c).lower()))
            for c in convs:
                options.append(Option(self._prompt(c), id=c["id"]))
        highlighted = self.highlighted
        self.clear_options()
        self.add_options(options)
        if keep is not None:
            try:
                self.highlighted = self.get_option_index(keep)
            except Exception:
                self.highlighted = highlighted

    def _prompt(self, c: dict) -> Text:
        s = self.store
        unread = s.unread_by_conv.get(c["id"], 0)
        att = s.attention(c["id"])
        t = Text.assemble(("  ", ""), (KIND_MARK.get(c["kind"], "·") + " ", "dim"),
                          (s.conversation_name(c), "bold" if unread else ""))
        if unread:
            t.append(f" {unread}", "bold reverse")
        if att["needs_human"]:
            t.append(f" ⚑{att['needs_human']}", "bold red")
        if att["funding"]:
            t.append(f" ${att['funding']}", "bold yellow")
        return t

    def select(self, cid: str) -> None:
        self.current = cid
        try:
            self.highlighted = self.get_option_index(cid)
        except Exception:
            pass
