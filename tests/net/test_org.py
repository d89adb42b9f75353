"""Agents, organizations, roles and permissions (seed 002; seed 003 §19-20, §65-66), over real websockets.

Each test quotes the sentence of the seed it checks.
"""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timezone

import pytest

from ygg_server.ops import admin

from ..invited import accepted

pytestmark = pytest.mark.backends("sqlite", "postgres")


def count(server, sql: str, *args) -> int:
    return server.conn.execute(sql, args).fetchone()[0]


def messages(server) -> int:
    return count(server, "SELECT count(*) FROM messages")


def month() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m")


def set_usage(server, ws: str, n: int) -> None:
    org = server.conn.execute("SELECT org FROM workspaces WHERE id = ?", (ws,)).fetchone()[0]
    server.conn.execute(
        "INSERT INTO usage (org, month, count) VALUES (?,?,?) ON CONFLICT (org, month) DO UPDATE SET count = excluded.count",
        (org, month(), n),
    )


def usage(server, ws: str) -> int:
    org = server.conn.execute("SELECT org FROM workspaces WHERE id = ?", (ws,)).fetchone()[0]
    row = server.conn.execute("SELECT count FROM usage WHERE org = ? AND month = ?", (org, month())).fetchone()
    return row[0] if row else 0


def set_membership(server, ws: str, pid: str, **cols) -> None:
    for col, value in cols.items():
        if isinstance(value, (list, tuple)):
            value = json.dumps(list(value))
        server.conn.execute(f"UPDATE memberships SET {col} = ? WHERE workspace = ? AND participant = ?", (value, ws, pid))


async def balance(client, ws: str, agent_id: str) -> int | None:
    return (await client.call("balances", workspace=ws))["agents"][agent_id]


async def no_delivery(client, timeout: float = 0.3) -> None:
    with pytest.raises(asyncio.TimeoutError):
        d = await client.next_delivery(timeout=timeout)
        print("unexpected", d)


# --- agents belong to a person ---

async def test_agent_names_are_unique_per_owner(team):
    """Seed 002: "An agent belongs to a person. Its name is unique among that person's agents, and it has one token"."""
    with pytest.raises(admin.AdminError) as e:
        team.admin(admin.add_agent, "researcher", "alice")
    assert e.value.code == "name_taken"
    theirs = team.admin(admin.add_agent, "researcher", "bob")  # another person's agent may share the name
    assert theirs["api_key"] and theirs["id"] not in (team.keys["researcher"],)
    a = await team.client(api_key=team.keys["researcher"])
    b = await team.client(api_key=theirs["api_key"])
    assert a.me["id"] != b.me["id"] and a.me["handle"] == b.me["handle"] == "researcher"


async def test_same_named_agents_are_told_apart_by_the_owners_handle(team):
    """Seed 002: "Two people may both have an agent called builder; agents tell them apart by the owner's handle, the person field in list_agents"."""
    mine = team.admin(admin.add_agent, "builder", "alice")
    bobs = team.admin(admin.add_agent, "builder", "bob")  # bob is a member of team: his agent comes along
    alice = await team.person("alice")
    agents = (await alice.call("list_agents", workspace=team.ws))["agents"]
    builders = {a["person"]: a["id"] for a in agents if a["name"] == "builder"}
    assert builders == {"alice": mine["id"], "bob": bobs["id"]}
    before = messages(team)
    r = await alice.send(workspace=team.ws, topic="new", title="Build", to=["builder"], text="which one?")
    assert r["op"] == "refused" and r["reason"] == "unknown_recipient", r
    assert "builder@alice" in r["detail"] and "builder@bob" in r["detail"]
    assert messages(team) == before
    builder = await team.client(api_key=bobs["api_key"])
    sent = await alice.send(workspace=team.ws, topic="new", title="Build", to=["builder@bob"], text="you, bob's")
    assert sent["op"] == "sent" and [d["to"] for d in sent["deliveries"] if d["wake"]] == [bobs["id"]]
    d = await builder.next_delivery(timeout=5)
    assert d["wake"] and d["message"]["text"] == "you, bob's"


async def test_an_agent_reaches_a_person_by_the_bare_handle_list_agents_shows(team):
    """Seed 002: "Every person also has a person agent, named after their handle and in every workspace they can reach. It has no token: it is how the person writes to agents from a workspace's Messages tab, and agents answer it like any other agent".

    docs/protocol.md: "when an agent has the same name, the bare name is ambiguous"."""
    def addressed(reply):  # General's other people get it too, as observers
        return [d["to"] for d in reply["deliveries"] if d["reason"] != "observer"]

    alice = await team.person("alice")
    researcher = await team.client(api_key=team.keys["researcher"])
    agents = (await researcher.call("list_agents", workspace=team.ws))["agents"]
    me = next(a for a in agents if a["kind"] == "person" and a["person"] == "alice")
    r = await researcher.send(workspace=team.ws, topic="new", title="Hi", type="request", to=[me["name"]],
                              text="for alice")
    assert r["op"] == "sent" and addressed(r) == [team.alice], r
    assert (await alice.next_delivery(timeout=5))["message"]["text"] == "for alice"
    topic = r["message"]["topic"]
    r = await researcher.send(workspace=team.ws, conversation="dm:alice", topic="new", title="Direct",
                              type="inform", text="just us")
    assert r["op"] == "sent" and addressed(r) == [team.alice], r
    twin = team.admin(admin.add_agent, "alice", "bob")  # bob's agent called alice comes into team with bob
    before = messages(team)
    r = await researcher.send(workspace=team.ws, topic=topic, type="inform", to=["alice"], text="?")
    assert r["op"] == "refused" and r["reason"] == "unknown_recipient", r
    assert "@alice" in r["detail"] and "alice@bob" in r["detail"]
    assert messages(team) == before
    r = await researcher.send(workspace=team.ws, topic=topic, type="inform", to=["alice@bob"], text="!")
    assert r["op"] == "sent" and addressed(r) == [twin["id"]], r
    r = await researcher.send(workspace=team.ws, topic=topic, type="inform", to=["@alice"], text="!")
    assert r["op"] == "sent" and addressed(r) == [team.alice], r


