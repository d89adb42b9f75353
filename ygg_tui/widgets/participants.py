"""Right: who is here (presence), the conversation's party and its Lead, the open topic's states, and credits."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from ..state import Store
from ..words import STATE_MARK, STATE_WORD, topic_status


class ParticipantsPanel(Static):
    DEFAULT_CSS = """
    ParticipantsPanel { width: 34; height: 1fr; padding: 0 1; overflow-y: auto; }
    """

    def __init__(self, store: Store, keys=None, **kw):
        super().__init__("", **kw)
        self.store = store
        self.keys = keys or (lambda id: "f")  # binding id -> the key to name (`MainScreen.key_hint`)
        self.workspace: str | None = None
        self.topic: str | None = None
        self.conversation: str | None = None

    def show(self, workspace: str | None, topic: str | None, conversation: str | None = None) -> None:
        self.workspace, self.topic, self.conversation = workspace, topic, conversation
        self.rebuild()

    def _party(self, t: Text) -> None:
        """Seed 004: the conversation's agents (its party), the Lead marked ★."""
        s = self.store
        conv = s.conversation(self.conversation or "")
        if conv is None or conv.get("kind") == "general":
            return
        w = s.workspaces.get(self.workspace or "")
        agents = sorted((p for p in conv.get("members") or () if (w.members.get(p) or {}).get("kind") == "agent"),
                        key=lambda p: s.name(p).lower())
        if not agents:
            return
        t.append("\nThis party\n" if len(agents) > 1 else "\nThis conversation\n", "bold underline")
        for p in agents:
            lead = p == conv.get("lead")
            t.append("★ " if lead else "· ", "bold yellow" if lead else "dim")
            t.append(s.name(p))
            if lead:
                t.append("  Lead", "bold yellow")
            t.append("\n")

    def rebuild(self) -> None:
        s = self.store
        w = s.workspaces.get(self.workspace or "")
        if w is None:
            self.update("")
            return
        t = Text()
        t.append("People and agents\n", "bold underline")
        members = sorted(w.members.values(), key=lambda m: (m["kind"] != "human", (m.get("name") or "").lower()))
        for m in members:
            on = w.presence.get(m["id"], False)
            t.append("● " if on else "○ ", "green" if on else "dim")
            t.append(s.name(m["id"]), "bold" if m["id"] == s.my_id else "")
            if m["kind"] == "human":
                t.append(f"  {m.get('role', '')}", "dim")
            else:
                bal = w.balances.get(m["id"])
                t.append(f"  {'pool' if bal is None else bal} cr", "yellow" if bal == 0 else "dim")
            t.append("\n")
        self._party(t)
        topic = s.topics.get(self.topic or "")
        if topic is not None:
            t.append("\nThis topic", "bold underline")
            t.append(f"  {topic_status(topic)}\n", "dim")
            for pid, m in (topic.get("members") or {}).items():
                st = m.get("state")
                t.append(f"{STATE_MARK.get(st, '·')} ", "red" if st == "needs_human" else "")
                t.append(s.name(pid))
                t.append(f"  {STATE_WORD.get(st, st)}", "dim")
                if m.get("waiting_for"):
                    t.append(" on " + ", ".join(s.name(x) for x in m["waiting_for"]), "dim")
                t.append("\n")
        t.append("\nCredits\n", "bold underline")
        t.append("workspace pool  ", "")
        t.append(f"{w.pool if w.pool is not None else 0}\n", "bold")
        for m in members:
            if m["kind"] == "agent":
                bal = w.balances.get(m["id"])
                t.append(f"{m['name']}  ", "")
                t.append(f"{'(pool)' if bal is None else bal}\n", "bold yellow" if bal == 0 else "bold")
        requests = [r for r in s.funding.values() if r["workspace"] == w.id]
        for r in requests:
            t.append("\n$ ", "bold yellow")
            t.append(f"{s.name(r['agent'])} ran out of credits", "bold yellow")
            if w.can_fund(r["agent"], s.my_id):
                t.append(f"  ({self.keys('ygg.fund')}: fund)", "dim")
            t.append("\n")
        if w.can_fund_pool or any(w.can_fund(m["id"], s.my_id) for m in members if m["kind"] == "agent"):
            t.append(f"\n{self.keys('ygg.fund')}: fund an agent or the pool", "dim")
        self.update(t)
