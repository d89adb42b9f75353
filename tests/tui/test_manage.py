"""Deleting a workspace and leaving an organization from the TUI's command palette (seed 003 §65-66,
seed 002), each asked once more before it is done."""

from textual.command import CommandPalette

from ygg_server.ops import admin

from ygg_tui.commands import YggCommands
from ygg_tui.screens.dialogs import ConfirmScreen

from .conftest import SIZE, ready, wait_for


async def _palette(pilot, words: str, asks=ConfirmScreen) -> None:
    """Run the palette action `words` finds first; wait for the question it asks (a confirmation, a form)."""
    app = pilot.app
    await pilot.press("ctrl+p")
    await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette), what="the palette")
    await pilot.press(*words)
    await pilot.pause(0.3)
    await pilot.press("down", "enter")
    await wait_for(pilot, lambda: isinstance(app.screen, asks), what=asks.__name__)


async def test_the_owner_deletes_a_workspace_from_the_palette(team):
    """Seed 003 §66: "The owner keeps only three things: changing roles, deleting the workspace, and its own
    permanence"; §65: a personal workspace "can never be deleted" (the palette never offers it)."""
    doomed = team.server.admin(admin.add_workspace, "doomed", "alice")["id"]
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        assert doomed in app.store.workspaces
        titles = [t for t, _, _ in YggCommands(app.screen)._commands()]
        assert "Delete workspace doomed" in titles and not any("personal" in t for t in titles if "Delete" in t)
        await _palette(pilot, "delete workspace doomed")
        await pilot.press("n")  # not yet
        await wait_for(pilot, lambda: app.screen is main, what="back")
        assert doomed in app.store.workspaces
        await _palette(pilot, "delete workspace doomed")
        await pilot.press("y")
        await wait_for(pilot, lambda: doomed not in app.store.workspaces, what="the workspace gone")
        await wait_for(pilot, lambda: main.workspace in app.store.workspaces, what="another workspace open")
    alice = await team.person("alice")
    assert doomed not in [w["id"] for w in (await alice.call("list_workspaces"))["workspaces"]]


async def test_a_member_leaves_an_organization_from_the_palette(team):
    """Seed 002: everyone "can create or join more" organizations: bob leaves alice's, and the workspace he
    reached through it goes; team, which he was added to directly, stays."""
    mine = await (await team.person("alice")).call("list_workspaces")
    org = [w["org"] for w in mine["workspaces"] if w["id"] == team.ws][0]
    team.server.admin(admin.add_org_member, org, "bob")
    ops = team.server.admin(admin.add_workspace, "ops", "alice")["id"]
    app = team.app("bob")
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert ops in app.store.workspaces
        titles = [t for t, _, _ in YggCommands(app.screen)._commands() if t.startswith("Leave the organization")]
        assert titles == ["Leave the organization alice's organization (team, ops)"], titles
        await _palette(pilot, "leave the organization")
        await pilot.press("y")
        await wait_for(pilot, lambda: ops not in app.store.workspaces, what="ops gone")
        assert team.ws in app.store.workspaces


async def test_a_workspace_deleted_elsewhere_leaves_the_tui_with_a_word(team):
    """docs/protocol.md: `workspace_gone` tells a subscriber the workspace is no longer theirs. Bob is looking
    at it when its owner deletes it elsewhere: it goes from his list, another one opens, and he is told."""
    doomed = team.server.admin(admin.add_workspace, "doomed", "alice")["id"]
    team.server.admin(admin.add_member, doomed, "bob")
    app = team.app("bob")
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        main._open_default(doomed)
        await wait_for(pilot, lambda: main.workspace == doomed, what="the doomed workspace open")
        team.server.admin(admin.delete_workspace, doomed)
        await wait_for(pilot, lambda: doomed not in app.store.workspaces, what="the workspace gone", timeout=5)
        await wait_for(pilot, lambda: main.workspace in app.store.workspaces, what="another workspace open")
        assert any("no longer yours" in str(n.message) for n in app._notifications), "he is told"


async def test_the_palette_never_offers_to_leave_an_organization_one_owns(team):
    """docs/protocol.md: the last owner cannot leave (`last_owner`): an organization alice owns besides her
    first one is not offered to leave, where bob, a member of it, is offered it."""
    second = team.server.admin(admin.add_org, "second", "alice", "team")["id"]
    team.server.admin(admin.add_workspace, "lab", "alice", org_ref=second)
    team.server.admin(admin.add_org_member, second, "bob")
    for who, offered in (("alice", False), ("bob", True)):
        app = team.app(who)
        async with app.run_test(size=SIZE) as pilot:
            await ready(pilot)
            titles = [t for t, _, _ in YggCommands(app.screen)._commands() if t.startswith("Leave the organization")]
            assert any("second" in t for t in titles) is offered, (who, titles)


async def test_a_workspace_shared_elsewhere_appears_with_a_word(team):
    """docs/protocol.md: `workspace_added` tells a connection that follows workspaces of a new one it reaches:
    alice adds bob to a new workspace, and it appears in his sidebar while he watches, followed and loaded."""
    app = team.app("bob")
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        lab = team.server.admin(admin.add_workspace, "lab", "alice")["id"]
        team.server.admin(admin.add_member, lab, "bob")
        await wait_for(pilot, lambda: lab in app.store.workspaces and app.store.workspaces[lab].conversations,
                       what="the new workspace loaded", timeout=5)
        assert any("lab" in str(n.message) for n in app._notifications), "he is told"
        general = next(c["id"] for c in app.store.workspaces[lab].conversations.values() if c["kind"] == "general")
        app.main.open_conversation(general)
        await wait_for(pilot, lambda: app.main.workspace == lab, what="it opens")


async def test_workspaces_that_went_or_came_while_disconnected_go_and_come_after_the_reconnect(team):
    """docs/protocol.md: `workspace_gone` / `workspace_added` reach the connections open at the time; a TUI that was
    disconnected then (a restart, a laptop asleep) hears neither. After its reconnect it follows again and reloads
    (its resync): a workspace deleted meanwhile goes, with a word, and one shared meanwhile comes. (The resync
    reloaded every workspace it knew: the deleted one answered not_found, so every resync failed, the open topic
    was never refetched, and the dead workspace stayed listed.)"""
    doomed = team.server.admin(admin.add_workspace, "doomed", "bob")["id"]
    app = team.app("bob")
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        main._open_default(doomed)
        await wait_for(pilot, lambda: main.workspace == doomed, what="the doomed workspace open")
        team.server.stop()
        await wait_for(pilot, lambda: not app.connected, what="noticed the drop")
        team.server.admin(admin.delete_workspace, doomed)
        lab = team.server.admin(admin.add_workspace, "lab", "alice")["id"]
        team.server.admin(admin.add_member, lab, "bob")
        team.server.start()
        await wait_for(pilot, lambda: doomed not in app.store.workspaces, what="the deleted workspace gone", timeout=15)
        await wait_for(pilot, lambda: main.workspace in app.store.workspaces, what="another workspace open")
        await wait_for(pilot, lambda: lab in app.store.workspaces and app.store.workspaces[lab].conversations,
                       what="the shared workspace loaded", timeout=5)
        await wait_for(pilot, lambda: any("Reconnected" in str(n.message) for n in app._notifications),
                       what="the resync done")
        assert any("doomed" in str(n.message) and "no longer yours" in str(n.message) for n in app._notifications)