async def test_every_person_has_a_person_entry(team):
    """Seed 002: "Every person also has a person agent, named after their handle and in every workspace they can reach"."""
    alice = await team.person("alice")
    for w in (await alice.call("list_workspaces"))["workspaces"]:
        agents = (await alice.call("list_agents", workspace=w["id"]))["agents"]
        people = {a["name"]: a for a in agents if a["kind"] == "person"}
        assert "alice" in people and people["alice"]["id"] == team.alice and people["alice"]["person"] == "alice"
        if w["id"] == team.ws:
            assert set(people) == {"alice", "bob"}
            assert {a["name"] for a in agents if a["kind"] == "agent"} == {"researcher", "reviewer"}
            assert all(a["person"] == "alice" for a in agents if a["kind"] == "agent")


async def test_everyone_gets_an_organization_and_one_personal_workspace(team):
    """Seed 002: "Everyone gets their own organization on first sign-in and can create or join more".

    Seed 003: "Every person automatically gets exactly one personal workspace, created once"."""
    alice, bob = await team.person("alice"), await team.person("bob")
    mine = (await alice.call("list_workspaces"))["workspaces"]
    theirs = (await bob.call("list_workspaces"))["workspaces"]
    personal_a = [w for w in mine if w["personal"]]
    personal_b = [w for w in theirs if w["personal"]]
    assert len(personal_a) == 1 and len(personal_b) == 1
    assert personal_a[0]["role"] == personal_b[0]["role"] == "owner"
    assert personal_a[0]["org"] != personal_b[0]["org"], "each person has their own organization"
    team_ws = [w for w in mine if w["id"] == team.ws][0]
    assert team_ws["org"] == personal_a[0]["org"] and not team_ws["personal"]
    assert [w["role"] for w in theirs if w["id"] == team.ws] == ["member"]
    assert count(team, "SELECT count(*) FROM orgs WHERE owner = ?", team.alice) == 1
    assert count(team, "SELECT count(*) FROM workspaces WHERE personal_of = ?", team.alice) == 1
    # a person's own personal workspace is not visible to anyone else
    err = await bob.request("list_members", workspace=personal_a[0]["id"])
    assert err["op"] == "error" and err["code"] == "not_found"


# --- roles ---

async def test_viewer_cannot_send_and_nothing_is_charged(team):
    """Seed 002: "People are admin or member of an organization or workspace" (and a viewer only reads): a viewer's send is refused."""
    team.admin(admin.add_person, "carol", "pw-" + "x" * 8)
    team.admin(admin.add_member, team.ws, "carol", "viewer")
    carol = await team.client(handle="carol", password="pw-" + "x" * 8)
    before, used = messages(team), usage(team, team.ws)
    r = await carol.send(workspace=team.ws, topic="new", title="Hi", to=["researcher"], text="may I?")
    assert r["op"] == "refused" and r["reason"] == "permission_denied", r
    assert messages(team) == before and usage(team, team.ws) == used
    h = await carol.call("history", workspace=team.ws, conversation="general")  # a viewer still reads
    assert h["op"] == "history"


async def test_members_fund_only_their_own_agents_admins_fund_any(team):
    """Seed 002: "Admins manage everything in it; members add and change only their own agents"."""
    bobs = team.admin(admin.add_agent, "helper", "bob")
    alice, bob = await team.person("alice"), await team.person("bob")
    researcher = (await team.client(api_key=team.keys["researcher"])).me["id"]
    r = await bob.request("fund", workspace=team.ws, agent="researcher", amount=5)
    assert r["op"] == "refused" and r["reason"] == "permission_denied"
    r = await bob.request("fund", workspace=team.ws, pool=True, amount=5)
    assert r["op"] == "refused" and r["reason"] == "permission_denied"
    assert (await bob.call("fund", workspace=team.ws, agent="helper", amount=5))["balance"] == 5
    assert (await alice.call("fund", workspace=team.ws, agent="helper", amount=5))["balance"] == 10
    team.admin(admin.add_member, team.ws, "bob", "admin")
    assert (await bob.call("fund", workspace=team.ws, agent="researcher", amount=5))["balance"] == 1005
    assert (await bob.call("fund", workspace=team.ws, pool=True, amount=5))["balance"] == 5
    assert await balance(alice, team.ws, researcher) == 1005 and await balance(alice, team.ws, bobs["id"]) == 10


# --- per-membership permissions ---

async def _agents(team):
    researcher = await team.client(api_key=team.keys["researcher"])
    reviewer = await team.client(api_key=team.keys["reviewer"])
    return researcher, reviewer


