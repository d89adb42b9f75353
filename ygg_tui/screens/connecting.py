"""Connected accounts from the command palette (issue 24; seed 003 §62-64): the list (one's own GitHub and Google
accounts and those of one's workspaces), connecting one (for oneself, or for a workspace one administers) and
revoking one. Connecting opens the provider's sign-in page in the browser (and shows its address, to open by hand
on another machine) while a loopback redirect (`ygg_tui/loopback.py`) waits for the code, which goes to the
server: the tokens stay there, encrypted, and never reach this terminal."""

from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList, Static
from textual.widgets.option_list import Option

from ygg_server.client import Refused

from .. import loopback
from .dialogs import Field

WAIT_S = 300.0  # how long the sign-in page has


def line(a: dict, workspaces: dict) -> Text:
    label = {"github": "GitHub", "google": "Google"}.get(a["provider"], a["provider"])
    out = Text(f"{label:<7} {a['login'] or '(unnamed)'}", style="bold")
    whose = "yours" if a["owner_kind"] == "person" else \
        f"workspace {getattr(workspaces.get(a.get('workspace')), 'name', '?')}, shared by its agents"
    out.append(f"  {whose}" + ("" if a["can_revoke"] else " · its admins revoke it"), style="dim")
    return out


class AccountsScreen(ModalScreen[tuple[str, str] | None]):
    """The list: answers ("connect", "") or ("revoke", account id), or None."""

    BINDINGS = [Binding("escape", "cancel", "Close"), Binding("c", "connect", "Connect"),
                Binding("d,delete", "revoke", "Revoke")]

    def __init__(self, accounts: list[dict], workspaces: dict, offered: list[dict]):
        super().__init__()
        self.accounts, self.workspaces, self.offered = accounts, workspaces, offered

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide"):
            yield Label("Connected accounts", classes="dialog-title")
            yield Static(Text("Agents act on these through their GitHub and Google tools: a workspace's account where "
                              "they work, yours only in your own conversations with them.", style="yellow"),
                         classes="dialog-why")
            if self.accounts:
                yield OptionList(*(Option(line(a, self.workspaces), id=a["id"]) for a in self.accounts), id="accounts")
            else:
                yield Static("No account connected yet.", id="accounts-empty")
            offered = ", ".join(p["label"] for p in self.offered) or "none: the server's operator registers them"
            yield Static(f"c connect ({offered}) · d revoke · esc close", classes="dialog-hint")

    def action_connect(self) -> None:
        self.dismiss(("connect", ""))

    def action_revoke(self) -> None:
        try:
            ol = self.query_one("#accounts", OptionList)
        except Exception:
            return
        if ol.highlighted is not None:
            self.dismiss(("revoke", ol.get_option_at_index(ol.highlighted).id))

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(("revoke", event.option.id))

    def action_cancel(self) -> None:
        self.dismiss(None)


class ConnectScreen(ModalScreen[dict | None]):
    """The sign-in under way: the page's address, and what came of it. Answers the account connected, or None."""

    BINDINGS = [Binding("escape", "cancel", "Cancel"), Binding("c", "copy", "Copy the address")]

    def __init__(self, label: str, provider: str, workspace: str | None):
        super().__init__()
        self.label, self.provider, self.workspace = label, provider, workspace
        self.url = ""

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide"):
            yield Label(f"Connect a {self.label} account", classes="dialog-title")
            yield Static(Text(f"Sign in at {self.label} in the browser that opens, or open this address yourself "
                              "(on this machine: it answers to a port here):", style="yellow"), classes="dialog-why")
            yield Static("…", id="connect-url", markup=False)
            yield Static("starting…", id="connect-state", markup=False)
            yield Static("c copy the address · esc cancel", classes="dialog-hint")

    def on_mount(self) -> None:
        self._flow()

    def _show(self, url: str) -> None:
        self.url = url
        self.query_one("#connect-url", Static).update(url)
        self.query_one("#connect-state", Static).update(f"waiting for {self.label}'s answer…")
        try:
            self.app.open_url(url)
        except Exception:  # (no browser here: the address is on screen)
            pass

    @work(exclusive=True, exit_on_error=False)
    async def _flow(self) -> None:
        try:
            out = await loopback.connect(self.app.session.call, self.provider, self._show, self.workspace, WAIT_S)
        except Refused as e:
            self.query_one("#connect-state", Static).update(f"refused ({e.reason}): {e.frame.get('detail', '')}")
            return
        except (loopback.FlowError, ConnectionError) as e:
            self.query_one("#connect-state", Static).update(f"not connected: {e}")
            return
        self.dismiss(out["account"])

    def action_copy(self) -> None:
        if self.url:
            self.app.copy_to_clipboard(self.url)
            self.notify("Copied.", timeout=2)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ConnectedActions:
    """Mixed into the main screen, beside `ManageActions` (whose `_ask`, `_sure` and `_form_op` it uses)."""

    @work(group="connected", exit_on_error=False)
    async def connected_accounts(self) -> None:
        while True:
            got = await self._ask("list_accounts")
            if got is None:
                return
            listed = {a["id"]: a for a in got["accounts"]}
            picked = await self.app.push_screen_wait(AccountsScreen(got["accounts"], self.store.workspaces,
                                                                    got["providers"]))
            if picked is None:
                return
            action, ref = picked
            if action == "connect":
                await self._connect_account(got["providers"])
                continue
            a = listed[ref]
            if not a["can_revoke"]:
                self.notify("A workspace's accounts are revoked by its admins.", severity="warning")
            elif await self._sure(f"Revoke the {a['provider']} account {a['login']}?", "Agents can no longer use it; "
                                  "the provider is told to withdraw Ygg's access.", "Revoke"):
                out = await self._ask("revoke_account", account=ref)
                if out is not None:
                    self.notify(f"Revoked {a['login']}" + ("" if out["revoked_at_provider"] else
                                                           " here (the provider did not confirm: revoke it there too)."))

    async def _connect_account(self, offered: list[dict]) -> None:
        if not offered:
            self.notify("This server offers no provider to connect: its operator registers GitHub or Google.",
                        severity="warning")
            return
        whose = [("me (my own account)", "me")] + [(f"workspace {w.name} (shared by its agents)", w.id)
                                                  for w in self.store.workspaces.values()
                                                  if w.role in ("owner", "admin") and not w.personal]
        got = await self._form("Connect an account", [
            Field("provider", "Provider", offered[0]["provider"], choices=[(p["label"], p["provider"]) for p in offered]),
            Field("owner", "For", "me", choices=whose)], "Connect",
            "Your browser opens the provider's sign-in page; Ygg keeps the token encrypted on the server.")
        if got is None:
            return
        label = next(p["label"] for p in offered if p["provider"] == got["provider"])
        workspace = None if got["owner"] == "me" else got["owner"]
        account = await self.app.push_screen_wait(ConnectScreen(label, got["provider"], workspace))
        if account is not None:
            self.notify(f"Connected {label} account {account['login'] or ''}.")
