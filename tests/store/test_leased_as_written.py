"""Issue 16: "A node no longer claims back from the database what it has just published itself".

On PostgreSQL an agent's work is claimed under a lease (seed 003 §27). Once a node holds all of an agent's
unacked work (its last claim found less than it could take and left nothing unleased), what that node's
writer commits for the agent is leased to one of its connections there in the statement that writes it, and
handed out from memory: no claim runs for it. What another node wrote is still claimed.
"""

from __future__ import annotations

import asyncio

import pytest

from ygg_server.ops import admin
from tests.backends import PW

pytestmark = pytest.mark.backends("postgres")


def _count_claims(gw) -> list:
    claims, claim = [], gw.delivery.db.claim

    async def counted(*a, **kw):
        claims.append(a[0])
        return await claim(*a, **kw)

    gw.delivery.db.claim = counted
    return claims


async def _drained(gw, pid: str) -> None:
    for _ in range(100):
        inbox = gw.inboxes.get(pid)  # (made as the connection attaches, just after it is answered)
        if inbox is not None and inbox.drained:
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the agent's inbox never found all its work held here")


async def test_what_a_node_writes_for_its_agent_goes_out_without_a_claim_and_with_its_context(team):
    """Seed 000: "Everything else reaches the agent as context: it sees it next time it is woken"."""
    gw = team.gw
    agent = await team.client(api_key=team.keys["researcher"])
    await _drained(gw, agent.me["id"])
    claims = _count_claims(gw)
    alice = await team.person("alice")
    for i in range(5):
        r = await alice.send(workspace=team.ws, topic="new", title=f"T{i}", type="inform", to=["researcher"],
                             text=f"fyi {i}")
        await alice.send(workspace=team.ws, topic=r["message"]["topic"], type="request", to=["researcher"],
                         text=f"act {i}")
        d = await agent.next_delivery(timeout=5)
        assert d["wake"] and d["message"]["text"] == f"act {i}"
        assert [m["text"] for m in d["context"]] == [f"fyi {i}"], "the context before the wake rides with it"
        await agent.ack([d["id"]])
    assert claims == [], "nothing this node wrote for its own agent was claimed back"
    leased = await _leased(team, agent.me["id"])
    assert leased == {"acked": 10, "unacked": 0}


async def test_a_connection_gone_before_the_commit_gives_the_leases_back(team):
    """PROTOCOL.md: "A delivery not acked is offered again": leased as written to a connection that closed
    meanwhile, it is released and claimed by the agent's next connection."""
    gw = team.gw
    first = await team.client(api_key=team.keys["researcher"])
    pid = first.me["id"]
    await _drained(gw, pid)
    second = await team.client(api_key=team.keys["researcher"])
    await asyncio.sleep(0.1)
    await _drained(gw, pid)
    holder = gw.inboxes[pid].taker()
    assert holder == gw.conns[pid][0].holder, "(the first connection takes what is written next)"
    write, store = gw.writer.store.write, gw.writer.store
    closed = asyncio.Event()

    async def write_after_close(outcome):
        await write(outcome)
        if outcome.leased and not closed.is_set():
            await first.close()
            for _ in range(100):
                if holder not in {s.holder for s in gw.inboxes.get(pid, type("x", (), {"sinks": []})).sinks}:
                    break
                await asyncio.sleep(0.01)
            closed.set()

    store.write = write_after_close
    try:
        alice = await team.person("alice")
        sent = await alice.send(workspace=team.ws, topic="new", title="Back", type="request", to=["researcher"],
                                text="anyone?")
        d = await second.next_delivery(timeout=10)
        assert d["message"]["id"] == sent["message"]["id"]
        assert closed.is_set(), "it was leased as written to the connection that closed"
    finally:
        store.write = write


async def test_work_another_node_wrote_is_still_claimed(server):
    other = await server.node()
    server.admin(admin.add_person, "alice", PW)
    ws = server.admin(admin.add_workspace, "team", "alice")["id"]
    key = server.admin(admin.add_agent, "worker", "alice")["api_key"]
    worker = await server.client(api_key=key)  # on node A
    await _drained(server.gw, worker.me["id"])
    claims = _count_claims(server.gw)
    alice_b = await server.person("alice", url=f"ws://127.0.0.1:{other.port}/")
    sent = await alice_b.send(workspace=ws, topic="new", title="From B", to=["worker"], text="x")
    d = await worker.next_delivery(timeout=10)
    assert d["message"]["id"] == sent["message"]["id"]
    assert claims, "node A claimed what node B wrote"


async def _leased(team, pid: str) -> dict:
    rows = team.conn.execute("SELECT acked_at IS NOT NULL, leased_by FROM deliveries WHERE recipient = ?",
                             (pid,)).fetchall()
    return {"acked": sum(1 for a, _ in rows if a), "unacked": sum(1 for a, _ in rows if not a)}
