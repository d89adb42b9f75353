"""The main screen's actions behind its keys (`MainScreen.BINDINGS`, `ygg_tui/keymap.py`): focus, the next
unread or needs_human topic, search and jump, help, the operator view, funding."""

from __future__ import annotations

from textual import work

from ..state import thread_key
from ..widgets.sidebar import Sidebar
from ..widgets.topics import NEW, TopicList
from ..words import assignment_text, refusal_sentence
from .dialogs import FundScreen
from .help import HelpScreen
from .search import SearchScreen


class KeyActions:
    """Mixed into the main screen: its `action_*` methods and the workers they start."""

    def action_focus(self, which: str) -> None:
        self.query_one(f"#{which}").focus()

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        if action == "people":
            return self.has_class("-narrow")  # (a wide screen always shows them)
        if action == "undo":
            return self.undo_available()  # (else ctrl+z goes on to the text box's own undo)
        return True

    def action_people(self) -> None:
        self.toggle_class("-people")

    def action_toggle_sidebar(self) -> None:
        """The conversations list steps aside (ctrl+b), and comes back; the focus leaves it first."""
        sidebar = self.query_one(Sidebar)
        if sidebar.has_focus:
            self.composer.area.focus()
        self.toggle_class("-no-sidebar")

    def action_switch(self) -> None:
        """ctrl+k: a palette of conversations only, unread and waiting ones first."""
        from ..commands import Conversations, Palette

        self.app.push_screen(Palette(providers=[Conversations], placeholder="Switch to a conversation…",
                                     id="--command-palette"))

    def action_step_conversation(self, delta: int) -> None:
        """alt+↑/↓: the previous or next conversation of the list, round the ends."""
        order = self.query_one(Sidebar).order
        if order:
            i = order.index(self.conversation) + delta if self.conversation in order else 0
            self.open_conversation(order[i % len(order)])

    def action_conversation_number(self, n: int) -> None:
        """alt+1…9: the list's conversation with that number (WeeChat's buffers)."""
        order = self.query_one(Sidebar).order
        if n <= len(order):
            self.open_conversation(order[n - 1])

    def action_all_topics(self) -> None:
        """T: every topic of this conversation, its state, participants and last message; ⏎ opens one."""
        from ..widgets.message_list import clock
        from .topics_view import TopicsScreen

        cid = self.conversation
        if cid is None:
            self.notify("No conversation is open.", timeout=2)
            return

        def chosen(topic: str | None) -> None:
            if topic is not None and self.conversation == cid:
                self.open_topic(cid, topic)
                self.messages.focus()

        self.app.push_screen(TopicsScreen(self.store, cid, self.topic, clock if self.show_clock else None), chosen)

    def action_work_graph(self, ws: str | None = None) -> None:
        """w: the workspace's work graph (seed 003 §49); ⏎ on a node opens its topic here."""
        from .work_graph import WorkGraphScreen

        ws = ws or self.workspace
        if ws is None:
            self.notify("No workspace is open.", timeout=2)
            return
        self.app.push_screen(WorkGraphScreen(self.store, ws), lambda at: self._open_at(ws, at))

    @work(group="work-graph-open", exit_on_error=False)
    async def _open_at(self, ws: str, at: tuple[str, str | None] | None) -> None:
        if at is None:
            return
        cid, topic = at
        if self.store.conversation(cid) is None:  # (a side thread or conversation made since the list was read)
            await self.app.session.reload_conversations(ws)
            self._dirty.add("sidebar")
            self._schedule()
        self.open_conversation(cid, topic if topic is not None else False)
        self.messages.focus()

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
