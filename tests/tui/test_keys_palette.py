"""Issue 20, defect 6: the palette keeps every key typed fast, and what cannot be undone ranks below what makes."""

from textual.command import CommandPalette

from ygg_server.ops import admin
from textual.widgets import Input

from .conftest import SIZE, ready, wait_for
from .test_composer import _burst


async def _open_palette(pilot):
    await pilot.press("ctrl+p")
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, CommandPalette), what="the palette")


async def test_the_palette_keeps_every_key_typed_fast(team):
    """`fund`, 4 backspaces, `help` typed fast gave "fhel", three times out of three."""
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        for _ in range(3):
            await pilot.press("ctrl+p")
            _burst(app, [*"fund", *["backspace"] * 4, *"help"])
            await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette), what="the palette")
            await pilot.pause(0.5)
            assert app.screen.query_one(Input).value == "help"
            await pilot.press("escape")
            await wait_for(pilot, lambda: not isinstance(app.screen, CommandPalette))


async def test_making_ranks_above_what_cannot_be_undone(team):
    """Revoke, Restrict and Delete ranked above New agent and New workspace for "new" or "a"."""
    team.server.admin(admin.add_workspace, "doomed", "alice")
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        for query, makes in (("new", ("New agent", "New workspace")), ("agent", ("New agent",)),
                             ("workspace", ("New workspace",))):
            await _open_palette(pilot)
            await pilot.press(*query)
            await pilot.pause(0.6)
            listed = [t for t in (getattr(o, "hit", None) for o in app.screen.query_one("CommandList")._options)]
            titles = [h.text for h in listed if h is not None]
            first_bad = min((i for i, t in enumerate(titles) if t.startswith(("Revoke", "Restrict", "Delete",
                                                                              "Leave"))), default=len(titles))
            for title in makes:
                assert title in titles and titles.index(title) < first_bad, (query, titles)
            await pilot.press("escape")
            await wait_for(pilot, lambda: not isinstance(app.screen, CommandPalette))
