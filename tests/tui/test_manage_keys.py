"""More managing from the TUI's command palette: an agent's API key (a new one, or revoked), a topic's budget and a
workspace's groups, each through a y/n or a small form, against the real server; refusals said in words."""

import json

import websockets

from ygg_server.ops import admin
from ygg_server.core import general_id

from ygg_tui.commands import YggCommands
from ygg_tui.screens.dialogs import ConfirmScreen, FormScreen, ShownOnce

from .conftest import SIZE, open_topic, ready, wait_for
from .test_manage import _palette
from .test_manage_forms import fill, titles, told


async def rejected(url: str, key: str) -> bool:
    async with websockets.connect(url) as ws:
        await ws.send(json.dumps({"op": "auth", "ref": 1, "api_key": key}))
        return json.loads(await ws.recv()).get("code") == "unauthenticated"


async def test_an_owner_gets_a_new_key_for_an_agent_and_revokes_another(team):
    """Seed 002: "Agents belong to a person" with "one key each": a new key is shown once and the old one stops at
    once, its connection closed; a revoked agent's key stops and it leaves the workspace. Only the owner may."""
    old = await websockets.connect(team.url)
    await old.send(json.dumps({"op": "auth", "ref": 1, "api_key": team.keys["researcher"]}))
    assert json.loads(await old.recv())["op"] == "session"
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await _palette(pilot, "new api key for researcher")
        await pilot.press("y")
        shown = await wait_for(pilot, lambda: isinstance(app.screen, ShownOnce) and app.screen, what="the new key")
        key = shown.secret
        assert key.startswith("yggk_") and key != team.keys["researcher"]
        await pilot.press("escape")
        await wait_for(pilot, lambda: old.close_code == 1008, what="the old key's connection closed")
        await _palette(pilot, "revoke agent reviewer")
        await pilot.press("y")
        await wait_for(pilot, lambda: told(app, "Revoked reviewer"), what="revoked")
        await wait_for(pilot, lambda: team.ids["reviewer"] not in app.store.workspaces[team.ws].members,
                       what="reviewer gone from team")
        assert not [t for t in titles(app) if "reviewer" in t and t.startswith(("Revoke agent", "New API key"))]
    assert await rejected(team.url, team.keys["researcher"]) and await rejected(team.url, team.keys["reviewer"])
    assert not await rejected(team.url, key), "the new key works"
    bob = team.app("bob")  # alice's agents are not his
    async with bob.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert not [t for t in titles(bob) if t.startswith(("Revoke agent", "New API key"))]


async def test_an_agent_pinned_where_its_owner_left_is_still_theirs_to_rotate_and_revoke(team):
    """Seed 002: "Agents belong to a person": alice's agent pinned to a workspace she left is in no workspace she
    reaches, yet the palette offers its new key and its revocation (`my_agents`), with where it is pinned."""
    side = team.server.admin(admin.add_workspace, "side", "bob")["id"]
    team.server.admin(admin.add_member, side, "alice")
    probe = team.server.admin(admin.add_agent, "probe", "alice", side)
    team.server.admin(admin.leave_workspace, side, "alice")
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert side not in app.store.workspaces
        helps = {t: h for t, _, h in YggCommands(app.screen)._commands()}
        assert helps["Revoke agent probe"].startswith("pinned to side; ") and "New API key for probe" in helps
        assert helps["Revoke agent researcher"].startswith("pinned to team; ")
        await _palette(pilot, "new api key for probe")
        assert app.screen.title_text == "A new API key for probe?", "named, though in no workspace she reaches"
        await pilot.press("y")
        shown = await wait_for(pilot, lambda: isinstance(app.screen, ShownOnce) and app.screen, what="the new key")
        assert shown.secret.startswith("yggk_") and shown.secret != probe["api_key"]
        await pilot.press("escape")
        await _palette(pilot, "revoke agent probe")
        await pilot.press("y")
        await wait_for(pilot, lambda: told(app, "Revoked probe"), what="revoked")
        await wait_for(pilot, lambda: "Revoke agent probe" not in titles(app), what="no longer offered")
    assert await rejected(team.url, probe["api_key"]) and await rejected(team.url, shown.secret)
    bob = team.app("bob")  # alice's agents are not his, though probe was pinned to his workspace
    async with bob.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert not [t for t in titles(bob) if t.startswith(("Revoke agent", "New API key"))]


async def test_an_agent_whose_workspaces_were_all_deleted_is_said_to_be_in_none(team):
    """docs/protocol.md, `delete_workspace`: an agent pinned to a workspace deleted since is pinned to none
    (`my_agents`: `pinned: []`); the palette says so, rather than an empty "pinned to ; "."""
    lab = team.server.admin(admin.add_workspace, "lab", "alice")["id"]
    team.server.admin(admin.add_agent, "probe", "alice", lab)
    team.server.admin(admin.delete_workspace, lab)
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        helps = {t: h for t, _, h in YggCommands(app.screen)._commands()}
        assert helps["Revoke agent probe"].startswith("in no workspace (those it was pinned to were deleted); ")


