"""Loops and pulses from the command palette (issue 22, seed 003 §33-34, §38-40): a workspace's list (one's agents'
loops with their iterations and the reason each stopped; their pulses with their reports), and from it a new loop, a
new pulse, pause or resume, delete, for those allowed (the server says `may_manage`; it refuses the rest)."""

from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList, Static
from textual.widgets.option_list import Option

from .dialogs import Field

REASONS = {"done": "done: the goal is met", "stuck": "stuck: it needs help", "max_iterations": "ended: iterations",
           "budget": "ended: credit budget", "deadline": "ended: deadline", "no_progress": "ended: no progress",
           "unsent": "ended: an iteration could not be sent"}


def line(d: dict) -> Text:
    """One loop or pulse, as the list shows it."""
    if d["kind"] == "loop":
        what = f"⟳ {d['name'] or d['text']}"
        if d["status"] == "running":
            state = f"iteration {d['waiting']} under way" if d["waiting"] else "running"
        else:
            state = REASONS.get(d["reason"], d["reason"] or d["status"])
        how = f"{d['agent_name']} · {state} · {d['done']}/{d['max_iterations']} iterations · " \
              f"{d['spent']}/{d['budget']} credits"
    else:
        what = f"♥ {d['name'] or d['text'].splitlines()[0]}"
        told = sum(1 for r in d["reports"] if r["told"])
        how = f"{d['agent_name']} · every {d['every'] // 60} min · {len(d['reports'])} reports, {told} told"
    out = Text(what[:50], style="bold")
    out.append(f"  {how}" + (" · paused" if d["paused"] else ""), style="dim" if d["paused"] else "")
    return out


def detail(d: dict) -> str:
    """Its reports, latest first: a loop's iterations with their verdicts, and why it stopped; a pulse's checks."""
    out = [d["text"]]
    if d["kind"] == "loop" and d["status"] != "running":
        out.append(f"Stopped ({d['reason']}): {d['detail']}")
    for r in d["reports"]:
        if d["kind"] == "loop":
            out.append(f"#{r['n']} {r['verdict']} · {r['credits']} credits · {r['report']}")
        else:
            rep = r["report"]
            marks = " ".join(("!" if i["status"] == "attention" else "✓") + " " + i["check"] for i in rep["items"])
            out.append(f"#{r['n']} {'told' if r['told'] else 'kept'} · {rep['summary']} {marks}")
    if not d["reports"]:
        out.append("No report yet.")
    return "\n".join(out)


class LoopsScreen(ModalScreen[tuple[str, str] | None]):
    """The list: answers (action, id) — "pause", "delete" — or ("loop" | "pulse", "") for a new one, or None."""

    BINDINGS = [Binding("escape", "cancel", "Close"), Binding("p", "pick('pause')", "Pause/resume"),
                Binding("d", "pick('delete')", "Delete"), Binding("n", "new('loop')", "New loop"),
                Binding("u", "new('pulse')", "New pulse")]

    def __init__(self, title: str, listed: list[dict]):
        super().__init__()
        self.title_text, self.listed = title, listed

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide"):
            yield Label(self.title_text, classes="dialog-title", markup=False)
            if self.listed:
                yield OptionList(*(Option(line(d), id=d["id"]) for d in self.listed), id="loops")
                yield Static(detail(self.listed[0]), id="loop-detail", markup=False)
            else:
                yield Static("No loops or pulses here yet.", id="loops-empty")
            yield Static("n new loop · u new pulse · p pause/resume · d delete · esc close", classes="dialog-hint")

    @on(OptionList.OptionHighlighted)
    def _shown(self, event: OptionList.OptionHighlighted) -> None:
        d = next((x for x in self.listed if x["id"] == event.option.id), None)
        if d is not None:
            self.query_one("#loop-detail", Static).update(detail(d))

    def action_pick(self, action: str) -> None:
        try:
            ol = self.query_one("#loops", OptionList)
        except Exception:
            return
        if ol.highlighted is not None:
            self.dismiss((action, ol.get_option_at_index(ol.highlighted).id))

    def action_new(self, kind: str) -> None:
        self.dismiss((kind, ""))

    def action_cancel(self) -> None:
        self.dismiss(None)


