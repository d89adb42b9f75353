"""Queries, live events and presence over real websockets (docs/protocol.md, seed 002, seed 003 §26).

Each test quotes the sentence it checks.
"""

from __future__ import annotations

import asyncio

import pytest

from ygg_server.ops import admin

from .test_sessions import serving

pytestmark = pytest.mark.backends("sqlite", "postgres")

PW = "pw-" + "x" * 8


async def message_events(client, timeout: float = 0.5) -> list[dict]:
    """Every `message` event that arrives until `timeout` of quiet."""
    out = []
    while True:
        try:
            e = await client.next_event(timeout=timeout)
        except asyncio.TimeoutError:
            return out
        if e["kind"] == "message":
            out.append(e)


async def test_history_is_paged_newest_first(team):
    """docs/protocol.md: "`messages` newest first ... `cursor` (the id of the page's oldest message; pass it as `before`), `more`"."""
    alice = await team.person("alice")
    first = await alice.send(workspace=team.ws, topic="new", title="Paging", type="inform", to=["researcher"], text="m0")
    topic = first["message"]["topic"]
    ids = [first["message"]["id"]]
    for i in range(1, 7):
        ids.append((await alice.send(workspace=team.ws, topic=topic, type="inform", to=["researcher"],
                                     text=f"m{i}"))["message"]["id"])
    other = await alice.send(workspace=team.ws, topic="new", title="Other", type="inform", to=["reviewer"], text="x")
    pages, before = [], None
    while True:
        page = await alice.call("history", workspace=team.ws, conversation="general", topic=topic, limit=3,
                                **({"before": before} if before is not None else {}))
        pages.append([m["id"] for m in page["messages"]])
        if not page["more"]:
            break
        before = page["cursor"]
    assert pages == [ids[6:3:-1], ids[3:0:-1], ids[0:1]]
    whole = await alice.call("history", workspace=team.ws, conversation="general")
    assert [m["id"] for m in whole["messages"]] == [other["message"]["id"], *reversed(ids)]
    assert whole["more"] is False and whole["messages"][0]["text"] == "x"
    m = whole["messages"][-1]
    assert {"id", "workspace", "conversation", "topic", "author", "type", "to", "state", "waiting_for",
            "in_reply_to", "text", "created_at", "cost"} <= set(m)
    assert m["author"] == team.alice and m["created_at"].endswith("Z") and len(m["created_at"]) == 27


async def test_history_limit_is_bounded(team):
    """docs/protocol.md: "`history` | `workspace`, `conversation`, `topic?`, `before?`, `limit?` (≤200)"."""
    alice = await team.person("alice")
    first = await alice.send(workspace=team.ws, topic="new", title="Lim", type="inform", to=["researcher"], text="a one")
    for t in ("b one", "c one"):
        await alice.send(workspace=team.ws, topic=first["message"]["topic"], type="inform", to=["researcher"], text=t)
    for limit, size in ((1, 1), (2, 2), (1000, 3)):
        page = await alice.call("history", workspace=team.ws, conversation="general", limit=limit)
        assert len(page["messages"]) == size and page["more"] == (size < 3), (limit, page)
    for bad in (-5, -2, -1):  # a nonsensical limit: refused, or a page a client can page on from
        page = await alice.request("history", workspace=team.ws, conversation="general", limit=bad)
        if page["op"] == "error":
            assert page["code"] == "bad_frame"
        else:
            assert 1 <= len(page["messages"]) <= 3 and (page["cursor"] is not None or not page["more"]), (bad, page)
    for limit, size in ((1, 1), (2, 2), (-1, 1)):
        found = await alice.call("search_messages", workspace=team.ws, query="one", limit=limit)
        assert len(found["messages"]) == size, (limit, found)


