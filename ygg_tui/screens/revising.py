"""e, d, v on the selected message: edit one's own (a dialog with its text), delete it (y/n), show its versions.

The server decides (edit_message, delete_message, message_versions); what it answers is shown in place: the list
marks the message "(edited)" or "(deleted)", and everyone it reached sees the same."""

from __future__ import annotations

from rich.text import Text
from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static, TextArea

from ..messages import Revise
from ..words import printable
from .dialogs import ConfirmScreen


class EditArea(TextArea):
    """⏎ saves, ctrl+j starts a new line (as in the composer)."""

    BINDINGS = [Binding("ctrl+j,shift+enter", "newline", "New line", show=False, priority=True)]

    def action_newline(self) -> None:
        self.insert("\n")

    async def _on_key(self, event: events.Key) -> None:
        if event.key == "enter":
            event.prevent_default()
            event.stop()
            self.screen.action_save()
            return
        await super()._on_key(event)


class EditScreen(ModalScreen[str | None]):
    """The message's text to correct: answers the new text, or None (esc, or nothing changed)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel"), Binding("ctrl+s", "save", "Save")]

    def __init__(self, text: str):
        super().__init__()
        self.text = text

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide"):
            yield Label("Edit your message", classes="dialog-title")
            yield EditArea(self.text, id="edit-text", soft_wrap=True)
            yield Static("", id="edit-error")
            yield Static("⏎ save · ctrl+j new line · esc cancel  (the older text stays readable: v)",
                         classes="dialog-hint")

    def on_mount(self) -> None:
        area = self.query_one(EditArea)
        area.focus()
        area.move_cursor(area.document.end)

    def action_save(self) -> None:
        text = self.query_one(EditArea).text
        if not text.strip():
            self.query_one("#edit-error", Static).update(
                Text("A message cannot be edited to nothing: delete it instead (d), or esc.", style="red"))
            return
        self.dismiss(None if text == self.text else text)

    def action_cancel(self) -> None:
        self.dismiss(None)


class VersionsScreen(ModalScreen[None]):
    """A message's texts, oldest first, the current last (message_versions)."""

    BINDINGS = [Binding("escape,enter,v,q", "close", "Close")]

    def __init__(self, versions: list[dict], clock):
        super().__init__()
        self.versions, self.clock = versions, clock

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide"):
            yield Label(f"Versions ({len(self.versions)})", classes="dialog-title")
            with VerticalScroll(id="versions"):
                last = len(self.versions) - 1
                for i, v in enumerate(self.versions):
                    head = f"v{v['version']} · {self.clock(v.get('at') or '')}" + ("  (now)" if i == last else "")
                    yield Static(Text(head, style="bold" if i == last else "dim"))
                    yield Static(Text(printable(v.get("text") or "") or "(deleted)"), classes="version-text")
            yield Static("esc close", classes="dialog-hint")

    def action_close(self) -> None:
        self.dismiss(None)


class ReviseActions:
    """A screen's side of e, d and v on its message list (a mixin of MainScreen and OperatorScreen: `store`)."""

    def on_revise(self, event: Revise) -> None:
        event.stop()
        m = event.message
        if event.how == "versions":
            self.show_versions(m)
            return
        if m.get("author") != self.store.my_id:
            self.notify("Only its author edits or deletes a message.", severity="warning", title=event.how)
        elif m.get("deleted"):
            self.notify("This message was deleted.", severity="warning", title=event.how)
        else:
            self.revise(m, event.how)

    @work(group="revise", exit_on_error=False)
    async def revise(self, m: dict, how: str) -> None:
        back = self.focused  # (the message list it was asked from: main's, or the operator's feed)
        if how == "edit":
            text = await self.app.push_screen_wait(EditScreen(m.get("text") or ""))
            if text is None:
                return
            reply = await self.app.session.revise("edit_message", workspace=m["workspace"], message=m["id"], text=text)
        else:
            preview = printable(m.get("text") or "", one_line=True)[:80]
            if not await self.app.push_screen_wait(ConfirmScreen(
                    "Delete this message?", f"“{preview}” will show as deleted to everyone, its text gone.", "Delete")):
                return
            reply = await self.app.session.revise("delete_message", workspace=m["workspace"], message=m["id"])
        if reply.get("op") in ("edit_message", "delete_message"):
            self.app.apply_change(self.store.apply_revised(reply))
            offer = getattr(self, "undo_offer", None)
            if how == "edit" and hasattr(self, "offer_undo"):
                self.offer_undo("edited", reply["message"], m.get("text") or "")
            elif offer is not None and offer.message["id"] == m["id"]:  # deleted: nothing of it to take back
                self.end_undo()
        else:
            self.notify(f"{reply.get('detail') or reply.get('reason') or reply.get('code')}", severity="error",
                        title=f"refused: {reply.get('reason') or reply.get('code')}")
        if back is not None:
            back.focus()

    @work(group="revise", exit_on_error=False)
    async def show_versions(self, m: dict) -> None:
        from ..widgets.message_list import clock

        back = self.focused
        reply = await self.app.session.revise("message_versions", workspace=m["workspace"], message=m["id"])
        if "versions" not in reply:
            self.notify(str(reply.get("detail") or reply.get("code")), severity="error", title="versions")
            return
        await self.app.push_screen_wait(VersionsScreen(reply["versions"], clock))
        if back is not None:
            back.focus()
