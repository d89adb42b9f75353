"""Configuring after creation on loopback (issue 20: "Everything configurable from the TUI and the admin CLI"):
`get_profile`, `get_settings`, `set_pins`, and the operator's commands of `ops/configure.py` with a server
running on the same database."""

import pytest

from ygg_server.ops import admin, configure

pytestmark = pytest.mark.backends("sqlite", "process", "postgres")


async def _ids(client, ws) -> set[str]:
    r = await client.request("list_members", workspace=ws)
    assert r["op"] == "list_members", r
    return {m["name"] for m in r["members"] if m["kind"] == "agent"}


async def test_a_profile_is_read_back_by_its_owner_and_by_id_by_the_workspace_s_people(team):
    """Seed 004: agents are told each other's "job title and description": so are the people who configure them."""
    alice, bob = await team.person("alice"), await team.person("bob")
    set_ = await alice.request("set_profile", agent="reviewer", title="Code reviewer", description="Reads diffs.\nSlowly.",
                               capabilities=["review"], cost=2)
    assert set_["op"] == "set_profile", set_
    mine = await alice.request("get_profile", agent="reviewer")
    assert mine["op"] == "get_profile" and mine["name"] == "reviewer", mine
    assert mine["profile"] == {"title": "Code reviewer", "description": "Reads diffs.\nSlowly.",
                               "capabilities": ["review"], "generalist": False, "tools": [], "cost": 2}
    by_id = await bob.request("get_profile", agent=mine["agent"])
    assert by_id["profile"]["title"] == "Code reviewer", by_id
    assert (await bob.request("get_profile", agent="reviewer"))["code"] == "not_found"  # by name: its owner's only
    team.admin(admin.add_person, "eve", "pw-" + "x" * 8)
    eve = await team.person("eve")  # shares no workspace with it
    assert (await eve.request("get_profile", agent=mine["agent"]))["code"] == "not_found"


async def test_settings_are_read_in_force_and_only_by_the_workspace_s_people(team):
    """docs/protocol.md, "Parties": `party.maxHops` (default 6), `party.throttleDirect` (default 8),
    `party.throttleGroup` (default 16)."""
    alice, bob = await team.person("alice"), await team.person("bob")
    first = await bob.request("get_settings", workspace=team.ws)
    assert first["set"] == {} and first["settings"]["party.maxHops"] == 6, first
    assert first["settings"]["party.throttleGroup"] == 16 and first["settings"]["assign.weights"]["online"] == 2.0
    assert (await alice.request("set_setting", workspace=team.ws, key="party.maxHops", value=2))["op"] == "set_setting"
    now = await bob.request("get_settings", workspace=team.ws)
    assert now["set"] == {"party.maxHops": 2} and now["settings"]["party.maxHops"] == 2, now
    team.admin(admin.add_person, "eve", "pw-" + "x" * 8)
    eve = await team.person("eve")
    assert (await eve.request("get_settings", workspace=team.ws))["code"] == "not_found"
    assert (await bob.request("get_settings"))["code"] == "bad_frame"


async def test_pins_move_an_agent_between_its_owner_s_workspaces(team):
    """Seed 003 §19: an agent may be pinned "to chosen workspaces"; afterwards too (issue 20: "an agent's pins
    after creation")."""
    alice, bob = await team.person("alice"), await team.person("bob")
    lab = (await alice.request("create_workspace", name="lab"))["id"]
    assert "reviewer" in await _ids(alice, lab)
    pinned = await alice.request("set_pins", agent="reviewer", workspaces=[team.ws])
    assert pinned["op"] == "set_pins" and pinned["pinned"] == [team.ws] and pinned["workspaces"] == [team.ws], pinned
    assert "reviewer" not in await _ids(alice, lab) and "reviewer" in await _ids(alice, team.ws)
    mine = {a["name"]: a for a in (await alice.request("my_agents"))["agents"]}
    assert [p["id"] for p in mine["reviewer"]["pinned"]] == [team.ws]
    back = await alice.request("set_pins", agent="reviewer", workspaces=None)
    assert back["pinned"] is None and set(back["workspaces"]) >= {team.ws, lab}, back
    assert "reviewer" in await _ids(alice, lab)
    # another's agent, or a workspace its owner is not in, is answered as one that does not exist
    assert (await bob.request("set_pins", agent="reviewer", workspaces=[team.ws]))["code"] == "not_found"
    bobs = (await bob.request("list_workspaces"))["workspaces"]
    elsewhere = next(w["id"] for w in bobs if w["personal"])
    assert (await alice.request("set_pins", agent="reviewer", workspaces=[elsewhere]))["code"] == "not_found"
    bad = await alice.request("set_pins", agent="reviewer", workspaces="team")
    assert bad["code"] == "bad_frame" and "workspaces" in bad["detail"], bad
    assert (await alice.request("set_pins", agent="reviewer"))["code"] == "bad_frame"  # required: null unpins


