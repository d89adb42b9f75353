"""The permission lattice (issue 8): each permission missing, in a send to several recipients at once, by
default recipients and through a group; monitoring, funding and management without the role for it.

Every such attempt is refused whole: nothing stored, nothing charged, and nobody (not even the recipients
that were allowed, nor the observers) gets anything.
"""

from __future__ import annotations

import asyncio

import pytest

from ygg_server.ops import admin

from tests.net.test_org import set_membership

from .conftest import PW, counts

pytestmark = pytest.mark.backends("sqlite", "postgres")


@pytest.fixture
async def lattice(team):
    """team A plus a third agent `writer`, a viewer `carol`, a group `pair` (reviewer, writer), and a topic
    that alice opened with researcher, reviewer and writer in it; everyone connected and drained."""
    team.admin(admin.add_agent, "writer", "alice")
    team.admin(admin.fund, "writer", 100)
    team.admin(admin.add_person, "carol", PW)
    team.admin(admin.add_member, team.ws, "carol", "viewer")
    team.admin(admin.add_group, team.ws, "pair", ["reviewer", "writer"])
    alice, bob, carol = await team.person("alice"), await team.person("bob"), await team.person("carol")
    agents = {n: await team.client(api_key=team.keys[n] if n in team.keys else None) for n in ("researcher", "reviewer")}
    key = team.conn.execute("SELECT id FROM agents WHERE name = 'writer'").fetchone()[0]
    t = await alice.send(workspace=team.ws, topic="new", title="Lattice", type="inform",
                         to=["researcher", "reviewer"], text="all here")
    team.topic = t["message"]["topic"]
    team.people = {"alice": alice, "bob": bob, "carol": carol}
    team.agents = agents
    team.ids = {n: c.me["id"] for n, c in agents.items()} | {"writer": key}
    await _drain(team)
    return team


async def _drain(team):
    for c in [*team.people.values(), *team.agents.values()]:
        while True:
            try:
                d = await c.next_delivery(timeout=0.15)
            except asyncio.TimeoutError:
                break
            await c.ack([d["id"]])
        c.pending_events()


async def refused_whole(team, sender, reason="permission_denied", **send) -> dict:
    """Send; expect a refusal; check nothing moved and nobody heard anything."""
    before = counts(team)
    r = await sender.send(workspace=team.ws, **send)
    assert r["op"] == "refused" and r["reason"] == reason, r
    assert counts(team) == before, "stored, charged or counted something"
    await asyncio.sleep(0.2)
    for name, c in [*team.people.items(), *team.agents.items()]:
        assert c.pending_deliveries() == 0, f"{name} got part of a refused message"
        assert [e for e in c.pending_events() if e["kind"] in ("message", "topic", "balance")] == [], name
    return r


async def test_without_send_nothing_goes_out(lattice):
    """Seed 002: "Each membership of an agent in a workspace has: - Send and receive"."""
    t = lattice
    set_membership(t, t.ws, t.ids["researcher"], send=0)
    await asyncio.sleep(0.15)
    await refused_whole(t, t.agents["researcher"], topic=t.topic, type="request", to=["reviewer", "@alice"], text="a")
    await refused_whole(t, t.agents["researcher"], topic=t.topic, type="request", text="default recipients")
    await refused_whole(t, t.agents["researcher"], topic=t.topic, to=["system.ygg"], state="done", text="absorbed")


async def test_one_recipient_outside_can_message_refuses_the_whole_message(lattice):
    """Seed 002: "Can message: the agents it may send to. Empty means anyone in the workspace"."""
    t = lattice
    set_membership(t, t.ws, t.ids["researcher"], can_message=[t.ids["reviewer"], t.alice])
    await asyncio.sleep(0.15)
    r = await refused_whole(t, t.agents["researcher"], topic=t.topic, type="request",
                            to=["reviewer", "@alice", "writer"], text="to three")
    assert "writer" in r["detail"]
    await refused_whole(t, t.agents["researcher"], topic=t.topic, type="request", to=["group:pair"], text="group")
    ok = await t.agents["researcher"].send(workspace=t.ws, topic=t.topic, type="inform", to=["reviewer", "@alice"],
                                           text="allowed ones")
    assert ok["op"] == "sent" and ok["cost"] == 2


async def test_one_recipient_that_does_not_take_from_the_sender_refuses_the_whole_message(lattice):
    """Seed 002: "Takes messages from: the agents that may send to it (ADR 0028). Empty means anyone"."""
    t = lattice
    set_membership(t, t.ws, t.ids["writer"], takes_from=[t.alice])
    await asyncio.sleep(0.15)
    await refused_whole(t, t.agents["researcher"], topic=t.topic, type="request", to=["reviewer", "writer"], text="x")
    await refused_whole(t, t.agents["researcher"], topic=t.topic, type="request", to=["group:pair"], text="x")
    await refused_whole(t, t.agents["researcher"], topic="new", title="New", type="request", to=["writer"], text="x")
    # writer joins the topic through alice; then an agent's default recipients include it
    ok = await t.people["alice"].send(workspace=t.ws, topic=t.topic, type="inform", to=["writer"], text="join")
    assert ok["op"] == "sent"
    await _drain(t)
    await refused_whole(t, t.agents["researcher"], topic=t.topic, type="inform", text="to everyone in the topic")


