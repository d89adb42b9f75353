"""The store suite: what both stores must do alike (the `backend` fixture: sqlite, postgres).

Each test runs on SQLite and on PostgreSQL; the PostgreSQL runs are skipped, saying why,
when no server is reachable (tests/conftest.py).
"""

from __future__ import annotations

import asyncio
import json
import sys

import msgspec
import pytest

from ygg_server.clock import now_us
from ygg_server.ops import admin, queries
from ygg_server.protocol import frames
from ygg_server.core import rules
from ygg_server.store import loaders, rows as codec, sqlite as db

from tests.backends import PW, admin_connection, start_server, stop_server

pytestmark = pytest.mark.backends("sqlite", "postgres")


async def test_admin_commands_and_queries_on_a_plain_connection(backend, database):
    """ygg_server/admin.py and queries.py run unchanged on either store's connection."""
    c = admin_connection(backend, database)
    try:
        alice = admin.add_person(c, "alice", PW, now=now_us())
        ws = admin.add_workspace(c, "team", "alice", now=now_us())["id"]
        admin.add_person(c, "bob", PW, now=now_us())
        admin.add_member(c, "team", "bob", "viewer", now=now_us())
        agent = admin.add_agent(c, "helper", "alice", now=now_us())
        assert admin.fund(c, "helper", 40, now=now_us())["balance"] == 40
        assert admin.fund(c, "helper@alice", 2, now=now_us())["balance"] == 42
        assert admin.fund(c, None, 9, pool_ws="team", now=now_us())["balance"] == 9
        group = admin.add_group(c, ws, "crew", ["helper", "@bob"])
        assert sorted(group["members"]) == sorted([agent["id"], admin.person(c, "bob")])
        assert admin.set_plan(c, "alice", "free")["plan"] == "free"
        with pytest.raises(admin.AdminError) as e:
            admin.add_person(c, "alice", PW, now=now_us())
        assert e.value.code == "handle_taken"
        members = queries.list_members(c, alice["id"], frames.ListMembers(workspace=ws))["members"]
        assert {m["name"] for m in members} == {"alice", "bob", "helper"}
        assert queries.balances(c, alice["id"], frames.Balances(workspace=ws)) == {"pool": 9, "agents": {agent["id"]: 42}}
        assert queries.list_groups(c, alice["id"], frames.ListGroups(workspace=ws))["groups"][0]["name"] == "crew"
        assert admin.remove_group(c, "team", "crew") == {"id": "group:crew", "workspace": ws, "name": "crew",
                                                         "removed": True}
        assert queries.list_groups(c, alice["id"], frames.ListGroups(workspace=ws))["groups"] == []
        with pytest.raises(admin.AdminError) as e:
            admin.remove_group(c, ws, "crew")
        assert e.value.code == "unknown_group"
        assert [w["name"] for w in queries.list_workspaces(c, alice["id"], frames.ListWorkspaces())["workspaces"]] == \
            ["alice (personal)", "team"]
        assert admin.revoke_agent(c, "helper")["revoked"] is True
        assert [m["name"] for m in queries.list_members(c, alice["id"], frames.ListMembers(workspace=ws))["members"]
                if m["kind"] == "agent"] == []
    finally:
        c.close()


