"""The main screen: conversations | topics, messages, composer | participants and credits."""

from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Header, OptionList, Static, TextArea

from ygg_server.client import Refused

from .. import rulebook
from ..keymap import bind, hint
from ..messages import LeftComposer, LoadOlder, ReachedEnd, ReplyTo, Submit
from ..state import Change, Store, thread_key
from ..widgets.composer import Composer, leading_mentions
from ..widgets.message_list import MessageList
from ..widgets.needs_human import NeedsHumanBar
from ..widgets.participants import ParticipantsPanel
from ..widgets.sidebar import Sidebar
from ..widgets.topics import NEW, TopicList
from ..words import assignment_text, refusal_sentence, topic_status
from .dialogs import FundScreen, TitlePrompt
from .help import HelpScreen
from .manage import ManageActions
from .search import SearchScreen


class MainScreen(ManageActions, Screen):
    # Under NARROW columns the people-and-credits column gives its room to the conversation (at 80 it left the
    # messages 16 columns); `p` shows it again, and hides it.
    NARROW = 120
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (NARROW, "-wide")]
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
        bind("ygg.focus_sidebar", "focus('sidebar')", show=False),
        bind("ygg.focus_messages", "focus('messages')", show=False),
        bind("ygg.people", "people", "People"),
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
                                  woke=s.woke, kinds=s.kinds)
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
        self.composer.new_topic = empty
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
        self.composer.new_topic = True
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
        self.sub_title = f"@{s.me.get('handle', '?')} · {w.name if w else ''} · {state}"
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
        for key in ch.threads:
            if key.startswith("notices:") and key.endswith(self.conversation or "\0"):
                self._dirty.add("topics")
        if ch.topics:
            self._dirty |= {"topics", "participants", "needs_human", "sidebar", "title"}
        if ch.unread:
            self._dirty |= {"sidebar", "topics"}
        if ch.balances:
            self._dirty |= {"participants", "sidebar"}
        if ch.members:  # (who left is gone from the list; who joined or changed comes with App._members_moved)
            self._dirty.add("participants")
        if ch.conversations:
            self._dirty.add("sidebar")
        for ws in ch.unknown_conversations:
            self._reload_conversations(ws)
        if self._dirty:
            self._schedule()

    @work(group="conversations", exit_on_error=False)
    async def _reload_conversations(self, ws: str) -> None:
        await self.app.session.reload_conversations(ws)
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

    # --- actions ---

    def action_focus(self, which: str) -> None:
        self.query_one(f"#{which}").focus()

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        if action == "people":
            return self.has_class("-narrow")  # (a wide screen always shows them)
        return True

    def action_people(self) -> None:
        self.toggle_class("-people")

    def action_compose(self) -> None:
        self.composer.area.focus()

    def action_new_topic(self) -> None:
        if self.conversation is None:
            return
        self.composer.new_topic = True
        self.composer.leave_topic()
        self.query_one(TopicList).select(NEW)
        self.composer.area.focus()

    def action_next_unread(self) -> None:
        self.next_unread()

    @work(group="next-unread", exit_on_error=False)
    async def next_unread(self) -> None:
        nxt = self.store.next_unread(self.key)
        if nxt is None:
            self.notify("Nothing unread.", timeout=2)
            return
        conv, key = nxt
        if self.store.conversation(conv) is None:  # made a moment ago: not in our list yet
            ws = next((d[1] for d in self.store.unread.values() if d[2] == conv), None)
            if ws:
                await self.app.session.reload_conversations(ws)
                self._dirty.add("sidebar")
                self._schedule()
        self.open_conversation(conv, None if key.startswith("notices:") else key)
        self.messages.focus()

    def action_next_needs_human(self) -> None:
        queue = self.store.needs_human()
        if not queue:
            self.notify("Nobody is waiting on a person.", timeout=2)
            return
        ids = [t["id"] for t in queue]
        i = (ids.index(self.topic) + 1) % len(ids) if self.topic in ids else 0
        t = queue[i]
        self.open_conversation(t["conversation"], t["id"])
        self.composer.area.focus()
        self._answer_the_question(t)

    @work(group="needs-human", exit_on_error=False)
    async def _answer_the_question(self, topic: dict) -> None:
        """When the topic paused on a request to this person, the composer answers it (a response in reply), as
        `r` on it would: written as it was, the answer went as a new request to every participant of the topic,
        woke each agent in it, and left the question pending. Esc writes to everyone instead. A question asked in
        a response or an inform (which cannot be answered in reply) is answered by a request to the asker alone:
        the composer starts with `@asker `, to keep or rub out."""
        th = self.store.threads.get(thread_key(topic["conversation"], topic["id"]))
        if th is None:
            return
        if not th.loaded:
            await self.app.session.history(th)
        asking = {p for p, m in (self.store.topics.get(topic["id"], topic).get("members") or {}).items()
                  if m.get("state") == "needs_human"}
        question = next((m for m in reversed(th.messages) if m.get("author") in asking
                         and m.get("state") == "needs_human"), None)
        if question is None or self.store.my_id not in (question.get("to") or ()):
            return
        c = self.composer
        if self.topic != topic["id"] or c.reply_to is not None or c.text:
            return
        if question.get("type") == "request":
            c.set_reply(question)
        else:
            c.address(self.store.name(question["author"]))

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen())

    def action_explain_assignment(self) -> None:
        """Seed 003 §14: why the selected message went to whom (its score breakdown), as a notification."""
        a = (self.messages.selected or {}).get("assignment")
        if not a:
            self.notify("The selected message was not sent to a capability.", title="Assignment")
            return
        self.notify(assignment_text(a, self.store.name), title="Assignment", timeout=30)

    def action_operator(self) -> None:
        self.app.open_operator(self.workspace)

    def action_search(self) -> None:
        if self.workspace is None:
            return

        def opened(m: dict | None) -> None:
            if m:
                self.jump_to(m)

        s = self.store
        self.app.push_screen(SearchScreen(self.workspace, self.app.session.search, s.name,
                                          lambda c: s.conversation_name(s.conversation(c) or {})), opened)

    @work(group="jump", exit_on_error=False)
    async def jump_to(self, m: dict) -> None:
        """Open a message's topic and put the cursor on it (loading older pages until it is there)."""
        self.open_conversation(m["conversation"], m.get("topic"))
        th = self.store.threads.get(thread_key(m["conversation"], m.get("topic")))
        if th is None:
            return
        if not th.loaded:
            await self.app.session.history(th)
        for _ in range(50):
            if m["id"] in th.ids or not th.more:
                break
            await self.app.session.history(th, older=True)
        self.messages.set_messages(th.messages, key=th.key, more=th.more)
        self.messages.select_id(m["id"])
        self.messages.focus()

    def action_fund(self) -> None:
        self.fund()

    @work(group="fund", exit_on_error=False)
    async def fund(self) -> None:
        s = self.store
        w = s.workspaces.get(self.workspace or "")
        if w is None:
            return
        choices = [(f"{m['name']}  ({'pool' if w.balances.get(m['id']) is None else w.balances.get(m['id'])} cr)", m["id"])
                   for m in sorted(w.members.values(), key=lambda m: m["name"])
                   if m["kind"] == "agent" and w.can_fund(m["id"], s.my_id)]
        if w.can_fund_pool:
            choices.append((f"workspace pool  ({w.pool or 0} cr)", FundScreen.POOL))
        if not choices:
            self.notify("Your role here does not let you fund anyone.", severity="warning")
            return
        wanted = [r for r in s.funding.values() if r["workspace"] == w.id and w.can_fund(r["agent"], s.my_id)]
        pre = wanted[0]["agent"] if wanted else None
        why = f"{s.name(pre)} ran out of credits." if pre else ""
        answer = await self.app.push_screen_wait(FundScreen(choices, pre, why))
        if answer is None:
            return
        agent, amount = answer
        reply = await self.app.session.fund(w.id, amount, agent)
        if reply.get("op") == "funded":
            self.notify(f"Funded {s.name(agent) if agent else 'the pool'}: balance {reply.get('balance')}.")
        else:
            reason = reply.get("reason") or reply.get("code")
            self.notify(f"{refusal_sentence(reason)} {reply.get('detail', '')}", severity="error",
                        title=f"refused: {reason}")

    # --- sending ---

    def _candidates(self) -> list[tuple[str, str]]:
        s = self.store
        w = s.workspaces.get(self.workspace or "")
        if w is None:
            return []
        out = []
        for m in sorted(w.members.values(), key=lambda m: (m["kind"] != "agent", m["name"])):
            if m["id"] == s.my_id:
                continue
            out.append((f"@{m['name']}", "agent" if m["kind"] == "agent" else m.get("role", "person")))
        out += [(f"group:{g}", "group") for g in s.group_names(w.id)]
        return out

    def _recipients(self, text: str) -> list[str]:
        s = self.store
        w = s.workspaces.get(self.workspace or "")
        out = []
        for tok in leading_mentions(text):
            if tok.startswith("group:"):
                out.append(tok)
                continue
            name = tok[1:]
            hit = next((m for m in (w.members.values() if w else ()) if m["name"] == name), None)
            out.append(name if hit and hit["kind"] == "agent" else f"@{name}")
        return out

    async def _rulebook(self, text: str) -> None:
        """`/rulebook …`: show or set this conversation's rulebook (ygg_tui/rulebook.py)."""
        c = self.composer
        if self.conversation is None or self.workspace is None:
            c.show_refusal("unknown_conversation")
            return False
        try:
            change = rulebook.parse(text)
        except rulebook.Usage as e:
            c.show_refusal("bad_rulebook", str(e))
            return False
        where = {"workspace": self.workspace, "conversation": self.conversation}
        try:
            if change == "show":
                reply = await self.app.session.call("get_rulebook", **where)
            else:
                reply = await self.app.session.call("set_rulebook", rulebook=change, **where)
        except Refused as e:
            c.show_refusal(e.reason, e.frame.get("detail", ""))
            return False
        c.done()
        title = "This conversation's rulebook" + ("" if change == "show" else " (saved)")
        self.app.notify(rulebook.describe(reply), title=title, timeout=8)
        return True

    @on(LeftComposer)
    def _left_composer(self) -> None:
        self.messages.focus()  # (the next focus wrapped round to the conversation list)

    @on(Submit)
    def _submit(self, event: Submit) -> None:
        self.send(event.text)

    @work(group="send", exit_on_error=False)
    async def send(self, text: str) -> None:
        """`text` has left the composer (`Composer.submit`): a refusal, a cancelled title or a lost connection
        puts it back in front."""
        c = self.composer
        done = False
        try:
            done = await (self._rulebook(text) if rulebook.is_command(text) else self._send(text))
        finally:
            if not done:
                c.give_back(text)

    async def _send(self, text: str) -> bool:
        c = self.composer
        direct = self.pending_direct
        conversation = f"dm:{direct}" if direct else self.conversation
        if conversation is None or self.workspace is None:
            c.show_refusal("unknown_conversation")
            return False
        new = c.new_topic or self.topic is None or bool(direct)
        fields = {"workspace": self.workspace, "conversation": conversation, "type": c.mtype, "text": text}
        if new:
            first = text.strip().splitlines()[0] if text.strip() else ""
            words = [w for w in first.split() if not w.startswith(("@", "group:"))]
            title = await self.app.push_screen_wait(TitlePrompt(" ".join(words)[:60]))
            if title is None:
                c.area.focus()
                return False
            fields.update(topic="new", title=title)
        else:
            fields["topic"] = self.topic
        to = self._recipients(text)
        if to:
            fields["to"] = to
        if c.state:
            fields["state"] = c.state
        if c.reply_to is not None:
            fields["in_reply_to"] = c.reply_to["id"]
        answered = c.sending(text)
        try:
            reply = await self.app.session.send(**fields)
        finally:
            answered()
        if reply.get("op") == "sent":
            ch = self.store.apply_sent(reply)
            c.done()
            cid = reply["message"]["conversation"]
            if self.store.conversation(cid) is None:
                await self.app.session.reload_conversations(self.workspace)
                self.query_one(Sidebar).rebuild()
            if new:
                self.open_conversation(cid, reply["message"]["topic"])
            self.app.apply_change(ch)
            c.area.focus()
            return True
        c.show_refusal(reply.get("reason") or reply.get("code"), reply.get("detail", ""))
        return False