async def _refused_uncharged(team, sender, to, payer_id, reason="permission_denied"):
    before, used = messages(team), usage(team, team.ws)
    wallet = await balance(sender, team.ws, payer_id)
    r = await sender.send(workspace=team.ws, topic="new", title="Perm", type="request", to=to, text="hello")
    assert r["op"] == "refused" and r["reason"] == reason, r
    assert messages(team) == before and usage(team, team.ws) == used
    assert await balance(sender, team.ws, payer_id) == wallet
    return r


async def test_membership_without_send_is_refused_uncharged(team):
    """Seed 002: "Each membership of an agent in a workspace has: - Send and receive" (send lets it send)."""
    researcher, reviewer = await _agents(team)
    rid = researcher.me["id"]
    set_membership(team, team.ws, rid, send=0)
    await _refused_uncharged(team, researcher, ["reviewer"], rid)
    await no_delivery(reviewer)
    set_membership(team, team.ws, rid, send=1)
    r = await researcher.send(workspace=team.ws, topic="new", title="Perm", to=["reviewer"], text="now")
    assert r["op"] == "sent" and r["cost"] == 1


async def test_recipient_without_receive_is_refused_uncharged(team):
    """Seed 002: "Each membership of an agent in a workspace has: - Send and receive" (without receive nobody reaches it)."""
    researcher, reviewer = await _agents(team)
    set_membership(team, team.ws, reviewer.me["id"], receive=0)
    r = await _refused_uncharged(team, researcher, ["reviewer"], researcher.me["id"])
    assert "reviewer" in r["detail"]
    await no_delivery(reviewer)


async def test_without_receive_an_agent_cannot_search_or_subscribe(team):
    """Seed 002: "Each membership of an agent in a workspace has: - Send and receive: sendlets it callsend_message;receivelets it callcheck_inbox,subscribeandsearch_messages"."""
    alice = await team.person("alice")
    researcher, _ = await _agents(team)
    await alice.send(workspace=team.ws, topic="new", title="Find", type="inform", to=["researcher"], text="needle")
    assert len((await researcher.call("search_messages", workspace=team.ws, query="needle"))["messages"]) == 1
    set_membership(team, team.ws, researcher.me["id"], receive=0)
    r = await researcher.request("search_messages", workspace=team.ws, query="needle")
    assert r["op"] == "error" and r["code"] == "forbidden", r
    r = await researcher.request("subscribe", workspace=team.ws)
    assert r["op"] == "error" and r["code"] == "forbidden", r
    set_membership(team, team.ws, researcher.me["id"], receive=1)
    assert (await researcher.call("subscribe", workspace=team.ws))["op"] == "subscribed"


async def test_can_message_limits_whom_an_agent_sends_to(team):
    """Seed 002: "Can message: the agents it may send to. Empty means anyone in the workspace"."""
    researcher, reviewer = await _agents(team)
    rid = researcher.me["id"]
    set_membership(team, team.ws, rid, can_message=[team.alice])
    await _refused_uncharged(team, researcher, ["reviewer"], rid)
    await no_delivery(reviewer)
    ok = await researcher.send(workspace=team.ws, topic="new", title="Perm", type="inform", to=["@alice"], text="hi")
    assert ok["op"] == "sent", ok
    set_membership(team, team.ws, rid, can_message=None)
    ok = await researcher.send(workspace=team.ws, topic="new", title="Perm", type="inform", to=["reviewer"], text="hi")
    assert ok["op"] == "sent", ok


async def test_takes_from_limits_who_reaches_an_agent(team):
    """Seed 002: "Takes messages from: the agents that may send to it (ADR 0028). Empty means anyone"."""
    researcher, reviewer = await _agents(team)
    set_membership(team, team.ws, reviewer.me["id"], takes_from=[team.alice])
    await _refused_uncharged(team, researcher, ["reviewer"], researcher.me["id"])
    await no_delivery(reviewer)
    alice = await team.person("alice")
    ok = await alice.send(workspace=team.ws, topic="new", title="Perm", to=["reviewer"], text="from alice")
    assert ok["op"] == "sent" and ok["deliveries"][0]["wake"], ok
    d = await reviewer.next_delivery(timeout=5)
    assert d["message"]["text"] == "from alice"


# --- seed 003: where an agent appears ---

async def test_agent_goes_with_its_person_into_every_workspace_unless_pinned(team):
    """Seed 003: "once made it goes with you into every workspace you are a member of. You can restrict it by pinning it to chosen workspaces"."""
    later = team.admin(admin.add_workspace, "later", "alice")["id"]
    pinned = team.admin(admin.add_agent, "homebody", "alice", team.ws)
    bobs = team.admin(admin.add_workspace, "bobs", "bob")["id"]
    team.admin(admin.add_member, bobs, "alice")
    alice = await team.person("alice")
    for ws in (team.ws, later, bobs):
        names = {a["name"] for a in (await alice.call("list_agents", workspace=ws))["agents"] if a["kind"] == "agent"}
        assert {"researcher", "reviewer"} <= names, ws
        assert ("homebody" in names) == (ws == team.ws), ws
    home = await team.client(api_key=pinned["api_key"])
    r = await alice.send(workspace=later, topic="new", title="Here?", to=["homebody"], text="are you here?")
    assert r["op"] == "refused" and r["reason"] == "unknown_recipient"
    r = await home.send(workspace=later, topic="new", title="Here?", to=["@alice"], text="me?")
    assert r["op"] == "refused" and r["reason"] == "unknown_workspace"


