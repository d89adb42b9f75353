"""Server-issued directives on loopback (issue 6; seed 003 §53-58; docs/agents.md, "Directives").

Seed 003 §53: "It is computed server-side and sent as structured data with the task or message payload."
"""

from __future__ import annotations

import asyncio

import pytest

from ygg_server.ops import admin
from ygg_server.net.issuer import Issuer

pytestmark = pytest.mark.backends("sqlite", "postgres")

LONG = ("Curious and precise. Quotes its source and says so when the handbook has nothing. Prefers short "
        "answers, tables when they help, and never guesses a number. Warm with people, brief with agents, and "
        "always names who it is waiting on.")


async def wake(client, timeout: float = 5.0) -> dict:
    while True:
        d = await client.next_delivery(timeout=timeout)
        await client.ack([d["id"]])
        if d["wake"]:
            return d


async def ask(alice, ws: str, text: str, conversation: str = "general") -> dict:
    r = await alice.send(workspace=ws, conversation=conversation, topic="new", title=text[:20], type="request",
                         to=["researcher"], text=text)
    assert r["op"] == "sent", r
    return r["message"]


async def test_stable_part_is_byte_identical_across_turns_and_dynamic_part_carries_the_wake(team):
    """Seed 003 §54: "Most of an agent's operating instructions (its role, its rules, its personality) stay
    byte-for-byte identical from turn to turn"; "Whatever changes moment to moment (whose turn is next, what was
    just said) is kept out of that cached part and added fresh every turn"."""
    alice = await team.person("alice")
    researcher = await team.client(api_key=team.keys["researcher"])
    first = await ask(alice, team.ws, "What is a topic?")
    one = await wake(researcher)
    second = await ask(alice, team.ws, "And what are credits?")
    two = await wake(researcher)
    a, b = one["directive"], two["directive"]
    assert [x.encode() for x in a["stable"]] == [x.encode() for x in b["stable"]]
    assert a["version"] == b["version"] and len(a["stable"]) == 2
    assert "What is a topic?" in a["dynamic"] and f"in_reply_to={first['id']}" in a["dynamic"]
    assert "And what are credits?" in b["dynamic"] and "What is a topic?" not in b["dynamic"]
    assert f"in_reply_to={second['id']}" in b["dynamic"] and "@alice" in b["dynamic"]
    assert not any(t in "".join(a["stable"]) for t in ("What is a topic?", first["id"], first["topic"]))
    core, party = a["stable"]
    assert core.startswith("You are researcher,") and "## The rulebook (Agent'Ygg)" in core
    assert "@alice, a person" in party and "reviewer, an agent" in party and "at most 800 characters" in party
    assert a["rulebook"]["length"] == 800


async def test_stable_part_changes_with_the_rulebook_the_persona_and_the_profile(team):
    """Seed 003 §55: "a per-conversation rulebook (reply style, reply length, when not to interrupt) separate from
    the agent's core persona"; §56: "Every agent's persona lives in a single document that it can read and rewrite
    about itself"."""
    alice = await team.person("alice")
    researcher = await team.client(api_key=team.keys["researcher"])
    await ask(alice, team.ws, "q1")
    before = (await wake(researcher))["directive"]["stable"]

    r = await alice.request("set_rulebook", workspace=team.ws, conversation="general",
                            rulebook={"length": 300, "style": "formal, in bullet points"})
    assert r["op"] == "set_rulebook" and r["rulebook"]["length"] == 300, r
    await ask(alice, team.ws, "q2")
    ruled = (await wake(researcher))["directive"]
    assert ruled["stable"][0] == before[0] and ruled["stable"][1] != before[1]
    assert "at most 300 characters" in ruled["stable"][1] and "formal, in bullet points" in ruled["stable"][1]
    assert ruled["rulebook"]["length"] == 300

    # the agent rewrites its persona through the protocol: only the core block moves
    w = await researcher.request("set_persona", text=LONG, why="first version")
    assert w["op"] == "set_persona" and w["version"] == 1, w
    await ask(alice, team.ws, "q3")
    personal = (await wake(researcher))["directive"]["stable"]
    assert personal[0] != ruled["stable"][0] and LONG in personal[0] and personal[1] == ruled["stable"][1]

    r = await alice.request("set_profile", agent="researcher", title="Librarian", description="Finds things.")
    assert r["op"] == "set_profile", r
    await ask(alice, team.ws, "q4")
    profiled = (await wake(researcher))["directive"]["stable"]
    assert "Your job title: Librarian" in profiled[0] and "Your role: Finds things." in profiled[0]

    # another conversation has its own rulebook block and the same core
    await ask(alice, team.ws, "q5", conversation="dm:researcher")
    dm = (await wake(researcher))["directive"]
    assert dm["stable"][0] == profiled[0] and "at most 800 characters" in dm["stable"][1]
    assert "a direct conversation" in dm["stable"][1]


