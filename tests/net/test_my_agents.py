"""`my_agents`: a person's own agents, wherever they are (docs/protocol.md, "Queries"), over real websockets.

Seed 002: "Agents belong to a person": its owner revokes it or rotates its key, so the owner must be able to list it
even when it is in no workspace they reach (pinned to one they left).
"""

from __future__ import annotations

import pytest

from ygg_server.ops import admin

pytestmark = pytest.mark.backends("sqlite", "postgres")

PW = "pw-" + "x" * 8


async def test_a_person_lists_their_own_agents_even_one_pinned_where_they_left(team):
    """Seed 002: "Agents belong to a person": alice sees her agents (one pinned to a workspace she left, one
    revoked, one online), and never bob's; bob sees his own only."""
    team.admin(admin.add_person, "carol", PW)
    side = team.admin(admin.add_workspace, "side", "carol")["id"]
    team.admin(admin.add_member, side, "alice")
    probe = team.admin(admin.add_agent, "probe", "alice", side)["id"]
    team.admin(admin.leave_workspace, side, "alice")
    scout = team.admin(admin.add_agent, "scout", "bob")["id"]
    await team.client(api_key=team.keys["researcher"])  # online
    alice, bob = await team.person("alice"), await team.person("bob")
    assert probe not in {a["id"] for a in (await alice.call("list_agents", workspace=team.ws))["agents"]}
    await alice.call("revoke_agent", agent="reviewer")

    mine = {a["name"]: a for a in (await alice.call("my_agents"))["agents"]}
    assert sorted(mine) == ["probe", "researcher", "reviewer"], mine
    assert mine["probe"] == {"id": probe, "name": "probe", "pinned": [{"id": side, "name": "side"}],
                             "online": False, "revoked": False}
    assert mine["researcher"]["pinned"] is None and mine["researcher"]["online"] is True
    assert mine["reviewer"]["revoked"] is True and mine["reviewer"]["online"] is False
    theirs = (await bob.call("my_agents"))["agents"]
    assert [(a["id"], a["name"], a["pinned"]) for a in theirs] == [(scout, "scout", None)], "bob's own only"

    assert (await alice.call("revoke_agent", agent=probe))["revoked"] is True, "what it lists, its owner revokes"
    assert {a["name"]: a["revoked"] for a in (await alice.call("my_agents"))["agents"]}["probe"] is True


async def test_an_agent_may_not_list_agents_as_their_owner(team):
    """Seed 002: "Agents belong to a person": only a person has agents of their own; an agent asking is refused
    `forbidden`, saying so, as on the other person-only ops."""
    agent = await team.client(api_key=team.keys["researcher"])
    r = await agent.request("my_agents")
    assert r["op"] == "error" and r["code"] == "forbidden" and "only a person" in r["detail"], r
    lab = team.admin(admin.add_workspace, "lab", "alice")["id"]
    team.admin(admin.add_agent, "lost", "alice", lab)
    team.admin(admin.delete_workspace, lab)
    alice = await team.person("alice")
    mine = {a["name"]: a for a in (await alice.call("my_agents"))["agents"]}
    assert mine["lost"]["pinned"] == [], "its pin went with the workspace (tests/net/test_pins.py)"