async def test_one_agent_one_queue_across_workspaces(team):
    """Seed 003: "Wherever it appears it is one agent: one identity, one work queue, not a copy per workspace"; and
    seed 000: "a workspace is a team's space: its people, its agents, its conversations and its credits": a wallet
    in each (issue 17)."""
    alice = await team.person("alice")
    personal = [w["id"] for w in (await alice.call("list_workspaces"))["workspaces"] if w["personal"]][0]
    team.admin(admin.fund, "researcher", 10, ws_ref=personal)
    researcher = await team.client(api_key=team.keys["researcher"])
    a = await alice.send(workspace=team.ws, topic="new", title="From team", to=["researcher"], text="in team")
    b = await alice.send(workspace=personal, topic="new", title="From home", to=["researcher"], text="at home")
    assert a["op"] == b["op"] == "sent"
    got = [await researcher.next_delivery(timeout=5) for _ in range(2)]
    assert [(d["wake"], d["message"]["workspace"]) for d in got] == [(True, team.ws), (True, personal)]
    for d in got:
        m = d["message"]
        r = await researcher.send(workspace=m["workspace"], topic=m["topic"], type="response", in_reply_to=m["id"],
                                  text="ok", state="done")
        assert r["op"] == "sent" and r["cost"] == 1
        await researcher.ack([d["id"]])
    rid = researcher.me["id"]
    assert (await balance(alice, team.ws, rid), await balance(alice, personal, rid)) == (999, 9), "a wallet in each"


# --- organizations and restricted workspaces (seed 002) ---

async def workspaces_of(client) -> dict[str, str]:
    """{workspace name: role} of what `client` can reach."""
    return {w["name"]: w["role"] for w in (await client.call("list_workspaces"))["workspaces"]}


async def test_a_workspace_is_open_to_its_organization_and_a_restricted_one_only_to_admins_and_direct_members(team):
    """Seed 002: "A restricted workspace is open only to the organization's admins and the people added to it directly, not to every member".

    Seed 002: "Everyone gets their own organization on first sign-in and can create or join more; invite people from Organizations, or share a single workspace with someone from its Members tab"."""
    for h in ("carol", "dave", "erin"):
        team.admin(admin.add_person, h, "pw-" + "x" * 8)
    alice = await team.person("alice")
    org = next(w["org"] for w in (await alice.call("list_workspaces"))["workspaces"] if w["id"] == team.ws)
    r = await alice.call("add_org_member", org=org, handle="carol")
    assert r["role"] == "member" and r["org"] == org and r["invited"] is True
    assert (await accepted(team, "carol", org))["role"] == "member"
    assert (await alice.call("add_org_member", org=org, handle="@dave", role="admin"))["role"] == "admin"
    assert (await accepted(team, "dave", org))["role"] == "admin"
    carol, dave, erin = [await team.person(h) for h in ("carol", "dave", "erin")]
    assert await workspaces_of(carol) == {"carol (personal)": "owner", "team": "member"}, "open to every member"
    assert await workspaces_of(dave) == {"dave (personal)": "owner", "team": "admin"}, "an org admin manages it"

    secret = await alice.call("create_workspace", name="secret", restricted=True)
    assert secret["restricted"] is True
    assert "secret" not in await workspaces_of(carol), "a restricted workspace is not listed to a member"
    assert (await workspaces_of(dave))["secret"] == "admin", "the organization's admins reach it"
    nowhere = "00000000-0000-4000-8000-000000000000"
    for op, fields in (("history", {"conversation": "general"}), ("list_members", {}), ("list_agents", {})):
        hidden = await carol.request(op, workspace=secret["id"], **fields)
        made_up = await carol.request(op, workspace=nowhere, **fields)
        assert {**hidden, "ref": 0} == {**made_up, "ref": 0} and hidden["code"] == "not_found"
    hidden = await carol.send(workspace=secret["id"], topic="new", title="In?", type="inform", to=["@alice"], text="x")
    made_up = await carol.send(workspace=nowhere, topic="new", title="In?", type="inform", to=["@alice"], text="x")
    assert hidden["op"] == "refused" and {**hidden, "ref": 0} == {**made_up, "ref": 0}
    assert (await carol.request("subscribe", workspace=secret["id"]))["code"] == "not_found"

    await alice.call("add_member", workspace=secret["id"], handle="erin")  # added to it directly (invited)
    await accepted(team, "erin", secret["id"])
    assert await workspaces_of(erin) == {"erin (personal)": "owner", "secret": "member"}, "not the org's other workspaces"

    scout = team.admin(admin.add_agent, "scout", "carol")  # carol's agent goes where carol goes
    team.admin(admin.fund, "scout", 10, ws_ref=team.ws)  # (its wallet in team)
    members = {m["name"] for m in (await alice.call("list_members", workspace=team.ws))["members"]}
    assert {"carol", "dave", "scout"} <= members
    assert "scout" not in {m["name"] for m in (await alice.call("list_members", workspace=secret["id"]))["members"]}

    # restricting team: carol (and her agent) leave it; bob, added directly, and dave, an admin, stay
    forbidden = await carol.request("set_restricted", workspace=team.ws, restricted=True)
    assert forbidden["code"] == "forbidden"
    assert (await alice.call("set_restricted", workspace=team.ws, restricted=True))["restricted"] is True
    assert "team" not in await workspaces_of(carol)
    members = {m["name"] for m in (await alice.call("list_members", workspace=team.ws))["members"]}
    assert "carol" not in members and "scout" not in members and {"bob", "dave"} <= members
    bob = await team.person("bob")
    assert "team" in await workspaces_of(bob)
    scout_c = await team.client(api_key=scout["api_key"])
    r = await scout_c.send(workspace=team.ws, topic="new", title="Hi", type="inform", to=["@alice"], text="in?")
    assert r["op"] == "refused" and r["reason"] == "unknown_workspace", r
    await alice.call("set_restricted", workspace=team.ws, restricted=False)
    assert (await workspaces_of(carol))["team"] == "member", "lifting it opens it again"
    r = await scout_c.send(workspace=team.ws, topic="new", title="Hi", type="inform", to=["@alice"], text="in!")
    assert r["op"] == "sent", r

    # a personal workspace is its person's alone; only the owner makes admins; members do not invite
    personal = next(w["id"] for w in (await alice.call("list_workspaces"))["workspaces"] if w["personal"])
    assert (await alice.request("set_restricted", workspace=personal, restricted=False))["code"] == "personal_workspace"
    assert "alice (personal)" not in await workspaces_of(dave)
    assert (await carol.request("add_org_member", org=org, handle="erin"))["code"] == "forbidden"
    assert (await dave.request("add_org_member", org=org, handle="erin", role="admin"))["code"] == "forbidden"
    assert (await dave.request("add_org_member", org=org, handle="erin"))["role"] == "member"
    await accepted(team, "erin", org)  # (an admin's invitation)
    assert (await erin.request("add_org_member", org=org, handle="bob"))["code"] == "forbidden"
    # lowering an admin to member takes the restricted workspaces away, but not one it was added to directly
    await alice.call("add_org_member", org=org, handle="dave", role="member")
    assert "secret" not in await workspaces_of(dave) and (await workspaces_of(dave))["team"] == "member"
    await alice.call("add_org_member", org=org, handle="erin", role="member")
    assert "secret" in await workspaces_of(erin)


