"""Reminders and routines from the TUI (issue 22: "an agent's routines [...] reminders [...] each listable,
creatable, pausable and deletable by those allowed")."""

from __future__ import annotations

from ygg_tui.screens.dialogs import ConfirmScreen, FormScreen
from ygg_tui.screens.scheduling import SchedulesScreen

from .conftest import SIZE, ready, wait_for
from .test_manage import _palette
from .test_manage_forms import fill, told, titles


async def test_a_person_makes_a_reminder_and_a_routine_then_pauses_and_deletes_them(team):
    """Seed 003 §41: "An agent can set a reminder just as a person can"; §35: "An agent can be given a Routine"."""
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await wait_for(pilot, lambda: "New reminder in team" in titles(app), what="offered")
        await _palette(pilot, "new reminder in team", FormScreen)
        await fill(pilot, text="call the venue", minutes="30", agent=team.ids["researcher"])
        await wait_for(pilot, lambda: told(app, "Reminder set for"), what="the reminder set")
        await _palette(pilot, "new routine in team", FormScreen)
        await fill(pilot, agent=team.ids["reviewer"], name="digest", text="summarise the night", cron="0 8 * * *",
                   tz="Europe/Paris")
        await wait_for(pilot, lambda: told(app, "Routine created"), what="the routine created")

        await _palette(pilot, "reminders and routines in team", SchedulesScreen)
        listed = app.screen.schedules
        assert sorted(s["kind"] for s in listed) == ["reminder", "routine"]
        routine = next(s for s in listed if s["kind"] == "routine")
        assert routine["agent"] == team.ids["reviewer"] and routine["cron"] == "0 8 * * *"
        await pilot.press("down" if listed[0]["kind"] == "reminder" else "home")  # the routine highlighted
        await pilot.pause(0.1)
        ol = app.screen.query_one("#schedules")
        ol.highlighted = [s["id"] for s in listed].index(routine["id"])
        await pilot.press("p")
        await wait_for(pilot, lambda: told(app, "Paused the routine"), what="paused")
        await wait_for(pilot, lambda: isinstance(app.screen, SchedulesScreen), what="the list again")
        assert next(s for s in app.screen.schedules if s["id"] == routine["id"])["paused"] is True
        app.screen.query_one("#schedules").highlighted = [s["id"] for s in app.screen.schedules].index(routine["id"])
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="asked")
        await pilot.press("y")
        await wait_for(pilot, lambda: told(app, "Deleted the routine"), what="deleted")
        await wait_for(pilot, lambda: isinstance(app.screen, SchedulesScreen), what="the list again")
        assert [s["kind"] for s in app.screen.schedules] == ["reminder"]


async def test_a_member_cannot_give_someone_elses_agent_a_routine(team):
    """Issue 22: routines are "created and managed by the agent's owner and by the agent itself"."""
    app = team.app("bob")
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await wait_for(pilot, lambda: "New routine in team" in titles(app), what="offered")
        await wait_for(pilot, lambda: app.store.my_agents is not None, what="my agents known")
        app.screen.new_routine(team.ws)
        await wait_for(pilot, lambda: told(app, "Routines are given to your own agents"), what="said why")


async def test_an_owner_lets_an_agent_make_its_own_routines(team):
    """Seed 003 §35 and issue 22: routines are made "by the agent itself (with the owner's standing permission)"."""
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await wait_for(pilot, lambda: "Let researcher make its own routines" in titles(app), what="offered")
        app.screen.allow_routines(team.ids["researcher"], True)
        await wait_for(pilot, lambda: told(app, "researcher may now make its own routines."), what="allowed")
    bot = await team.agent("researcher")
    made = await bot.call("add_routine", workspace=team.ws, text="check the queue", every=3600)
    assert made["schedule"]["created_by"] == team.ids["researcher"]
