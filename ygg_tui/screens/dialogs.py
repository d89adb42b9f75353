"""Small modal questions: a new topic's title, funding an agent or the pool, a yes or no, a small form, and a
secret shown once."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, Select, Static

from ygg_server.protocol import names

from ..words import as_sentence


def plain(choices: list[tuple[str, str]]) -> list[tuple[Text, str]]:
    """A choice's label as text, not markup: names people chose ("Q[1]", "x [/draft]") are shown as they are."""
    return [(Text(label), value) for label, value in choices]


class TitlePrompt(ModalScreen[str | None]):
    """A new topic asks for its title."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, suggestion: str = ""):
        super().__init__()
        self.suggestion = suggestion

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label("New topic: what is it about?", classes="dialog-title")
            yield Input(value=self.suggestion, placeholder="A short title, e.g. Review the auth patch", id="title")
            yield Static("", id="title-error")
            yield Static("⏎ open the topic · esc cancel", classes="dialog-hint")

    def on_mount(self) -> None:
        self.query_one("#title", Input).focus()

    @on(Input.Submitted, "#title")
    def _done(self, event: Input.Submitted) -> None:
        if not event.value.strip():  # (⏎ did nothing at all: say why)
            error = "A topic needs a title: a few words, or esc to cancel."
        else:
            try:  # (the server's rule, said here before the message goes: the typing stays to fix)
                self.dismiss(names.clean("title", event.value))
                return
            except names.BadName as e:
                error = f"✗ {as_sentence(e.detail)} Fix it, or esc to cancel."
        self.query_one("#title-error", Static).update(Text(error, style="red"))

    def action_cancel(self) -> None:
        self.dismiss(None)


class FundScreen(ModalScreen[tuple[str | None, int] | None]):
    """Fund an agent (or the workspace pool): answers (agent id or None for the pool, amount)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    POOL = "__pool__"

    def __init__(self, choices: list[tuple[str, str]], preselect: str | None = None, why: str = ""):
        super().__init__()
        self.choices = choices  # (label, agent id or POOL)
        self.preselect = preselect
        self.why = why

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label("Fund credits", classes="dialog-title")
            if self.why:
                yield Static(Text(self.why, style="yellow"), classes="dialog-why")
            yield Select(plain(self.choices), value=self.preselect or self.choices[0][1], allow_blank=False,
                         id="account")
            yield Input(value="100", placeholder="credits", id="amount", type="integer")
            yield Static("", id="fund-error")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Fund", variant="primary", id="fund")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#amount", Input).focus()

    def _answer(self) -> None:
        raw = self.query_one("#amount", Input).value.strip()
        try:
            amount = int(raw)
        except ValueError:
            self.query_one("#fund-error", Static).update(Text("A whole number of credits, please.", style="red"))
            return
        account = self.query_one("#account", Select).value
        self.dismiss((None if account == self.POOL else str(account), amount))

    @on(Input.Submitted, "#amount")
    def _submitted(self) -> None:
        self._answer()

    @on(Button.Pressed, "#fund")
    def _pressed(self) -> None:
        self._answer()

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)


class ConfirmScreen(ModalScreen[bool]):
    """A question that cannot be undone (deleting a workspace, leaving an organization): y or n."""

    BINDINGS = [Binding("escape,n", "cancel", "Cancel"), Binding("y", "confirm", "Yes")]

    def __init__(self, title: str, why: str, yes: str):
        super().__init__()
        self.title_text, self.why, self.yes = title, why, yes

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self.title_text, classes="dialog-title", markup=False)
            yield Static(Text(self.why, style="yellow"), classes="dialog-why")
            with Horizontal(classes="dialog-buttons"):
                yield Button(self.yes, variant="error", id="confirm")
                yield Button("Cancel", id="cancel")
            yield Static("y confirm · n/esc cancel", classes="dialog-hint")

    def on_mount(self) -> None:
        self.query_one("#cancel", Button).focus()

    @on(Button.Pressed, "#confirm")
    def action_confirm(self) -> None:
        self.dismiss(True)

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(False)


@dataclass
class Field:
    """One line of a `FormScreen`: a text input, a choice (`choices`: (label, value)) or a toggle (a bool `value`)."""

    key: str
    label: str
    value: str | bool = ""
    choices: list[tuple[str, str]] | None = None
    placeholder: str = ""
    required: bool = False
    password: bool = False  # a text input whose characters are not shown


class FormScreen(ModalScreen[dict | None]):
    """A management form (a name, a handle and a role, an agent's permissions): answers {key: value}, or None.

    ⏎ in a text field or the submit button answers; a required field left empty is said so, not sent."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, fields: list[Field], submit: str, why: str = "", error: str = ""):
        super().__init__()
        self.title_text, self.fields, self.submit, self.why, self.error = title, fields, submit, why, error

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="dialog form"):
            yield Label(self.title_text, classes="dialog-title", markup=False)
            if self.why:
                yield Static(Text(self.why, style="yellow"), classes="dialog-why")
            for f in self.fields:
                if isinstance(f.value, bool):
                    yield Checkbox(f.label, f.value, id=f"f-{f.key}")
                    continue
                yield Label(f.label, markup=False)
                if f.choices is not None:
                    yield Select(plain(f.choices), value=f.value or f.choices[0][1], allow_blank=False, id=f"f-{f.key}")
                else:
                    yield Input(value=f.value, placeholder=f.placeholder, password=f.password, id=f"f-{f.key}")
            yield Static(Text(self.error, style="red"), id="form-error")
            with Horizontal(classes="dialog-buttons"):
                yield Button(self.submit, variant="primary", id="submit")
                yield Button("Cancel", id="cancel")
            yield Static("tab next · space toggles · ⏎ in a text field submits · esc", classes="dialog-hint")

    def on_mount(self) -> None:
        self.query_one(f"#f-{self.fields[0].key}").focus()

    def values(self) -> dict:
        out = {}
        for f in self.fields:
            w = self.query_one(f"#f-{f.key}")
            out[f.key] = w.value.strip() if isinstance(w, Input) else w.value
        return out

    @on(Input.Submitted)
    @on(Button.Pressed, "#submit")
    def _answer(self) -> None:
        got = self.values()
        empty = [f.label for f in self.fields if f.required and not got[f.key]]
        if empty:
            self.query_one("#form-error", Static).update(Text(f"{empty[0]}: needed.", style="red"))
            return
        self.dismiss(got)

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)


class ShownOnce(ModalScreen[None]):
    """A secret the server shows once (a new agent's API key): selectable, copied with c, gone with esc."""

    BINDINGS = [Binding("escape,enter", "close", "Close"), Binding("c", "copy", "Copy")]

    def __init__(self, title: str, secret: str, why: str):
        super().__init__()
        self.title_text, self.secret, self.why = title, secret, why

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide"):
            yield Label(self.title_text, classes="dialog-title", markup=False)
            yield Static(Text(self.why, style="yellow"), classes="dialog-why")
            yield Static(self.secret, id="secret", markup=False)
            yield Static("c copy to the clipboard · esc close", classes="dialog-hint")

    def action_copy(self) -> None:
        self.app.copy_to_clipboard(self.secret)
        self.notify("Copied.", timeout=2)

    def action_close(self) -> None:
        self.dismiss(None)
