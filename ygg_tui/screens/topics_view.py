"""T: every topic of the conversation on screen at once (issue 20: "one topic at a time, no view of all a
conversation's topics"), newest activity first: its status, title, each participant's state, and its last
message (who, when, the start of it). ⏎ opens the topic; esc goes back."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label, Static

from ..state import Store, thread_key
from ..words import STATE_MARK, STATUS_MARK, topic_status

STATUS_STYLE = {"needs_human": "bold red", "paused:credits": "bold yellow", "closed": "dim"}


def last_said(store: Store, t: dict, clock, width: int = 60) -> Text:
    """The topic's newest message this client knows (its thread, loaded or delivered), else when it opened; cut to
    `width` cells."""
    th = store.threads.get(thread_key(t["conversation"], t["id"]))
    m = th.messages[-1] if th is not None and th.messages else None
    if m is None:
        when = clock(t.get("created_at") or "") if clock else ""
        return Text("not loaded yet" + (f", opened {when}" if when else ""), style="dim")
    first = (m.get("text") or ("(deleted)" if m.get("deleted") else "")).split("\n")[0]
    first = first if len(first) <= 40 else first[:39] + "…"
    out = Text()
    if clock:
        out.append(f"{clock(m.get('created_at') or '')} ", "dim")
    out.append(store.name(m.get("author", "")), "bold")
    out.append(f": {first}")
    out.truncate(width, overflow="ellipsis")
    return out


def participants(store: Store, t: dict) -> Text:
    out = Text()
    for pid, m in (t.get("members") or {}).items():
        if pid == "system.ygg":
            continue
        st = m.get("state")
        out.append(f"{store.name(pid)} ", "")
        out.append(f"{STATE_MARK.get(st, '·')} ", "red" if st == "needs_human" else "green" if st == "done" else "dim")
    return out


class TopicsScreen(ModalScreen[str | None]):
    """Answers the chosen topic's id, or None."""

    BINDINGS = [Binding("escape,q", "close", "Close")]

    def __init__(self, store: Store, conversation: str, current: str | None, clock=None):
        super().__init__()
        self.store, self.conversation, self.current, self.clock = store, conversation, current, clock

    def compose(self) -> ComposeResult:
        s = self.store
        topics = s.topics_of(self.conversation)
        name = s.conversation_name(s.conversation(self.conversation) or {})
        with Vertical(classes="dialog wide", id="topics-view"):
            yield Label(Text(f"Topics of {name} ({len(topics)})"), classes="dialog-title")
            yield DataTable(id="all-topics", cursor_type="row", zebra_stripes=True)
            yield Static("⏎ opens · esc back · ◐ working ◷ waiting ⚑ needs a person ✓ done", classes="dialog-hint")

    def on_mount(self) -> None:
        s = self.store
        table = self.query_one(DataTable)
        # a narrow screen (80 columns) shows the status by its mark alone, and the last message in what room is left
        narrow = self.app.size.width < 100
        rows = []
        for t in s.topics_of(self.conversation):
            status = topic_status(t)
            style = STATUS_STYLE.get(status, "")
            unread = s.unread_by_thread.get(t["id"], 0)
            title = Text(t.get("title") or "(untitled)", style="bold" if unread else "dim" if status == "closed" else "")
            if unread:
                title.append(f" {unread}", "bold reverse")
            mark = STATUS_MARK.get(status, "‖")
            rows.append((t, [Text(mark if narrow else f"{mark} {status}", style=style), title, participants(s, t)]))
        inner = min(self.app.size.width, 110) - 6  # (the dialog: 110 wide at most, less its border and padding)
        used = sum(max((c.cell_len for _, cells in rows for c in cells[i:i + 1]), default=0) + 2 for i in range(3))
        room = max(16, inner - used - 2)
        table.add_columns("" if narrow else "status", "topic", "participants", "last")
        for t, cells in rows:
            table.add_row(*cells, last_said(s, t, self.clock, room), key=t["id"])
        if self.current is not None and self.current in {t["id"] for t, _ in rows}:
            table.move_cursor(row=table.get_row_index(self.current))
        table.focus()

    @on(DataTable.RowSelected)
    def _chosen(self, event: DataTable.RowSelected) -> None:
        self.dismiss(event.row_key.value)

    def action_close(self) -> None:
        self.dismiss(None)
