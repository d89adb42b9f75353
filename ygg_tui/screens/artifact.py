"""The artifact pane (seed 003 §8-10; issue 21): one artifact on its own, rendered (Markdown for a document or a
page, highlighted source for code), its versions (`[` older, `]` newer), the diff with the version before (`d`),
and the comments on the version shown (`c` writes one, ⏎ posts it). Opened with `a` on a message that posted,
edited or commented on an artifact. The server decides everything (get_artifact, artifact_diff,
comment_artifact); a comment is a message in the topic the artifact's message is in."""

from __future__ import annotations

import asyncio
from pathlib import Path

from rich.syntax import Syntax
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Markdown, Static

from ygg_server.client import Refused
from ygg_server.tools import pdf

from ..words import printable


class ArtifactScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q", "close", "Close"), Binding("left_square_bracket", "older", "Older version"),
                Binding("right_square_bracket", "newer", "Newer version"), Binding("d", "diff", "Diff"),
                Binding("c", "comment", "Comment"), Binding("p", "pdf", "Save as PDF")]
    DEFAULT_CSS = """
    ArtifactScreen #artifact-pane { height: 90%; }
    ArtifactScreen #artifact-body { height: 1fr; border: round $panel; }
    ArtifactScreen #artifact-comments { height: auto; max-height: 8; }
    ArtifactScreen #artifact-comment { display: none; }
    ArtifactScreen #artifact-comment.open { display: block; }
    """

    def __init__(self, workspace: str, artifact: str, version: int | None = None, topic: str | None = None,
                 namer=lambda p: p, clock=lambda iso: iso):
        super().__init__()
        self.workspace, self.artifact, self.version, self.topic = workspace, artifact, version, topic
        self.namer, self.clock = namer, clock
        self.data: dict | None = None
        self.diffing = False

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide", id="artifact-pane"):
            yield Label("Artifact", id="artifact-title", classes="dialog-title")
            yield Static("", id="artifact-meta")
            with VerticalScroll(id="artifact-body"):
                yield Markdown("", id="artifact-markdown")
                yield Static("", id="artifact-source")
            yield Static("", id="artifact-comments")
            yield Input(placeholder="A comment on this version (⏎ posts it, esc closes)", id="artifact-comment")
            yield Static("[ older · ] newer · d diff with the version before · c comment · p save as PDF · esc close",
                         classes="dialog-hint")

    def on_mount(self) -> None:
        self.load()

    @work(group="artifact", exclusive=True, exit_on_error=False)
    async def load(self) -> None:
        fields = {"workspace": self.workspace, "artifact": self.artifact}
        if self.version is not None:
            fields["version"] = self.version
        try:
            self.data = await self.app.session.call("get_artifact", **fields)
        except Refused as e:
            self.query_one("#artifact-meta", Static).update(Text(f"Not available: {e.reason}", style="red"))
            return
        self.version = self.data["version"]
        diff = None
        if self.diffing and self.version > 1:
            diff = await self.app.session.call("artifact_diff", workspace=self.workspace, artifact=self.artifact,
                                               new=self.version)
        await self.show(diff)

    async def show(self, diff: dict | None) -> None:
        d, a = self.data, self.data["artifact"]
        self.query_one("#artifact-title", Label).update(Text(printable(d["title"], one_line=True), style="bold"))
        v = next((x for x in d["versions"] if x["version"] == d["version"]), {})
        meta = (f"{a['kind']}{' · ' + a['language'] if a.get('language') else ''} · version {d['version']} of "
                f"{a['version']} · by {self.namer(v.get('author', ''))}")
        when = self.clock(v.get("at", ""))
        if when:  # (no clock on screen where the config says so: `clock = false`)
            meta += f" · {when}"
        if diff is not None:
            meta += f" · diff with version {diff['old']}"
        self.query_one("#artifact-meta", Static).update(Text(meta, style="dim"))
        md, src = self.query_one("#artifact-markdown", Markdown), self.query_one("#artifact-source", Static)
        if diff is not None or a["kind"] == "code":
            code = "\n".join(diff["diff"]) or "(no change)" if diff is not None else d["body"]
            lexer = "diff" if diff is not None else (a.get("language") or "text")
            src.update(Syntax(code, lexer, theme="ansi_dark", line_numbers=diff is None, word_wrap=True))
            md.display, src.display = False, True
        else:
            await md.update(d["body"])
            md.display, src.display = True, False
        comments = d.get("comments") or []
        lines = Text(f"Comments on version {d['version']} ({len(comments)})", style="bold")
        for c in comments:
            lines.append(f"\n{self.namer(c['author'])}: ", style="bold")
            lines.append(printable(c["text"], one_line=True))
        self.query_one("#artifact-comments", Static).update(lines)

    def _go(self, to: int) -> None:
        if self.data and 1 <= to <= self.data["artifact"]["version"] and to != self.version:
            self.version = to
            self.load()

    def action_older(self) -> None:
        if self.version:
            self._go(self.version - 1)

    def action_newer(self) -> None:
        if self.version:
            self._go(self.version + 1)

    def action_diff(self) -> None:
        self.diffing = not self.diffing
        self.load()

    def action_comment(self) -> None:
        box = self.query_one("#artifact-comment", Input)
        box.add_class("open")
        box.focus()

    async def on_input_submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if not text or self.data is None:
            return
        fields = {"workspace": self.workspace, "artifact": self.artifact, "version": self.version, "text": text,
                  "topic": self.topic or "new"}
        if not self.topic:
            fields["topic_title"] = f"On {self.data['title']}"[:100]
        try:
            await self.app.session.call("comment_artifact", **fields)
        except Refused as e:
            self.notify(e.frame.get("detail") or e.reason, severity="error", title=f"refused: {e.reason}")
            return
        event.input.value = ""
        event.input.remove_class("open")
        self.query_one("#artifact-body").focus()
        self.load()

    async def action_pdf(self) -> None:
        """The version shown saved as a PDF in the exports folder (the same bytes as the `artifact_pdf` tool's)."""
        if self.data is None:
            return
        d = self.data
        name = pdf.filename(d["title"]).removesuffix(".pdf") + f"-v{d['version']}.pdf"
        target = self.app.config.exports_dir / name
        try:
            await asyncio.to_thread(_write, target, pdf.of_artifact(d))
        except OSError as e:
            self.notify(str(e), severity="error", title="not saved")
            return
        self.notify(f"Saved {target}", title="PDF")

    def action_close(self) -> None:
        if self.focused is self.query_one("#artifact-comment", Input):
            self.query_one("#artifact-comment", Input).remove_class("open")
            self.query_one("#artifact-body").focus()
            return
        self.dismiss(None)


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
