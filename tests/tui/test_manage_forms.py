"""Managing from the TUI's command palette (seed 002; seed 003 §65-66): new organizations and workspaces,
adding people, restricting, an agent's permissions and leaving a workspace, each through a small form or a
yes/no, against the real server; refusals said in words."""

import asyncio

from textual.widgets import Checkbox, Input, Select

from ygg_server.ops import admin, permissions

from ygg_tui.commands import YggCommands
from ygg_tui.screens.dialogs import FormScreen

from ygg_tui.widgets.participants import ParticipantsPanel

from .conftest import PW, SIZE, ready, wait_for
from ..invited import accepted
from .test_manage import _palette


def titles(app) -> list[str]:
    return [t for t, _, _ in YggCommands(app.screen)._commands()]


async def fill(pilot, **values) -> None:
    """Set the open form's fields (text typed, choices picked, toggles pressed), then ⏎ in its first text field."""
    form = pilot.app.screen
    assert isinstance(form, FormScreen)
    first = None
    for key, value in values.items():
        w = form.query_one(f"#f-{key}")
        if isinstance(w, Input):
            w.focus()
            w.value = ""
            await pilot.press(*value)
            first = first or w
        elif isinstance(w, Select):
            w.value = value
        elif isinstance(w, Checkbox) and w.value != value:
            w.focus()
            await pilot.press("space")
    first.focus()
    await pilot.press("enter")


def told(app, words: str) -> bool:
    """Said in a notice, or in the form that came back after a refusal (`ManageActions._form_op`)."""
    form = app.screen if isinstance(app.screen, FormScreen) else None
    return (any(words in str(n.message) for n in app._notifications)
            or form is not None and words in str(form.query_one("#form-error").render()))


async def test_a_person_creates_an_organization_and_a_restricted_workspace_in_it(team):
    """Seed 002: "Everyone gets their own organization on first sign-in and can create or join more"; "A
    restricted workspace is open only to the organization's admins and the people added to it directly"."""
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        await _palette(pilot, "new organization", FormScreen)
        await fill(pilot, name="acme")
        acme = await wait_for(pilot, lambda: next((o for o, n in app.store.org_names.items() if n == "acme"), None),
                              what="acme known")
        assert app.store.org_roles[acme] == "owner"
        await _palette(pilot, "new workspace", FormScreen)
        await fill(pilot, name="lab", org=acme, restricted=True)
        lab = await wait_for(pilot, lambda: next((w.id for w in app.store.workspaces.values() if w.name == "lab"), None),
                             what="lab in the sidebar")
        await wait_for(pilot, lambda: main.workspace == lab, what="lab open")
        assert "Lift the restriction on lab" in titles(app)
        await wait_for(pilot, lambda: app.store.my_id in app.store.workspaces[lab].members, what="lab's members")
        panel = main.query_one(ParticipantsPanel)
        await wait_for(pilot, lambda: "@alice" in str(panel.render()), what="its owner in the panel")
        await _palette(pilot, "new organization", FormScreen)  # acme is her one Free organization
        await fill(pilot, name="beta")
        await wait_for(pilot, lambda: told(app, "Everyone owns one Free organization"), what="the refusal in words")
    alice = await team.person("alice")
    row = next(w for w in (await alice.call("list_workspaces"))["workspaces"] if w["name"] == "lab")
    assert row["org"] == acme and row["restricted"] is True
    assert [o["name"] for o in (await alice.call("list_orgs"))["orgs"]].count("beta") == 0


