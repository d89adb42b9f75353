"""The needs_human queue: topics waiting on a person, always on screen; one key jumps to the next."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from ..state import Store
from ..words import topic_status


class NeedsHumanBar(Static):
    DEFAULT_CSS = """
    NeedsHumanBar { height: auto; max-height: 4; padding: 0 1; background: $boost; }
    NeedsHumanBar.-waiting { background: $error 20%; }
    """

    def __init__(self, store: Store, keys=None, **kw):
        super().__init__("", **kw)
        self.store = store
        self.keys = keys or (lambda id: "h")  # binding id -> the key to name (`MainScreen.key_hint`)

    def rebuild(self) -> None:
        s = self.store
        queue = s.needs_human()
        credits = self.credit_waits()
        approvals = list(getattr(s, "approvals", {}).values())  # tool calls waiting on this person (issue 22)
        self.set_class(bool(queue or approvals), "-waiting")
        if not queue:
            t = Text.assemble(("⚑ ", "dim"), ("Nobody is waiting on a person.", "dim")) if not approvals else Text()
            t = t + self._credits(credits) if credits else t
            self.update(t + self._approvals(approvals) if approvals else t)
            return
        t = Text.assemble(("⚑ ", "bold red"), (f"{len(queue)} waiting on a person", "bold"),
                          (f"  ({self.keys('ygg.next_needs_human')}: next)", "dim"))
        if credits:
            t += self._credits(credits)
        for topic in queue[:3]:
            w = s.workspaces.get(topic["workspace"])
            conv = s.conversation(topic["conversation"])
            where = f"{w.name if w else '?'} › {s.conversation_name(conv) if conv else '?'}"
            asking = [s.name(p) for p, m in (topic.get("members") or {}).items() if m.get("state") == "needs_human"]
            t.append("\n  • ", "red")
            t.append(topic.get("title") or "(untitled)", "bold")
            t.append(f"  {where}", "dim")
            if asking:
                t.append(f"  asked by {', '.join(asking)}", "italic")
        if len(queue) > 3:
            t.append(f"  … and {len(queue) - 3} more", "dim")
        self.update(t + self._approvals(approvals) if approvals else t)

    def _approvals(self, approvals: list[dict]) -> Text:
        a = approvals[0]
        return Text.assemble(("   ✋ ", "bold red"), (f"{len(approvals)} approval(s) to decide", "bold"),
                             (f"  {a.get('agent_name')} wants {a.get('tool')}({a.get('arg')})"[:70], "italic"),
                             ("  (ctrl+p: approval)", "dim"))

    def credit_waits(self) -> int:
        """Topics where an agent waits for credits (paused for them, or an agent in them refused for want of them),
        and agents asking to be funded outside any such topic."""
        s = self.store
        topics = {t["id"] for t in s.topics.values() if t.get("status") != "closed"
                  and (topic_status(t) == "paused:credits" or t.get("unfunded"))}
        agents = {r["agent"] for r in s.funding.values() if r.get("topic") not in topics or r.get("topic") is None}
        return len(topics) + len(agents)

    def _credits(self, n: int) -> Text:
        return Text.assemble(("   $ ", "bold yellow"), (f"{n} waiting for credits", "bold"),
                             (f"  ({self.keys('ygg.fund')}: fund)", "dim"))