async def test_leaving_a_workspace_and_coming_back_keeps_what_its_admins_decided(backend, database):
    """Seed 002's roles and per-membership permissions are the admins' to set: a viewer who leaves and joins again
    by themselves (or through the organization) comes back a viewer, and their agent keeps the permissions taken
    away from it; they came back as the organization's default (a member, every permission). An admin who adds the
    person again directly gives the role they choose."""
    from ygg_server.ops import permissions

    c = admin_connection(backend, database)
    try:
        alice = admin.add_person(c, "alice", PW, now=now_us())["id"]
        ws = admin.add_workspace(c, "team", "alice", now=now_us())["id"]
        org = next(w["org"] for w in queries.list_workspaces(c, alice, frames.ListWorkspaces())["workspaces"] if w["id"] == ws)
        bob = admin.add_person(c, "bob", PW, now=now_us())["id"]
        admin.add_org_member(c, org, "bob", now=now_us())
        helper = admin.add_agent(c, "helper", "bob", now=now_us())["id"]
        admin.add_member(c, ws, "bob", "viewer", now=now_us())
        permissions.set_permissions(c, ws, helper, {"send": False, "takes_from": ["@alice"]})

        def standing() -> dict:
            rows = {m["id"]: m for m in queries.list_members(c, alice, frames.ListMembers(workspace=ws))["members"]}
            return {"bob": rows[bob]["role"] if bob in rows else None,
                    "helper": (rows[helper]["send"], rows[helper]["takes_from"]) if helper in rows else None}

        kept = {"bob": "viewer", "helper": (False, [alice])}
        assert standing() == kept
        admin.leave_workspace(c, ws, "bob")
        assert standing() == {"bob": None, "helper": None}
        assert admin.join_workspace(c, ws, "bob", now=now_us())["role"] == "viewer"
        assert standing() == kept, "back by themselves: as the admins left them"
        admin.leave_org(c, org, "bob")  # (back through the organization, not directly: out of it with it)
        assert standing() == {"bob": None, "helper": None}
        admin.add_org_member(c, org, "bob", now=now_us())  # invited again: back through the organization
        assert standing() == kept
        admin.leave_workspace(c, ws, "bob")
        admin.add_member(c, ws, "bob", "member", now=now_us())  # an admin's choice
        assert standing() == {"bob": "member", "helper": (False, [alice])}
        assert c.execute("SELECT count(*) FROM departed").fetchone()[0] == 0, "nothing kept once back"
        admin.leave_workspace(c, ws, "bob")
        admin.delete_workspace(c, ws)
        assert c.execute("SELECT count(*) FROM departed").fetchone()[0] == 0, "deleted with the workspace"
    finally:
        c.close()


async def test_history_search_and_topics_read_the_same(team):
    alice = await team.person("alice")
    first = await alice.send(workspace=team.ws, topic="new", title="Plans", to=["researcher"], text="The quick brown fox")
    topic = first["message"]["topic"]
    for i in range(5):
        await alice.send(workspace=team.ws, topic=topic, type="inform", to=["researcher"], text=f"note {i}")
    page = await alice.call("history", workspace=team.ws, limit=4)
    assert [m["text"] for m in page["messages"]] == ["note 4", "note 3", "note 2", "note 1"] and page["more"]
    rest = await alice.call("history", workspace=team.ws, limit=4, before=page["cursor"])
    assert [m["text"] for m in rest["messages"]] == ["note 0", "The quick brown fox"] and not rest["more"]
    assert rest["messages"][-1]["woke"] == [first["deliveries"][0]["to"]]
    found = await alice.call("search_messages", workspace=team.ws, query="quick brown")
    assert [m["text"] for m in found["messages"]] == ["The quick brown fox"]
    assert (await alice.call("search_messages", workspace=team.ws, query='"brown quick"'))["messages"] == []
    topics = (await alice.call("list_topics", workspace=team.ws))["topics"]
    assert [t["title"] for t in topics] == ["Plans"]
    t = (await alice.call("topic", workspace=team.ws, topic=topic))["topic"]
    assert t["status"] == "open" and team.admin(loaders.load_topic, topic).title == "Plans"


async def test_client_id_makes_a_resend_answer_the_first_send(team):
    alice = await team.person("alice")
    a = await alice.send(workspace=team.ws, topic="new", title="Once", to=["researcher"], text="x", client_id="c-1")
    b = await alice.send(workspace=team.ws, topic="new", title="Once", to=["researcher"], text="x", client_id="c-1")
    assert b["duplicate"] and b["message"]["id"] == a["message"]["id"]
    count = team.conn.execute("SELECT count(*) FROM messages WHERE text = 'x'").fetchone()[0]
    assert count == 1