async def test_the_owner_adds_people_and_invites_to_the_organization(team):
    """Seed 003 §66: owners and admins invite; "The owner keeps only three things: changing roles, deleting the
    workspace, and its own permanence". Seed 002: invite people from Organizations."""
    team.server.admin(admin.add_person, "dave", PW)
    team.server.admin(admin.add_person, "erin", PW)
    ops = team.server.admin(admin.add_workspace, "ops", "alice")["id"]
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await _palette(pilot, "add a person to team", FormScreen)
        await fill(pilot, handle="dave", role="admin")
        await wait_for(pilot, lambda: told(app, "Invited @dave to team as admin"), what="dave invited")
        await accepted(team, "dave")  # issue 18: he joins by accepting
        await wait_for(pilot, lambda: any(m.get("handle") == "dave" and m["role"] == "admin"
                                          for m in app.store.workspaces[team.ws].members.values()), what="dave an admin")
        await _palette(pilot, "add a person to team", FormScreen)
        await fill(pilot, handle="zed")  # issue 18: nobody's handle is answered as a person's (no enumeration)
        await wait_for(pilot, lambda: told(app, "Invited @zed to team"), what="answered alike")
        await _palette(pilot, "invite a person to the organization", FormScreen)
        await fill(pilot, handle="erin")
        await wait_for(pilot, lambda: told(app, "Invited @erin to"), what="erin invited")
        await accepted(team, "erin")
    erin = await team.person("erin")
    assert ops in {w["id"] for w in (await erin.call("list_workspaces"))["workspaces"]}, "the organization opens ops"
    bob_app = team.app("bob")  # a member: neither adds people, nor restricts, nor invites to alice's organization
    async with bob_app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        mine = titles(bob_app)
        assert not [t for t in mine if t.startswith(("Add a person", "Restrict", "Invite a person to the organization alice"))], mine


async def test_an_admin_restricts_a_workspace_and_sets_an_agents_permissions(team):
    """Seed 002: per-membership permissions "send, receive, can message, takes messages from, monitor", and
    "Admins manage everything in it; members add and change only their own agents". The form opens with what
    is set (a list left as shown is kept)."""
    team.server.admin(permissions.set_permissions, team.ws, "researcher", {"can_message": ["reviewer"]})
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await _palette(pilot, "restrict workspace team")
        await pilot.press("y")
        await wait_for(pilot, lambda: app.store.workspaces[team.ws].restricted, what="team restricted")
        await _palette(pilot, "permissions of researcher in team", FormScreen)
        assert app.screen.query_one("#f-can_message", Input).value == "reviewer@alice"
        await fill(pilot, takes_from="@alice", receive=False, monitor=True)
        await wait_for(pilot, lambda: told(app, "Saved the permissions of researcher"), what="saved")
    got = permissions.current(team.server.conn, team.ws, team.ids["researcher"])
    assert (got["receive"], got["monitor"], got["send"]) == (False, True, True)
    assert got["takes_from"] == [team.alice] and got["can_message"] == [team.ids["reviewer"]]
    assert team.server.conn.execute("SELECT restricted FROM workspaces WHERE id = ?", (team.ws,)).fetchone()[0] == 1
    for who in ("bob", "carol"):  # a member and a viewer: alice's agents are not theirs to change
        other = team.app(who)
        async with other.run_test(size=SIZE) as pilot:
            await ready(pilot)
            assert not [t for t in titles(other) if t.startswith("Permissions of")], who


async def test_a_member_leaves_a_workspace_from_the_palette(team):
    """docs/protocol.md, `leave_workspace`: a person leaves one workspace as one leaves a channel; never a
    personal one (seed 003 §65), nor as its last owner (seed 003 §66: the owner's "own permanence")."""
    app = team.app("bob")
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert [t for t in titles(app) if t.startswith("Leave workspace")] == ["Leave workspace team"]
        await _palette(pilot, "leave workspace team")
        await pilot.press("y")
        await wait_for(pilot, lambda: team.ws not in app.store.workspaces, what="team gone")
        assert told(app, "Left the workspace team.")
    bob = await team.person("bob")
    assert team.ws not in {w["id"] for w in (await bob.call("list_workspaces"))["workspaces"]}
    owner = team.app()
    async with owner.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert not [t for t in titles(owner) if t.startswith("Leave workspace")], "the last owner stays"


