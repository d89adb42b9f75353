"""Approvals in the TUI (issue 22: "the request shows in the TUI as a card (Approve, Deny, Always allow, Always
deny) to the people who may decide"; "the needs-a-person queue includes approvals")."""

from __future__ import annotations

from ygg_tui.screens.approving import ApprovalCard
from ygg_tui.widgets.needs_human import NeedsHumanBar

from .conftest import SIZE, ready, wait_for
from .test_manage import _palette
from .test_manage_forms import told, titles


async def test_an_owner_approves_an_agents_call_from_its_card(team):
    """Seed 003 §59: "Others need a person to approve or deny that particular call before it runs"."""
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        bot = await team.agent("researcher")
        asked = await bot.call("request_approval", workspace=team.ws, tool="deploy", arg="staging")
        aid = asked["approval"]["id"]
        await wait_for(pilot, lambda: aid in app.store.approvals, what="the card's event")
        bar = app.screen.query_one(NeedsHumanBar)
        await wait_for(pilot, lambda: "1 approval(s) to decide" in str(bar.render()), what="in the needs-person bar")
        title = next(t for t in titles(app) if t.startswith("Approval: researcher wants deploy(staging)"))
        await _palette(pilot, "approval: researcher", ApprovalCard)
        assert {b.id for b in app.screen.query("Button")} == {"approve", "deny", "always_allow", "always_deny"}
        await pilot.click("#always_allow")
        await wait_for(pilot, lambda: told(app, "Approved: researcher wants to run deploy(staging)"), what="said")
        assert title not in titles(app) and aid not in app.store.approvals
        got = await bot.call("get_approval", workspace=team.ws, id=aid)
        assert got["approval"]["status"] == "approved"
        again = await bot.call("request_approval", workspace=team.ws, tool="deploy", arg="staging")
        assert again["decision"] == "allow", "Always allow kept a standing rule"


async def test_what_came_while_away_is_listed_and_others_cannot_decide(team):
    """Seed 003 §61: an agent "stops mid-task to ask before going on"; only those who may decide see the card."""
    bot = await team.agent("reviewer")
    aid = (await bot.call("request_approval", workspace=team.ws, tool="pay", arg="42 EUR"))["approval"]["id"]
    bob = team.app("bob")
    async with bob.run_test(size=SIZE) as pilot:
        await ready(pilot)
        bob.screen.approvals_in(team.ws)
        await wait_for(pilot, lambda: told(bob, "No approval waits on you here."), what="nothing for bob")
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        app.screen.approvals_in(team.ws)
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalCard), what="the card")
        assert app.screen.approval["id"] == aid
        await pilot.press("d")
        await wait_for(pilot, lambda: told(app, "Denied: reviewer wants to run pay(42 EUR)"), what="denied")


async def test_a_registry_call_held_by_an_ask_rule_is_decided_from_its_card_and_then_runs(team):
    """Issue 23: "Calls that need approval go through the approvals": a server tool call under an `ask` rule shows
    as the same card; approved there, the agent's call runs once."""
    from ygg_server.ops import toolkit

    team.server.admin(toolkit.set_tools, team.ids["researcher"], team.alice, add=["remember"])
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        alice, bot = await team.person("alice"), await team.agent("researcher")
        await alice.call("set_tool_rule", workspace=team.ws, agent="researcher", rule="remember", effect="ask")
        args = {"note": "standup at nine"}
        held = await bot.call("call_tool", workspace=team.ws, tool="remember", arguments=args)
        aid = held["approval"]["id"]
        await wait_for(pilot, lambda: aid in app.store.approvals, what="the card's event")
        await _palette(pilot, "approval: researcher", ApprovalCard)
        await pilot.click("#approve")
        await wait_for(pilot, lambda: aid not in app.store.approvals, what="decided")
        ran = await bot.call("call_tool", workspace=team.ws, tool="remember", arguments=args, approval=aid)
        assert ran["ok"] and ran["result"]["kept"] is True
