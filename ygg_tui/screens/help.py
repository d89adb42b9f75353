"""? : the keys, as they are after the config's remapping."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ..keymap import ACTIONS, current_keys, key_label

ABOUT = "\n".join((  # one line per idea: the dialog wraps them to its width
    "Ygg: people and agents, side by side.",
    "Messages are requests (they wake whom they address), responses (answer a request; set with r) or informs "
    "(never wake). Your state on a topic: working, waiting, needs_human, done. Leading @names address a message.",
    "Topics marked ⚑ wait on a person: answer in them (h jumps to the next, replying to the question it asks you) "
    "and they resume.",
    "/rulebook in the composer shows this conversation's rulebook for its agents; /rulebook length=300 style=… "
    "interrupt=… language=… sets rules (a rule left empty returns to its default; /rulebook reset, all of them).",
    "/attach PATH in the composer uploads a file that goes with your next message (/detach drops it); s on a message "
    "with files (▤ under it) saves one to a path you choose.",
))


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,question_mark,q", "dismiss", "Close")]

    def compose(self) -> ComposeResult:
        keys = current_keys(getattr(self.app, "keymap_overrides", {}))
        table = Table(box=None, show_header=True, header_style="bold", expand=True)
        table.add_column("keys")
        table.add_column("action")
        table.add_column(Text("id ([keys] in config.toml)"), style="dim", no_wrap=True)  # (Text: "[keys]" is no markup)
        for ident, (_, words) in ACTIONS.items():
            table.add_row(key_label(keys[ident]), words, ident)
        with VerticalScroll(classes="dialog wide"):
            yield Static(ABOUT, classes="dialog-hint")
            yield Static(table)
            yield Static("esc closes · ctrl+p opens the command palette", classes="dialog-hint")

    async def action_dismiss(self, result=None) -> None:
        self.dismiss(None)
