"""Issue 24 from the TUI's palette: a new host (its key shown once), an agent moved onto it and back, an agent
published and copied from the directory, each against the real server."""

from ygg_server.ops import hosting, listings
from ygg_server.ops.configure import set_pins_admin

from ygg_tui.screens.dialogs import FormScreen, ShownOnce

from .conftest import SIZE, ready, wait_for
from .test_manage import _palette
from .test_manage_forms import fill, told


async def secret_shown(pilot, action: str, **values) -> str:
    """The palette's `action`, its form filled with `values`: the key it shows once."""
    await _palette(pilot, action, FormScreen)
    await fill(pilot, **values)
    shown = await wait_for(pilot, lambda: isinstance(pilot.app.screen, ShownOnce) and pilot.app.screen, what="a key")
    return shown.secret


async def test_a_host_an_agent_moved_onto_it_and_back_and_the_directory(team):
    """Seed 003 §24: "Switching an agent's runtime from hosted back to local clears its host assignment
    completely"; §67: "an agent pinned to a shared workspace cannot be published to the public agent directory"."""
    s = team.server
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert (await secret_shown(pilot, "new host", name="vm-1")).startswith("yggh_")
        await pilot.press("escape")
        host = s.admin(hosting.host, "vm-1")
        await _palette(pilot, "where researcher runs", FormScreen)
        app.screen.query_one("#f-where").value = host
        await pilot.click("#submit")
        await wait_for(pilot, lambda: told(app, "researcher runs on its host"), what="hosted")
        assert s.admin(hosting.runtime, team.ids["researcher"])["host"] == host
        await _palette(pilot, "where researcher runs", FormScreen)
        app.screen.query_one("#f-where").value = "local"
        await pilot.click("#submit")
        await wait_for(pilot, lambda: told(app, "researcher runs locally"), what="local")
        assert s.admin(hosting.runtime, team.ids["researcher"])["runtime"] == "local"
        # researcher is pinned to the shared workspace team: refused, in words
        await _palette(pilot, "publish researcher")
        await pilot.press("y")
        await wait_for(pilot, lambda: told(app, "pinned to a shared workspace"), what="refused")
        s.admin(set_pins_admin, "researcher", None)  # shared everywhere by default: its owner's to publish
        await _palette(pilot, "publish researcher")
        await pilot.press("y")
        await wait_for(pilot, lambda: told(app, "researcher is in the directory"), what="published")
        assert [x["name"] for x in s.admin(listings.directory)] == ["researcher"]
    bob = team.app("bob")
    async with bob.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert (await secret_shown(pilot, "copy an agent from the directory", name="bobs-researcher")).startswith("yggk_")
    assert s.admin(hosting.runtime, team.ids["researcher"])["runtime"] == "local"