async def test_the_agent_limit_counts_the_agents_in_an_organization_whoever_owns_them(team):
    """Seed 002: "An organization's plan sets ... how many agents it can connect" (Free: 5).

    Seed 002: "An agent counts once per organization it is in, while its token is valid"."""
    team.admin(admin.set_plan, "alice", "free")  # alice's organization holds researcher and reviewer
    bobs = [team.admin(admin.add_agent, f"b{i}", "bob") for i in (1, 2, 3)]  # bob is in team: they come along
    assert all(b["left_out"] == [] for b in bobs)
    alice = await team.person("alice")

    async def agents_in_team():
        return {a["name"] for a in (await alice.call("list_agents", workspace=team.ws))["agents"] if a["kind"] == "agent"}

    assert await agents_in_team() == {"researcher", "reviewer", "b1", "b2", "b3"}
    b4 = team.admin(admin.add_agent, "b4", "bob")  # bob's own organization (Team) has room; alice's has none
    assert b4["left_out"] == [team.ws] and "b4" not in await agents_in_team()
    b4c = await team.client(api_key=b4["api_key"])
    assert [w["name"] for w in (await b4c.call("list_workspaces"))["workspaces"]] == ["bob (personal)"]
    with pytest.raises(admin.AdminError) as e:  # every workspace of alice's is in her full organization
        team.admin(admin.add_agent, "a6", "alice")
    assert e.value.code == "plan_limit"
    assert count(team, "SELECT count(*) FROM agents WHERE name = 'a6'") == 0, "nothing made"
    r = await alice.request("add_agent", name="a6")
    assert r["code"] == "plan_limit"
    team.admin(admin.revoke_agent, "b1@bob")  # a revoked token no longer counts
    assert (await alice.call("add_agent", name="a6"))["left_out"] == []
    assert "a6" in await agents_in_team()
    carol = team.admin(admin.add_person, "carol", "pw-" + "x" * 8)
    team.admin(admin.add_agent, "c1", "carol")
    r = team.admin(admin.add_member, team.ws, "carol")  # her agent would be the organization's sixth
    assert r["left_out"] == [team.conn.execute("SELECT id FROM agents WHERE name = 'c1'").fetchone()[0]]
    assert "c1" not in await agents_in_team()
    team.admin(admin.set_plan, "alice", "team")
    team.admin(admin.add_member, team.ws, "carol")  # the Team plan has room: it comes along now
    assert "c1" in await agents_in_team() and carol["id"]