async def test_a_member_joins_again_from_the_palette_a_workspace_of_their_organization(team):
    """docs/protocol.md, `list_joinable` and `join_workspace`: one who left an open workspace of their
    organization gets back in by themselves, as one joins a public channel; a restricted one is not offered
    (seed 002: "open only to the organization's admins and the people added to it directly")."""
    org = team.server.conn.execute("SELECT org FROM workspaces WHERE id = ?", (team.ws,)).fetchone()[0]
    team.server.admin(admin.add_org_member, org, "bob")
    team.server.admin(admin.add_workspace, "vault", "alice", True)
    app = team.app("bob")
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        assert not [t for t in titles(app) if t.startswith("Join workspace")], "he is in all that is open to him"
        await _palette(pilot, "leave workspace team")
        await pilot.press("y")
        await wait_for(pilot, lambda: team.ws not in app.store.workspaces, what="team gone")
        await wait_for(pilot, lambda: "Join workspace team" in titles(app), what="team offered")
        assert [t for t in titles(app) if t.startswith("Join workspace")] == ["Join workspace team"], "not vault"
        await _palette(pilot, "join workspace team", type(main))  # nothing to confirm: it is undone by leaving
        await wait_for(pilot, lambda: team.ws in app.store.workspaces and app.store.workspaces[team.ws].conversations,
                       what="team back, loaded")
        await wait_for(pilot, lambda: told(app, "Joined the workspace team."), what="the notice")
        assert not [t for t in titles(app) if t.startswith("Join workspace")]
        assert app.store.workspaces[team.ws].role == "member"
    bob = await team.person("bob")
    assert team.ws in {w["id"] for w in (await bob.call("list_workspaces"))["workspaces"]}


async def test_a_workspace_left_from_another_device_is_offered_when_the_palette_opens(team):
    """docs/protocol.md, `list_joinable`: "the workspaces of one's organizations that one could join". One left
    from another device while the TUI runs is offered to join again the next time the palette opens."""
    org = team.server.conn.execute("SELECT org FROM workspaces WHERE id = ?", (team.ws,)).fetchone()[0]
    team.server.admin(admin.add_org_member, org, "bob")
    app = team.app("bob")
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        assert not [t for t in titles(app) if t.startswith("Join workspace")]
        phone = await team.person("bob")
        assert (await phone.call("leave_workspace", workspace=team.ws))["left"] == [team.ws]
        await wait_for(pilot, lambda: team.ws not in app.store.workspaces, what="team gone here too")
        await _palette(pilot, "join workspace team", type(main))
        await wait_for(pilot, lambda: team.ws in app.store.workspaces, what="team joined again")


async def test_a_workspace_name_too_long_or_taken_is_refused_in_words(team):
    """docs/protocol.md, "Names and titles": a workspace's name is at most 80 characters, and an organization
    holds a name once (compared as people read it). Each refusal comes back in the form, saying which rule."""
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await _palette(pilot, "new workspace", FormScreen)
        await fill(pilot, name="w" * 81)
        await wait_for(pilot, lambda: told(app, "That name cannot be used here. A workspace's name is at most 80 "
                                                "characters (this one has 81)"), what="the bound in words")
        await fill(pilot, name="TEAM")
        await wait_for(pilot, lambda: told(app, "That name is taken here; pick another. This organization has a "
                                                "workspace called 'TEAM' already"), what="the taken name in words")
        await fill(pilot, name="lab")
        await wait_for(pilot, lambda: any(w.name == "lab" for w in app.store.workspaces.values()), what="lab made")


async def test_a_person_makes_an_agent_and_is_shown_its_key_once(team):
    """Seed 002: agents belong to a person, names unique per owner, one key each; seed 003 §19: an agent is in
    every workspace of its owner unless pinned. The key works at once; a taken name is refused in words."""
    from ygg_server.client import Client
    from ygg_tui.screens.dialogs import ShownOnce

    app = team.app("bob")
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await _palette(pilot, "new agent", FormScreen)
        await fill(pilot, name="scout", workspace=team.ws)
        shown = await wait_for(pilot, lambda: isinstance(app.screen, ShownOnce) and app.screen, what="the key")
        key = shown.secret
        assert key.startswith("yggk_")
        await pilot.press("escape")
        await wait_for(pilot, lambda: any(m["name"] == "scout" for m in app.store.workspaces[team.ws].members.values()),
                       what="scout in team")
        await _palette(pilot, "new agent", FormScreen)
        await fill(pilot, name="scout")
        await wait_for(pilot, lambda: told(app, "That name is taken here"), what="the refusal in words")
    agent = Client(team.url, api_key=key, timeout=10)
    await agent.connect()
    try:
        assert {w["id"] for w in (await agent.call("list_workspaces"))["workspaces"]} == {team.ws}, "pinned to team"
    finally:
        await agent.close()


