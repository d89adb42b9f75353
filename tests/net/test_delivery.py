"""Durable, exclusive delivery (issue 3; seed 003 §2-3, §28)."""

import asyncio

import pytest

pytestmark = pytest.mark.backends("sqlite", "process", "postgres")


async def drain(client, seen: list, stop: asyncio.Event):
    while not stop.is_set():
        try:
            d = await client.next_delivery(timeout=0.2)
        except asyncio.TimeoutError:
            continue
        seen.append(d["id"])
        await client.ack([d["id"]])


async def test_three_connections_of_one_agent_get_each_delivery_exactly_once(team):
    """§2: "a given message can be claimed by only one connection, even when the agent has several connections open"."""
    alice = await team.person("alice")
    conns = [await team.client(api_key=team.keys["researcher"]) for _ in range(3)]
    seen = [[] for _ in conns]
    stop = asyncio.Event()
    tasks = [asyncio.create_task(drain(c, s, stop)) for c, s in zip(conns, seen)]
    first = await alice.send(workspace=team.ws, topic="new", title="Load", to=["researcher"], text="0")
    topic = first["message"]["topic"]
    sends = [alice.send(workspace=team.ws, topic=topic, to=["researcher"], text=str(i)) for i in range(1, 1000)]
    replies = await asyncio.gather(*sends)
    assert all(r["op"] == "sent" and r["deliveries"][0]["wake"] for r in replies)
    for _ in range(200):
        if sum(map(len, seen)) >= 1000:
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.3)
    stop.set()
    await asyncio.gather(*tasks)
    every = [i for s in seen for i in s]
    assert len(every) == 1000 and len(set(every)) == 1000
    assert all(len(s) > 0 for s in seen), "every connection took a share"


async def test_lease_returns_when_a_connection_drops(team):
    """§3: "If the channel is offline ... nothing is lost: as soon as it reconnects ... the same claim query runs again"."""
    alice = await team.person("alice")
    a = await team.client(api_key=team.keys["reviewer"], reconnect=False)
    sent = await alice.send(workspace=team.ws, topic="new", title="Drop", to=["reviewer"], text="catch me")
    d = await a.next_delivery(timeout=5)
    await a.close()  # never acked
    b = await team.client(api_key=team.keys["reviewer"])
    again = await b.next_delivery(timeout=5)
    assert again["id"] == d["id"] and again["message"]["id"] == sent["message"]["id"]
    acked = await b.ack([again["id"]])
    assert acked["ids"] == [again["id"]]
    c = await team.client(api_key=team.keys["reviewer"])
    with __import__("pytest").raises(asyncio.TimeoutError):
        await c.next_delivery(timeout=0.5)


async def test_agent_wake_carries_context_since_last_wake(team):
    """Seed 000: "Everything else reaches the agent as context: it sees it next time it is woken"."""
    alice = await team.person("alice")
    r = await alice.send(workspace=team.ws, topic="new", title="Ctx", type="inform", to=["researcher"], text="fyi 1")
    topic = r["message"]["topic"]
    await alice.send(workspace=team.ws, topic=topic, type="inform", to=["researcher"], text="fyi 2")
    await alice.send(workspace=team.ws, topic=topic, type="request", to=["researcher"], text="now act")
    agent = await team.client(api_key=team.keys["researcher"])
    d = await agent.next_delivery(timeout=5)
    assert d["wake"] and d["message"]["text"] == "now act"
    assert [m["text"] for m in d["context"]] == ["fyi 1", "fyi 2"]
    assert d["context_reasons"] == ["context_inform", "context_inform"]
    await agent.ack([d["id"]])
    with __import__("pytest").raises(asyncio.TimeoutError):
        await agent.next_delivery(timeout=0.3)


async def test_person_gets_everything_on_every_device_and_one_ack_retires(team):
    """PROTOCOL.md: "A person's connections (every device) all show everything live, and an ack from any of them retires the delivery"."""
    phone, laptop = await team.person("alice"), await team.person("alice")
    bob = await team.person("bob")
    sent = await bob.send(workspace=team.ws, topic="new", title="Hi", type="inform", to=["@alice"], text="hello")
    assert sent["op"] == "sent"
    d1, d2 = await phone.next_delivery(timeout=5), await laptop.next_delivery(timeout=5)
    assert d1["id"] == d2["id"]
    await phone.ack([d1["id"]])
    tablet = await team.person("alice")
    with __import__("pytest").raises(asyncio.TimeoutError):
        await tablet.next_delivery(timeout=0.3)
