"""Middle, top: the conversation's topics with their status and each participant's state."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from ..state import Store, thread_key
from ..words import STATE_MARK, STATUS_MARK, topic_status

NEW = "+new"


class TopicList(OptionList):
    DEFAULT_CSS = """
    TopicList { height: 8; }
    """

    def __init__(self, store: Store, keys=None, **kw):
        super().__init__(**kw)
        self.store = store
        self.keys = keys or (lambda id: "ctrl+n")  # binding id -> the key to name (`MainScreen.key_hint`)
        self.conversation: str | None = None
        self.current: str | None = None  # a thread key

    def show(self, conversation: str | None) -> None:
        self.conversation = conversation
        self.rebuild()

    def rebuild(self) -> None:
        s = self.store
        options = [Option(Text(f"＋ new topic ({self.keys('ygg.new_topic')})", style="dim italic"), id=NEW)]
        if self.conversation:
            for t in s.topics_of(self.conversation):
                options.append(Option(self._prompt(t), id=t["id"]))
            notices = thread_key(self.conversation, None)
            th = s.threads.get(notices)
            if (th and th.messages) or s.unread_by_thread.get(notices):
                n = s.unread_by_thread.get(notices, 0)
                label = Text.assemble(("  ⚙ notices outside any topic", "italic"), (f" {n}" if n else "", "bold reverse"))
                options.append(Option(label, id=notices))
        self.clear_options()
        self.add_options(options)
        if self.current:
            try:
                self.highlighted = self.get_option_index(self.current)
            except Exception:
                pass

    def _prompt(self, t: dict) -> Text:
        s = self.store
        status = topic_status(t)
        unread = s.unread_by_thread.get(t["id"], 0)
        style = {"needs_human": "bold red", "paused:credits": "bold yellow", "closed": "dim"}.get(status, "")
        text = Text.assemble((STATUS_MARK.get(status, "‖") + " ", style),
                             (t.get("title") or "(untitled)", "bold" if unread else ("dim" if status == "closed" else "")),
                             (f"  {status}", style or "dim"))
        if unread:
            text.append(f" {unread}", "bold reverse")
        for pid, m in (t.get("members") or {}).items():
            if pid == "system.ygg":
                continue
            st = m.get("state")
            text.append(f"  {s.name(pid)} ", "dim")
            text.append(f"{STATE_MARK.get(st, '·')} {st or '—'}",
                        "red" if st == "needs_human" else "green" if st == "done" else "")
        return text

    def select(self, key: str | None) -> None:
        self.current = key
        if key is None:
            return
        try:
            self.highlighted = self.get_option_index(key)
        except Exception:
            pass