async def test_a_workspace_added_twice_at_once_is_loaded_once_and_both_callers_see_it_loaded(team):
    """The answer to create_workspace and its workspace_added event both add the workspace: the second
    caller waits for the first one's load (it returned at once, and the screen showed an empty member list)."""
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        session = app.session
        load = session.load_workspace

        async def slow_load(ws):  # (a load that takes a while, as on a busy server)
            await asyncio.sleep(0.3)
            await load(ws)

        session.load_workspace = slow_load
        lab = team.server.admin(admin.add_workspace, "lab2", "alice")["id"]
        first = asyncio.ensure_future(session.add_workspace(lab))
        await asyncio.sleep(0.05)  # the first is loading
        assert await session.add_workspace(lab) is None
        assert app.store.my_id in app.store.workspaces[lab].members, "loaded by the time the second returns"
        assert await first in ("lab2", None)


async def test_names_that_look_like_markup_are_shown_as_they_are(team):
    """A workspace named "x [/draft] y" stopped the app for everyone in it as the palette opened (Textual read the
    name as markup: a closing tag with no opening one); the same name in a form's title, a choice, a notice, or a
    topic title in the operator view's table. Each shows the name as it is now."""
    from textual.widgets import Label

    ws = team.server.admin(admin.add_workspace, "x [/draft] y", "alice")["id"]
    team.server.admin(admin.add_agent, "bot[/b]", "alice", ws)
    bob = await team.person("alice")
    await bob.send(workspace=ws, conversation="general", topic="new", title="Plan [/b] [red]now", type="inform",
                   text="hello")
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        await _palette(pilot, "add a person to x [/draft]", asks=FormScreen)
        form = app.screen
        assert "Add a person to x [/draft] y" in [str(w.render()) for w in form.query(Label)]
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is main, what="the form closed")
        app.notify("You now reach the workspace x [/draft] y.")
        await pilot.pause(0.2)
        app.open_operator(ws)
        await wait_for(pilot, lambda: app.operator is not None and app.operator.ready, what="the operator view")
        await pilot.pause(0.2)
        table = app.operator.query_one("#op-topics")
        assert str(table.get_row_at(0)[0]) == "Plan [/b] [red]now"
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is main, what="back")
        general = next(c for c, v in app.store.workspaces[ws].conversations.items() if v["kind"] == "general")
        main.open_conversation(general)
        await pilot.pause(0.2)
        main.fund()  # (bot[/b] among the choices)
        await wait_for(pilot, lambda: type(app.screen).__name__ == "FundScreen", what="the fund form")
        await pilot.press("escape")
        assert app.is_running


async def test_a_refused_form_comes_back_with_what_was_typed(team):
    """A refusal closed the form and lost the typing: a mistyped handle meant the palette, the form and all of it
    again. The form comes back with the values and the refusal in words; fixed, it goes through."""
    team.server.admin(admin.add_person, "dave", PW)
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await _palette(pilot, "add a person to team", FormScreen)
        await fill(pilot, handle="dave", role="owner")  # (an owner is never invited: bad_role)
        await wait_for(pilot, lambda: isinstance(app.screen, FormScreen)
                       and "never invited" in str(app.screen.query_one("#form-error").render()),
                       what="the form back, with the refusal")
        form = app.screen
        assert form.query_one("#f-handle").value == "dave" and form.query_one("#f-role").value == "owner"
        assert app.focused is form.query_one("#f-handle")
        await fill(pilot, handle="dave", role="viewer")
        await wait_for(pilot, lambda: told(app, "Invited @dave"), what="dave invited")
        await accepted(team, "dave")
        await wait_for(pilot, lambda: any(m.get("handle") == "dave" and m["role"] == "viewer"
                                          for m in app.store.workspaces[team.ws].members.values()), what="dave added")
        assert not isinstance(app.screen, FormScreen)
