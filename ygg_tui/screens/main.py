"""The main screen: conversations | topics, messages, composer | participants and credits.

Here the layout, what is open, and the redraws when the store changes; its key actions are in
key_actions.py, sending in sending.py, the palette's management actions in manage.py."""

from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Header, OptionList, Static, TextArea

from ..keymap import bind, hint
from ..messages import LeftComposer, LoadOlder, ReachedEnd, ReplyTo, Submit
from ..state import Change, Store, thread_key
from ..widgets.composer import Composer
from ..widgets.message_list import MessageList
from ..widgets.needs_human import NeedsHumanBar
from ..widgets.participants import ParticipantsPanel
from ..widgets.sidebar import Sidebar
from ..widgets.topics import NEW, TopicList
from ..words import topic_status
from .exporting import ExportActions
from .key_actions import KeyActions
from .account import AccountActions
from .approving import ApprovalActions
from .scheduling import ScheduleActions
from .loops import LoopActions
from .manage import ManageActions
from .hosting import HostingActions
from .connecting import ConnectedActions
from .revising import ReviseActions
from .threads import ThreadActions
from .cards import CardActions
from .files import FileActions
from .sending import SendActions
from .undoing import UndoActions


class MainScreen(AccountActions, ScheduleActions, LoopActions, ApprovalActions, ManageActions, HostingActions,
                 ConnectedActions, ExportActions, KeyActions, SendActions, ReviseActions, UndoActions, ThreadActions,
                 CardActions, FileActions, Screen):
    # Under NARROW columns the people-and-credits column gives its room to the conversation (at 80 it left the
    # messages 16 columns); `p` shows it again, and hides it.
    NARROW = 120
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (NARROW, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (32, "-tall")]  # a short screen: fewer topic rows, more messages
    BINDINGS = [
        bind("ygg.next_unread", "next_unread"),
        bind("ygg.next_needs_human", "next_needs_human", "Needs person"),
        bind("ygg.search", "search"),
        bind("ygg.help", "help"),
        bind("ygg.new_topic", "new_topic"),
        bind("ygg.fund", "fund"),
        bind("ygg.operator", "operator", "Operator"),
        bind("ygg.compose", "compose", show=False),
        bind("ygg.focus_topics", "focus('topics')", show=False),
        bind("ygg.all_topics", "all_topics", "All topics"),
        bind("ygg.work_graph", "work_graph", "Work graph", show=False),
        bind("ygg.focus_sidebar", "focus('sidebar')", show=False),
        bind("ygg.focus_messages", "focus('messages')", show=False),
        bind("ygg.people", "people", "People"),
        # (priority: they act from the composer too, where they type nothing)
        bind("ygg.switch", "switch", "Switch", priority=True),
        bind("ygg.previous_conversation", "step_conversation(-1)", show=False, priority=True),
        bind("ygg.next_conversation", "step_conversation(1)", show=False, priority=True),
        bind("ygg.sidebar", "toggle_sidebar", "List", priority=True),
        bind("ygg.undo", "undo", "Undo", priority=True),
        *(bind(f"ygg.conversation_{n}", f"conversation_number({n})", show=False, priority=True) for n in range(1, 10)),
    ]

    def __init__(self, store: Store, *, show_clock: bool = True):
        super().__init__()
        self.store = store
        self.show_clock = show_clock
        self.workspace: str | None = None
        self.conversation: str | None = None
        self.topic: str | None = None  # topic id, None for a conversation's topic-less notices
        self.key: str | None = None  # thread key on screen
        self.pending_direct: str | None = None  # a direct conversation that starts with the next message
        self.attached: list[dict] = []  # uploads that go with the next message (screens/files.py)
        self._dirty: set[str] = set()
        self._flush_scheduled = False

    # --- layout ---

    def compose(self) -> ComposeResult:
        s = self.store
        yield Header(icon="ᛉ")
        with Horizontal(id="body"):
            yield Sidebar(s, id="sidebar")
            with Vertical(id="center"):
                yield NeedsHumanBar(s, self.key_hint, id="needs-human")
                yield TopicList(s, self.key_hint, id="topics")
                yield Static("", id="topic-title")
                yield MessageList(id="messages", namer=s.name, me=s.my_id, show_clock=self.show_clock,
                                  woke=s.woke, kinds=s.kinds, thread_of=s.conversation)
                yield Composer(id="composer", candidates=self._candidates, namer=s.name)
            yield ParticipantsPanel(s, self.key_hint, id="participants")
        yield Footer()

    def key_hint(self, id: str) -> str:
        """The key the panels name for an action: as remapped in the config, and "esc then h" while the focus is in
        the composer, where h types an h (they said "h: next" whatever the focus and the config)."""
        return hint(id, getattr(self.app, "keymap_overrides", {}), isinstance(self.focused, TextArea))

    def on_descendant_focus(self) -> None:
        self.redraw("needs_human", "participants")  # (their hints follow the focus)

    def on_descendant_blur(self) -> None:
        self.on_descendant_focus()

    @property
    def messages(self) -> MessageList:
        return self.query_one(MessageList)

    @property
    def composer(self) -> Composer:
        return self.query_one(Composer)

    def on_mount(self) -> None:
        s = self.store
        self.messages.me = s.my_id
        self.query_one(Sidebar).rebuild()
        self.query_one(NeedsHumanBar).rebuild()
        start = getattr(self.app, "start_workspace", None)
        self._open_default(self._find_workspace(start) if start else None)
        self.composer.area.focus()

    def _open_default(self, ws: str | None = None) -> None:
        """Open `ws`'s General, or the first shared workspace's (else the first one's)."""
        s = self.store
        if ws is None:
            shared = [w for w in s.workspaces.values() if not w.personal]
            ws = (shared or list(s.workspaces.values()) or [None])[0]
            ws = ws.id if ws else None
        if ws:
            general = next((c["id"] for c in s.workspaces[ws].conversations.values() if c["kind"] == "general"), None)
            if general:
                self.open_conversation(general)

    def _find_workspace(self, ref: str) -> str | None:
        for w in self.store.workspaces.values():
            if ref in (w.id, w.name):
                return w.id
        return None

    # --- opening things ---

    def open_conversation(self, cid: str, topic: str | None | bool = False) -> None:
        """Show a conversation; open `topic`, or its most recent topic."""
        s = self.store
        w = s.workspace_of_conversation(cid)
        if w is None:
            return
        self.pending_direct = None
        self.workspace, self.conversation = w.id, cid
        sidebar = self.query_one(Sidebar)
        sidebar.select(cid)
        topics = self.query_one(TopicList)
        topics.show(cid)
        if topic is False:
            ts = s.topics_of(cid)
            topic = next((t["id"] for t in ts if t.get("status") != "closed"), ts[0]["id"] if ts else None)
            if topic is None:
                notices = s.threads.get(thread_key(cid, None))
                if not (notices and notices.messages) and not s.unread_by_thread.get(thread_key(cid, None)):
                    self.open_topic(cid, None, empty=True)
                    return
        self.open_topic(cid, topic)

    def open_topic(self, cid: str, topic: str | None, empty: bool = False) -> None:
        s = self.store
        w = s.workspace_of_conversation(cid)
        if w is None:
            return
        if cid != self.conversation:
            self.workspace, self.conversation = w.id, cid
            self.query_one(Sidebar).select(cid)
            self.query_one(TopicList).show(cid)
        self.topic = topic
        key = thread_key(cid, topic)
        self.key = key
        th = s.thread(w.id, cid, topic)
        ml = self.messages
        ml.empty = "No topic yet: write below to open one (it asks for a title)." if empty else "No messages here yet."
        ml.set_messages(th.messages, key=key, more=th.more)
        self.query_one(TopicList).select(key if not empty else NEW)
        self.query_one(ParticipantsPanel).show(w.id, topic, cid)
        self.composer.new_topic = self.composer.only_new = empty
        self.composer.leave_topic()
        self._title()
        self._read()
        self._header()
        if empty:
            ml.fetching = False
            ml.refresh()
        elif not th.loaded:
            ml.fetching = True
            self.load_newest(key)

    def start_direct(self, workspace: str, participant: str) -> None:
        """A direct conversation that does not exist yet: the first message makes it (`dm:<id>`)."""
        s = self.store
        self.workspace, self.conversation, self.topic, self.key = workspace, None, None, None
        self.pending_direct = participant
        self.query_one(TopicList).show(None)
        ml = self.messages
        ml.empty = f"A new direct conversation with {s.name(participant)}: write to start it."
        ml.set_messages([], key=None)
        self.composer.new_topic = self.composer.only_new = True
        self.query_one("#topic-title", Static).update(Text(f"direct › {s.name(participant)} (new)", style="bold"))
        self.query_one(ParticipantsPanel).show(workspace, None)
        self.composer.area.focus()

    @work(group="history", exit_on_error=False)
    async def load_newest(self, key: str) -> None:
        th = self.store.threads[key]
        try:
            await self.app.session.history(th)
        finally:
            if self.key == key:
                self.messages.fetching = False
        if self.key == key:
            self.messages.set_messages(th.messages, key=key, more=th.more)
            self._title()
            self._dirty.add("topics")
            self._schedule()

    @on(LoadOlder)
    def _load_older(self, event: LoadOlder) -> None:
        self.load_older(event.key)

    @work(group="history-older", exit_on_error=False)
    async def load_older(self, key: str) -> None:
        th = self.store.threads.get(key)
        ml = self.messages
        if th is None:
            ml.fetching = False
            return
        try:
            before = len(th.messages)
            added = await self.app.session.history(th, older=True)
        finally:
            ml.fetching = False
        if self.key == key:
            ml.prepend(th.messages[:added], more=th.more)
            if len(th.messages) - added != before:  # live messages arrived meanwhile: redraw from the thread
                ml.set_messages(th.messages, key=key, more=th.more)
            self._title()

    def _title(self) -> None:
        s = self.store
        w = s.workspaces.get(self.workspace or "")
        conv = s.conversation(self.conversation or "")
        where = f"{w.name if w else ''} › {s.conversation_name(conv) if conv else ''}"
        t = Text.assemble((where, "dim"))
        topic = s.topics.get(self.topic or "")
        if topic is not None:
            status = topic_status(topic)
            t.append(" › ", "dim")
            t.append(topic.get("title") or "(untitled)", "bold")
            t.append(f"  [{status}]", "red bold" if status == "needs_human" else "dim")
            if topic.get("budget") is not None:
                t.append(f"  budget {topic['budget']} cr", "yellow" if "budget" in (topic.get("unfunded") or {}).values()
                         else "dim")
        elif self.key and self.topic is None and not self.composer.new_topic:
            t.append(" › notices outside any topic", "italic")
        th = s.threads.get(self.key or "")
        if th is not None and th.loaded:
            t.append(f"   {len(th.messages)} loaded" + (" · older above" if th.more else ""), "dim")
        unseen = s.unread_by_thread.get(self.key or "", 0) if self.key and not self.messages.following else 0
        if unseen:
            t.append(f"   ↓ {unseen} new below", "bold")
        self.query_one("#topic-title", Static).update(t)

    @on(ReachedEnd)
    def _reached_end(self) -> None:
        """Scrolled down to the newest message: what came meanwhile is seen (acked) now."""
        self._read()
        self._title()

    def _header(self) -> None:
        s = self.store
        w = s.workspaces.get(self.workspace or "")
        state = "connected" if getattr(self.app, "connected", True) else "reconnecting…"
        where = (getattr(self.app, "url", "") or "").removeprefix("ws://").rstrip("/")
        self.sub_title = f"@{s.me.get('handle', '?')} · {w.name if w else ''} · {state} to {where}"
        self.title = "Ygg"

    def _read(self) -> None:
        if self.key is None:
            return
        ids = self.store.mark_read(self.key)
        if ids:
            self._dirty |= {"sidebar", "topics"}
            self._schedule()
            self.app.run_worker(self.app.session.ack(ids), group="ack")

    # --- the store changed ---

    def apply_change(self, ch: Change) -> None:
        if not self.is_attached or not self.query(MessageList):  # (closing, or not composed yet: on_mount draws it all)
            return
        for name in ch.gone.values():
            self.notify(f"The workspace {name} is no longer yours: deleted, or you were removed from it.",
                        severity="warning", title="workspace gone")
        if self.workspace in ch.gone:
            self.workspace = self.conversation = self.topic = self.key = None
            self._open_default()
        if ch.gone:
            self.refresh_all()
        if self.key and self.key in ch.threads:
            th = self.store.threads[self.key]
            if th.loaded or self.messages.messages or not self.messages.fetching:
                new = [m for m in ch.threads[self.key]]
                self.messages.append(new)
            if self.messages.following:
                self._read()
            else:  # scrolled up, reading older messages: these stay unread until scrolled down to (ReachedEnd)
                self._title()
            self._dirty.add("title")
        if self.key in ch.revised:  # edited or deleted: drawn again in place
            for m in ch.revised[self.key]:
                self.messages.replace(m)
        for key in ch.threads:
            if key.startswith("notices:") and key.endswith(self.conversation or "\0"):
                self._dirty.add("topics")
        if ch.topics:
            self._dirty |= {"topics", "participants", "needs_human", "sidebar", "title"}
            self._first_topic_came()
        if ch.unread:
            self._dirty |= {"sidebar", "topics"}
        if ch.presence:
            self._dirty.add("participants")
        if ch.approvals:
            self._dirty.add("needs_human")
        if ch.balances:  # (funding asked or given: the banner counts credit waits)
            self._dirty |= {"participants", "sidebar", "needs_human"}
        if ch.members:  # (who left is gone from the list; who joined or changed comes with App._members_moved)
            self._dirty.add("participants")
        if ch.conversations:
            self._dirty.add("sidebar")
        if ch.threads:
            self.threads_moved(ch)
        for ws in ch.unknown_conversations:
            self._reload_conversations(ws)
        if self._dirty:
            self._schedule()

    def _first_topic_came(self) -> None:
        """"No topic yet" on screen and a topic of this conversation arrives: the words say so (they stayed). It is
        not opened for the person: what is unread stays unread, and a request in it rings the bell."""
        if self.topic is not None or not self.conversation or not self.store.topics_of(self.conversation):
            return
        if not self.messages.messages and self.messages.empty.startswith("No topic yet"):
            self.messages.empty = (f"A topic is here now: choose it above ({self.key_hint('ygg.focus_topics')}), or "
                                   "write below to open a new one.")
            self.messages.refresh()

    @work(group="conversations", exit_on_error=False)
    async def _reload_conversations(self, ws: str) -> None:
        await self.app.session.reload_conversations(ws)
        self.messages.refresh_threads()  # (a side thread's state is the conversation's)
        self._dirty |= {"sidebar", "title"}
        self._schedule()

    def redraw(self, *parts: str) -> None:
        """Draw these parts again ("participants", "sidebar", ...), with whatever else is due, once."""
        self._dirty.update(parts)
        self._schedule()

    def _schedule(self) -> None:
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self.call_later(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        dirty, self._dirty = self._dirty, set()
        if "sidebar" in dirty:
            self.query_one(Sidebar).rebuild()
        if "topics" in dirty:
            self.query_one(TopicList).rebuild()
        if "participants" in dirty:
            self.query_one(ParticipantsPanel).rebuild()
        if "needs_human" in dirty:
            self.query_one(NeedsHumanBar).rebuild()
        if "title" in dirty:
            self._title()
        if "header" in dirty:
            self._header()

    def connection_changed(self) -> None:
        self._header()

    def refresh_all(self) -> None:
        self._dirty |= {"sidebar", "topics", "participants", "needs_human", "title", "header"}
        self._schedule()

    # --- choosing ---

    @on(OptionList.OptionSelected, "#sidebar")
    def _conversation_picked(self, event: OptionList.OptionSelected) -> None:
        if event.option.id and not event.option.id.startswith("ws:"):
            self.open_conversation(event.option.id)

    @on(OptionList.OptionSelected, "#topics")
    def _topic_picked(self, event: OptionList.OptionSelected) -> None:
        oid = event.option.id
        if oid == NEW:
            self.action_new_topic()
        elif oid and oid.startswith("notices:"):
            self.open_topic(self.conversation, None)
        elif oid and self.conversation:
            self.open_topic(self.conversation, oid)
            self.messages.focus()

    @on(ReplyTo)
    def _reply(self, event: ReplyTo) -> None:
        self.composer.set_reply(event.message)

    # --- the composer (sending.py sends; textual takes @on handlers only from its own classes, so they are here) ---

    @on(LeftComposer)
    def _left_composer(self) -> None:
        self.messages.focus()  # (the next focus wrapped round to the conversation list)

    @on(Submit)
    def _submit(self, event: Submit) -> None:
        self.send(event.text)

    # --- undo (undoing.py): the offer under the composer, the text back in it ---

    def show_undo(self, said: str | None) -> None:
        self.composer.show_undo(said)
        self.refresh_bindings()

    def undo_available(self) -> bool:
        """While the composer holds new text, ctrl+z there is the text box's own undo."""
        c = self.composer
        return super().undo_available() and not (c.area.has_focus and c.text)

    def sent_taken_back(self, o) -> None:
        c = self.composer
        if c.text.strip():
            c.give_back(o.text)
        else:
            c.clear()
            c._set_text(o.text)
            if o.composer.get("reply_to") is not None and self.topic == o.message.get("topic"):
                c.set_reply(o.composer["reply_to"])
            c.mtype, c.state = o.composer.get("mtype", c.mtype), o.composer.get("state", c.state)
        c.area.focus()
