"""The Textual app: signs in, owns the store and the session, and hands changes to the screens.

Everything a person sees lives in `screens/` and `widgets/`; `make_app(...)` is how the
CLI, the launcher and the tests build it.
"""

from __future__ import annotations

import asyncio
import gc

from textual import on, work
from textual.app import App
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Static

from ygg_server.client import Client, Refused, plaintext_warning

from .commands import YggCommands
from .config import Config
from .keymap import alt_digits, bind
from .messages import ConnectionChanged, Delivered, Evented, SignedIn
from .session import Session
from .state import Change, Store
from .themes import load_themes
from .words import printable


alt_digits()


class YggApp(App):
    CSS_PATH = "ygg.tcss"
    TITLE = "Ygg"
    COMMANDS = App.COMMANDS | {YggCommands}
    BINDINGS = [
        bind("app.quit", "quit", show=False, priority=True),
        bind("app.palette", "command_palette", show=False, priority=True),
        Binding("ctrl+c", "help_quit", show=False, system=True),
    ]

    def __init__(self, *, url: str | None = None, token: str | None = None, handle: str | None = None,
                 password: str | None = None, workspace: str | None = None, config: Config | None = None,
                 presence_every: float = 15.0):
        super().__init__()
        self.config = config or Config.load()
        self._rang = float("-inf")  # when the bell last rang (loop time)
        self.url = url or self.config.url
        self.token, self.handle, self.password = token, handle or self.config.handle or None, password
        self.start_workspace = workspace
        self.presence_every = presence_every
        self.store = Store()
        self.session: Session | None = None
        self.main = None
        self.operator = None
        self.connected = False
        self.ready = asyncio.Event()
        self.keymap_overrides = dict(self.config.keys)

    def action_command_palette(self) -> None:
        from textual.command import CommandPalette

        from .commands import Palette

        if self.use_command_palette and not CommandPalette.is_open(self):
            self.push_screen(Palette(id="--command-palette"))

    def notify(self, message: str, *, title: str = "", severity: str = "information", timeout: float | None = None,
               markup: bool = False) -> None:
        """Every notice as plain text (screens' `notify` comes here too): they name workspaces, topics and people
        as they were named ("Q[1]", "x [/draft]"), which Textual read as markup (a stray closing tag stopped the
        app)."""
        super().notify(printable(message), title=printable(title, one_line=True), severity=severity, timeout=timeout,
                       markup=False)

    # --- starting ---

    def on_mount(self) -> None:
        for theme in load_themes(self.config.themes_dir):
            self.register_theme(theme)
        self.theme = self.config.theme if self.config.theme in self.available_themes else "ygg-dark"
        if self.keymap_overrides:
            self.set_keymap(self.keymap_overrides)
        token = self.token
        if token is None and self.handle and not self.password:
            token = self.config.token_for(self.url, self.handle)
        if token or (self.handle and self.password):
            self.push_screen(_Connecting())
            self.sign_in(self.url, self.handle, self.password, token)
        else:
            self._ask(self.url, self.handle or "")

    def _ask(self, url: str, handle: str, error: str = "") -> None:
        from .screens.signin import SignInScreen

        screen = SignInScreen(url, handle, error)
        if len(self.screen_stack) > 1:
            self.switch_screen(screen)
        else:
            self.push_screen(screen)

    @on(SignedIn)
    def _signed_in(self, event: SignedIn) -> None:
        self.url, self.handle, self.password = event.url, event.handle, event.password
        self.sign_in(event.url, event.handle, event.password, None)

    @work(exclusive=True, group="signin")
    async def sign_in(self, url: str, handle: str | None, password: str | None, token: str | None) -> None:
        warning = plaintext_warning(url)
        if warning:
            self.notify(warning, severity="warning", title="not encrypted", timeout=15)
        client = Client(url, token=token, handle=handle, password=password, timeout=10.0)
        client.reconnect = False  # the first time, an unreachable server is said at once
        try:
            await client.connect()
            client.reconnect = True
        except Refused:
            await client.close()
            if token and handle and password:
                return self.sign_in(url, handle, password, None)
            self._ask(url, handle or "", "Those credentials were not accepted." if password else
                      "Your session expired: sign in again.")
            return
        except (OSError, ConnectionError, asyncio.TimeoutError) as e:
            await client.close()
            self._ask(url, handle or "", f"Could not reach {url}: {e or 'no answer'}")
            return
        me = client.me or {}
        try:
            self.config.store_token(url, me.get("handle", handle or ""), client.token)
        except OSError:
            pass  # a read-only data dir: sign in again next time
        self.session = Session(client, self.store, self.post_message)
        try:
            await self.session.load()
        except (Refused, ConnectionError, asyncio.TimeoutError) as e:
            await client.close()
            self._ask(url, handle or "", f"Signed in, but loading failed: {e}")
            return
        self.connected = True
        self.store.apply_deliveries(await self.session.backlog())
        from .screens.main import MainScreen

        self.main = MainScreen(self.store, show_clock=self.config.clock)
        await self.switch_screen(self.main)
        self.call_after_refresh(_settle_garbage)
        self.run_worker(self.session.pump_deliveries(), group="pump", name="deliveries")
        self.run_worker(self.session.pump_events(), group="pump", name="events")
        self.run_worker(self.session.watch_connection(self._resynced), group="pump", name="connection")
        if self.presence_every:
            self.set_interval(self.presence_every, self._presence)
        self.ready.set()

    # --- from the session ---

    @on(Delivered)
    def _delivered(self, event: Delivered) -> None:
        self.apply_change(self.store.apply_deliveries(event.frames))

    @on(Evented)
    def _evented(self, event: Evented) -> None:
        ch = Change()
        for f in event.frames:
            ch.merge(self.store.apply_event(f))
            if f.get("kind") == "invitation" and isinstance(f.get("invitation"), dict):
                inv = f["invitation"]
                self.notify(f"{inv.get('inviter')} invites you to {inv.get('name')} as {inv.get('role')}: accept or "
                            "decline from the command palette (ctrl+p, \"invitation\").", title="invitation", timeout=15)
            if f.get("kind") == "approval" and isinstance(f.get("approval"), dict):
                a = f["approval"]
                self.notify(f"{a.get('agent_name')} waits for your approval to run {a.get('tool')}({a.get('arg')}): "
                            "ctrl+p, \"approval\".", title="approval", timeout=15)
        self.apply_change(ch)

    @on(ConnectionChanged)
    def _connection(self, event: ConnectionChanged) -> None:
        self.connected = event.connected
        if self.main is not None:
            self.main.connection_changed()
        if not event.connected:
            self.notify("Connection lost: reconnecting…", severity="warning", timeout=3)

    async def _resynced(self) -> None:
        """After a reconnect: the session reloaded topics and balances; refetch the open topic's newest page."""
        main = self.main
        if main is None:
            return
        if main.key and main.key in self.store.threads:
            th = self.store.threads[main.key]
            await self.session.history(th)
            if not main.is_attached:  # (the app closed meanwhile)
                return
            main.messages.fetching = False
            main.messages.set_messages(th.messages, key=th.key, more=th.more)
        main.refresh_all()
        if self.operator is not None:
            self.operator.refresh_all() if hasattr(self.operator, "refresh_all") else None
        self.notify("Reconnected.", timeout=2)

    def apply_change(self, ch: Change) -> None:
        if not ch:
            return
        if self.operator is not None and self.operator.workspace in ch.gone:
            self._close_operator()  # (no monitor to turn off: the workspace is gone)
        for ws in ch.added:
            self.run_worker(self._workspace_added(ws), group="workspaces", exit_on_error=False)
        for ws, moved in ch.members.items():
            self.run_worker(self._members_moved(ws, *moved), group="members", exit_on_error=False)
        for ws, why in ch.narrowed.items():
            self._narrowed(ws, why)
        if ch.called:
            self._ring(ch.called)
        if ch.quiet and self.session is not None:
            self.run_worker(self.session.ack(ch.quiet), group="ack", exit_on_error=False)
        if self.main is not None:
            self.main.apply_change(ch)
        if self.operator is not None:
            self.operator.apply_change(ch)

    def _ring(self, threads: set[str]) -> None:
        """The terminal's bell (`bell` in config.toml), as irssi or weechat ring on a highlight: a message woke this
        person outside the topic on screen (tmux and terminals mark the window). At most once a second."""
        main = self.main
        if not self.config.bell or (main is not None and self.screen is main and threads == {main.key}):
            return
        now = asyncio.get_running_loop().time()
        if now - self._rang >= 1.0:
            self._rang = now
            self.bell()

    async def _workspace_added(self, ws: str) -> None:
        name = await self.session.add_workspace(ws)
        if name is not None and self.main is not None:
            self.main.refresh_all()
            self.notify(f"You now reach the workspace {name}.", title="new workspace")

    def _close_operator(self) -> None:
        op, self.operator = self.operator, None
        if self.screen is op:
            self.pop_screen()

    def _narrowed(self, ws: str, why: str) -> None:
        """`subscription`: this person may no longer monitor the workspace, or no longer receive from it; an
        operator view of it closes, and the notice says why."""
        name = self.store.workspaces[ws].name
        if self.operator is not None and self.operator.workspace == ws:
            self._close_operator()  # (its monitor is off already: the server narrowed it)
        said = {"no_monitor": f"You no longer monitor {name}: its messages stop here; its topics still show.",
                "no_receive": f"You no longer receive from {name}: nothing more of it comes here."}
        self.notify(said.get(why, f"You follow less of {name} now."), title="permissions", severity="warning")

    async def _members_moved(self, ws: str, joined: list[str], left: list[str], changed: list[str]) -> None:
        """`members`: who left is gone from the list already (Store.apply_event); who joined, and whose role or
        permissions changed, are read with their names, roles and permissions (one's own role too, so what the
        palette offers follows it); a notice says who came, who went and whose standing changed, as a chat says
        "bob left #team"."""
        if joined or changed:
            try:
                await self.session.reload_members(ws)
            except (Refused, ConnectionError, asyncio.TimeoutError, KeyError):  # (the workspace went meanwhile)
                return
        w, main = self.store.workspaces.get(ws), self.main
        if w is None or main is None:
            return
        main.redraw("participants")
        for ids, verb in ((joined, "joined"), (left, "left")):
            if ids:
                self.notify(f"{', '.join(self.store.name(p) for p in ids)} {verb} {w.name}.", title="members")
        said = [f"{self.store.name(p)} is {w.members[p]['role']}" for p in changed if p in w.members]
        if said:
            self.notify(f"Roles or permissions changed in {w.name}: {'; '.join(said)}.", title="members")

    async def _presence(self) -> None:
        if self.session is None or self.main is None or not self.connected:
            return
        ws = self.main.workspace
        if ws is None:
            return
        try:
            changed = await self.session.presence(ws)
        except (Refused, ConnectionError, asyncio.TimeoutError, AttributeError):
            return
        if changed:
            self.main.redraw("participants")

    # --- navigation the palette and screens share ---

    def open_operator(self, workspace: str | None) -> None:
        from .screens.operator import OperatorScreen

        w = self.store.workspaces.get(workspace or "")
        if w is None:
            return
        if not w.monitor:
            self.notify("The operator view needs the monitor permission (owners and admins have it).",
                        severity="warning")
            return
        self.operator = OperatorScreen(self.store, w.id, show_clock=self.config.clock)
        self.push_screen(self.operator)

    def close_operator(self) -> None:
        op, self.operator = self.operator, None
        if op is not None:
            self.pop_screen()
            self.run_worker(self.session.monitor(op.workspace, False), group="monitor")

    def open_direct(self, workspace: str, participant: str) -> None:
        """A direct conversation is made on first use: open it if it exists, else write to start it."""
        s = self.store
        w = s.workspaces[workspace]
        for c in w.conversations.values():
            if c["kind"] == "direct" and set(c.get("members", ())) == {s.my_id, participant}:
                self.main.open_conversation(c["id"])
                return
        self.main.start_direct(workspace, participant)

    def set_theme(self, name: str) -> None:
        self.theme = name
        self.config.theme = name
        try:
            self.config.save()
        except OSError:
            pass

    async def on_unmount(self) -> None:
        gc.unfreeze()  # (what `_settle_garbage` froze is garbage now: collected, as the tests start app after app)
        if self.session is not None:
            await self.session.close()


def _settle_garbage() -> None:
    """Once, after the first screen is drawn: what the app has made so far (Textual's widgets, styles and classes,
    the loaded pages; about 100,000 objects) lives as long as the app, so the garbage collector's full collections
    stop walking it (`gc.freeze`, as long-running Python services do after start-up). Each full collection walked all
    of it, 1/10 s and more on a busy machine, and now and then one fell on a keypress."""
    gc.collect()
    gc.freeze()


class _Connecting(Screen):
    def compose(self):
        yield Static("Connecting to Ygg…", id="connecting")


def make_app(url: str | None = None, token: str | None = None, handle: str | None = None,
             password: str | None = None, workspace: str | None = None, config: Config | None = None,
             **kw) -> YggApp:
    """The one way to build the TUI (CLI, launcher, tests). `token` signs in without a password."""
    return YggApp(url=url, token=token, handle=handle, password=password, workspace=workspace, config=config, **kw)
