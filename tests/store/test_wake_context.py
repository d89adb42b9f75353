"""A wake's context is bounded alike on both stores (docs/protocol.md, "Agents"): at most `inbox.PAGE` context
deliveries and `inbox.MAX_CONTEXT` characters of their text, the oldest; the rest ride with the agent's next
wakes. On PostgreSQL only what a wake carries is leased; the rest stays claimable.

Before, on PostgreSQL, a claim leased up to a page of context to one wake whatever its size: a person's long
informs made a frame over a client's limit, closed with 1009 after every reconnect."""

import asyncio

import pytest
import websockets

from tests.net.test_agent_protocol import Raw
from tests.backends import PW
from ygg_server import protocol
from ygg_server.net import inbox

pytestmark = pytest.mark.backends("sqlite", "postgres")

LONG = inbox.MAX_CONTEXT // 2  # two of them fill a wake's context
assert LONG <= protocol.MAX_TEXT


class Utf8(Raw):
    """Frames out as UTF-8: 200,000 4-byte characters are 800 KB, under the server's 1 MiB (as \\u escapes, 2.4 MB)."""

    ascii = False


def _unacked(server, pid: str, leased: bool = False) -> list[int]:
    """The agent's unacked context deliveries (`leased`: those under a lease, PostgreSQL's claims)."""
    lease = " AND leased_by IS NOT NULL" if leased else ""
    return [r[0] for r in server.conn.execute(
        f"SELECT id FROM deliveries WHERE recipient = ? AND wake = 0 AND acked_at IS NULL{lease} ORDER BY id",
        (pid,)).fetchall()]


@pytest.mark.parametrize("requests", [1, 3])
@pytest.mark.parametrize("char, frame", [("x", protocol.MAX_FRAME), ("\U0001d51c", 2**24)], ids=["ascii", "wide"])
async def test_long_informs_ride_with_successive_wakes_each_within_a_client_frame(team, requests, char, frame):
    """Three informs of MAX_CONTEXT/2 characters, then `requests` requests (one: a new one after each wake is
    acked; three: claimed at once, the context carried over from one wake to the next): every wake fits a
    client's frame limit (1 MiB for ASCII text; text of 4-byte characters, 𝔜, is 4 times as long in bytes:
    the 16 MiB docs/protocol.md asks for), carries the oldest that fit, counted in characters on either store,
    and each inform arrives once, none left."""
    alice = await Utf8.open(team.url, handle="alice", password=PW)
    first = await alice.call({"op": "send", "workspace": team.ws, "topic": "new", "title": "Pile", "type": "inform",
                              "to": ["researcher"], "text": char * LONG})
    topic, informs = first["message"]["topic"], [first["message"]["id"]]

    async def send(text: str, type: str = "request") -> None:
        r = await alice.call({"op": "send", "workspace": team.ws, "topic": topic, "type": type,
                              "to": ["researcher"], "text": text})
        assert r["op"] == "sent", r
        if type == "inform":
            informs.append(r["message"]["id"])

    for _ in (1, 2):
        await send(char * LONG, "inform")
    for i in range(requests):
        await send(f"q{i}")
    agent = await Raw.open(team.url, max_size=frame, api_key=team.keys["researcher"])
    pid = agent.session["me"]["id"]
    carried: list[list[str]] = []
    for turn in range(4):
        try:
            wakes = await agent.deliveries()
        except websockets.ConnectionClosed as e:
            pytest.fail(f"a wake closed the connection: {e}")
        assert wakes and all(w["wake"] for w in wakes), wakes
        for w in wakes:
            assert len(w["context"]) <= inbox.PAGE
            assert sum(len(m["text"]) for m in w["context"]) <= inbox.MAX_CONTEXT
            carried.append([m["id"] for m in w["context"]])
        if team.backend == "postgres":  # leased: what the wakes carry, no more
            held = sorted(i for w in wakes for i in w["context_ids"])
            assert _unacked(team, pid, leased=True) == held
        assert (await agent.call({"op": "ack", "ids": [w["id"] for w in wakes]}))["op"] == "acked"
        if sum(map(len, carried)) >= len(informs):
            break
        await send(f"and again {turn}")
    assert [c for c in carried if c] == [informs[:2], informs[2:]], "the oldest that fit, each once, in order"
    assert await agent.deliveries() == []
    assert _unacked(team, pid) == []
    await asyncio.gather(agent.ws.close(), alice.ws.close())


@pytest.mark.backends("postgres")  # nodes share a database on PostgreSQL only
async def test_context_left_over_waits_unleased_and_goes_to_any_node(server, team):
    """PostgreSQL, two nodes: the context a wake could not carry is not leased to its connection; the agent's
    next wake, claimed through the other node, carries it."""
    other = await server.node()
    alice = await team.person("alice")
    first = await alice.send(workspace=team.ws, topic="new", title="Pile", type="inform", to=["researcher"],
                             text="a" * LONG)
    topic, informs = first["message"]["topic"], [first["message"]["id"]]
    for text in ("b" * LONG, "c" * LONG):
        informs.append((await alice.send(workspace=team.ws, topic=topic, type="inform", to=["researcher"],
                                         text=text))["message"]["id"])
    await alice.send(workspace=team.ws, topic=topic, to=["researcher"], text="q0")
    here = await Raw.open(team.url, max_size=protocol.MAX_FRAME, api_key=team.keys["researcher"], prefetch=1)
    pid = here.session["me"]["id"]
    wake, = await here.deliveries()
    assert [m["id"] for m in wake["context"]] == informs[:2]
    assert _unacked(team, pid, leased=True) == sorted(wake["context_ids"])  # the third is claimable still
    there = await Raw.open(f"ws://127.0.0.1:{other.port}/", max_size=protocol.MAX_FRAME,
                           api_key=team.keys["researcher"], prefetch=1)
    await alice.send(workspace=team.ws, topic=topic, to=["researcher"], text="q1")
    later, = await there.deliveries(quiet=1.0)
    assert [m["id"] for m in later["context"]] == informs[2:]
    assert await here.deliveries(quiet=0.2) == []
    for conn, w in ((here, wake), (there, later)):
        acked = await conn.call({"op": "ack", "ids": [w["id"]]})
        assert sorted(acked["ids"]) == sorted([w["id"], *w["context_ids"]])
    assert _unacked(team, pid) == []
    await asyncio.gather(here.ws.close(), there.ws.close())