async def test_a_redelivered_wake_carries_the_same_directive(team):
    """Seed 003 §53: "However the agent is connected ... it follows the same server-issued directive"."""
    alice = await team.person("alice")
    await ask(alice, team.ws, "Who are you?")
    first = await team.client(api_key=team.keys["researcher"])
    d1 = await first.next_delivery(timeout=5)
    await first.close()  # not acked: offered again after the reconnect, through the same path
    second = await team.client(api_key=team.keys["researcher"])
    d2 = await second.next_delivery(timeout=5)
    assert d1["id"] == d2["id"] and d1["directive"] == d2["directive"]


async def test_rulebook_is_set_by_the_conversations_people_only(team):
    """Seed 003 §55: "a per-conversation rulebook (reply style, reply length, when not to interrupt)"; docs/agents.md:
    set by the conversation's people, never by an agent."""
    alice, bob = await team.person("alice"), await team.person("bob")
    researcher = await team.client(api_key=team.keys["researcher"])
    r = await researcher.request("set_rulebook", workspace=team.ws, conversation="general", rulebook={"length": 5})
    assert (r["op"], r["reason"]) == ("refused", "permission_denied")
    r = await bob.request("set_rulebook", workspace=team.ws, conversation="general",
                          rulebook={"interrupt": "only when asked"})
    assert r["op"] == "set_rulebook" and r["set"] == {"interrupt": "only when asked"}
    r = await alice.request("set_rulebook", workspace=team.ws, conversation="general", rulebook={"length": 400})
    assert r["set"] == {"interrupt": "only when asked", "length": 400}  # rules merge; null resets one
    r = await alice.request("set_rulebook", workspace=team.ws, conversation="general", rulebook={"interrupt": None})
    assert r["set"] == {"length": 400}
    for bad in ({"length": 0}, {"colour": "red"}, {"style": ""}, [1]):
        r = await alice.request("set_rulebook", workspace=team.ws, conversation="general", rulebook=bad)
        assert (r["op"], r["reason"]) == ("refused", "bad_rulebook"), (bad, r)
    # a direct conversation's rulebook is its people's: bob cannot even see it
    sent = await alice.send(workspace=team.ws, conversation="dm:researcher", topic="new", title="Hi", type="inform",
                            text="hi")
    dm = sent["message"]["conversation"]
    r = await bob.request("set_rulebook", workspace=team.ws, conversation=dm, rulebook={"length": 10})
    assert (r["op"], r["code"]) == ("error", "not_found")
    r = await alice.request("set_rulebook", workspace=team.ws, conversation=dm, rulebook={"length": 10})
    assert r["set"] == {"length": 10}
    got = await researcher.request("get_rulebook", workspace=team.ws, conversation=dm)
    assert got["rulebook"]["length"] == 10 and got["set"] == {"length": 10}
    # a viewer is not one of the people who set General's rulebook
    team.admin(admin.add_person, "vic", "pw-" + "x" * 8)
    team.admin(admin.add_member, team.ws, "vic", "viewer")
    vic = await team.person("vic")
    r = await vic.request("set_rulebook", workspace=team.ws, conversation="general", rulebook={"length": 10})
    assert (r["op"], r["reason"]) == ("refused", "permission_denied")


