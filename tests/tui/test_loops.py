"""Loops and pulses from the TUI (issue 22: "an agent's [...] loops with their iterations and reasons [...], each
listable, creatable, pausable and deletable by those allowed")."""

from __future__ import annotations

from ygg_tui.screens.dialogs import ConfirmScreen, FormScreen
from ygg_tui.screens.loops import LoopsScreen

from .conftest import SIZE, ready, wait_for
from .test_manage import _palette
from .test_manage_forms import fill, told, titles
from .test_snapshots import quiet


async def test_a_person_starts_a_loop_and_a_pulse_then_pauses_and_deletes_them(team):
    """Seed 003 §38: a Loop "gives the agent a goal and lets it iterate"; §33: an agent "can also wake on its own
    schedule, go through a checklist of things worth checking, and report back"."""
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await wait_for(pilot, lambda: "New loop in team" in titles(app), what="offered")
        await _palette(pilot, "new loop in team", FormScreen)
        await fill(pilot, agent=team.ids["reviewer"], name="notes", goal="collect the release notes", every="5",
                   max_iterations="4")
        await wait_for(pilot, lambda: told(app, "Loop started"), what="the loop started")
        await _palette(pilot, "new pulse in team", FormScreen)
        await fill(pilot, agent=team.ids["reviewer"], name="check", checklist="open topics; credits", every="30")
        await wait_for(pilot, lambda: told(app, "Pulse created"), what="the pulse created")

        await _palette(pilot, "loops and pulses in team", LoopsScreen)
        listed = app.screen.listed
        assert sorted(d["kind"] for d in listed) == ["loop", "pulse"]
        loop = next(d for d in listed if d["kind"] == "loop")
        pulse = next(d for d in listed if d["kind"] == "pulse")
        assert loop["max_iterations"] == 4 and loop["every"] == 300 and loop["status"] == "running"
        assert pulse["text"] == "- open topics\n- credits" and pulse["every"] == 1800
        app.screen.query_one("#loops").highlighted = [d["id"] for d in listed].index(loop["id"])
        await pilot.press("p")
        await wait_for(pilot, lambda: told(app, "Paused the loop"), what="paused")
        await wait_for(pilot, lambda: isinstance(app.screen, LoopsScreen), what="the list again")
        assert next(d for d in app.screen.listed if d["id"] == loop["id"])["paused"] is True
        app.screen.query_one("#loops").highlighted = [d["id"] for d in app.screen.listed].index(pulse["id"])
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="asked")
        await pilot.press("y")
        await wait_for(pilot, lambda: told(app, "Deleted the pulse"), what="deleted")
        await wait_for(pilot, lambda: isinstance(app.screen, LoopsScreen), what="the list again")
        assert [d["kind"] for d in app.screen.listed] == ["loop"]


async def test_a_member_cannot_give_someone_elses_agent_a_loop(team):
    """Issue 22: "by those allowed": loops are made by the agent's owner (or the agent, once allowed)."""
    app = team.app("bob")
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await wait_for(pilot, lambda: "New loop in team" in titles(app), what="offered")
        await wait_for(pilot, lambda: app.store.my_agents is not None, what="my agents known")
        app.screen.new_loop(team.ws)  # (bob has no agent: told so, no form)
        await wait_for(pilot, lambda: told(app, "Loops are given to your own agents"), what="said why")


_ENDED = {"id": "l1", "kind": "loop", "name": "credits notes", "text": "Collect what the handbook says about credits",
          "agent_name": "researcher", "status": "ended", "reason": "no_progress", "waiting": None, "paused": False,
          "detail": "the same report or result 3 iterations in a row", "done": 3, "max_iterations": 6, "spent": 6,
          "budget": 500, "every": 20, "may_manage": True,
          "reports": [{"n": n, "verdict": "continue", "credits": 2, "told": n == 3, "at": 0,
                       "report": "Read 3 handbook notes on “credits”: Credits, Budgets, Funding."} for n in (3, 2, 1)]}
_PULSE = {"id": "p1", "kind": "pulse", "name": "team check", "text": "- topics waiting on a person\n- credits",
          "agent_name": "lead", "every": 600, "paused": False, "may_manage": True,
          "reports": [{"n": 1, "verdict": "report", "credits": 1, "told": False, "at": 0, "report": {
              "summary": "Went through 2 checks: nothing needs you.",
              "items": [{"check": "topics waiting on a person", "status": "ok"}, {"check": "credits", "status": "ok"}]}}]}


def test_loops_screen_snapshot(snap_compare, sync_team):
    """The list: a loop that ended by its safeguard, with its iterations and its reason; a pulse and its report."""
    async def before(pilot):
        await ready(pilot)
        pilot.app.push_screen(LoopsScreen("Loops and pulses in team", [_ENDED, _PULSE]))
        await pilot.pause(0.2)
        quiet(pilot)
        await pilot.pause(0.1)

    assert snap_compare(sync_team.app(), terminal_size=SIZE, run_before=before)