async def test_search_finds_text_the_asker_may_read(team):
    """docs/protocol.md: "`messages` newest first (full-text; within the plan's history window; only conversations the asker may read"."""
    alice, bob = await team.person("alice"), await team.person("bob")
    a = await alice.send(workspace=team.ws, topic="new", title="Birds", type="inform", to=["researcher"],
                         text="The Albatross glides over the ocean")
    b = await bob.send(workspace=team.ws, topic="new", title="More", type="inform", to=["reviewer"],
                       text="an albatross, again")
    secret = await alice.send(workspace=team.ws, conversation="dm:researcher", topic="new", title="Private",
                              type="inform", to=["researcher"], text="albatross in private")
    assert secret["op"] == "sent", secret

    async def found(who, q):
        return [m["id"] for m in (await who.call("search_messages", workspace=team.ws, query=q))["messages"]]

    assert await found(alice, "albatross") == [secret["message"]["id"], b["message"]["id"], a["message"]["id"]]
    assert await found(bob, "albatross") == [b["message"]["id"], a["message"]["id"]], "not another's DM"
    assert await found(alice, '"glides over"') == [a["message"]["id"]]
    assert await found(alice, '"ocean glides"') == []  # a quoted phrase, in order
    assert await found(alice, "ocean glides") == [a["message"]["id"]]  # bare words: each anywhere
    assert await found(alice, 'quote" OR "x') == [] and await found(alice, "penguin") == []
    researcher = await team.client(api_key=team.keys["researcher"])
    assert await found(researcher, "private") == [secret["message"]["id"]]


async def test_a_non_monitors_search_fills_its_page(team):
    """docs/protocol.md: "only conversations the asker may read, so a page is full whenever that many such matches exist":
    however many newer matches are in conversations it may not read."""
    alice, bob = await team.person("alice"), await team.person("bob")
    seen = []
    for i in range(3):
        r = await alice.send(workspace=team.ws, topic="new" if not seen else topic, title="Hay", type="inform",
                             to=["researcher"], text=f"needle {i} in General")
        topic = r["message"]["topic"]
        seen.insert(0, r["message"]["id"])
    dm = None
    for i in range(30):  # newer matches, in a direct conversation bob is not in
        dm = await alice.send(workspace=team.ws, conversation="dm:researcher", topic="new" if dm is None else
                              dm["message"]["topic"], title="Hidden", type="inform", text=f"needle {i} hidden")
        assert dm["op"] == "sent", dm
    found = await bob.call("search_messages", workspace=team.ws, query="needle", limit=3)
    assert [m["id"] for m in found["messages"]] == seen
    found = await alice.call("search_messages", workspace=team.ws, query="needle", limit=3)
    assert [m["text"] for m in found["messages"]] == ["needle 29 hidden", "needle 28 hidden", "needle 27 hidden"]


async def test_history_cursors_are_message_ids_of_that_conversation(team):
    """docs/protocol.md: "`cursor` (the id of the page's oldest message; pass it as `before`)": a cursor says nothing
    of how many messages the server holds, and a message of anywhere else is answered as one that does not exist."""
    alice, bob = await team.person("alice"), await team.person("bob")
    first = await alice.send(workspace=team.ws, topic="new", title="Cur", type="inform", to=["researcher"], text="c0")
    ids = [first["message"]["id"]]
    for i in range(1, 4):
        ids.append((await alice.send(workspace=team.ws, topic=first["message"]["topic"], type="inform",
                                     to=["researcher"], text=f"c{i}"))["message"]["id"])
    page = await alice.call("history", workspace=team.ws, conversation="general", limit=2)
    assert page["cursor"] == ids[2] and page["more"]
    rest = await alice.call("history", workspace=team.ws, conversation="general", limit=2, before=page["cursor"])
    assert [m["id"] for m in rest["messages"]] == [ids[1], ids[0]]
    dm = await alice.send(workspace=team.ws, conversation="dm:researcher", topic="new", title="DM", type="inform",
                          text="elsewhere")
    made_up = await alice.request("history", workspace=team.ws, conversation="general",
                                  before="00000000-0000-4000-8000-000000000000")
    assert made_up["op"] == "error" and made_up["code"] == "not_found"
    other = await alice.request("history", workspace=team.ws, conversation="general", before=dm["message"]["id"])
    assert {**other, "ref": 0} == {**made_up, "ref": 0}, "another conversation's message is no cursor here"
    old = await alice.request("history", workspace=team.ws, conversation="general", before=5)
    assert old["op"] == "error" and old["code"] == "bad_frame"
    assert (await bob.request("history", workspace=team.ws, conversation="general", before=ids[2]))["messages"]


