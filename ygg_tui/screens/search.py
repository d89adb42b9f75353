"""/ : search the workspace's messages (search_messages); ⏎ on a result opens it.

A query is words (each found as a word or the start of one) and "quoted phrases". Each result shows who wrote it,
where (the conversation and the topic's title), and a snippet of its text cut on word boundaries, the hits lit."""

from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from ..words import printable


def lit(m: dict) -> Text:
    """A result's snippet (the server cut it on word boundaries) with its hits highlighted."""
    snip = m.get("snippet") or {"text": printable(m.get("text") or "", one_line=True)[:160], "hits": []}
    text = Text(printable(snip.get("text") or "", one_line=True))
    for start, end in snip.get("hits") or ():
        text.stylize("bold reverse", start, end)
    return text


class SearchScreen(ModalScreen[dict | None]):
    BINDINGS = [Binding("escape", "cancel", "Close"), Binding("down", "results", "Results", show=False)]

    def __init__(self, workspace: str, search, namer, conversation_name):
        super().__init__()
        self.workspace = workspace
        self.search = search  # async (ws, query) -> [message]
        self.namer = namer
        self.conversation_name = conversation_name
        self.found: list[dict] = []

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide"):
            yield Static("Search this workspace", classes="dialog-title")
            yield Input(placeholder='words (or their start) and "exact phrases"', id="query")
            yield Static("", id="search-status", classes="dialog-hint")
            yield OptionList(id="results")

    def on_mount(self) -> None:
        self.query_one("#query", Input).focus()

    @on(Input.Submitted, "#query")
    def _go(self, event: Input.Submitted) -> None:
        self.run_search(event.value)

    @work(exclusive=True)
    async def run_search(self, query: str) -> None:
        status = self.query_one("#search-status", Static)
        status.update("searching…")
        try:
            self.found = await self.search(self.workspace, query)
        except Exception as e:  # a refused search is shown, not raised
            status.update(Text(f"search failed: {e}", style="red"))
            return
        results = self.query_one("#results", OptionList)
        results.clear_options()
        for i, m in enumerate(self.found):
            where = self.conversation_name(m.get("conversation"))
            if m.get("topic_title"):
                where += f" › {m['topic_title']}"
            head = Text.assemble((self.namer(m.get("author")), "bold"), (f"  {printable(where, one_line=True)}", "dim"))
            results.add_option(Option(Text("\n").join([head, Text("  ").append_text(lit(m))]), id=str(i)))
        status.update(f"{len(self.found)} found" + ("  (↓ then ⏎ to open)" if self.found else ""))
        if self.found:
            results.highlighted = 0

    def action_results(self) -> None:
        """↓ in the query goes down to the results, as the status line says."""
        results = self.query_one("#results", OptionList)
        if self.found and not results.has_focus:
            results.focus()

    @on(OptionList.OptionSelected, "#results")
    def _open(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.found[int(event.option.id)])

    def action_cancel(self) -> None:
        self.dismiss(None)
