"""Bad input, and one workspace's ids seen from another, over real websockets (PROTOCOL.md, docs/protocol.md).

Each test quotes the sentence it checks.
"""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest
import websockets

from ygg_server.ops import admin
from ygg_server.core import general_id

from .test_sessions import PW, ask

pytestmark = pytest.mark.backends("sqlite", "postgres")


def without_ref(frame: dict) -> str:
    return json.dumps({k: v for k, v in frame.items() if k != "ref"}, sort_keys=True)


# --- bad frames ---

async def test_unknown_op_and_unparsable_frames_keep_the_connection(team):
    """PROTOCOL.md: "A frame the server cannot parse, or with an unknown op, gets ... "code":"bad_frame" ... and the connection stays open"."""
    async with websockets.connect(team.url) as ws:
        assert (await ask(ws, {"op": "auth", "ref": 0, "handle": "alice", "password": PW}))["op"] == "session"
        bad = [
            ("{not json", None), ("[1, 2]", None), ('"op"', None), ("{}", None),
            (json.dumps({"op": 5, "ref": 1}), 1), (json.dumps({"op": "frobnicate", "ref": "x"}), "x"),
            (json.dumps({"op": "deliver", "ref": 2}), 2), (json.dumps({"op": "send", "ref": 3}), 3),
            (json.dumps({"op": "send", "ref": 4, "workspace": 7}), 4),
            (json.dumps({"op": "ack", "ref": 5, "ids": ["a"]}), 5),
            (json.dumps({"op": "auth", "ref": 6, "handle": "bob", "password": PW}), 6),  # another: alice renews here
            (json.dumps({"op": "history", "ref": 7, "workspace": team.ws, "limit": "many"}), 7),
            (b"\xff\xfe binary", None),
        ]
        for raw, ref in bad:
            await ws.send(raw)
            err = json.loads(await asyncio.wait_for(ws.recv(), 5))
            assert err["op"] == "error" and err["code"] == "bad_frame" and err["ref"] == ref, (raw, err)
            assert err["detail"]
        err = await ask(ws, {"op": "ping", "ref": [1]})
        assert err["code"] == "bad_frame"
        assert (await ask(ws, {"op": "ping", "ref": 99})) == {"op": "pong", "ref": 99}


@pytest.mark.parametrize("field, value", [
    ("to", 5), ("type", 7), ("type", "shout"), ("text", {"a": 1}), ("state", "asleep"), ("waiting_for", 3),
    ("in_reply_to", 9), ("title", ["x"]),
])
async def test_malformed_send_is_stored_as_an_inform_never_a_wake(team, field, value):
    """PROTOCOL.md: "A malformed *message* (wrong field types inside `send`) is downgraded to an inform, as the seed says, never dropped silently and never a wake"."""
    alice = await team.person("alice")
    reviewer = await team.client(api_key=team.keys["reviewer"])
    researcher = await team.client(api_key=team.keys["researcher"])
    opened = await alice.send(workspace=team.ws, topic="new", title="Malformed", type="inform", to=["researcher"],
                              text="the topic")
    topic = opened["message"]["topic"]
    for sender, to in ((alice, ["researcher"]), (reviewer, ["researcher"])):
        frame = {"workspace": team.ws, "topic": topic, "type": "request", "to": to, "text": "wake up", field: value}
        r = await sender.send(**frame)
        assert r["op"] == "sent", r
        m = r["message"]
        assert m["malformed"] is True and m["type"] == "inform"
        assert all(d["wake"] is False for d in r["deliveries"]), r["deliveries"]
        h = await alice.call("history", workspace=team.ws, conversation="general", topic=topic, limit=1)
        assert h["messages"][0]["id"] == m["id"] and h["messages"][0]["malformed"] is True
    with pytest.raises(asyncio.TimeoutError):
        await researcher.next_delivery(timeout=0.3)
    wake = await alice.send(workspace=team.ws, topic=topic, type="request", to=["researcher"], text="now, really")
    d = await researcher.next_delivery(timeout=5)
    assert d["wake"] and d["message"]["id"] == wake["message"]["id"]
    assert all(c.get("malformed") for c in d["context"][1:]), "the malformed ones came as context"


# --- another workspace's ids ---

@pytest.fixture
async def two(team):
    """bob's own workspace `bobs`, with his agent `spy` pinned there, a topic and a direct conversation.

    alice is not a member of it; bob is a member of alice's `team`."""
    bobs = team.admin(admin.add_workspace, "bobs", "bob")["id"]
    spy = team.admin(admin.add_agent, "spy", "bob", bobs)
    team.admin(admin.fund, "spy", 10)
    bob = await team.person("bob")
    t = await bob.send(workspace=bobs, topic="new", title="Secret", to=["spy"], text="hush")
    dm = await bob.send(workspace=bobs, conversation="dm:spy", topic="new", title="DM", to=["spy"], text="psst")
    assert t["op"] == dm["op"] == "sent", (t, dm)
    team.bobs = {"ws": bobs, "agent": spy["id"], "topic": t["message"]["topic"], "general": general_id(bobs),
                 "dm": dm["message"]["conversation"], "dm_topic": dm["message"]["topic"]}
    return team