@pytest.mark.backends("sqlite", "postgres")  # reaches into the writer, in another process on "process"
async def test_the_monthly_count_resets_on_the_first_utc(team):
    """Seed 002: "A message to several agents counts once per recipient. The monthly count resets on the 1st (UTC)"."""
    team.admin(admin.set_plan, "alice", "free")
    alice = await team.person("alice")
    org = team.conn.execute("SELECT org FROM workspaces WHERE id = ?", (team.ws,)).fetchone()[0]
    team.conn.execute("INSERT INTO usage (org, month, count) VALUES (?, '2026-10', 299)", (org,))
    writer = team.gw.writer
    last = int(datetime(2026, 10, 31, 23, 59, 59, 999_999, tzinfo=timezone.utc).timestamp() * 1e6)
    writer.clock = lambda: last
    try:
        r = await alice.send(workspace=team.ws, topic="new", title="Oct", type="inform",
                             to=["researcher", "reviewer"], text="two recipients, one left")
        assert r["op"] == "refused" and r["reason"] == "plan_limit", r
        r = await alice.send(workspace=team.ws, topic="new", title="Oct", type="inform", to=["researcher"], text="300th")
        assert r["op"] == "sent", r
        r = await alice.send(workspace=team.ws, topic=r["message"]["topic"], type="inform", to=["researcher"],
                             text="301st")
        assert r["op"] == "refused" and r["reason"] == "plan_limit", r
        writer.clock = lambda: last + 1  # 2026-11-01T00:00:00Z
        r = await alice.send(workspace=team.ws, topic="new", title="Nov", type="inform",
                             to=["researcher", "reviewer"], text="a new month")
        assert r["op"] == "sent", r
    finally:
        writer.clock = __import__("ygg_server.clock", fromlist=["now_us"]).now_us
    counts = dict(team.conn.execute("SELECT month, count FROM usage WHERE org = ?", (org,)).fetchall())
    assert counts == {"2026-10": 300, "2026-11": 2}


async def test_permissions_are_set_by_admins_and_by_members_for_their_own_agents(team):
    """Seed 002: "Each membership of an agent in a workspace has: ... Can message: the agents it may send to. Empty means anyone in the workspace. ... Takes messages from: the agents that may send to it (ADR 0028). Empty means anyone. ... Monitor: set by a workspace admin".

    Seed 002: "Admins manage everything in it; members add and change only their own agents"."""
    alice, bob = await team.person("alice"), await team.person("bob")
    helper = team.admin(admin.add_agent, "helper", "bob")
    team.admin(admin.fund, "helper", 100)
    researcher = await team.client(api_key=team.keys["researcher"])

    async def say(who, to):
        return await who.send(workspace=team.ws, topic="new", title="P", type="inform", to=to, text="hello")

    r = await alice.call("set_permissions", workspace=team.ws, agent="researcher", can_message=["reviewer"])
    assert r["can_message"] == [team.conn.execute("SELECT id FROM agents WHERE name = 'reviewer'").fetchone()[0]]
    assert r["send"] is True and r["takes_from"] == []
    refused = await say(researcher, ["@bob"])
    assert refused["op"] == "refused" and refused["reason"] == "permission_denied", refused
    assert (await say(researcher, ["reviewer"]))["op"] == "sent"
    assert (await alice.call("set_permissions", workspace=team.ws, agent="researcher", can_message=[]))["can_message"] == []
    assert (await say(researcher, ["@bob"]))["op"] == "sent", "empty means anyone"
    await alice.call("set_permissions", workspace=team.ws, agent="reviewer", takes_from=["@alice"])
    assert (await say(researcher, ["reviewer"]))["reason"] == "permission_denied"
    shown = {m["name"]: m for m in (await bob.call("list_members", workspace=team.ws))["members"]}
    assert (shown["reviewer"]["takes_from"], shown["reviewer"]["can_message"]) == ([team.alice], []), "list_members shows them"
    assert (await say(alice, ["reviewer"]))["op"] == "sent"

    # bob, a member: his own agent yes (but not monitor), alice's no
    assert (await bob.request("set_permissions", workspace=team.ws, agent="researcher", send=False))["code"] == "forbidden"
    assert (await bob.call("set_permissions", workspace=team.ws, agent="helper", receive=False))["receive"] is False
    assert (await say(alice, ["helper"]))["reason"] == "permission_denied"
    assert (await bob.request("set_permissions", workspace=team.ws, agent="helper", monitor=True))["code"] == "forbidden"
    h = await team.client(api_key=helper["api_key"])
    assert (await h.request("subscribe", workspace=team.ws, monitor=True))["code"] == "forbidden"
    await alice.call("set_permissions", workspace=team.ws, agent="helper@bob", receive=True, monitor=True)
    assert (await h.call("subscribe", workspace=team.ws, monitor=True))["monitor"] is True
    await alice.call("set_permissions", workspace=team.ws, agent="helper", send=False)
    assert (await say(h, ["@alice"]))["reason"] == "permission_denied"

    # an agent of somewhere else is answered as one that does not exist; people have roles, not these
    team.admin(admin.add_person, "carol", "pw-" + "x" * 8)
    theirs = team.admin(admin.add_agent, "outsider", "carol")
    for ref in (theirs["id"], "outsider", "outsider@carol"):
        hidden = await alice.request("set_permissions", workspace=team.ws, agent=ref, send=False)
        made_up = await alice.request("set_permissions", workspace=team.ws, agent=ref + "x", send=False)
        assert hidden["code"] == made_up["code"] == "unknown_member", (ref, hidden)
    assert (await alice.request("set_permissions", workspace=team.ws, agent="@bob", send=False))["code"] == "unknown_member"
    carol = await team.person("carol")  # not in team: the workspace is not found
    assert (await carol.request("set_permissions", workspace=team.ws, agent="researcher", send=False))["code"] == "not_found"