async def test_conversations_and_topics(team):
    """docs/protocol.md: "`list_conversations` | `workspace` | `conversations: [{id,kind,name,members,last_at,lead}]`" and "`list_topics` ... `topic`"."""
    alice, bob = await team.person("alice"), await team.person("bob")
    researcher = await team.client(api_key=team.keys["researcher"])
    t1 = await alice.send(workspace=team.ws, topic="new", title="Open one", to=["researcher"], text="please")
    dm = await alice.send(workspace=team.ws, conversation="dm:reviewer", topic="new", title="DM", type="inform",
                          to=["reviewer"], text="psst")
    convs = (await alice.call("list_conversations", workspace=team.ws))["conversations"]
    by_kind = {c["kind"]: c for c in convs}
    assert set(by_kind) == {"general", "direct"}
    assert by_kind["direct"]["id"] == dm["message"]["conversation"]
    assert set(by_kind["direct"]["members"]) == {team.alice, dm["deliveries"][0]["to"]}
    assert by_kind["general"]["id"] == t1["message"]["conversation"] and by_kind["general"]["name"] == "General"
    assert by_kind["direct"]["last_at"] == dm["message"]["created_at"]
    assert by_kind["general"]["last_at"] == t1["message"]["created_at"] < by_kind["direct"]["last_at"]
    assert [c["kind"] for c in (await bob.call("list_conversations", workspace=team.ws))["conversations"]] == ["general"]

    topics = (await alice.call("list_topics", workspace=team.ws))["topics"]
    assert {t["title"] for t in topics} == {"Open one", "DM"}
    only = (await alice.call("list_topics", workspace=team.ws, conversation="general"))["topics"]
    assert [t["id"] for t in only] == [t1["message"]["topic"]]
    assert [t["title"] for t in (await bob.call("list_topics", workspace=team.ws))["topics"]] == ["Open one"]

    d = await researcher.next_delivery(timeout=5)
    await researcher.send(workspace=team.ws, topic=d["message"]["topic"], type="response",
                          in_reply_to=d["message"]["id"], state="done", text="done")
    await alice.send(workspace=team.ws, topic=t1["message"]["topic"], type="inform", state="done", text="thanks")
    t = (await alice.call("topic", workspace=team.ws, topic=t1["message"]["topic"]))["topic"]
    assert t["status"] == "closed" and t["title"] == "Open one" and t["opener"] == team.alice
    assert t["members"][researcher.me["id"]]["state"] == "done"
    closed = (await alice.call("list_topics", workspace=team.ws, status="closed"))["topics"]
    assert [x["id"] for x in closed] == [t1["message"]["topic"]]
    err = await bob.request("topic", workspace=team.ws, topic=dm["message"]["topic"])
    assert err["op"] == "error" and err["code"] == "not_found", "bob is not in that direct conversation"


async def test_monitor_streams_every_message_and_needs_the_permission(team):
    """Seed 002: "Monitor: set by a workspace admin, lets the agent search and follow every message in the workspace, not only its own"."""
    alice, bob = await team.person("alice"), await team.person("bob")
    researcher = await team.client(api_key=team.keys["researcher"])
    err = await bob.request("subscribe", workspace=team.ws, monitor=True)
    assert err["op"] == "error" and err["code"] == "forbidden"
    err = await researcher.request("subscribe", workspace=team.ws, monitor=True)
    assert err["op"] == "error" and err["code"] == "forbidden"
    assert (await bob.call("subscribe", workspace=team.ws))["monitor"] is False  # topic and balance events only
    assert (await alice.call("subscribe", workspace=team.ws, monitor=True))["monitor"] is True  # the owner
    team.conn.execute("UPDATE memberships SET monitor = 1 WHERE workspace = ? AND participant = ?",
                      (team.ws, researcher.me["id"]))
    assert (await researcher.call("subscribe", workspace=team.ws, monitor=True))["monitor"] is True

    dm = await alice.send(workspace=team.ws, conversation="dm:reviewer", topic="new", title="DM", type="inform",
                          to=["reviewer"], text="between us")
    pub = await bob.send(workspace=team.ws, topic="new", title="Pub", type="request", to=["reviewer"], text="public")
    for who in (alice, researcher):
        got = await message_events(who)
        assert [e["message"]["id"] for e in got] == [dm["message"]["id"], pub["message"]["id"]], who.me
        assert got[1]["deliveries"][0] == {"to": pub["deliveries"][0]["to"], "wake": True, "reason": None}
    assert await message_events(bob, 0.2) == [], "a member without monitor sees no message events"
    await researcher.call("unsubscribe", workspace=team.ws)
    await alice.send(workspace=team.ws, topic=pub["message"]["topic"], type="inform", to=["reviewer"], text="more")
    assert len(await message_events(alice)) == 1 and await message_events(researcher, 0.2) == []


