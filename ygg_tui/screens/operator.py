"""The operator view: a whole workspace live (subscribe monitor=true).

Every topic with its status and participants' states; every agent's balance and
credit burn; every message with who it woke and who got it as context; filters
by conversation, participant and type.
"""

from __future__ import annotations

from collections import Counter

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Select, Static

from ..keymap import bind
from ..state import Change, Store
from ..widgets.message_list import MessageList
from .revising import ReviseActions
from .undoing import UndoActions
from ..words import STATE_MARK, topic_status
from .dialogs import plain

ALL = "__all__"
TYPES = ("request", "response", "inform", "notice")


class OperatorScreen(ReviseActions, UndoActions, Screen):
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]  # as MainScreen's: credits take less room when narrow
    BINDINGS = [
        bind("operator.back", "back"),
        bind("operator.filter", "filters", "Filters"),
        bind("ygg.help", "help"),
        bind("ygg.undo", "undo", "Undo"),
    ]

    def __init__(self, store: Store, workspace: str, *, show_clock: bool = True):
        super().__init__()
        self.store = store
        self.workspace = workspace
        self.show_clock = show_clock
        self.feed: list[dict] = []
        self._ids: set[str] = set()
        self.filters = {"conversation": ALL, "participant": ALL, "type": ALL}
        self._dirty: set[str] = set()
        self._scheduled = False
        self.ready = False

    def _conversation_options(self) -> list[tuple[str, str]]:
        s = self.store
        w = s.workspaces[self.workspace]
        convs = sorted(w.conversations.values(), key=lambda c: ({"general": 0, "group": 1}.get(c["kind"], 2),
                                                                s.conversation_name(c)))
        return plain([("every conversation", ALL)] + [(s.conversation_name(c), c["id"]) for c in convs])

    def compose(self) -> ComposeResult:
        s = self.store
        w = s.workspaces[self.workspace]
        people = sorted(w.members.values(), key=lambda m: (m["kind"] != "agent", m["name"]))
        yield Header(icon="ᛉ")
        with Horizontal(id="op-filters"):
            yield Select(self._conversation_options(), value=ALL, allow_blank=False, id="f-conversation")
            yield Select(plain([("every participant", ALL)] + [(s.name(m["id"]), m["id"]) for m in people]),
                         value=ALL, allow_blank=False, id="f-participant")
            yield Select([("every type", ALL)] + [(t, t) for t in TYPES], value=ALL, allow_blank=False, id="f-type")
        with Horizontal(id="op-body"):
            with Vertical(id="op-left"):
                yield DataTable(id="op-topics", cursor_type="row", zebra_stripes=True)
                yield Static("", id="op-feed-title")
                yield MessageList(id="op-feed", namer=s.name, me=s.my_id, show_clock=self.show_clock,
                                  woke=s.woke, kinds=s.kinds, empty="Nothing has happened here yet.")
            with Vertical(id="op-right"):
                yield Static("", id="op-credits-title")
                yield DataTable(id="op-agents", cursor_type="row")
                yield Static("", id="op-summary")
        yield Footer()

    def on_mount(self) -> None:
        w = self.store.workspaces[self.workspace]
        self.title = "Ygg · operator"
        self.sub_title = f"{w.name} · everything, live"
        t = self.query_one("#op-topics", DataTable)
        t.add_columns("topic", "conversation", "status", "participants", "msgs", "wakes", "context")
        a = self.query_one("#op-agents", DataTable)
        a.add_columns("agent", "balance", "spent", "sent", "woken", "context")
        self.start()

    @work(group="operator", exit_on_error=False)
    async def start(self) -> None:
        session = self.app.session
        ok = await session.monitor(self.workspace, True)
        if not ok:
            self.notify("Monitoring needs the monitor permission (owners and admins have it).", severity="error")
        w = self.store.workspaces[self.workspace]
        for cid in list(w.conversations):
            try:
                reply = await session.call("history", workspace=self.workspace, conversation=cid, limit=100)
            except Exception:
                continue
            self._add(self.store.take_page(reply.get("messages", [])))
        self.feed.sort(key=lambda m: m["created_at"])
        self.ready = True
        self._dirty |= {"feed", "topics", "agents"}
        self._flush()

    def _add(self, msgs: list[dict]) -> list[dict]:
        fresh = [m for m in msgs if m["id"] not in self._ids and m.get("workspace") == self.workspace]
        for m in fresh:
            self._ids.add(m["id"])
            self.feed.append(m)
        return fresh

    # --- filters ---

    def _keep(self, m: dict) -> bool:
        f = self.filters
        if f["conversation"] != ALL and m.get("conversation") != f["conversation"]:
            return False
        if f["participant"] != ALL:
            p = f["participant"]
            if m.get("author") != p and p not in (m.get("to") or ()) and p not in self.store.woke.get(m["id"], ()):
                return False
        if f["type"] != ALL:
            kind = "notice" if m.get("notice") else m.get("type")
            if kind != f["type"]:
                return False
        return True

    @on(Select.Changed)
    def _filter(self, event: Select.Changed) -> None:
        key = (event.select.id or "").removeprefix("f-")
        if key in self.filters:
            self.filters[key] = event.value
            self._dirty |= {"feed", "topics", "agents"}
            self._schedule()

    def action_filters(self) -> None:
        self.query_one("#f-conversation", Select).focus()

    def action_back(self) -> None:
        self.app.close_operator()

    def action_help(self) -> None:
        from .help import HelpScreen

        self.app.push_screen(HelpScreen())

    # --- live ---

    def apply_change(self, ch: Change) -> None:
        new: list[dict] = []
        for frame in ch.monitor:
            new += self._add([frame["message"]])
        for msgs in ch.threads.values():
            new += self._add(msgs)
        if new and self.ready:
            keep = [m for m in new if self._keep(m)]
            if keep:
                self.query_one("#op-feed", MessageList).append(keep)
            self._dirty |= {"topics", "agents", "feed-title"}
        if ch.topics:
            self._dirty.add("topics")
        if self.ready:  # edited or deleted: drawn again in place (the feed may hold what the store's threads do not)
            feed = self.query_one("#op-feed", MessageList)
            for m in [*(m for msgs in ch.revised.values() for m in msgs), *(f["message"] for f in ch.monitor)]:
                feed.replace(m)
        if self.workspace in ch.unknown_conversations or self.workspace in ch.conversations:
            self._reload_conversations()
        if self.workspace in ch.balances:
            self._dirty.add("agents")
        if self._dirty:
            self._schedule()

    @work(group="op-conversations", exit_on_error=False)
    async def _reload_conversations(self) -> None:
        await self.app.session.reload_conversations(self.workspace)
        select = self.query_one("#f-conversation", Select)
        value = select.value
        select.set_options(self._conversation_options())
        select.value = value if value in {v for _, v in self._conversation_options()} else ALL
        self._dirty |= {"topics", "feed"}
        self._schedule()

    def refresh_all(self) -> None:
        self._dirty |= {"topics", "agents", "feed"}
        self._schedule()

    def _schedule(self) -> None:
        if not self._scheduled:
            self._scheduled = True
            self.call_later(self._flush)

    def _flush(self) -> None:
        self._scheduled = False
        dirty, self._dirty = self._dirty, set()
        if not self.ready:
            return
        if "feed" in dirty:
            self.query_one("#op-feed", MessageList).set_messages([m for m in self.feed if self._keep(m)])
            dirty.add("feed-title")
        if "topics" in dirty:
            self._topics()
        if "agents" in dirty:
            self._agents()
        if "feed-title" in dirty:
            shown = len(self.query_one("#op-feed", MessageList))
            self.query_one("#op-feed-title", Static).update(
                Text.assemble(("Every message", "bold"), (f"  {shown} shown of {len(self.feed)}", "dim"),
                              ("  ⚡ = woke; the rest went as context", "dim")))

    def _counts(self) -> tuple[Counter, Counter, Counter]:
        msgs, wakes, context = Counter(), Counter(), Counter()
        s = self.store
        for m in self.feed:
            if not self._keep(m):
                continue
            t = m.get("topic") or ""
            msgs[t] += 1
            woke = s.woke.get(m["id"], [])
            wakes[t] += len(woke)
            context[t] += s.context.get(m["id"], max(0, len(m.get("to") or ()) - len(woke)))
        return msgs, wakes, context

    def _topics(self) -> None:
        s = self.store
        table = self.query_one("#op-topics", DataTable)
        table.clear()
        msgs, wakes, context = self._counts()
        f = self.filters
        for t in s.topics.values():
            if t["workspace"] != self.workspace:
                continue
            if f["conversation"] != ALL and t["conversation"] != f["conversation"]:
                continue
            if f["participant"] != ALL and f["participant"] not in (t.get("members") or {}):
                continue
            status = topic_status(t)
            conv = s.conversation(t["conversation"])
            states = Text()
            for pid, m in (t.get("members") or {}).items():
                if pid == "system.ygg":
                    continue
                st = m.get("state")
                states.append(f"{s.name(pid)} {STATE_MARK.get(st, '·')} ", "red" if st == "needs_human" else "")
            style = {"needs_human": "bold red", "paused:credits": "bold yellow", "closed": "dim"}.get(status, "")
            table.add_row(Text(t.get("title") or "(untitled)"), Text(s.conversation_name(conv) if conv else "?"),
                          Text(status, style=style), states, msgs[t["id"]], wakes[t["id"]], context[t["id"]],
                          key=t["id"])

    def _agents(self) -> None:
        s = self.store
        w = s.workspaces[self.workspace]
        table = self.query_one("#op-agents", DataTable)
        table.clear()
        spent, sent, woken, ctx = Counter(), Counter(), Counter(), Counter()
        for m in self.feed:
            if not self._keep(m):
                continue
            a = m.get("author")
            spent[a] += m.get("cost") or 0
            sent[a] += 1
            woke = s.woke.get(m["id"], [])
            for p in woke:
                woken[p] += 1
            for p in m.get("to") or ():
                if p not in woke:
                    ctx[p] += 1
        total = 0
        for m in sorted(w.members.values(), key=lambda m: m["name"]):
            if m["kind"] != "agent":
                continue
            if self.filters["participant"] not in (ALL, m["id"]):
                continue
            bal = w.balances.get(m["id"])
            total += spent[m["id"]]
            out = (self.workspace, m["id"]) in s.funding
            table.add_row(Text(m["name"], style="bold yellow" if out else ""),
                          Text("pool" if bal is None else str(bal), style="bold yellow" if bal == 0 else ""),
                          spent[m["id"]], sent[m["id"]], woken[m["id"]], ctx[m["id"]], key=m["id"])
        self.query_one("#op-credits-title", Static).update(
            Text.assemble(("Credits", "bold"), ("  pool ", "dim"), (str(w.pool or 0), "bold"),
                          ("  burned (shown) ", "dim"), (str(total), "bold")))
        nh = sum(1 for t in s.needs_human() if t["workspace"] == self.workspace)
        out = [s.name(a) for (ws, a) in s.funding if ws == self.workspace]
        summary = Text()
        summary.append(f"⚑ {nh} waiting on a person\n", "bold red" if nh else "dim")
        summary.append(f"$ out of credits: {', '.join(out) if out else 'nobody'}\n", "bold yellow" if out else "dim")
        self.query_one("#op-summary", Static).update(summary)
