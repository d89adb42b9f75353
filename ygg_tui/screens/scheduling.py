"""Reminders and routines from the command palette (issue 22): a workspace's list (what one may see: one's own
reminders, one's agents' routines and reminders), and from it a new reminder, a new routine, pause or resume,
delete, for those allowed (the server says `may_manage`; it refuses the rest)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList, Static
from textual.widgets.option_list import Option

from .dialogs import Field


def when(us: int) -> str:
    return datetime.fromtimestamp(us / 1e6, tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def line(s: dict) -> Text:
    """One schedule, as the list shows it."""
    what = f"⏰ {s['text']}" if s["kind"] == "reminder" else f"↻ {s['name'] or s['text']}"
    how = f"for {s['owner_name']} by {s['agent_name']}" if s["kind"] == "reminder" else \
        f"{s['agent_name']} · " + (f"cron {s['cron']} ({s['tz']})" if s["cron"] else f"every {s['every'] // 60} min")
    state = "paused" if s["paused"] else "done" if s["next_at"] is None else f"next {when(s['next_at'])}"
    last = f" · ran {s['runs']}×, last {s['last_result']}" if s["runs"] else ""
    out = Text(what[:60], style="bold")
    out.append(f"  {how} · {state}{last}", style="dim" if s["paused"] else "")
    return out


class SchedulesScreen(ModalScreen[tuple[str, str] | None]):
    """The list: answers (action, schedule id) — "pause", "delete" — or ("reminder" | "routine", "") for a new
    one, or None."""

    BINDINGS = [Binding("escape", "cancel", "Close"), Binding("p", "pick('pause')", "Pause/resume"),
                Binding("d", "pick('delete')", "Delete"), Binding("n", "new('reminder')", "New reminder"),
                Binding("r", "new('routine')", "New routine")]

    def __init__(self, title: str, schedules: list[dict]):
        super().__init__()
        self.title_text, self.schedules = title, schedules

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide"):
            yield Label(self.title_text, classes="dialog-title", markup=False)
            if self.schedules:
                yield OptionList(*(Option(line(s), id=s["id"]) for s in self.schedules), id="schedules")
            else:
                yield Static("No reminders or routines here yet.", id="schedules-empty")
            yield Static("n new reminder · r new routine · p pause/resume · d delete · esc close",
                         classes="dialog-hint")

    def action_pick(self, action: str) -> None:
        try:
            ol = self.query_one("#schedules", OptionList)
        except Exception:
            return
        if ol.highlighted is None:
            return
        self.dismiss((action, ol.get_option_at_index(ol.highlighted).id))

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(("pause", event.option.id))

    def action_new(self, kind: str) -> None:
        self.dismiss((kind, ""))

    def action_cancel(self) -> None:
        self.dismiss(None)


class ScheduleActions:
    """Mixed into the main screen, beside `ManageActions` (whose `_ask`, `_sure` and `_form_op` it uses)."""

    @work(group="schedules", exit_on_error=False)
    async def schedules(self, ws: str) -> None:
        w = self.store.workspaces[ws]
        while True:
            got = await self._ask("list_schedules", workspace=ws)
            if got is None:
                return
            listed = {s["id"]: s for s in got["schedules"]}
            picked = await self.app.push_screen_wait(SchedulesScreen(f"Reminders and routines in {w.name}",
                                                                     list(listed.values())))
            if picked is None:
                return
            action, sid = picked
            if action in ("reminder", "routine"):
                await (self._new_reminder(ws) if action == "reminder" else self._new_routine(ws))
                continue
            s = listed[sid]
            if not s["may_manage"]:
                self.notify("Only the agent's owner (or the person reminded) changes this one.", severity="warning")
            elif action == "delete":
                if await self._sure(f"Delete {s['kind']} {s['name'] or s['text'][:40]!r}?", "It will not run again.",
                                    "Delete") and await self._ask("delete_schedule", workspace=ws, id=sid):
                    self.notify(f"Deleted the {s['kind']}.")
            elif await self._ask("pause_schedule", workspace=ws, id=sid, paused=not s["paused"]):
                self.notify(f"{'Resumed' if s['paused'] else 'Paused'} the {s['kind']}.")

    def _agents(self, ws: str) -> list[tuple[str, str]]:
        w = self.store.workspaces[ws]
        return [(self.store.name(m["id"]), m["id"]) for m in w.members.values() if m["kind"] == "agent"]

    @work(group="schedules", exit_on_error=False)
    async def new_reminder(self, ws: str) -> None:
        await self._new_reminder(ws)

    async def _new_reminder(self, ws: str) -> None:
        """Seed 003 §41-42: a reminder, delivered by an agent in a direct conversation with you, here."""
        agents = self._agents(ws)
        if not agents:
            self.notify("A reminder is delivered by an agent of this workspace: there is none.", severity="warning")
            return
        fields = [Field("text", "Remind me of", required=True),
                  Field("minutes", "In how many minutes", value="60", required=True),
                  Field("agent", "Delivered by", value=agents[0][1], choices=agents)]

        def op(got: dict) -> tuple[str, dict]:
            minutes = float(got["minutes"])  # (a ValueError: the form says so)
            at = int((datetime.now(timezone.utc) + timedelta(minutes=minutes)).timestamp() * 1e6)
            return "add_reminder", {"workspace": ws, "text": got["text"], "agent": got["agent"], "at": at}

        got, reply = await self._form_op("New reminder", fields, "Set", "It comes back in your direct conversation "
                                         "with the agent, in this workspace.", op)
        if reply:
            self.notify(f"Reminder set for {when(reply['schedule']['next_at'])}.")

    @work(group="schedules", exit_on_error=False)
    async def new_routine(self, ws: str) -> None:
        await self._new_routine(ws)

    async def _new_routine(self, ws: str) -> None:
        """Seed 003 §35-36: a standing instruction for one of your agents, on a cron schedule or an interval."""
        mine = self.store.my_agents
        agents = [(n, i) for n, i in self._agents(ws) if mine is None or i in mine]  # (None: not known yet)
        if not agents:
            self.notify("Routines are given to your own agents: none of them is in this workspace.",
                        severity="warning")
            return
        fields = [Field("agent", "Agent", value=agents[0][1], choices=agents),
                  Field("name", "Name", placeholder="morning digest"),
                  Field("text", "Instruction", required=True, placeholder="Summarise yesterday's topics"),
                  Field("cron", "Cron schedule (or leave empty)", value="0 8 * * 1-5"),
                  Field("every", "…or every N minutes", placeholder="60"),
                  Field("tz", "Time zone", value="UTC")]

        def op(got: dict) -> tuple[str, dict]:
            every = int(float(got["every"]) * 60) if got["every"] else None
            return "add_routine", {"workspace": ws, "agent": got["agent"], "name": got["name"], "text": got["text"],
                                   "cron": None if every else (got["cron"] or None), "every": every,
                                   "tz": got["tz"] or "UTC"}

        got, reply = await self._form_op("New routine", fields, "Create", "It runs as a task for the agent, in "
                                         "this workspace; at most ten per agent.", op)
        if reply:
            self.notify(f"Routine created; first run {when(reply['schedule']['next_at'])}.")

    @work(group="schedules", exit_on_error=False)
    async def allow_routines(self, agent: str, allow: bool) -> None:
        """Seed 003 §35: the owner's standing permission for its agent to make and manage its own routines."""
        reply = await self._ask("allow_routines", agent=agent, allow=allow)
        if reply:
            name = self.store.name(agent)
            self.notify(f"{name} may now make its own routines." if allow else
                        f"{name} no longer makes or changes its own routines.")
