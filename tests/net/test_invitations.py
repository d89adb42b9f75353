"""Consent (issue 18): a person joins another's workspace or organization only by accepting an invitation, their
agents only when they say so, and an invitation to a handle nobody has is answered as one to a person's.

Seed 003 §66: "owners and admins invite"; seed 003 §19: agents follow their owner into the workspaces the owner
reaches (here: the ones the owner chose to bring them into).
"""

from __future__ import annotations

import asyncio

import pytest

from ygg_server.ops import admin

pytestmark = pytest.mark.backends("sqlite", "postgres")

PW = "pw-" + "x" * 8


def _rows(team, sql: str, *args) -> list:
    return [tuple(r) for r in team.conn.execute(sql, args).fetchall()]


async def _event(client, kind: str, timeout: float = 5.0) -> dict:
    while True:
        e = await client.next_event(timeout)
        if e.get("kind") == kind:
            return e


async def test_a_person_joins_another_owners_workspace_only_by_accepting(team):
    """Issue 18: "a person joins a workspace or organization of another owner only by accepting an invitation";
    "agents follow their owner into a workspace only when the owner lets them"."""
    team.admin(admin.add_person, "carol", PW)
    scout = team.admin(admin.add_agent, "scout", "carol")["id"]
    carol_id = team.conn.execute("SELECT id FROM people WHERE handle = 'carol'").fetchone()[0]
    alice, carol = await team.person("alice"), await team.person("carol")
    lab = (await alice.call("create_workspace", name="lab"))["id"]

    asked = await alice.call("add_member", workspace=team.ws, handle="@carol")
    assert asked["invited"] is True and "id" not in asked, asked
    assert _rows(team, "SELECT role FROM memberships WHERE workspace = ? AND participant = ?", team.ws, carol_id) == []
    assert (await carol.request("list_members", workspace=team.ws))["code"] == "not_found", "not in before accepting"
    arrived = await _event(carol, "invitation")
    listed = (await carol.call("list_invitations"))["invitations"]
    assert [i["id"] for i in listed] == [arrived["invitation"]["id"]]
    first = listed[0]
    assert (first["kind"], first["workspace"], first["name"], first["inviter"], first["role"]) == \
        ("workspace", team.ws, "team", "@alice", "member")

    r = await carol.call("accept_invitation", invitation=first["id"])
    assert r["joined"] is True and r["agents"] is False
    assert _rows(team, "SELECT role FROM memberships WHERE workspace = ? AND participant = ?", team.ws, carol_id) == \
        [("member",)]
    assert _rows(team, "SELECT 1 FROM memberships WHERE workspace = ? AND participant = ?", team.ws, scout) == [], \
        "her agent stays out: she did not let it follow"
    assert (await carol.call("list_invitations"))["invitations"] == []
    assert (await carol.request("accept_invitation", invitation=first["id"]))["code"] == "not_found", "used once"

    await alice.call("add_member", workspace=lab, handle="carol", role="viewer")
    second = (await _event(carol, "invitation"))["invitation"]
    await carol.call("accept_invitation", invitation=second["id"], agents=True)
    assert _rows(team, "SELECT role FROM memberships WHERE workspace = ? AND participant = ?", lab, carol_id) == \
        [("viewer",)]
    assert _rows(team, "SELECT 1 FROM memberships WHERE workspace = ? AND participant = ?", lab, scout) == [(1,)], \
        "with her leave, her agent follows"


async def test_a_declined_invitation_changes_nothing_and_others_cannot_answer_it(team):
    """Issue 18: the invitee accepts or declines; an invitation is its invitee's alone (another's id is
    `not_found`, exactly as a made-up one)."""
    team.admin(admin.add_person, "carol", PW)
    alice, bob, carol = await team.person("alice"), await team.person("bob"), await team.person("carol")
    lab = (await alice.call("create_workspace", name="lab"))["id"]
    await alice.call("add_member", workspace=lab, handle="carol")
    inv = (await _event(carol, "invitation"))["invitation"]["id"]
    made_up = (await bob.request("accept_invitation", invitation="0" * 36))
    theirs = (await bob.request("accept_invitation", invitation=inv))
    assert {k: v for k, v in theirs.items() if k != "ref"} == {k: v for k, v in made_up.items() if k != "ref"}
    assert theirs["code"] == "not_found"
    assert (await carol.call("decline_invitation", invitation=inv))["declined"] is True
    assert (await carol.request("list_members", workspace=lab))["code"] == "not_found"
    assert _rows(team, "SELECT count(*) FROM invitations") == [(0,)]
    assert (await carol.request("accept_invitation", invitation=inv))["code"] == "not_found"