def ghost() -> str:
    return str(uuid.uuid4())


async def same_answer(client, op: str, foreign: dict, missing: dict) -> dict:
    a = await client.request(op, **foreign)
    b = await client.request(op, **missing)
    assert without_ref(a) == without_ref(b), (op, a, b)
    return a


async def test_foreign_ids_are_answered_as_ids_that_do_not_exist(two):
    """docs/protocol.md: "`unknown_conversation`, `unknown_topic`, `unknown_workspace` | no such thing (another workspace's ids get exactly this answer)"."""
    b = two.bobs
    for who in (await two.person("alice"), await two.client(api_key=two.keys["researcher"])):
        ws = two.ws
        msg = {"type": "request", "to": ["@alice"] if who.me["kind"] == "agent" else ["researcher"], "text": "x",
               "title": "T"}
        r = await same_answer(who, "send", {"workspace": b["ws"], "topic": "new", **msg},
                              {"workspace": ghost(), "topic": "new", **msg})
        assert r["reason"] == "unknown_workspace"
        for conv in ("general", "dm"):
            r = await same_answer(who, "send", {"workspace": ws, "conversation": b[conv], "topic": "new", **msg},
                                  {"workspace": ws, "conversation": ghost(), "topic": "new", **msg})
            assert r["reason"] == "unknown_conversation"
        for topic in ("topic", "dm_topic"):
            r = await same_answer(who, "send", {"workspace": ws, "topic": b[topic], **msg},
                                  {"workspace": ws, "topic": ghost(), **msg})
            assert r["reason"] == "unknown_topic"
        r = await same_answer(who, "send", {"workspace": ws, "conversation": f"dm:{b['agent']}", "topic": "new", **msg},
                              {"workspace": ws, "conversation": f"dm:{ghost()}", "topic": "new", **msg})
        assert r["reason"] == "unknown_conversation"
        spy, nobody = b["agent"], f"agent.{uuid.uuid4().hex}"
        for real, fake in ((spy, nobody), ("spy@bob", "ghost@bob"), ("spy", "ghost")):
            a = await who.send(workspace=ws, topic="new", **{**msg, "to": [real]})
            c = await who.send(workspace=ws, topic="new", **{**msg, "to": [fake]})
            assert a["reason"] == "unknown_recipient"
            assert without_ref(a).replace(real, "?") == without_ref(c).replace(fake, "?"), (a, c)

        for op in ("history", "list_topics", "list_conversations", "list_members", "list_agents", "balances",
                   "presence", "search_messages", "subscribe"):
            r = await same_answer(who, op, {"workspace": b["ws"], "conversation": "general", "query": "hush"},
                                  {"workspace": ghost(), "conversation": "general", "query": "hush"})
            assert r == {"op": "error", "ref": r["ref"], "code": "not_found", "detail": r["detail"]}, (op, r)
        for conv in ("general", "dm"):
            r = await same_answer(who, "history", {"workspace": ws, "conversation": b[conv]},
                                  {"workspace": ws, "conversation": ghost()})
            assert r["code"] == "not_found"
            r = await same_answer(who, "list_topics", {"workspace": ws, "conversation": b[conv]},
                                  {"workspace": ws, "conversation": ghost()})
            assert r["code"] == "not_found"
        for topic in ("topic", "dm_topic"):
            r = await same_answer(who, "topic", {"workspace": ws, "topic": b[topic]}, {"workspace": ws, "topic": ghost()})
            assert r["code"] == "not_found"
            r = await same_answer(who, "topic", {"workspace": b["ws"], "topic": b[topic]},
                                  {"workspace": ghost(), "topic": ghost()})
            assert r["code"] == "not_found"
            h = await same_answer(who, "history", {"workspace": ws, "conversation": "general", "topic": b[topic]},
                                  {"workspace": ws, "conversation": "general", "topic": ghost()})
            assert h["messages"] == []

        r = await same_answer(who, "fund", {"workspace": ws, "agent": spy, "amount": 5},
                              {"workspace": ws, "agent": nobody, "amount": 5})
        assert r["op"] == "refused"
        r = await same_answer(who, "fund", {"workspace": ws, "agent": "spy", "amount": 5},
                              {"workspace": ws, "agent": "ghost", "amount": 5})
        assert r["op"] == "refused"
        r = await same_answer(who, "fund", {"workspace": b["ws"], "agent": spy, "amount": 5},
                              {"workspace": ghost(), "agent": nobody, "amount": 5})
        assert r["op"] == "refused"
        r = await same_answer(who, "fund", {"workspace": b["ws"], "pool": True, "amount": 5},
                              {"workspace": ghost(), "pool": True, "amount": 5})
        assert r["op"] == "refused"
    bob = await two.person("bob")
    assert (await bob.call("balances", workspace=b["ws"]))["agents"][b["agent"]] == 10, "nothing moved"


