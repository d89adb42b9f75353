"""Signing in to a remote server: url, handle, password. The session token is kept in the data dir."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Button, Footer, Input, Label, Static

from ..messages import SignedIn


class SignInScreen(Screen):
    def __init__(self, url: str = "", handle: str = "", error: str = ""):
        super().__init__()
        self.url, self.handle, self.error = url, handle, error

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog signin"):
            yield Label("Sign in to Ygg", classes="dialog-title")
            yield Input(value=self.url, placeholder="ws://host:8765/", id="url")
            yield Input(value=self.handle, placeholder="handle", id="handle")
            yield Input(placeholder="password", password=True, id="password")
            yield Static(Text(self.error, style="red"), id="signin-error")
            yield Button("Sign in", variant="primary", id="signin")
        yield Footer()

    def on_mount(self) -> None:
        target = "#password" if self.url and self.handle else "#handle" if self.url else "#url"
        self.query_one(target, Input).focus()

    def show_error(self, text: str) -> None:
        self.query_one("#signin-error", Static).update(Text(text, style="red"))

    @on(Input.Submitted)
    def _next(self, event: Input.Submitted) -> None:
        if event.input.id == "password":
            self._go()
        else:
            self.focus_next()

    @on(Button.Pressed, "#signin")
    def _go(self) -> None:
        url = self.query_one("#url", Input).value.strip()
        handle = self.query_one("#handle", Input).value.strip().lstrip("@")
        password = self.query_one("#password", Input).value
        if not (url and handle and password):
            self.show_error("url, handle and password, please")
            return
        self.show_error("signing in…")
        self.app.post_message(SignedIn(url, handle, password))