async def test_credits_run_out_pause_the_topic_and_a_funding_wakes_the_agent(team):
    """Seed 000: "its message is refused, its topic pauses, and the people who can fund it see a request"."""
    out = team.admin(admin.add_agent, "poor", "alice")
    team.admin(admin.fund, "poor", 2)
    alice = await team.person("alice")
    poor = await team.client(api_key=out["api_key"])
    asked = await alice.send(workspace=team.ws, topic="new", title="Job", to=["poor"], text="go")
    topic = asked["message"]["topic"]
    await poor.ack([(await poor.next_delivery(timeout=5))["id"]])
    for i in range(2):
        r = await poor.send(workspace=team.ws, topic=topic, type="inform", to=["@alice"], text=f"step {i}")
        assert r["op"] == "sent" and r["cost"] == 1
    r = await poor.send(workspace=team.ws, topic=topic, type="inform", to=["@alice"], text="step 2")
    assert r["op"] == "refused" and r["reason"] == "credits_exhausted"
    assert (await alice.call("topic", workspace=team.ws, topic=topic))["topic"]["status"] == "paused"
    funded = await alice.call("fund", workspace=team.ws, agent="poor", amount=5)
    assert funded["balance"] == 5
    d = await poor.next_delivery(timeout=10)
    assert d["message"]["notice"] == "credits_refilled" and d["message"]["topic"] == topic
    assert (await alice.call("topic", workspace=team.ws, topic=topic))["topic"]["status"] == "open"
    rows = team.conn.execute("SELECT delta FROM ledger WHERE account = ? ORDER BY id", (out["id"],)).fetchall()
    assert [r[0] for r in rows] == [2, -1, -1, 5]


async def test_a_topic_budget_is_spent_and_then_refuses(team):
    alice = await team.person("alice")
    researcher = await team.client(api_key=team.keys["researcher"])
    asked = await alice.send(workspace=team.ws, topic="new", title="Budget", to=["researcher"], text="go")
    topic = asked["message"]["topic"]
    assert (await alice.call("set_budget", workspace=team.ws, topic=topic, budget=1))["budget"] == 1
    await researcher.ack([(await researcher.next_delivery(timeout=5))["id"]])
    r = await researcher.send(workspace=team.ws, topic=topic, type="inform", to=["@alice"], text="one")
    assert r["op"] == "sent"
    r = await researcher.send(workspace=team.ws, topic=topic, type="inform", to=["@alice"], text="two")
    assert r["op"] == "refused" and r["reason"] == "credits_exhausted"
    # a funding fills the wallet, not the budget; raising the budget wakes the agent it stopped
    await alice.call("fund", workspace=team.ws, agent="researcher", amount=5)
    assert (await alice.call("topic", workspace=team.ws, topic=topic))["topic"]["status"] == "paused"
    assert (await alice.call("set_budget", workspace=team.ws, topic=topic, budget=3))["budget"] == 3
    d = await researcher.next_delivery(timeout=10)
    assert d["wake"] and d["message"]["notice"] == "credits_refilled" and d["message"]["topic"] == topic
    assert (await alice.call("topic", workspace=team.ws, topic=topic))["topic"]["status"] == "open"
    r = await researcher.send(workspace=team.ws, topic=topic, type="inform", to=["@alice"], text="two")
    assert r["op"] == "sent"


async def test_two_agents_out_of_credits_in_one_topic_are_each_woken_there(team):
    """Seed 000: "Once refilled, the agent alone is woken to resend what did not go through." """
    alice = await team.person("alice")
    agents, ids = {}, {}
    for name in ("poor1", "poor2"):
        out = team.admin(admin.add_agent, name, "alice")
        ids[name] = out["id"]
        team.admin(admin.fund, name, 1)
        agents[name] = await team.client(api_key=out["api_key"])
    asked = await alice.send(workspace=team.ws, topic="new", title="Job", to=["poor1", "poor2"], text="go")
    topic = asked["message"]["topic"]
    for c in agents.values():
        await c.ack([(await c.next_delivery(timeout=5))["id"]])
        assert (await c.send(workspace=team.ws, topic=topic, type="inform", to=["@alice"], text="a"))["op"] == "sent"
    for c in agents.values():
        r = await c.send(workspace=team.ws, topic=topic, type="inform", to=["@alice"], text="b")
        assert r["reason"] == "credits_exhausted"
    t = (await alice.call("topic", workspace=team.ws, topic=topic))["topic"]
    assert (t["status"], t["paused_by"]) == ("paused", ids["poor1"])  # the first stays named
    # a funding finds the topics where agents wait for funds by the mark the writer keeps (waits_funds)
    waits = lambda: team.conn.execute("SELECT waits_funds FROM topics WHERE id = ?", (topic,)).fetchone()[0]  # noqa: E731
    assert waits() == 1
    for name, after in (("poor2", 1), ("poor1", None)):  # poor2 first: the topic reopens, poor1 still waits there
        await alice.call("fund", workspace=team.ws, agent=name, amount=5)
        d = await agents[name].next_delivery(timeout=10)
        assert d["wake"] and d["message"]["notice"] == "credits_refilled" and d["message"]["topic"] == topic
        assert (await alice.call("topic", workspace=team.ws, topic=topic))["topic"]["status"] == "open"
        assert waits() == after