async def test_the_owner_stays_the_owner(team):
    """Seed 003: "The owner keeps only three things: changing roles, deleting the workspace, and its own permanence, set once at creation and never changed or removed"."""
    alice = await team.person("alice")
    r = await alice.request("add_member", workspace=team.ws, handle="alice", role="member")
    assert r["code"] == "owner_permanent", r
    with pytest.raises(admin.AdminError) as e:
        team.admin(admin.add_member, team.ws, "alice", "admin")
    assert e.value.code == "owner_permanent"
    assert (await alice.call("add_member", workspace=team.ws, handle="bob", role="admin"))["role"] == "admin"
    bob = await team.person("bob")
    r = await bob.request("add_member", workspace=team.ws, handle="alice", role="viewer")
    assert r["code"] == "forbidden", "an admin does not change roles"
    roles = {m["name"]: m["role"] for m in (await alice.call("list_members", workspace=team.ws))["members"]}
    assert roles["alice"] == "owner" and roles["bob"] == "admin"
    assert (await alice.call("add_member", workspace=team.ws, handle="alice", role="owner"))["role"] == "owner"


async def test_a_person_creates_and_joins_more_organizations(team):
    """Seed 002: "Everyone gets their own organization on first sign-in and can create or join more"."""
    team.admin(admin.add_person, "carol", "pw-" + "x" * 8)
    alice, bob, carol = [await team.person(h) for h in ("alice", "bob", "carol")]
    acme = await alice.call("create_org", name="Acme")
    assert acme["name"] == "Acme" and acme["id"]
    ops = await alice.call("create_workspace", name="ops", org=acme["id"])
    assert ops["org"] == acme["id"] and ops["restricted"] is False
    assert "ops" not in await workspaces_of(bob)
    await alice.call("add_org_member", org=acme["id"], handle="bob")  # bob joins a second organization
    await accepted(team, "bob", acme["id"])
    assert (await workspaces_of(bob))["ops"] == "member"
    orgs = {w["org"] for w in (await bob.call("list_workspaces"))["workspaces"]}
    assert len(orgs) == 3, "his own, alice's first, and Acme"
    assert (await bob.request("create_workspace", name="mine", org=acme["id"]))["code"] == "forbidden"
    hidden = await carol.request("create_workspace", name="x", org=acme["id"])
    made_up = await carol.request("create_workspace", name="x", org="00000000-0000-4000-8000-000000000000")
    assert hidden["code"] == "not_found" and {**hidden, "ref": 0} == {**made_up, "ref": 0}
    assert (await carol.request("add_org_member", org=acme["id"], handle="carol"))["code"] == "not_found"


async def test_a_person_leaves_one_workspace_as_one_leaves_a_channel(team):
    """docs/protocol.md, `leave_workspace`: a person leaves one workspace (added directly or reached through the
    organization), with their agents there; their other connections are told (`workspace_gone`), their agent's
    queued deliveries there stop. Seed 003 §65: "Every person gets exactly one personal workspace" (never
    left); §66: the owner's "own permanence" (the last owner cannot leave)."""
    from tests.net.test_events import _event

    scout = team.admin(admin.add_agent, "scout", "bob")  # follows bob into team
    team.admin(admin.fund, "scout", 100)
    alice, phone, laptop = await team.person("alice"), await team.person("bob"), await team.person("bob")
    agent = await team.client(api_key=scout["api_key"], prefetch=1)
    await phone.subscribe(team.ws)
    first = await alice.send(workspace=team.ws, topic="new", title="Scout", to=["scout"], text="s0")
    for i in (1, 2):
        assert (await alice.send(workspace=team.ws, topic=first["message"]["topic"], to=["scout"], text=f"s{i}"))["op"] == "sent"
    held = await agent.next_delivery(timeout=5)
    home = [w["id"] for w in (await laptop.call("list_workspaces"))["workspaces"] if w["personal"]][0]
    assert (await laptop.request("leave_workspace", workspace=home))["code"] == "personal_workspace"
    assert (await alice.request("leave_workspace", workspace=team.ws))["code"] == "last_owner"
    made_up = await laptop.request("leave_workspace", workspace="00000000-0000-4000-8000-000000000000")
    assert made_up["code"] == "not_found"
    assert (await agent.request("leave_workspace", workspace=team.ws))["code"] == "forbidden", "a person's, not an agent's"

    out = await laptop.call("leave_workspace", workspace=team.ws)
    assert out["workspace"] == team.ws and out["left"] == [team.ws]
    assert (await _event(phone, "workspace_gone", timeout=3))["workspace"] == team.ws
    await agent.ack([held["id"]])
    await no_delivery(agent, timeout=0.5)  # s1 and s2 were queued for scout in team: held back
    assert "team" not in await workspaces_of(laptop)
    assert (await laptop.request("history", workspace=team.ws))["code"] == "not_found"
    assert (await laptop.request("leave_workspace", workspace=team.ws))["code"] == "not_found", "no longer in it"
    for to in ("@bob", "scout"):
        r = await alice.send(workspace=team.ws, topic=first["message"]["topic"], to=[to], text="still there?")
        assert r["op"] == "refused" and r["reason"] == "unknown_recipient", (to, r)

    org = (await alice.call("list_orgs"))["orgs"][0]["id"]
    await alice.call("add_org_member", org=org, handle="bob")  # joining the organization opens team to him again
    await accepted(team, "bob", org)
    ops = (await alice.call("create_workspace", name="ops"))["id"]  # and ops, through the organization
    assert set(await workspaces_of(laptop)) >= {"team", "ops"}
    assert (await laptop.call("leave_workspace", workspace=ops))["left"] == [ops]
    assert "ops" not in await workspaces_of(laptop) and "team" in await workspaces_of(laptop)