@pytest.mark.backends("sqlite", "postgres")  # reaches into the writer, in another process on "process"
async def test_ids_that_do_not_exist_leave_nothing_behind(team):
    """PROTOCOL.md: "Refused: `{"op":"refused",...}`, nothing stored, nothing charged": nor kept in the server's memory."""
    alice = await team.person("alice")
    await alice.send(workspace=team.ws, topic="new", title="Warm", type="inform", to=["researcher"], text="x")
    writer = team.gw.writer
    before = len(writer.store.directories)
    for _ in range(200):
        r = await alice.send(workspace=ghost(), topic="new", title="T", to=["researcher"], text="x")
        assert r["reason"] == "unknown_workspace"
        r = await alice.request("fund", workspace=ghost(), pool=True, amount=1)
        assert r["reason"] == "unknown_workspace"
    assert len(writer.store.directories) == before, "one cached directory per made-up workspace id"


async def test_a_workspace_named_after_another_ones_id_does_not_get_in_its_owners_way(two):
    """docs/protocol.md: "another workspace's ids get exactly this answer", and seed 003 §66: the owner keeps "deleting
    the workspace". Workspace names are anyone's to choose: alice, who is not in bob's workspace but learned its id,
    names one of hers after it. Bob's ops on his workspace by its id still reach it, and only it (a workspace was
    looked up by id or name alike, so they were refused "names several workspaces" whatever bob did)."""
    b = two.bobs
    alice, bob = await two.person("alice"), await two.person("bob")
    decoy = (await alice.call("create_workspace", name=b["ws"]))["id"]
    r = await bob.request("set_restricted", workspace=b["ws"], restricted=True)
    assert r["op"] == "set_restricted", r
    r = await bob.request("delete_workspace", workspace=b["ws"])
    assert (r["op"], r.get("id")) == ("delete_workspace", b["ws"]), r
    assert decoy in [w["id"] for w in (await alice.call("list_workspaces"))["workspaces"]], "hers is untouched"


async def test_a_person_whose_handle_spells_another_ones_id_never_acts_for_them(team):
    """docs/protocol.md, `leave_workspace`: "a person in the workspace, for themselves". A handle is letters, digits,
    '-', '_' and '.', so one stored before handles were kept from beginning as ids do may spell another person's
    id (ids show in list_members). Bob's ops name him by his id: they stay his (a person was looked up by handle
    or id alike, and the one whose handle is bob's id was found first: bob's leave was refused as not in the
    workspace, his new workspace was owned by the other)."""
    bob = await team.person("bob")
    bob_id = (await bob.call("whoami"))["id"]
    with pytest.raises(admin.AdminError, match="does not begin as an id"):
        team.admin(admin.add_person, bob_id, PW)
    team.conn.execute("INSERT INTO people (id, handle, password_hash, created_at) VALUES (?, ?, 'x', 0)",
                      ("human.decoy", bob_id))  # as stored before that rule
    made = await bob.call("create_workspace", name="bobs")
    assert made["id"] in [w["id"] for w in (await bob.call("list_workspaces"))["workspaces"]], "his own"
    out = await bob.call("leave_workspace", workspace=team.ws)
    assert out["id"] == bob_id and team.ws not in [w["id"] for w in (await bob.call("list_workspaces"))["workspaces"]]


async def test_an_agents_name_never_spells_another_participants_id(team):
    """docs/protocol.md: a recipient is named by "an id", a name or a handle. Ids show in list_members, and an agent's
    name is its owner's to choose: bob may not name his agent after alice's researcher's id (it was allowed, and as
    the workspace's members happened to load, a send to that id there was refused as ambiguous between the two)."""
    alice, bob = await team.person("alice"), await team.person("bob")
    members = {m["name"]: m["id"] for m in (await alice.call("list_members", workspace=team.ws))["members"]}
    r = await bob.request("add_agent", name=members["researcher"])
    assert r.get("code") == "bad_name", r
    r = await alice.send(workspace=team.ws, topic="new", title="By id", to=[members["researcher"]], text="hi")
    assert r["op"] == "sent", r
