"""w: the work graph (seed 003 §49; issue 21): how the workspace's work connects, as a tree: conversation → topic →
what it waits on, the delegations and handoffs in it, its artifacts, the side threads and side conversations it
opened; then the agents and the conversations they serve. `a` filters by agent, `s` by state (each asks the server
again: `work_graph` with its filters), `r` asks again as is; ⏎ on a node opens its topic (or conversation) in the
main screen, space folds a branch, esc goes back. The server decides what is there (only what this person reads)."""

from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, Static, Tree

from ygg_server.client import Refused

from ..graph_tree import Branch, build
from ..state import Store

STATES = (None, "open", "needs_human", "credits", "paused", "closed", "ongoing", "resolved", "abandoned")


class WorkGraphScreen(ModalScreen[tuple[str, str | None] | None]):
    """Answers (conversation, topic or None) to open, or None."""

    BINDINGS = [Binding("escape,q", "close", "Close"), Binding("a", "next_agent", "Agent filter"),
                Binding("s", "next_state", "State filter"), Binding("A", "next_agent(-1)", show=False),
                Binding("S", "next_state(-1)", show=False), Binding("r", "reload", "Refresh")]
    DEFAULT_CSS = """
    WorkGraphScreen #work-graph { height: 90%; }
    WorkGraphScreen #work-tree { height: 1fr; border: round $panel; }
    """

    def __init__(self, store: Store, workspace: str):
        super().__init__()
        self.store, self.workspace = store, workspace
        self.agent: str | None = None
        self.state: str | None = None
        self.graph: dict | None = None

    @property
    def agents(self) -> list[str | None]:
        w = self.store.workspaces.get(self.workspace)
        found = sorted((m["id"] for m in (w.members.values() if w else ()) if m.get("kind") == "agent"),
                       key=self.store.name)
        return [None, *found]

    def compose(self) -> ComposeResult:
        w = self.store.workspaces.get(self.workspace)
        with Vertical(classes="dialog wide", id="work-graph"):
            yield Label(Text(f"Work graph of {w.name if w else ''}"), classes="dialog-title")
            yield Static("", id="work-filters")
            tree: Tree = Tree("work", id="work-tree")
            tree.show_root = False
            tree.auto_expand = False
            yield tree
            yield Static("⏎ opens the topic · space folds · a agent · s state · r refresh · esc back",
                         classes="dialog-hint")

    def on_mount(self) -> None:
        self._filters()
        self.query_one(Tree).focus()
        self.load()

    def _filters(self, counts: str = "") -> None:
        agent = self.store.name(self.agent) if self.agent else "all"
        self.query_one("#work-filters", Static).update(
            Text.assemble(("agent: ", "dim"), (agent, "bold"), ("  state: ", "dim"), (self.state or "all", "bold"),
                          (f"  {counts}" if counts else "", "dim")))

    @work(group="work-graph", exclusive=True, exit_on_error=False)
    async def load(self) -> None:
        fields = {k: v for k, v in (("agent", self.agent), ("state", self.state)) if v is not None}
        try:
            self.graph = await self.app.session.call("work_graph", workspace=self.workspace, **fields)
        except Refused as e:
            self.query_one("#work-filters", Static).update(Text(f"Not available: {e.reason}", style="red"))
            return
        self.draw()

    def draw(self) -> None:
        g = self.graph or {}
        kinds = [n["kind"] for n in g.get("nodes", ())]
        counts = ", ".join(f"{n} {k}{'s' if n > 1 else ''}" for k in ("topic", "thread", "artifact")
                           if (n := kinds.count(k)))
        self._filters((counts or "nothing here") + (" (the most recent)" if g.get("more") else ""))
        tree = self.query_one(Tree)
        tree.clear()
        for b in build(g, self._conv_name, self.store.name):
            self._add(tree.root, b)
        tree.root.expand()
        tree.move_cursor_to_line(0)

    def _add(self, parent, b: Branch) -> None:
        if b.children:
            node = parent.add(b.label, data=b.at, expand=True)
            for c in b.children:
                self._add(node, c)
        else:
            parent.add_leaf(b.label, data=b.at)

    def _conv_name(self, n: dict) -> str:
        known = self.store.conversation(n["conversation"])
        if n["kind"] == "thread":
            agents = sorted(self.store.name(p) for p in n.get("members", ()) if p.startswith("agent."))
            return "side thread with " + ", ".join(agents)
        return self.store.conversation_name(known or {"kind": n.get("conversation_kind"), "name": n.get("label"),
                                                      "members": n.get("members", ())})

    def action_reload(self) -> None:
        self.load()

    def action_next_agent(self, step: int = 1) -> None:
        options = self.agents
        i = options.index(self.agent) if self.agent in options else 0
        self.agent = options[(i + step) % len(options)]
        self._filters()
        self.load()

    def action_next_state(self, step: int = 1) -> None:
        self.state = STATES[(STATES.index(self.state) + step) % len(STATES)]
        self._filters()
        self.load()

    @on(Tree.NodeSelected)
    def _chosen(self, event: Tree.NodeSelected) -> None:
        if event.node.data is not None:
            self.dismiss(event.node.data)
        else:
            event.node.toggle()

    def action_close(self) -> None:
        self.dismiss(None)