async def test_one_recipient_without_receive_refuses_the_whole_message(lattice):
    """Seed 002: "Each membership of an agent in a workspace has: - Send and receive" (without receive nobody reaches it)."""
    t = lattice
    set_membership(t, t.ws, t.ids["writer"], receive=0)
    await asyncio.sleep(0.15)
    await refused_whole(t, t.agents["researcher"], topic=t.topic, type="request", to=["reviewer", "writer"], text="x")
    await refused_whole(t, t.people["alice"], topic=t.topic, type="request", to=["researcher", "writer"], text="x")


async def test_a_viewer_sends_nothing_funds_nothing_budgets_nothing(lattice):
    """Seed 002: "People are admin or member of an organization or workspace" (and a viewer only reads)."""
    t = lattice
    carol = t.people["carol"]
    await refused_whole(t, carol, topic=t.topic, type="request", to=["researcher"], text="x")
    await refused_whole(t, carol, topic="new", title="Mine", type="inform", to=["@alice"], text="x")
    await refused_whole(t, carol, conversation="dm:researcher", topic="new", title="DM", to=["researcher"], text="x")
    before = counts(t)
    for fields in ({"agent": "researcher", "amount": 5}, {"pool": True, "amount": 5}):
        r = await carol.request("fund", workspace=t.ws, **fields)
        assert r["op"] == "refused" and r["reason"] == "permission_denied", r
    r = await carol.request("set_budget", workspace=t.ws, topic=t.topic, budget=5)
    assert r["op"] == "refused" and r["reason"] == "permission_denied"
    r = await carol.request("add_member", workspace=t.ws, handle="bob", role="admin")
    assert r["op"] == "error" and r["code"] == "forbidden"
    assert counts(t) == before


async def test_funding_and_management_beyond_ones_role_change_nothing(lattice):
    """Seed 002: "Admins manage everything in it; members add and change only their own agents"."""
    t = lattice
    bob, researcher = t.people["bob"], t.agents["researcher"]
    before = counts(t)
    for who, fields in ((bob, {"agent": "researcher", "amount": 5}), (bob, {"pool": True, "amount": 5}),
                        (researcher, {"agent": "researcher", "amount": 5}), (researcher, {"pool": True, "amount": 5})):
        r = await who.request("fund", workspace=t.ws, **fields)
        assert r["op"] == "refused" and r["reason"] == "permission_denied", r
    for who, op, fields in ((bob, "add_member", {"workspace": t.ws, "handle": "carol", "role": "member"}),
                            (researcher, "add_member", {"workspace": t.ws, "handle": "carol", "role": "member"}),
                            (researcher, "create_workspace", {"name": "agents own nothing"}),
                            (researcher, "add_agent", {"name": "child"})):
        r = await who.request(op, **fields)
        assert r["op"] == "error" and r["code"] == "forbidden", (op, r)
    r = await researcher.request("set_budget", workspace=t.ws, topic=t.topic, budget=1)
    assert r["op"] == "refused" and r["reason"] == "permission_denied"
    assert counts(t) == before


async def test_monitoring_without_monitor_is_forbidden_and_shows_no_messages(lattice):
    """docs/protocol.md: "With `"monitor":true` (the monitor permission, or the owner/admin role) it also gets `{"op":"event","kind":"message","message":{…},"deliveries":[…]}` for every message in the workspace"."""
    t = lattice
    for name, who in (("bob", t.people["bob"]), ("carol", t.people["carol"]), ("reviewer", t.agents["reviewer"])):
        r = await who.request("subscribe", workspace=t.ws, monitor=True)
        assert r["op"] == "error" and r["code"] == "forbidden", (name, r)
    r = await t.people["bob"].request("subscribe", workspace=t.ws, monitor=False)
    assert r["op"] == "subscribed" and r["monitor"] is False
    dm = await t.agents["researcher"].send(workspace=t.ws, conversation="dm:reviewer", topic="new", title="Private",
                                           to=["reviewer"], text="between us")
    assert dm["op"] == "sent"
    await asyncio.sleep(0.3)
    events = t.people["bob"].pending_events() + t.people["carol"].pending_events()
    assert [e for e in events if e["kind"] == "message"] == []
    assert [e for e in events if e["kind"] == "topic" and e["topic"]["id"] == dm["message"]["topic"]] == [], \
        "a direct conversation's topic events go only to its members"
    set_membership(t, t.ws, t.people["bob"].me["id"], monitor=1)  # with the permission, it works
    await asyncio.sleep(0.15)
    r = await t.people["bob"].request("subscribe", workspace=t.ws, monitor=True)
    assert r["op"] == "subscribed" and r["monitor"] is True