async def test_monitor_sees_a_message_with_no_deliveries(team):
    """Seed 002: "lets the agent search and follow every message in the workspace": even one absorbed by system.ygg."""
    alice = await team.person("alice")
    researcher = await team.client(api_key=team.keys["researcher"])
    await alice.call("subscribe", workspace=team.ws, monitor=True)
    r = await researcher.send(workspace=team.ws, topic="new", title="Note", type="inform", to=["system.ygg"],
                              text="to nobody")
    assert r["op"] == "sent" and r["deliveries"] == [] and r["cost"] == 1, r  # paid: it answers no notice (issue 17)
    got = await message_events(alice)
    assert [e["message"]["id"] for e in got] == [r["message"]["id"]] and got[0]["deliveries"] == []


# --- presence (seed 003 §26) ---

async def test_presence_online_offline_and_silent_agents(tmp_path):
    """Seed 003: "the registry ... tracks who is reachable, and an agent counts as offline when nothing has been heard from it for the last few minutes"."""
    async with serving(tmp_path, presence_timeout=0.8, session_sweep=0.2) as s:
        s.admin(admin.add_person, "alice", PW)
        s.admin(admin.add_person, "bob", PW)
        ws = s.admin(admin.add_workspace, "team", "alice")["id"]
        s.admin(admin.add_member, ws, "bob")
        keys = {n: s.admin(admin.add_agent, n, "alice")["api_key"] for n in ("researcher", "reviewer")}
        alice = await s.person("alice", PW)
        researcher = await s.client(api_key=keys["researcher"])
        ids = {a["name"]: a["id"] for a in (await alice.call("list_agents", workspace=ws))["agents"]}

        async def online():
            return (await alice.call("presence", workspace=ws))["online"]

        assert await online() == {ids["alice"]: True, ids["bob"]: False, ids["researcher"]: True,
                                  ids["reviewer"]: False}
        assert ids["researcher"] in s.gw.writer.present
        await asyncio.sleep(1.2)  # the agent says nothing
        now = await online()
        assert now[ids["researcher"]] is False and now[ids["alice"]] is True, "people stay online while connected"
        assert ids["researcher"] not in s.gw.writer.present, "the writer scores it offline too (assignment)"
        await researcher.call("ping")  # heard from again
        assert (await online())[ids["researcher"]] is True
        await asyncio.sleep(0.4)
        assert ids["researcher"] in s.gw.writer.present
        await researcher.close()
        assert (await online())[ids["researcher"]] is False
        err = await alice.request("presence", workspace="no-such-workspace")
        assert err["op"] == "error" and err["code"] == "not_found"


async def test_a_quiet_agent_that_answers_pings_stays_online_and_a_dead_socket_goes_offline(tmp_path):
    """Seed 003: "an agent counts as offline when nothing has been heard from it for the last few minutes".

    A pong to the server's keepalive ping is something heard: an agent with nothing to say, whose socket
    answers, stays online; a socket that stops answering is closed after `ping_timeout` and goes offline."""
    import json

    import websockets

    async with serving(tmp_path, presence_timeout=0.8, ping_interval=0.2, ping_timeout=0.6,
                       close_timeout=0.5) as s:
        s.admin(admin.add_person, "alice", PW)
        ws = s.admin(admin.add_workspace, "team", "alice")["id"]
        keys = {n: s.admin(admin.add_agent, n, "alice")["api_key"] for n in ("quiet", "dead")}
        alice = await s.person("alice", PW)
        await alice.subscribe(ws)
        quiet = await s.client(api_key=keys["quiet"])
        raw = await websockets.connect(s.url, ping_interval=None)
        await raw.send(json.dumps({"op": "auth", "ref": 1, "api_key": keys["dead"]}))
        assert json.loads(await raw.recv())["op"] == "session"
        ids = {a["name"]: a["id"] for a in (await alice.call("list_agents", workspace=ws))["agents"]}

        async def online():
            return (await alice.call("presence", workspace=ws))["online"]

        assert (await online())[ids["dead"]] is True
        raw.transport.pause_reading()  # the socket stays open, but nothing answers the server's pings any more
        await asyncio.sleep(2.5)  # 3x presence_timeout without a frame from either agent
        now = await online()
        assert now[ids["quiet"]] is True, "its pongs are heard: a quiet agent is online"
        assert now[ids["dead"]] is False, "nothing heard: offline"
        assert ids["dead"] not in s.gw.conns, "the keepalive closed the dead socket"
        events = []
        while True:
            try:
                e = await alice.next_event(timeout=0.3)
            except asyncio.TimeoutError:
                break
            if e["kind"] == "presence":
                events.append((e["participant"], e["online"]))
        assert (ids["dead"], False) in events and (ids["quiet"], False) not in events
        raw.transport.abort()