async def test_a_person_in_the_topic_sets_its_budget_and_hears_a_refusal_in_words(team):
    """Seed 000: `credits_exhausted`: "The agent (or the topic's budget) is out of credits"; docs/protocol.md,
    `set_budget`: "a person in the topic, or an owner/admin" (a viewer is not offered it)."""
    alice = await team.person("alice")
    sent = await open_topic(team, alice, "researcher", "Spend little", "look into it")
    topic = sent["message"]["topic"]
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        main.open_conversation(general_id(team.ws), topic)
        await wait_for(pilot, lambda: main.topic == topic, what="the topic open")
        await _palette(pilot, "budget of this topic", FormScreen)
        await fill(pilot, budget="50")
        await wait_for(pilot, lambda: told(app, "budget 50 credits"), what="set")
        assert "budget 50 cr" in str(main.query_one("#topic-title").render())
        await _palette(pilot, "budget of this topic", FormScreen)
        assert app.screen.query_one("#f-budget").value == "50", "the form opens with the budget left"
        await fill(pilot, budget="-5")
        await wait_for(pilot, lambda: told(app, "A whole number of credits, please"), what="the refusal in words")
    assert (await alice.call("topic", workspace=team.ws, topic=topic))["topic"]["budget"] == 50
    viewer = team.app("carol")
    async with viewer.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        main.open_conversation(general_id(team.ws), topic)
        await wait_for(pilot, lambda: main.topic == topic, what="the topic open")
        assert not [t for t in titles(viewer) if t.startswith("Budget of this topic")]


async def test_an_owner_makes_a_group_and_changes_its_members(team):
    """Seed 000: "Agents can be gathered in groups (group:<name>) to address several at once"; a member is not
    offered it (seed 003 §66: "Admins manage everything in it")."""
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await _palette(pilot, "groups of team", FormScreen)
        await fill(pilot, new="pair", new_members="researcher, reviewer")
        await wait_for(pilot, lambda: told(app, "Saved group:pair in team"), what="made")
        assert app.store.group_names(team.ws) == ["pair"], "the composer offers group:pair at once"
        await _palette(pilot, "groups of team", FormScreen)
        assert app.screen.query_one("#f-g0").value == "researcher@alice, reviewer@alice"
        await fill(pilot, g0="researcher@alice")
        await wait_for(pilot, lambda: app.store.workspaces[team.ws].groups["pair"] == [team.ids["researcher"]],
                       what="reviewer removed")
        await _palette(pilot, "groups of team", FormScreen)
        await fill(pilot, g0="researcher@alice, ghost")
        await wait_for(pilot, lambda: told(app, "Name agents, @handles or groups of this workspace"),
                       what="the refusal in words")
    alice = await team.person("alice")
    assert (await alice.call("list_groups", workspace=team.ws))["groups"] == [
        {"name": "pair", "members": [team.ids["researcher"]]}]
    r = await alice.send(workspace=team.ws, topic="new", title="Pair", to=["group:pair"], text="to the pair")
    assert [d["to"] for d in r["deliveries"] if d["wake"]] == [team.ids["researcher"]]
    bob = team.app("bob")
    async with bob.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert bob.store.group_names(team.ws) == ["pair"], "known from sign-in (list_groups)"
        assert "Groups of team" not in titles(bob) and "Groups of bob (personal)" in titles(bob), "his own only"


async def test_an_owner_removes_a_group_by_emptying_its_list_after_a_yes(team):
    """docs/protocol.md, `remove_group`: a group's list emptied in "Groups of team" asks, then removes it; the
    composer no longer offers it, and a group conversation already held stays in the sidebar (its members kept)."""
    alice = await team.person("alice")
    await alice.call("add_group", workspace=team.ws, name="pair", members=["researcher", "reviewer"])
    await alice.call("add_group", workspace=team.ws, name="solo", members=["researcher"])
    held = await alice.send(workspace=team.ws, conversation="group:pair", topic="new", title="Pair",
                            to=["group:pair"], text="to the pair")
    cid = held["message"]["conversation"]
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        assert app.store.group_names(team.ws) == ["pair", "solo"]
        await _palette(pilot, "groups of team", FormScreen)
        await fill(pilot, g0="")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="asked first")
        await pilot.press("n")
        await wait_for(pilot, lambda: not isinstance(app.screen, ConfirmScreen), what="no: kept")
        assert app.store.group_names(team.ws) == ["pair", "solo"]
        await _palette(pilot, "groups of team", FormScreen)
        await fill(pilot, g0="")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="asked again")
        await pilot.press("y")
        await wait_for(pilot, lambda: told(app, "Removed group:pair from team"), what="removed")
        assert app.store.group_names(team.ws) == ["solo"]
        assert ("group:pair", "group") not in main._candidates() and ("group:solo", "group") in main._candidates()
        assert cid in app.store.workspaces[team.ws].conversations, "its conversation stays"
    assert (await alice.call("list_groups", workspace=team.ws))["groups"] == [
        {"name": "solo", "members": [team.ids["researcher"]]}]
    r = await alice.send(workspace=team.ws, topic="new", title="Gone", to=["group:pair"], text="x")
    assert r["op"] == "refused" and r["reason"] == "unknown_recipient"