async def test_an_invitation_to_an_unknown_handle_is_answered_as_one_to_a_person(team):
    """Issue 18: "an invite to an unknown handle is answered exactly as one to a known handle" (today
    `unknown_person` lets every handle be enumerated)."""
    team.admin(admin.add_person, "carol", PW)
    alice = await team.person("alice")
    org = (await alice.call("list_orgs"))["orgs"][0]["id"]

    def shape(reply: dict, handle: str) -> dict:
        return {k: (v.replace(handle, "H") if isinstance(v, str) else v) for k, v in reply.items() if k != "ref"}

    for op, fields in (("add_member", {"workspace": team.ws}), ("add_org_member", {"org": org})):
        known = await alice.request(op, handle="carol", **fields)
        unknown = await alice.request(op, handle="nobody-here", **fields)
        assert known["op"] == op and shape(known, "carol") == shape(unknown, "nobody-here"), (known, unknown)
    assert _rows(team, "SELECT count(*) FROM invitations") == [(2,)], "carol's two, nobody's none"


async def test_an_organization_invitation_brings_its_workspaces_and_agents_only_if_allowed(team):
    """Issue 18: joining an organization by invitation; the agents the person did not let follow stay out of its
    workspaces, those made later too."""
    team.admin(admin.add_person, "carol", PW)
    scout = team.admin(admin.add_agent, "scout", "carol")["id"]
    carol_id = team.conn.execute("SELECT id FROM people WHERE handle = 'carol'").fetchone()[0]
    alice, carol = await team.person("alice"), await team.person("carol")
    org = (await alice.call("list_orgs"))["orgs"][0]["id"]
    await alice.call("add_org_member", org=org, handle="carol")
    assert _rows(team, "SELECT 1 FROM org_members WHERE org = ? AND person = ?", org, carol_id) == []
    inv = (await _event(carol, "invitation"))["invitation"]
    assert (inv["kind"], inv["org"]) == ("org", org)
    await carol.call("accept_invitation", invitation=inv["id"])
    assert _rows(team, "SELECT role FROM memberships WHERE workspace = ? AND participant = ?", team.ws, carol_id) == \
        [("member",)], "the organization's open workspace"
    later = (await alice.call("create_workspace", name="later"))["id"]
    for ws in (team.ws, later):
        assert _rows(team, "SELECT 1 FROM memberships WHERE workspace = ? AND participant = ?", ws, scout) == []
    assert _rows(team, "SELECT 1 FROM memberships WHERE workspace = ? AND participant = ?", later, carol_id) == [(1,)]


async def test_an_invitation_from_someone_who_may_no_longer_invite_is_void(team):
    """Seed 003 §66: owners and admins invite: an admin lowered to member before the invitation is accepted has
    invited no one."""
    team.admin(admin.add_person, "carol", PW)
    alice, bob, carol = await team.person("alice"), await team.person("bob"), await team.person("carol")
    await alice.call("add_member", workspace=team.ws, handle="bob", role="admin")
    await bob.call("add_member", workspace=team.ws, handle="carol")
    inv = (await _event(carol, "invitation"))["invitation"]["id"]
    await alice.call("add_member", workspace=team.ws, handle="bob", role="member")
    assert (await carol.request("accept_invitation", invitation=inv))["code"] == "not_found"
    assert (await carol.request("list_members", workspace=team.ws))["code"] == "not_found"


async def test_the_operator_still_adds_people_directly(team):
    """/work/shared/PROTOCOL.md: `ygg-server admin add-member` is the operator's way in: no invitation."""
    team.admin(admin.add_person, "carol", PW)
    team.admin(admin.add_member, team.ws, "carol")
    carol = await team.person("carol")
    assert any(m["handle"] == "carol" for m in (await carol.call("list_members", workspace=team.ws))["members"]
               if m.get("handle"))
    await asyncio.sleep(0)
