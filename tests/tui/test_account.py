"""A person's account and consent from the TUI (issue 18): an invitation shown when it arrives and answered from the
palette, a member removed by an owner, signing out ending the session on the server."""

from __future__ import annotations

import json

import websockets

from ygg_server.client import Client
from ygg_server.ops import admin
from ygg_tui.commands import YggCommands

from .conftest import PW, SIZE, ready, wait_for
from .test_manage import _palette


def commands(app) -> dict:
    return {t: cb for t, cb, _ in YggCommands(app.screen)._commands()}


async def test_an_invitation_is_shown_when_it_arrives_and_accepted_from_the_palette(team):
    """Issue 18: "TUI: an invitations list with accept/decline, shown when one arrives"; the agents stay out unless
    the person says so."""
    team.server.admin(admin.add_person, "dave", PW)
    lab = team.server.admin(admin.add_workspace, "lab", "dave")["id"]
    app = team.app("bob")
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        c = Client(team.url, handle="dave", password=PW, timeout=10)
        await c.connect()
        team.clients.append(c)
        await c.call("add_member", workspace=lab, handle="bob")
        await wait_for(pilot, lambda: any("invites you to lab" in str(n.message) for n in app._notifications),
                       what="the invitation said")
        title = "Accept the invitation to lab (from @dave, as member)"
        assert title in commands(app) and "Decline the invitation to lab (from @dave, as member)" in commands(app)
        commands(app)[title]()
        await wait_for(pilot, lambda: lab in app.store.workspaces, what="lab in the sidebar")
        assert not any(t.startswith("Accept the invitation") for t in commands(app)), "answered: no longer offered"


async def test_an_owner_removes_a_member_from_the_palette(team):
    """Issue 18: "remove a member from a workspace … (owners and admins; the TUI's member list …)"."""
    app = team.app("alice")
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await wait_for(pilot, lambda: "Remove @bob from team" in commands(app), what="offered")
        await _palette(pilot, "remove @bob from team")
        await pilot.press("y")
        await wait_for(pilot, lambda: team.bob not in app.store.workspaces[team.ws].members, what="bob gone")
    bob = await team.person("bob")
    assert team.ws not in [w["id"] for w in (await bob.call("list_workspaces"))["workspaces"]]


async def test_signing_out_ends_the_session_on_the_server(team):
    """Issue 18: "sign out from the TUI ends the session on the server"."""
    app = team.app("alice")
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        token = app.session.client.token
        await _palette(pilot, "sign out")
        await pilot.press("y")
        await wait_for(pilot, lambda: app._exit_renderables is not None or not app.is_running, what="exited",
                       timeout=10)
    async with websockets.connect(team.url) as ws:
        await ws.send(json.dumps({"op": "auth", "ref": 1, "token": token}))
        assert json.loads(await ws.recv())["code"] == "unauthenticated"
    assert team.server.admin(lambda c: c.execute("SELECT 1").fetchone()) is not None
    assert app.config.token_for(team.url, "alice") is None