class LoopActions:
    """Mixed into the main screen, beside `ScheduleActions` (whose `_agents` it uses) and `ManageActions`."""

    @work(group="loops", exit_on_error=False)
    async def loops(self, ws: str) -> None:
        w = self.store.workspaces[ws]
        while True:
            got = await self._ask("list_loops", workspace=ws)
            if got is None:
                return
            listed = {d["id"]: d for d in got["loops"] + got["pulses"]}
            picked = await self.app.push_screen_wait(LoopsScreen(f"Loops and pulses in {w.name}",
                                                                 list(listed.values())))
            if picked is None:
                return
            action, lid = picked
            if action in ("loop", "pulse"):
                await (self._new_loop(ws) if action == "loop" else self._new_pulse(ws))
                continue
            d = listed[lid]
            if not d["may_manage"]:
                self.notify("Only the agent's owner changes this one.", severity="warning")
            elif action == "delete":
                if await self._sure(f"Delete the {d['kind']} {d['name'] or d['text'][:40]!r}?",
                                    "It stops, and its reports go with it.", "Delete") and \
                        await self._ask("delete_schedule", workspace=ws, id=lid):
                    self.notify(f"Deleted the {d['kind']}.")
            elif await self._ask("pause_schedule", workspace=ws, id=lid, paused=not d["paused"]):
                self.notify(f"{'Resumed' if d['paused'] else 'Paused'} the {d['kind']}.")

    def _own_agents(self, ws: str) -> list[tuple[str, str]]:
        mine = self.store.my_agents
        return [(n, i) for n, i in self._agents(ws) if mine is None or i in mine]

    @work(group="loops", exit_on_error=False)
    async def new_loop(self, ws: str) -> None:
        await self._new_loop(ws)

    async def _new_loop(self, ws: str) -> None:
        """Seed 003 §38-39: a goal one of your agents iterates on, bounded by its safeguards."""
        agents = self._own_agents(ws)
        if not agents:
            self.notify("Loops are given to your own agents: none of them is in this workspace.", severity="warning")
            return
        fields = [Field("agent", "Agent", value=agents[0][1], choices=agents),
                  Field("name", "Name", placeholder="release notes"),
                  Field("goal", "Goal", required=True,
                        placeholder="Draft the release notes until they cover every change"),
                  Field("every", "Minutes between iterations (empty: continuous)", placeholder="10"),
                  Field("max_iterations", "At most this many iterations", value="10"),
                  Field("budget", "Credit budget", value="500"),
                  Field("hours", "Deadline, in hours", value="24"),
                  Field("stall_after", "No progress after this many same reports", value="3")]

        def op(got: dict) -> tuple[str, dict]:
            every = int(float(got["every"]) * 60) if got["every"] else None
            ints = {k: int(got[k]) for k in ("max_iterations", "budget", "hours", "stall_after")}
            return "add_loop", {"workspace": ws, "agent": got["agent"], "name": got["name"], "goal": got["goal"],
                                "every": every, **ints}

        got, reply = await self._form_op("New loop", fields, "Start", "The agent iterates; the server decides after "
                                         "each iteration whether it goes on.", op)
        if reply:
            self.notify("Loop started: its first iteration runs now.")

    @work(group="loops", exit_on_error=False)
    async def new_pulse(self, ws: str) -> None:
        await self._new_pulse(ws)

    async def _new_pulse(self, ws: str) -> None:
        """Seed 003 §33-34: your agent's own checklist on its own schedule; it messages you only when it matters."""
        agents = self._own_agents(ws)
        if not agents:
            self.notify("A pulse is given to your own agents: none of them is in this workspace.", severity="warning")
            return
        fields = [Field("agent", "Agent", value=agents[0][1], choices=agents),
                  Field("name", "Name", placeholder="team check"),
                  Field("checklist", "Checklist (one check per line, or separated by ;)", required=True,
                        placeholder="topics waiting on a person; colleagues low on credits"),
                  Field("every", "Every N minutes", value="60", required=True)]

        def op(got: dict) -> tuple[str, dict]:
            checks = "\n".join(f"- {c.strip()}" for c in got["checklist"].replace(";", "\n").splitlines() if c.strip())
            return "add_pulse", {"workspace": ws, "agent": got["agent"], "name": got["name"], "checklist": checks,
                                 "every": int(float(got["every"]) * 60)}

        got, reply = await self._form_op("New pulse", fields, "Create", "Each pulse ends with a report kept for you; "
                                         "you get a message only if something needs you.", op)
        if reply:
            self.notify("Pulse created.")