async def test_followers_are_told_an_agent_pinned_away_left_and_came_back(team):
    """docs/protocol.md, "Live events": a `members` event tells the connections following a workspace that its
    members changed, within a second; so for an agent a pin takes out of it, or brings back."""
    from .test_events import _event

    alice = await team.person("alice")
    await alice.request("subscribe", workspace=team.ws)
    lab = (await alice.request("create_workspace", name="lab"))["id"]
    reviewer = next(a["id"] for a in (await alice.request("my_agents"))["agents"] if a["name"] == "reviewer")
    await alice.request("set_pins", agent="reviewer", workspaces=[lab])
    ev = await _event(alice, "members", timeout=3)
    assert ev["workspace"] == team.ws and ev["left"] == [reviewer], ev
    await alice.request("set_pins", agent="reviewer", workspaces=None)
    ev = await _event(alice, "members", timeout=3)
    assert ev["workspace"] == team.ws and ev["joined"] == [reviewer], ev


async def test_an_agent_unpinned_from_a_workspace_is_woken_there_no_more(team):
    """A pin decides where the agent is: a send to it in a workspace it left is `unknown_recipient`."""
    alice = await team.person("alice")
    lab = (await alice.request("create_workspace", name="lab"))["id"]
    await alice.request("set_pins", agent="researcher", workspaces=[lab])
    r = await alice.send(workspace=team.ws, topic="new", title="Q", to=["researcher"], text="still there?")
    assert r["op"] == "refused" and r["reason"] == "unknown_recipient", r
    r = await alice.send(workspace=lab, topic="new", title="Q", to=["researcher"], text="here?")
    assert r["op"] == "sent", r


async def test_the_operator_s_profile_and_settings_reach_the_running_server(team):
    """Issue 20: "profiles (job title, description, capabilities, cost: so `capability:` assignment finds" the
    agents): set by the admin operation, a `capability:` send finds the agent."""
    alice = await team.person("alice")
    r = await alice.send(workspace=team.ws, topic="new", title="T", to=["capability:translation"], text="translate")
    assert r["op"] == "refused" and r["reason"] == "no_eligible_agent", r
    out = team.admin(configure.set_profile, "researcher", {"title": "Translator", "capabilities": ["translation"]})
    assert out["profile"]["capabilities"] == ["translation"]
    r = await alice.send(workspace=team.ws, topic="new", title="T", to=["capability:translation"], text="translate")
    assert r["op"] == "sent" and r["message"]["assignment"]["chosen"] == out["agent"], r
    with pytest.raises(admin.AdminError) as e:
        team.admin(configure.set_profile, "researcher", {"title": "x\x1b[31m", "capabilities": ["fine"]})
    assert e.value.code == "bad_name"
    assert team.admin(configure.agent_profile, out["agent"])["profile"]["capabilities"] == ["translation"]
    team.admin(configure.set_setting, "team", "party.throttleDirect", 3)
    assert (await alice.request("get_settings", workspace=team.ws))["settings"]["party.throttleDirect"] == 3
    with pytest.raises(admin.AdminError) as e:
        team.admin(configure.set_setting, "team", "party.maxHops", -1)
    assert e.value.code == "bad_amount"
    with pytest.raises(admin.AdminError) as e:
        team.admin(configure.set_setting, "team", "party.luck", 1)
    assert e.value.code == "bad_frame"


async def test_the_operator_changes_a_party_as_the_workspace_s_owner(team):
    """Seed 004: a party's people add and remove participants and set its Lead; the operator acts for the owner."""
    alice = await team.person("alice")
    first = await alice.send(workspace=team.ws, conversation="dm:researcher", topic="new", title="Hi", type="inform",
                             to=["researcher"], text="hello")
    cid = first["message"]["conversation"]
    added = team.admin(configure.party, "add_participant", "team", cid, "reviewer")
    assert added["changed"] and len(added["members"]) == 3, added
    led = team.admin(configure.party, "set_lead", "team", cid, "reviewer")
    reviewer = next(a["id"] for a in (await alice.request("my_agents"))["agents"] if a["name"] == "reviewer")
    assert led["lead"] == reviewer, led
    convs = {c["id"]: c for c in (await alice.request("list_conversations", workspace=team.ws))["conversations"]}
    assert convs[cid]["lead"] == led["lead"] and len(convs[cid]["members"]) == 3
    assert team.admin(configure.party, "set_lead", "team", cid, None)["lead"] is None
    removed = team.admin(configure.party, "remove_participant", "team", cid, "reviewer")
    assert removed["changed"] and len(removed["members"]) == 2
    with pytest.raises(admin.AdminError) as e:
        team.admin(configure.party, "set_lead", "team", cid, "nobody")
    assert e.value.code == "unknown_recipient"