async def test_the_clock_nudges_a_silent_agent(backend, database):
    """Timers run from the store's `next_due`: a request unanswered for NUDGE_AFTER gets a nudge."""
    now = [__import__("time").time_ns() // 1000]
    s = await start_server(backend, database, clock=lambda: now[0])
    try:
        s.admin(admin.add_person, "alice", PW)
        ws = s.admin(admin.add_workspace, "team", "alice")["id"]
        key = s.admin(admin.add_agent, "slow", "alice")["api_key"]
        s.admin(admin.fund, "slow", 10)
        alice = await s.person("alice")
        slow = await s.client(api_key=key)
        await alice.send(workspace=ws, topic="new", title="Wait", to=["slow"], state="waiting", text="please answer")
        await slow.ack([(await slow.next_delivery(timeout=5))["id"]])
        now[0] += rules.NUDGE_AFTER + 1_000_000
        d = await slow.next_delivery(timeout=10)
        assert d["message"]["author"] == "system.ygg" and d["message"]["notice"], d["message"]
    finally:
        await stop_server(s)


async def test_a_restart_offers_again_what_was_not_acked_and_nothing_that_was(backend, database):
    s = await start_server(backend, database)
    s.admin(admin.add_person, "alice", PW)
    ws = s.admin(admin.add_workspace, "team", "alice")["id"]
    key = s.admin(admin.add_agent, "worker", "alice")["api_key"]
    alice = await s.person("alice")
    worker = await s.client(api_key=key, prefetch=1)
    for i in range(3):
        await alice.send(workspace=ws, topic="new", title=f"T{i}", to=["worker"], text=f"job {i}")
    d0 = await worker.next_delivery(timeout=5)
    await worker.ack([d0["id"]])
    d1 = await worker.next_delivery(timeout=5)  # not acked
    await stop_server(s)
    s = await start_server(backend, database)
    try:
        worker = await s.client(api_key=key)
        got = [await worker.next_delivery(timeout=5) for _ in range(2)]
        assert [d["message"]["text"] for d in got] == ["job 1", "job 2"] and got[0]["id"] == d1["id"]
        with pytest.raises(asyncio.TimeoutError):
            await worker.next_delivery(timeout=0.5)
    finally:
        await stop_server(s)


async def test_a_running_server_sees_a_side_connection_at_once(team):
    """The admin CLI writes beside a running server (SQLite: data_version; PostgreSQL: NOTIFY and meta.config)."""
    alice = await team.person("alice")
    out = team.admin(admin.add_agent, "late", "alice")
    late = await team.client(api_key=out["api_key"])
    r = await alice.send(workspace=team.ws, topic="new", title="Hi", to=["late"], text="welcome")
    assert r["op"] == "sent" and r["deliveries"][0]["wake"]
    assert (await late.next_delivery(timeout=5))["message"]["text"] == "welcome"
    team.admin(admin.revoke_agent, "late")
    for _ in range(100):
        if out["id"] not in team.gw.conns:
            break
        await asyncio.sleep(0.05)
    assert out["id"] not in team.gw.conns, "a revoked agent's connections close"
    r = await alice.send(workspace=team.ws, topic="new", title="Gone", to=["late"], text="there?")
    assert r["op"] == "refused" and r["reason"] == "unknown_recipient"


async def test_admin_cli_takes_the_store_as_the_server_does(backend, database, tmp_path):
    """`ygg-server admin --data-dir DIR …` or `--db postgresql://… …`: the same commands, JSON on the last line."""
    where = ["--data-dir", str(tmp_path)] if backend == "sqlite" else ["--db", database]
    if backend == "sqlite":
        database = db.db_path(tmp_path)

    async def cli(*args):
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "ygg_server.cli", "admin", *where, *map(str, args),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), 60)
        assert proc.returncode == 0, err.decode()
        return json.loads(out.decode().strip().splitlines()[-1])

    assert (await cli("add-person", "alice", "--password", PW))["handle"] == "alice"
    ws = (await cli("add-workspace", "team", "--owner", "alice"))["id"]
    agent = await cli("add-agent", "helper", "--owner", "alice")
    assert (await cli("fund", "helper", 7))["balance"] == 7
    c = admin_connection(backend, database)
    try:
        assert queries.balances(c, admin.person(c, "alice"), frames.Balances(workspace=ws))["agents"] == {agent["id"]: 7}
    finally:
        c.close()


