"""Configuring from the TUI's command palette (issue 20: "Everything configurable from the TUI": agents' profiles, a
party's participants and Lead, workspace settings, an agent's pins), each through a form against the real server;
what is there now is shown in the form, a bad value or a refusal comes back in it in words."""

from ygg_server.ops import admin, configure
from ygg_server.store import loaders

from ygg_tui.screens.dialogs import FormScreen

from .conftest import SIZE, ready, wait_for
from .test_manage import _palette
from .test_manage_forms import fill, told


def _form_error(app) -> str:
    return str(app.screen.query_one("#form-error").render()) if isinstance(app.screen, FormScreen) else ""


async def test_a_person_sets_their_agent_s_profile_so_capability_assignment_finds_it(team):
    """Issue 20: profiles "(job title, description, capabilities, cost: so `capability:` assignment finds" the
    agents); seed 003 §14: "The highest score gets the task"."""
    team.server.admin(configure.set_profile, "reviewer", {"title": "Old title", "description": "line one\nline two"})
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await _palette(pilot, "profile of reviewer", FormScreen)
        form = app.screen
        assert form.query_one("#f-title").value == "Old title"  # what is there now
        assert form.query_one("#f-description").value == "line one ⏎ line two"
        await fill(pilot, cost="cheap")
        await wait_for(pilot, lambda: "whole number" in _form_error(app), what="the cost refused in the form")
        await fill(pilot, title="Translator", capabilities="translation, french", cost="3")
        await wait_for(pilot, lambda: not isinstance(app.screen, FormScreen), what="the form closed")
        assert told(app, "Saved the profile of reviewer")
    p = team.server.admin(configure.agent_profile, team.ids["reviewer"])["profile"]
    assert p == {"title": "Translator", "description": "line one\nline two", "capabilities": ["translation", "french"],
                 "generalist": False, "tools": [], "cost": 3}
    bob = await team.person("bob")
    sent = await bob.send(workspace=team.ws, topic="new", title="T", to=["capability:french"], text="traduis")
    assert sent["op"] == "sent" and sent["message"]["assignment"]["chosen"] == team.ids["reviewer"], sent


async def test_a_person_pins_their_agent_to_another_workspace_of_theirs(team):
    """Seed 003 §19: agents are pinned "to chosen workspaces"; issue 20: "an agent's pins after creation"."""
    lab = team.server.admin(admin.add_workspace, "lab", "alice")["id"]
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await _palette(pilot, "pin reviewer (where", FormScreen)
        form = app.screen
        boxes = {f.label: f.key for f in form.fields}
        assert form.query_one(f"#f-{boxes['Pinned to team']}").value is True  # made pinned to team
        assert form.query_one(f"#f-{boxes['Pinned to lab']}").value is False
        for key in (boxes["Pinned to lab"], boxes["Pinned to team"]):
            form.query_one(f"#f-{key}").focus()
            await pilot.press("space")
        form.query_one("#submit").press()
        await wait_for(pilot, lambda: not isinstance(app.screen, FormScreen), what="the form closed")
        await wait_for(pilot, lambda: team.ids["reviewer"] in app.store.workspaces[lab].members, what="in lab")
        assert team.ids["reviewer"] not in app.store.workspaces[team.ws].members
    here = {r[0] for r in team.server.conn.execute("SELECT workspace FROM memberships WHERE participant = ?",
                                                    (team.ids["reviewer"],))}
    assert here == {lab}


async def test_an_owner_sets_the_workspace_s_hop_limit_and_throttles(team):
    """docs/protocol.md, "Parties": settings `party.maxHops` (default 6), `party.throttleDirect` (default 8),
    `party.throttleGroup` (default 16), `assign.weights`; owners and admins set them."""
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await _palette(pilot, "settings of team", FormScreen)
        assert app.screen.query_one("#f-max_hops").value == "6"
        await fill(pilot, max_hops="3", throttle_group="-1")
        await wait_for(pilot, lambda: "refused" in _form_error(app), what="the throttle refused in the form")
        assert "0 to" in _form_error(app) or "1 to" in _form_error(app)
        assert "1 change" in _form_error(app)  # the hop limit before it was saved, and said so
        await fill(pilot, throttle_group="", weights="online=0, capabilities=9")
        await wait_for(pilot, lambda: not isinstance(app.screen, FormScreen), what="the form closed")
    stored = loaders.settings(team.server.conn, team.ws)
    assert stored == {"party.maxHops": 3, "assign.weights": {"online": 0, "capabilities": 9}}, stored


async def test_settings_are_offered_only_to_the_workspace_s_owners_and_admins(team):
    """Seed 002: "Admins manage everything in it"; a member is not offered the workspace's settings."""
    from .test_manage_forms import titles

    app = team.app("bob")
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert not any(t.startswith("Settings of team") for t in titles(app))
        assert not any(t.startswith("Profile of") for t in titles(app))  # bob has no agents


async def test_a_person_adds_an_agent_to_a_party_and_makes_it_the_lead(team):
    """Seed 004: a party's people add and remove participants; "A Party with a Lead sends it every message nobody
    else is addressed in"."""
    alice = await team.person("alice")
    first = await alice.send(workspace=team.ws, conversation="dm:researcher", topic="new", title="Hi", type="inform",
                             to=["researcher"], text="hello")
    cid = first["message"]["conversation"]
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        await wait_for(pilot, lambda: cid in app.store.workspaces[team.ws].conversations, what="the conversation")
        main.open_conversation(cid)
        await pilot.pause()
        await _palette(pilot, "participants and lead", FormScreen)
        members = app.screen.query_one("#f-members").value
        assert members == "researcher@alice", members
        await fill(pilot, members="researcher@alice, reviewer, nobody")
        await wait_for(pilot, lambda: "refused" in _form_error(app), what="the unknown participant refused")
        assert "1 change" in _form_error(app)  # reviewer was added before nobody was refused
        await fill(pilot, members="researcher@alice, reviewer@alice")
        await wait_for(pilot, lambda: not isinstance(app.screen, FormScreen), what="the form closed")
        await _palette(pilot, "participants and lead", FormScreen)
        app.screen.query_one("#f-lead").value = team.ids["reviewer"]
        app.screen.query_one("#submit").press()
        await wait_for(pilot, lambda: not isinstance(app.screen, FormScreen), what="the form closed")
        await wait_for(pilot, lambda: app.store.workspaces[team.ws].conversations[cid].get("lead") == team.ids["reviewer"],
                       what="the Lead shown")
    c = loaders.load_conversations(team.server.conn, team.ws)[cid]
    assert c.lead == team.ids["reviewer"] and c.members == {team.alice, team.ids["researcher"], team.ids["reviewer"]}
