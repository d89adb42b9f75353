"""Approvals from the TUI (issue 22, seed 003 §59-61): a tool call an agent waits to run shows as a card, with
Approve, Deny, Always allow and Always deny, to the people who may decide (the agent's owner, the workspace's
owners and admins: the server says who, and refuses the rest). The card comes from the `approval` event (the
needs-person bar counts it) or from the palette's "Approvals to decide in W" (what came while away)."""

from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

ANSWERS = (("approve", "Approve", "success"), ("deny", "Deny", "error"), ("always_allow", "Always allow", "primary"),
           ("always_deny", "Always deny", "warning"))


def what(a: dict) -> str:
    return f"{a.get('agent_name') or a.get('agent')} wants to run {a.get('tool')}({a.get('arg')})"


class ApprovalCard(ModalScreen[str | None]):
    """One request: answers approve, deny, always_allow or always_deny, or None (decide later)."""

    BINDINGS = [Binding("escape", "later", "Later"), Binding("a", "answer('approve')", "Approve"),
                Binding("d", "answer('deny')", "Deny")]

    def __init__(self, approval: dict, where: str):
        super().__init__()
        self.approval, self.where = approval, where

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide", id="approval-card"):
            yield Label("Approve this tool call?", classes="dialog-title")
            yield Static(Text(what(self.approval), style="bold"), id="approval-what")
            yield Static(Text(f"in {self.where}; it expires if nobody answers (the agent is told \"expired\"); "
                              "Always allow or deny keeps a standing rule for this agent, tool and argument here.",
                              style="yellow"), classes="dialog-why")
            with Horizontal(classes="dialog-buttons"):
                for key, label, variant in ANSWERS:
                    yield Button(label, variant=variant, id=key)
            yield Static("a approve · d deny · esc later", classes="dialog-hint")

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id)

    def action_answer(self, how: str) -> None:
        self.dismiss(how)

    def action_later(self) -> None:
        self.dismiss(None)


class ApprovalActions:
    """Mixed into the main screen (uses `ManageActions._ask`)."""

    @work(group="approvals", exit_on_error=False)
    async def decide_approval(self, aid: str) -> None:
        a = self.store.approvals.get(aid)
        if a is None:
            return
        w = self.store.workspaces.get(a["workspace"])
        how = await self.app.push_screen_wait(ApprovalCard(a, w.name if w else a["workspace"]))
        if how is None:
            return
        reply = await self._ask("decide_approval", workspace=a["workspace"], id=aid, answer=how)
        self.store.approvals.pop(aid, None)  # (decided, expired or answered by someone else: no longer offered)
        self.redraw("needs_human")
        if reply:
            rule = f"; standing rule {reply['rule']}" if reply.get("rule") else ""
            self.notify(f"{reply['approval']['status'].capitalize()}: {what(a)}{rule}.")

    @work(group="approvals", exit_on_error=False)
    async def approvals_in(self, ws: str) -> None:
        got = await self._ask("list_approvals", workspace=ws)
        if got is None:
            return
        for a in got["approvals"]:
            self.store.approvals[a["id"]] = a
        self.redraw("needs_human")
        if not got["approvals"]:
            self.notify("No approval waits on you here.", timeout=3)
            return
        self.decide_approval(got["approvals"][0]["id"])