def _stored_before(t) -> bytes:
    """A topic's state as it was stored before `encode_topic`: every field, each loop signature an object."""
    fields = lambda s: {f: getattr(s, f) for f in s.__struct_fields__}  # noqa: E731
    d = fields(t)
    d["members"] = {p: fields(m) for p, m in t.members.items()}
    d["pending"] = {k: {"requester": v.requester, "remaining": sorted(v.remaining)} for k, v in t.pending.items()}
    d["recent"] = [fields(s) for s in t.recent]
    return msgspec.json.encode(d)


async def test_a_topics_state_is_stored_compactly_and_rows_stored_before_still_load(team):
    """store/rows.encode_topic: a topic's state without the fields at their defaults, each loop signature an
    array; a row in the form stored before (every field, signatures as objects) loads as the same topic."""
    alice = await team.person("alice")
    researcher = await team.client(api_key=team.keys["researcher"])
    first = await researcher.send(workspace=team.ws, topic="new", title="Chat", type="inform", to=["reviewer"],
                                  text="m0")
    tid = first["message"]["topic"]
    for i in range(1, 6):
        r = await researcher.send(workspace=team.ws, topic=tid, type="inform", to=["reviewer"], text=f"m{i}")
        assert r["op"] == "sent", r
    (state,) = team.conn.execute("SELECT state FROM topics WHERE id = ?", (tid,)).fetchone()
    t = codec.decode_topic(state)
    assert len(t.recent) == 6 and codec.encode_topic(t) == bytes(state)
    before = _stored_before(t)
    assert b'"author"' not in bytes(state) and b'"nudges"' not in bytes(state)
    assert len(state) < 0.75 * len(before)
    shown = (await alice.call("topic", workspace=team.ws, topic=tid))["topic"]
    team.conn.execute("UPDATE topics SET state = ? WHERE id = ?", (before, tid))  # the running server reloads
    assert team.admin(loaders.load_topic, tid) == t
    assert (await alice.call("topic", workspace=team.ws, topic=tid))["topic"] == shown
    r = await researcher.send(workspace=team.ws, topic=tid, type="inform", to=["reviewer"], text="after")
    assert r["op"] == "sent", r
    assert len(team.admin(loaders.load_topic, tid).recent) == 7, "the row stored before was loaded, then written anew"


async def test_assignment_reads_an_agent_s_recent_history_on_both_stores(team, monkeypatch):
    """Seed 003 §14 scores trust and speed from what an agent did; docs/rules.md: "of its last 200 wakes by a
    request (among the last 20,000 deliveries), the share it answered". Three requests, two answered, all
    acknowledged: trust (2 + 1)/(3 + 2), a response time, no load. Outside the recent rows nothing is known,
    whatever the table holds (the history is never looked for through every delivery ever stored)."""
    alice = await team.person("alice")
    agent = await team.client(api_key=team.keys["researcher"])
    rid = agent.me["id"]
    first = await alice.send(workspace=team.ws, topic="new", title="Work", type="request", to=["researcher"],
                             text="one")
    for text in ("two", "three"):
        await alice.send(workspace=team.ws, topic=first["message"]["topic"], type="request", to=["researcher"],
                         text=text)
    for i in range(3):
        d = await agent.next_delivery(timeout=5)
        if i < 2:
            r = await agent.send(workspace=team.ws, topic=d["message"]["topic"], type="response",
                                 in_reply_to=d["message"]["id"], to=["@alice"], text=f"answer {i}")
            assert r["op"] == "sent", r
        await agent.ack([d["id"]])
    for _ in range(100):  # the acks are committed by the server's writer
        f = team.admin(loaders.fitness, [rid])[rid]
        if f.load == 0:
            break
        await asyncio.sleep(0.05)
    assert (f.load, f.trust) == (0, 3 / 5) and f.response_us is not None, f
    monkeypatch.setattr(loaders, "RECENT_ROWS", 0)
    f = team.admin(loaders.fitness, [rid])[rid]
    assert (f.load, f.trust, f.response_us) == (0, None, None), f
    assert team.admin(loaders.fitness, []) == {}