async def test_persona_lives_on_the_server_and_a_sudden_large_shrink_is_refused(team):
    """Seed 003 §57: "a sudden, large shrink is treated as suspicious and blocked instead of being applied
    silently"."""
    alice, bob = await team.person("alice"), await team.person("bob")
    researcher = await team.client(api_key=team.keys["researcher"])
    assert (await researcher.request("get_persona"))["text"] == ""
    assert (await researcher.request("set_persona", text=LONG))["version"] == 1
    r = await researcher.request("set_persona", text="Terse.")
    assert (r["op"], r["reason"]) == ("refused", "persona_shrink") and "less than half" in r["detail"]
    r = await researcher.request("set_persona", text="   ")
    assert (r["op"], r["reason"]) == ("refused", "persona_empty")
    assert (await researcher.request("get_persona"))["text"] == LONG  # not applied
    # in steps, each at least half the last, a persona may shrink on purpose
    step = LONG[: len(LONG) // 2 + 10]
    assert (await researcher.request("set_persona", text=step))["version"] == 2
    # its owner reads and writes it too; another person cannot see it; an agent cannot touch another's
    got = await alice.request("get_persona", agent="researcher")
    assert got["text"] == step and got["version"] == 2
    assert (await bob.request("get_persona", agent="researcher"))["code"] == "not_found"
    assert (await researcher.request("set_persona", agent="reviewer", text="x" * 50))["code"] == "not_found"
    rows = team.admin(lambda c: c.execute("SELECT version, author FROM personas ORDER BY version").fetchall())
    assert [v for v, _ in rows] == [1, 2]  # every version kept


async def test_wakes_going_out_at_once_share_one_load(team):
    """Seed 003 §54: "added fresh every turn": only the dynamic part is made per wake; the stored inputs are
    cached, and when the cache drops, wakes leaving at once on many connections wait for one load."""
    reads = []

    async def slow_read(fn, *args):
        reads.append(args)
        await asyncio.sleep(0.05)
        return await team.gw.read(fn, *args)

    issuer = Issuer(slow_read)
    alice = await team.person("alice")
    m = await ask(alice, team.ws, "shared load")
    frame = {"op": "deliver", "id": 1, "message": m, "wake": True, "context": []}
    agent = team.admin(lambda c: c.execute("SELECT id FROM agents WHERE name = 'researcher'").fetchone()[0])
    out = await asyncio.gather(*(issuer.dress(agent, frame) for _ in range(20)))
    assert len(reads) == 1 and all(f["directive"] == out[0]["directive"] for f in out)
    await issuer.dress(agent, frame)
    assert len(reads) == 1  # cached
    issuer.invalidate()
    again = await issuer.dress(agent, frame)
    assert len(reads) == 2 and again["directive"] == out[0]["directive"]  # reloaded, same bytes


async def test_stable_blocks_go_once_per_connection_and_version(team):
    """Seed 003 §54: the cached part "stay[s] byte-for-byte identical from turn to turn": on the wire a connection
    gets a version's stable blocks once; later wakes carry only its `version` and the dynamic part, and the
    client library puts the blocks back."""
    import json

    import websockets

    alice = await team.person("alice")
    async with websockets.connect(team.url) as ws:
        await ws.send(json.dumps({"op": "auth", "ref": 1, "api_key": team.keys["researcher"]}))
        assert json.loads(await ws.recv())["op"] == "session"
        got = []
        for text in ("one", "two"):
            await ask(alice, team.ws, text)
            while True:
                f = json.loads(await ws.recv())
                if f["op"] == "deliver" and f["wake"]:
                    break
            await ws.send(json.dumps({"op": "ack", "ids": [f["id"]]}))
            got.append(f["directive"])
        assert "stable" in got[0] and "stable" not in got[1] and got[0]["version"] == got[1]["version"]
        assert "two" in got[1]["dynamic"]
    # the library restores them; a bare agent may also ask for no directives at all
    researcher = await team.client(api_key=team.keys["researcher"])
    await ask(alice, team.ws, "three")
    await ask(alice, team.ws, "four")
    a, b = (await wake(researcher))["directive"], (await wake(researcher))["directive"]
    assert a["stable"] == b["stable"] == got[0]["stable"]
    async with websockets.connect(team.url) as ws:
        await ws.send(json.dumps({"op": "auth", "ref": 1, "api_key": team.keys["reviewer"], "directives": False}))
        assert json.loads(await ws.recv())["op"] == "session"
        await alice.send(workspace=team.ws, topic="new", title="Rev", type="request", to=["reviewer"], text="five")
        while True:
            f = json.loads(await ws.recv())
            if f["op"] == "deliver" and f["wake"]:
                break
        assert "directive" not in f


async def test_a_side_conversation_is_named_as_such(team):
    """Seed 003 §15: "For a task started inside a direct message, the back-and-forth is not allowed to spill into a
    conversation everyone sees. A separate side conversation is opened": the delegate's directive says where it
    works, and who is there."""
    alice = await team.person("alice")
    researcher = await team.client(api_key=team.keys["researcher"])
    reviewer = await team.client(api_key=team.keys["reviewer"])
    asked = await alice.send(workspace=team.ws, conversation="dm:researcher", topic="new", title="Numbers",
                             type="request", to=["researcher"], text="check the numbers")
    await wake(researcher)
    m = asked["message"]
    deleg = await researcher.send(workspace=team.ws, conversation=m["conversation"], topic=m["topic"],
                                  type="request", to=["reviewer"], state="waiting", text="please recompute table 2")
    assert deleg["op"] == "sent" and deleg["message"]["conversation"] != m["conversation"], deleg
    d = (await wake(reviewer))["directive"]
    assert "Where you are: a side conversation" in d["stable"][1] and "@alice, a person" in d["stable"][1]
    assert "please recompute table 2" in d["dynamic"] and "researcher sent you a request" in d["dynamic"]


async def test_a_viewer_in_a_party_does_not_set_its_rulebook(team):
    """docs/rules.md: "viewer reads only". A viewer added to a party (or lowered to viewer after joining one)
    reads its rulebook but does not set it, as in General."""
    alice = await team.person("alice")
    team.admin(admin.add_person, "vic", "pw-" + "x" * 8)
    team.admin(admin.add_member, team.ws, "vic", "viewer")
    sent = await alice.send(workspace=team.ws, conversation="dm:researcher", topic="new", title="Hi", type="inform",
                            text="hi")
    dm = sent["message"]["conversation"]
    r = await alice.request("add_participant", workspace=team.ws, conversation=dm, participant="@vic")
    assert r["op"] == "add_participant" and r["changed"], r
    vic = await team.person("vic")
    r = await vic.request("set_rulebook", workspace=team.ws, conversation=dm, rulebook={"length": 10})
    assert (r["op"], r["reason"]) == ("refused", "permission_denied"), r
    got = await vic.request("get_rulebook", workspace=team.ws, conversation=dm)
    assert got["op"] == "get_rulebook" and got["set"] == {}, got


async def _researchers_wake(team, alice, text: str) -> tuple[str, dict]:
    """researcher's id and a deliver frame waking it with `alice`'s request `text`, for an Issuer to dress."""
    m = await ask(alice, team.ws, text)
    agent = team.admin(lambda c: c.execute("SELECT id FROM agents WHERE name = 'researcher'").fetchone()[0])
    return agent, {"op": "deliver", "id": 1, "message": m, "wake": True, "context": []}


async def test_a_load_begun_before_a_change_does_not_cache_stale_stable_blocks(team):
    """docs/agents.md: the stable part changes "when the party or its rulebook does". A wake whose inputs were
    read before a set_rulebook committed goes out with what it read, but the blocks made from that read are
    not kept as current: the next wake reads the new rulebook (before, they were cached under the new
    generation and went out for the cache's ttl, 5 seconds)."""
    alice = await team.person("alice")
    agent, frame = await _researchers_wake(team, alice, "stale?")
    started, go = asyncio.Event(), asyncio.Event()

    async def read(fn, *args):
        got = await team.gw.read(fn, *args)  # read now, handed over later: a load overtaken by a write
        if not go.is_set():
            started.set()
            await go.wait()
        return got

    issuer = Issuer(read, ttl=60.0)
    first = asyncio.ensure_future(issuer.dress(agent, frame))
    await started.wait()
    r = await alice.request("set_rulebook", workspace=team.ws, conversation="general", rulebook={"length": 300})
    assert r["op"] == "set_rulebook", r
    issuer.invalidate()  # what the gateway does after the write
    go.set()
    assert (await first)["directive"]["rulebook"]["length"] == 800  # read before the change
    again = await issuer.dress(agent, frame)
    assert again["directive"]["rulebook"]["length"] == 300
    assert "at most 300 characters" in again["directive"]["stable"][1]


async def test_a_direct_conversation_that_grows_into_a_party_shows_in_the_next_directive(team):
    """Seed 004: "Each NPC is told who else is in the Party". A person addressing a second agent in a direct
    conversation makes it a party (the conversation grows to everyone addressed in it): the next wake's
    conversation block names the newcomer at once, as the deliver frame's roster does (before, the cached
    block without it went out for the cache's ttl, as no op announced the change)."""
    alice = await team.person("alice")
    researcher = await team.client(api_key=team.keys["researcher"])
    first = await alice.send(workspace=team.ws, conversation="dm:researcher", topic="new", title="Solo",
                             type="request", to=["researcher"], text="just you for now")
    assert first["op"] == "sent", first
    one = await wake(researcher)
    assert "reviewer" not in one["directive"]["stable"][1]
    cid = first["message"]["conversation"]
    second = await alice.send(workspace=team.ws, conversation=cid, topic="new", title="Both", type="request",
                              to=["researcher", "reviewer"], text="now both of you")
    assert second["op"] == "sent", second
    two = await wake(researcher)
    assert [e["name"] for e in two["roster"]] == ["reviewer"]
    stable = two["directive"].get("stable")
    assert stable is not None, "a new version: its stable blocks go out"
    assert "reviewer, an agent" in stable[1] and "a party conversation" in stable[1]


async def test_an_agent_names_itself_by_name_or_id_for_its_persona(team):
    """docs/protocol.md: get_persona/set_persona take `agent?` (id or name; default: the asker), for the agent itself
    or its owner: an agent naming itself is the agent itself, by either; another agent's name is still not found."""
    researcher = await team.client(api_key=team.keys["researcher"])
    me = (await researcher.call("whoami"))["id"]
    w = await researcher.request("set_persona", agent="researcher", text=LONG)
    assert w["op"] == "set_persona" and w["agent"] == me and w["version"] == 1, w
    for ref in ("researcher", me, None):
        got = await researcher.request("get_persona", **({} if ref is None else {"agent": ref}))
        assert got["op"] == "get_persona" and got["text"] == LONG, (ref, got)
    assert (await researcher.request("get_persona", agent="reviewer"))["code"] == "not_found"


async def test_a_wake_sharing_a_load_survives_the_loading_connection_going_away(team):
    """Wakes going out at once share one load; the writer that began it may be cancelled (its connection closed).
    The others still go out, with their directive (before, the cancellation reached every writer waiting on that
    load: each stopped for good, and its connection got no frame again)."""
    alice = await team.person("alice")
    agent, frame = await _researchers_wake(team, alice, "shared and cancelled")
    started, go = asyncio.Event(), asyncio.Event()

    async def read(fn, *args):
        started.set()
        await go.wait()
        return await team.gw.read(fn, *args)

    issuer = Issuer(read)
    first = asyncio.ensure_future(issuer.dress(agent, frame))
    await started.wait()
    second = asyncio.ensure_future(issuer.dress(agent, frame))
    await asyncio.sleep(0.05)  # second now waits on first's load
    first.cancel()
    go.set()
    out = await asyncio.wait_for(second, 5)
    assert first.cancelled()
    assert out["directive"]["stable"][0].startswith("You are researcher,")


async def test_a_set_rulebook_without_a_rulebook_is_refused_not_a_reset(team):
    """docs/protocol.md: set_rulebook takes `rulebook` (rules to change; ... `null` resets all): a frame without it
    (a misspelt field) is refused bad_rulebook and changes nothing; only an explicit null resets."""
    alice = await team.person("alice")
    r = await alice.request("set_rulebook", workspace=team.ws, conversation="general", rulebook={"length": 300})
    assert r["set"] == {"length": 300}, r
    r = await alice.request("set_rulebook", workspace=team.ws, conversation="general", rules={"length": 10})
    assert (r["op"], r["reason"]) == ("refused", "bad_rulebook"), r
    got = await alice.request("get_rulebook", workspace=team.ws, conversation="general")
    assert got["set"] == {"length": 300}
    r = await alice.request("set_rulebook", workspace=team.ws, conversation="general", rulebook=None)
    assert r["op"] == "set_rulebook" and r["set"] == {}, r