async def test_a_person_joins_an_open_workspace_of_their_organization_by_themselves(team):
    """docs/protocol.md, `list_joinable` and `join_workspace`: a member of an organization gets back, by
    themselves, into a workspace of it they left (as one joins a public channel), with the role the organization
    gives and their agents; seed 002: "A restricted workspace is open only to the organization's admins and the
    people added to it directly" (so, like another organization's, a personal one or a made-up id: `not_found`);
    their other connections are told (`workspace_added`)."""
    from tests.net.test_events import _event

    team.admin(admin.add_agent, "scout", "bob")
    team.admin(admin.add_person, "carol", "pw-" + "x" * 8)
    alice, phone, laptop, carol = [await team.person(h) for h in ("alice", "bob", "bob", "carol")]
    org = (await alice.call("list_orgs"))["orgs"][0]["id"]
    await alice.call("add_org_member", org=org, handle="bob")
    await accepted(team, "bob", org)
    ops = (await alice.call("create_workspace", name="ops"))["id"]
    secret = (await alice.call("create_workspace", name="secret", restricted=True))["id"]
    theirs = (await carol.call("create_workspace", name="theirs"))["id"]
    carols_home = [w["id"] for w in (await carol.call("list_workspaces"))["workspaces"] if w["personal"]][0]
    home = [w["id"] for w in (await laptop.call("list_workspaces"))["workspaces"] if w["personal"]][0]
    assert (await laptop.call("list_joinable"))["workspaces"] == [], "he is in all that is open to him"
    assert (await laptop.call("leave_workspace", workspace=ops))["left"] == [ops]
    assert (await laptop.call("list_joinable"))["workspaces"] == [
        {"id": ops, "name": "ops", "org": org, "restricted": False}]
    await phone.subscribe(team.ws)  # a connection that follows a workspace is told of one it reaches anew

    out = await laptop.call("join_workspace", workspace=ops)
    assert {k: out[k] for k in ("workspace", "role", "joined", "left_out")} == \
        {"workspace": ops, "role": "member", "joined": True, "left_out": []}
    assert (await _event(phone, "workspace_added", timeout=3))["workspace"] == ops
    assert (await workspaces_of(laptop))["ops"] == "member"
    names = {m["name"] for m in (await laptop.call("list_members", workspace=ops))["members"]}
    assert {"bob", "scout"} <= names, "his agent came back with him"
    assert (await laptop.call("list_joinable"))["workspaces"] == []
    again = await laptop.call("join_workspace", workspace=ops)
    assert again["joined"] is False and again["role"] == "member", "already in: answered as it is"
    assert (await laptop.call("join_workspace", workspace=team.ws))["joined"] is False

    made_up = await laptop.request("join_workspace", workspace="00000000-0000-4000-8000-000000000000")
    assert made_up["code"] == "not_found"
    for hidden in (secret, theirs, carols_home, home):
        refused = await laptop.request("join_workspace", workspace=hidden)
        assert {**refused, "ref": 0} == {**made_up, "ref": 0}, hidden
    assert "secret" not in await workspaces_of(laptop) and "theirs" not in await workspaces_of(laptop)
    agent = await team.client(api_key=team.admin(admin.add_agent, "probe", "bob")["api_key"])
    assert (await agent.request("join_workspace", workspace=ops))["code"] == "forbidden", "a person's, not an agent's"
    assert (await agent.call("list_joinable"))["workspaces"] == []

    await alice.call("add_org_member", org=org, handle="bob", role="admin")  # an org admin reaches restricted ones
    await laptop.call("leave_workspace", workspace=secret)
    assert [w["id"] for w in (await laptop.call("list_joinable"))["workspaces"]] == [secret]
    assert (await laptop.call("join_workspace", workspace=secret))["role"] == "admin"


async def test_join_workspace_takes_an_id_never_a_name_so_other_tenants_names_do_not_show(team):
    """docs/protocol.md, `join_workspace`: `workspace` is its id; another organization's workspace and a made-up
    id are `not_found` exactly alike. A name was looked up across every tenant (`admin.workspace`): one only
    this workspace had joined it, and the same name once another organization also used it was `not_found`, so
    a member could learn whether any other tenant has a workspace of a given name."""
    team.admin(admin.add_person, "carol", "pw-" + "x" * 8)
    alice, bob, carol = [await team.person(h) for h in ("alice", "bob", "carol")]
    org = (await alice.call("list_orgs"))["orgs"][0]["id"]
    await alice.call("add_org_member", org=org, handle="bob")
    await accepted(team, "bob", org)
    ops = (await alice.call("create_workspace", name="ops"))["id"]
    await bob.call("leave_workspace", workspace=ops)
    made_up = await bob.request("join_workspace", workspace="00000000-0000-4000-8000-000000000000")
    assert made_up["code"] == "not_found"
    by_name = await bob.request("join_workspace", workspace="ops")
    assert {**by_name, "ref": 0} == {**made_up, "ref": 0}, "a name is not an id"
    await carol.call("create_workspace", name="ops")  # another tenant's workspace of the same name
    by_name = await bob.request("join_workspace", workspace="ops")
    assert {**by_name, "ref": 0} == {**made_up, "ref": 0}
    assert (await bob.call("join_workspace", workspace=ops))["joined"] is True, "by its id"
