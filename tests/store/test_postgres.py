"""What only the PostgreSQL store has: several nodes on one database, the claim pattern, the adapter.

Two nodes here are two PgGateway+writer pairs in this process, each with its own connections
(tests/store/test_two_nodes.py runs them as processes).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import sqlite3
import threading
import time

import asyncpg
import pytest

from ygg_server.clock import now_us
from ygg_server.ops import admin, queries, search
from ygg_server.core import general_id
from ygg_server.net.gateway import Limits
from ygg_server.protocol import frames
from ygg_server.protocol.results import Sent
from ygg_server.store import loaders, postgres as pg, schema, sqlite as db

from . import legacy
from tests.backends import PW, start_server, stop_server

pytestmark = pytest.mark.backends("postgres")


def test_each_statement_replaced_whole_still_matches_its_source():
    """postgres.OVERRIDES replaces statements of loaders.py, queries.py and search.py by their text: an edit there
    must show."""
    source = pg._norm(inspect.getsource(loaders) + inspect.getsource(queries) + inspect.getsource(search))
    for sql in pg.OVERRIDES:
        assert sql in source, f"no longer in loaders.py/queries.py/search.py: {sql[:80]}…"


async def test_the_schema_has_every_table_and_column_of_sqlite(pg_url):
    lite = sqlite3.connect(":memory:", isolation_level=None)
    db.migrate(lite)
    tables = [r[0] for r in lite.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
              if not r[0].startswith(("messages_fts", "memories_fts", "sqlite_"))]  # (FTS5: SQLite's own)
    c = await pg.connect(pg.parse_dsn(pg_url)[0])
    try:
        await pg.migrate(c)
        assert await pg.migrate(c) == schema.latest()  # again: nothing to do
        for t in tables:
            want = {r[1] for r in lite.execute(f"PRAGMA table_info({t})")}
            have = {r[0] for r in await c.fetch(
                "SELECT column_name FROM information_schema.columns WHERE table_name = $1 AND table_schema = current_schema()", t)}
            assert want <= have, (t, want - have)
    finally:
        await c.close()


def test_prepared_statements_are_switched_off_by_flag_or_url():
    assert pg.parse_dsn("postgresql://u@h/db") == ("postgresql://u@h/db", True)
    assert pg.parse_dsn("postgresql://u@h/db?prepared=false&search_path=x") == ("postgresql://u@h/db?search_path=x", False)
    assert pg.parse_dsn("postgresql://u@h/db?prepared=true", prepared=False)[1] is False
    assert pg.parse_dsn("postgresql://u@h/db?prepared=0")[1] is False


async def test_a_node_without_prepared_statements_serves(pg_url):
    s = await start_server("postgres", pg_url + "&prepared=false")
    try:
        assert s.gw.writer.store.prepared is False
        s.admin(admin.add_person, "alice", PW)
        ws = s.admin(admin.add_workspace, "team", "alice")["id"]
        key = s.admin(admin.add_agent, "helper", "alice")["api_key"]
        alice, helper = await s.person("alice"), await s.client(api_key=key)
        r = await alice.send(workspace=ws, topic="new", title="Hi", to=["helper"], text="no cache")
        assert r["op"] == "sent"
        assert (await helper.next_delivery(timeout=5))["message"]["text"] == "no cache"
    finally:
        await stop_server(s)


async def test_the_claim_pattern_serves_any_table_of_work(pg_url):
    """Seed 003 §27: one pattern for every kind of work; here a table of tasks, not deliveries."""
    tasks = pg.Claimable("tasks", owner="queue", ready="t.done = false")
    claim = f"WITH {pg.WANT} {tasks.claim(returning='d.id')}"
    dsn = pg.parse_dsn(pg_url)[0]
    a, b = await asyncpg.connect(dsn), await asyncpg.connect(dsn)
    try:
        await a.execute("""CREATE TABLE tasks (id BIGSERIAL PRIMARY KEY, queue TEXT NOT NULL,
                           done BOOLEAN NOT NULL DEFAULT false, leased_by TEXT, lease_until BIGINT);
                           INSERT INTO tasks (queue) SELECT 'q' FROM generate_series(1, 10)""")
        # a claim in progress (its transaction open) holds its rows: another skips them, and never waits
        tx = a.transaction()
        await tx.start()
        first = [r[0] for r in await a.fetch(claim, ["q"], ["a/1"], [4], 100, 200)]
        second = [r[0] for r in await asyncio.wait_for(b.fetch(claim, ["q"], ["b/1"], [4], 100, 200), 5)]
        await tx.commit()
        assert first == [1, 2, 3, 4] and second == [5, 6, 7, 8]
        # leased rows are not claimed again before their lease ends; after, they are
        assert [r[0] for r in await b.fetch(claim, ["q"], ["b/2"], [10], 150, 300)] == [9, 10]
        assert [r[0] for r in await b.fetch(claim, ["q"], ["b/3"], [10], 250, 400)] == [1, 2, 3, 4, 5, 6, 7, 8]
        await a.execute(tasks.renew(), ["b/3"], 1000)
        released = await a.fetch(tasks.release(), "b/3")
        assert len(released) == 8
        assert len(await b.fetch(claim, ["q"], ["b/4"], [10], 500, 600)) == 10  # (9 and 10 ran out at 300)
    finally:
        await a.close()
        await b.close()


async def test_acks_renewals_and_releases_over_the_same_rows_never_deadlock(pg_url):
    """Acks have their own connection and transaction (store/postgres/acks.py), beside the heartbeat's lease
    renewals and the releases of closing connections: all three lock rows in id order, so they queue
    behind each other. (With the acks' rows locked in the order the ids came, this test saw deadlocks.)"""
    import random

    dsn = pg.parse_dsn(pg_url)[0]
    setup, a, b = [await asyncpg.connect(dsn) for _ in range(3)]
    try:
        await pg.migrate(setup)
        await setup.execute(
            "INSERT INTO deliveries (message, recipient, wake, leased_by, lease_until) "
            "SELECT 'm' || g, 'r', 1, CASE WHEN g % 2 = 0 THEN 'h/1' ELSE 'h/2' END, 10 "
            "FROM generate_series(1, 3000) g")
        ids = [r[0] for r in await setup.fetch("SELECT id FROM deliveries ORDER BY id")]
        random.Random(7).shuffle(ids)
        deadlocks = []
        acked = []

        async def acks():
            for i in range(0, len(ids), 30):
                chunk = ids[i:i + 30]
                try:
                    acked.extend(r[0] for r in await a.fetch(pg.ACK_DELIVERIES, 1, chunk, ["r"] * len(chunk)))
                except asyncpg.exceptions.DeadlockDetectedError as e:
                    deadlocks.append(e)

        async def leases():
            for k in range(150):
                try:
                    if k % 10 == 9:
                        await b.fetch(pg.RELEASE_DELIVERIES, "h/2")
                    else:
                        await b.execute(pg.RENEW_DELIVERIES, ["h/1", "h/2"], 20)
                except asyncpg.exceptions.DeadlockDetectedError as e:
                    deadlocks.append(e)

        await asyncio.gather(acks(), leases())
        assert deadlocks == []
        assert sorted(acked) == sorted(ids), "each ack took effect once"
    finally:
        for c in (setup, a, b):
            await c.close()


async def test_generals_counters_add_up_across_nodes_and_its_hop_limit_still_holds(server):
    """Seed 004: a party's hop limit, here in General, fed by agents on two nodes. A batch where no person
    writes in General reads its row without a lock and adds its agents' messages to the counters in its
    write (store/postgres/writer_store.py, Contended): no increment is lost between the nodes, and near the limit the batch is
    decided again with the row locked, so exactly the allowed number of hops wake anyone."""
    other = await server.node()
    url_b = f"ws://127.0.0.1:{other.port}/"
    server.admin(admin.add_person, "alice", PW)
    ws = server.admin(admin.add_workspace, "team", "alice")["id"]
    n = 18  # each opens 2 topics first, then 1 (an agent holds at most 3 open topics)
    keys = [server.admin(admin.add_agent, f"a{i}", "alice")["api_key"] for i in range(n)]
    for i in range(n):
        server.admin(admin.fund, f"a{i}", 10_000)
    alice = await server.person("alice")
    for key in ("party.maxHops", "party.throttleGroup"):
        assert (await alice.request("set_setting", workspace=ws, key=key, value=10**6))["op"] == "set_setting"
    agents = [await server.client(server.url if i % 2 == 0 else url_b, api_key=k) for i, k in enumerate(keys)]
    gid = general_id(ws)

    def counters():
        p = json.loads(server.conn.execute("SELECT party FROM conversations WHERE id = ?", (gid,)).fetchone()[0])
        return p.get("run", 0), p.get("hops", 0)

    async def ask(i, topics, out):
        for k in range(topics):  # a request to another agent, in a new topic of General: it wakes that agent
            r = await agents[i].send(workspace=ws, topic="new", title=f"{i}.{k}", to=[f"a{(i + 1) % n}"], text="x")
            assert r["op"] == "sent", r
            out.append(r)

    first: list = []
    await asyncio.gather(*(ask(i, 2, first) for i in range(n)))
    assert all(d["reason"] is None for r in first for d in r["deliveries"] if d["to"].startswith("agent.")), [d for r in first for d in r["deliveries"] if d["to"].startswith("agent.") and d["reason"]]
    assert counters() == (2 * n, 2 * n), "every agent message counted once, from both nodes"

    # the limit: 7 more hops allowed; 18 agent messages from both nodes: 7 wake, 11 are hop-limited
    r = await alice.request("set_setting", workspace=ws, key="party.maxHops", value=2 * n + 7)
    assert r["op"] == "set_setting", r
    sent: list = []
    await asyncio.gather(*(ask(i, 1, sent) for i in range(n)))
    reasons = [d["reason"] for r in sent for d in r["deliveries"] if d["to"].startswith("agent.")]
    assert reasons.count(None) == 7 and reasons.count("hop_limit") == n - 7, reasons
    notices = server.conn.execute(
        "SELECT count(*) FROM messages WHERE conversation = ? AND author = 'system.ygg' AND text LIKE '%hop%'",
        (gid,)).fetchone()[0]
    assert notices == 1, "one hop_limit notice for the run"


async def test_two_nodes_never_spend_the_same_credits(server):
    """An agent with 100 credits sends 160 messages, half through each node, at once: exactly 100 pass."""
    other = await server.node()
    server.admin(admin.add_person, "alice", PW)
    ws = server.admin(admin.add_workspace, "team", "alice")["id"]
    key = server.admin(admin.add_agent, "spender", "alice")["api_key"]
    aid = server.admin(admin.fund, "spender", 100)["id"]
    alice = await server.person("alice")
    opened = await alice.send(workspace=ws, topic="new", title="Spend", to=["spender"], text="go")
    topic = opened["message"]["topic"]
    url_b = f"ws://127.0.0.1:{other.port}/"
    conns = [await server.client(api_key=key) for _ in range(4)] + \
            [await server.client(url_b, api_key=key) for _ in range(4)]

    async def spend(c, k):
        out = []
        for i in range(20):
            out.append(await c.send(workspace=ws, topic=topic, type="inform", to=["@alice"], text=f"{k}.{i}"))
        return out

    replies = [r for rs in await asyncio.gather(*(spend(c, k) for k, c in enumerate(conns))) for r in rs]
    sent = [r for r in replies if r["op"] == "sent"]
    refused = [r for r in replies if r["op"] == "refused"]
    assert len(sent) == 100 and len(refused) == 60, (len(sent), len(refused))
    assert all(r["reason"] == "credits_exhausted" for r in refused)
    assert server.conn.execute("SELECT balance FROM wallets WHERE account = ?", (aid,)).fetchone()[0] == 0
    spent = server.conn.execute("SELECT sum(delta) FROM ledger WHERE account = ? AND delta < 0", (aid,)).fetchone()[0]
    assert spent == -100


async def test_two_nodes_lose_no_topic_update(server):
    """200 requests into one topic through two nodes at once: the topic remembers every one."""
    other = await server.node()
    server.admin(admin.add_person, "alice", PW)
    ws = server.admin(admin.add_workspace, "team", "alice")["id"]
    server.admin(admin.add_agent, "busy", "alice")
    url_b = f"ws://127.0.0.1:{other.port}/"
    senders = [await server.person("alice") for _ in range(3)] + [await server.person("alice", url=url_b) for _ in range(3)]
    first = await senders[0].send(workspace=ws, topic="new", title="Many", to=["busy"], text="0")
    topic = first["message"]["topic"]

    async def ask(c, k):
        for i in range(33):
            r = await c.send(workspace=ws, topic=topic, to=["busy"], text=f"{k}.{i}")
            assert r["op"] == "sent", r

    await asyncio.gather(*(ask(c, k) for k, c in enumerate(senders)))
    t = server.admin(loaders.load_topic, topic)
    assert len(t.pending) == 1 + 6 * 33, "a request's pending entry was lost: a topic written from a stale state"


async def test_an_agent_connected_to_two_nodes_gets_each_wake_once(server):
    other = await server.node()
    server.admin(admin.add_person, "alice", PW)
    ws = server.admin(admin.add_workspace, "team", "alice")["id"]
    key = server.admin(admin.add_agent, "worker", "alice")["api_key"]
    url_b = f"ws://127.0.0.1:{other.port}/"
    workers = [await server.client(api_key=key), await server.client(url_b, api_key=key)]
    alice_a, alice_b = await server.person("alice"), await server.person("alice", url=url_b)
    got: list[list[int]] = [[], []]
    stop = asyncio.Event()

    async def work(w, seen):
        while not stop.is_set():
            try:
                d = await w.next_delivery(timeout=0.2)
            except asyncio.TimeoutError:
                continue
            seen.append(d["message"]["id"])
            await w.ack([d["id"]])

    tasks = [asyncio.create_task(work(w, g)) for w, g in zip(workers, got)]

    async def ask(a, k):
        return [(await a.send(workspace=ws, topic="new", title=f"{k}{i}", to=["worker"], text="x"))["message"]["id"]
                for i in range(60)]

    ids = [m for ms in await asyncio.gather(ask(alice_a, "a"), ask(alice_b, "b")) for m in ms]
    for _ in range(200):
        if sum(map(len, got)) >= len(ids):
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.3)
    stop.set()
    await asyncio.gather(*tasks)
    every = got[0] + got[1]
    assert sorted(every) == sorted(ids), "each wake exactly once"
    assert got[0] and got[1], "both nodes' connections took a share"


async def test_events_presence_and_deliveries_cross_nodes(server):
    """A person following on node B sees what happens on node A, live."""
    other = await server.node()
    server.admin(admin.add_person, "alice", PW)
    server.admin(admin.add_person, "bob", PW)
    ws = server.admin(admin.add_workspace, "team", "alice")["id"]
    server.admin(admin.add_member, ws, "bob")
    key = server.admin(admin.add_agent, "helper", "alice")["api_key"]
    url_b = f"ws://127.0.0.1:{other.port}/"
    bob = await server.person("bob", url=url_b)
    await bob.subscribe(ws)
    helper = await server.client(api_key=key)  # on node A

    async def event(kind):
        while True:
            ev = await bob.next_event(timeout=10)
            if ev.get("kind") == kind:
                return ev

    ev = await event("presence")
    assert ev["participant"] == helper.me["id"] and ev["online"] is True
    online = (await bob.call("presence", workspace=ws))["online"]
    assert online[helper.me["id"]] is True
    alice = await server.person("alice")  # on node A
    sent = await alice.send(workspace=ws, topic="new", title="Across", to=["@bob"], type="inform", text="hello bob")
    assert (await bob.next_delivery(timeout=10))["message"]["id"] == sent["message"]["id"]
    t = await event("topic")
    assert t["topic"]["id"] == sent["message"]["topic"]
    await helper.close()
    ev = await event("presence")
    assert ev["participant"] == helper.me["id"] and ev["online"] is False


async def test_nodes_migrate_one_at_a_time(pg_url):
    dsn = pg.parse_dsn(pg_url)[0]
    conns = [await asyncpg.connect(dsn) for _ in range(3)]
    try:
        assert await asyncio.gather(*(pg.migrate(c) for c in conns)) == [schema.latest()] * 3
    finally:
        for c in conns:
            await c.close()



async def test_deliveries_stored_before_migration_5_get_their_messages_seq(pg_url):
    """Migration 5 (SQLite's 8): each delivery stored before it points at its own message's seq afterwards, and
    the index on the message id gives way to one on message_seq."""
    c = await asyncpg.connect(pg.parse_dsn(pg_url)[0])
    try:
        await legacy.postgres_before(c, "message_seq")
        for i in range(3):  # seqs 10, 17, 24; deliveries in another order (a seq never equals a delivery's id)
            await c.execute("INSERT INTO messages (seq, id, workspace, conversation, author, type, text, body, created_at) "
                            "VALUES ($1, $2, 'ws', 'c', 'a', 'inform', 'x', ''::bytea, 0)", 10 + 7 * i, f"m{i}")
        for i in (2, 0, 2, 1):
            await c.execute("INSERT INTO deliveries (message, recipient, wake) VALUES ($1, 'r', 1)", f"m{i}")
        assert await pg.migrate(c) == schema.latest()
        got = [tuple(r) for r in await c.fetch("SELECT message, message_seq FROM deliveries ORDER BY id")]
        assert got == [("m2", 24), ("m0", 10), ("m2", 24), ("m1", 17)]
        indexes = {r[0] for r in await c.fetch(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'deliveries' AND schemaname = current_schema()")}
        assert "deliveries_message_seq" in indexes and "deliveries_message" not in indexes
    finally:
        await c.close()


async def test_pins_to_workspaces_deleted_before_migration_9_are_taken_away(pg_url):
    """Migration 9 (SQLite's 11): a pin to a workspace deleted while pins stayed behind goes as a delete takes it
    now (reach.unpin); the other pins stay, in their order; an agent left with none is pinned to none."""
    c = await asyncpg.connect(pg.parse_dsn(pg_url)[0])
    try:
        await legacy.postgres_before(c, "json_array_elements_text")
        await c.execute("INSERT INTO workspaces (id, org, name, created_at) VALUES ('two', 'o', 'two', 0), "
                        "('one', 'o', 'one', 0)")
        for aid, pinned in (("a.both", '["gone","two","one"]'), ("a.gone", '["gone"]'), ("a.kept", '["one"]'),
                            ("a.free", None)):
            await c.execute("INSERT INTO agents (id, owner, name, key_id, key_hash, pinned, created_at) "
                            "VALUES ($1, 'h', $1, $1, 'x', $2, 0)", aid, pinned)
        assert await pg.migrate(c) == schema.latest()
        got = {r[0]: None if r[1] is None else json.loads(r[1])
               for r in await c.fetch("SELECT id, pinned FROM agents")}
        assert got == {"a.both": ["two", "one"], "a.gone": [], "a.kept": ["one"], "a.free": None}
    finally:
        await c.close()


async def _sends_while_another_node_holds_a_topic(server, pg_url, before=None, while_held=None) -> str:
    """Alice sends in a topic another node's transaction holds, then in a new topic; bob sends in a new one: the
    three in one batch (`before()` runs just before it). Bob's is answered at once; alice's two wait for the
    lock, her later send behind her first (`while_held()` checks more meanwhile); both are answered once it is
    free. Returns the held topic."""
    alice = server.admin(admin.add_person, "alice", PW)["id"]
    bob = server.admin(admin.add_person, "bob", PW)["id"]
    ws = server.admin(admin.add_workspace, "team", "alice")["id"]
    server.admin(admin.add_member, ws, "bob")
    server.admin(admin.add_agent, "helper", "alice")
    a = await server.person("alice")
    held = (await a.send(workspace=ws, topic="new", title="Held", to=["helper"], text="0"))["message"]["topic"]
    holder = await pg.connect(pg.parse_dsn(pg_url)[0])
    tx = holder.transaction()
    await tx.start()
    await holder.execute("SELECT 1 FROM topics WHERE id = $1 FOR UPDATE", held)  # as another node's batch would
    writer = server.gw.writer

    def send(who, ref, **f):
        return writer.submit("send", who, frames.Send(ref=ref, workspace=ws, to=["helper"], text=ref, **f))

    try:
        if before is not None:
            before()
        first = send(alice, "a1", topic=held)  # the three in one batch (no await in between)
        later = send(alice, "a2", topic="new", title="Later")
        free = send(bob, "b1", topic="new", title="Free")
        assert type(await asyncio.wait_for(free, 10)) is Sent
        if while_held is not None:
            while_held()
        await asyncio.sleep(0.3)
        assert not first.done() and not later.done(), "left for the lock, with its author's later send"
    finally:
        await tx.rollback()
        await holder.close()
    assert type(await asyncio.wait_for(first, 10)) is Sent
    assert type(await asyncio.wait_for(later, 10)) is Sent
    return held


async def test_a_send_in_a_topic_another_node_holds_waits_alone(server, pg_url):
    """A batch skips a topic another node's transaction holds (`FOR UPDATE SKIP LOCKED`) instead of
    waiting for it with its other locks held: the batch's other sends are answered at once; the
    skipped send, and its author's later ones (a participant's sends keep their order), are decided
    first in the next batch, which waits for the lock."""
    held = await _sends_while_another_node_holds_a_topic(server, pg_url)
    t = server.admin(loaders.load_topic, held)
    assert len(t.pending) == 2, "the held topic got its request once the lock was free"


async def test_a_party_grown_through_one_node_shows_in_the_next_directive_another_node_issues(team):
    """Seed 004: "Each NPC is told who else is in the Party". The conversation grows through node A; the agent
    is on node B, whose claim reads the conversation as committed: B's next wake names the newcomer at once
    (before, B's cached block went out until its 5 s ttl ran out)."""
    from tests.net.test_directives import wake

    b = f"ws://127.0.0.1:{(await team.node()).port}/"
    alice = await team.person("alice")
    researcher = await team.client(b, api_key=team.keys["researcher"])
    first = await alice.send(workspace=team.ws, conversation="dm:researcher", topic="new", title="Solo",
                             type="request", to=["researcher"], text="just you for now")
    assert "reviewer" not in (await wake(researcher))["directive"]["stable"][1]
    second = await alice.send(workspace=team.ws, conversation=first["message"]["conversation"], topic="new",
                              title="Both", type="request", to=["researcher", "reviewer"], text="now both of you")
    assert second["op"] == "sent", second
    stable = (await wake(researcher))["directive"]["stable"]
    assert "reviewer, an agent" in stable[1] and "a party conversation" in stable[1]


async def test_personas_and_rulebooks_written_through_two_nodes_at_once_lose_nothing(team):
    """set_persona and set_rulebook read their document and write what they decided from it: through two nodes
    at once, each write is answered (no `internal` from two nodes storing the same persona version) and no
    rulebook merge is lost (each node sets its own rule; both stay)."""
    b = f"ws://127.0.0.1:{(await team.node()).port}/"
    alices = [await team.person("alice"), await team.person("alice", url=b)]
    rules = ("style", "language")

    async def persona(k, i):
        r = await alices[k].request("set_persona", agent="researcher", text=f"Persona {k}.{i}: " + "exact " * 60)
        assert r["op"] == "set_persona" and r["changed"], r
        return r["version"]

    async def rule(k, i):
        r = await alices[k].request("set_rulebook", workspace=team.ws, conversation="general",
                                    rulebook={rules[k]: f"rule {k}.{i}"})
        assert r["op"] == "set_rulebook", r

    versions = []
    for i in range(8):
        versions += await asyncio.wait_for(asyncio.gather(persona(0, i), persona(1, i)), 20)
        await asyncio.wait_for(asyncio.gather(rule(0, i), rule(1, i)), 20)
        got = (await alices[0].request("get_rulebook", workspace=team.ws, conversation="general"))["set"]
        assert got == {"style": f"rule 0.{i}", "language": f"rule 1.{i}"}, "a merge was lost"
    assert sorted(versions) == list(range(1, 17)), "each write its own version"


async def _translators_pike_on_another_node(server):
    """The party's pike and nova both translators; pike connected to another node (B), seen online there:
    (workspace, conversation, alice's client, pike's client)."""
    from tests.net.test_party import setup_party

    ws, cid, alice, keys = await setup_party(server)
    for name in ("pike", "nova"):
        r = await alice.request("set_profile", agent=name, title="Translator", capabilities=["translation"])
        assert r["op"] == "set_profile", r
    pike = await server.client(f"ws://127.0.0.1:{(await server.node()).port}/", api_key=keys["pike"])
    await pike.request("ping")
    for _ in range(100):  # node B records pike's presence just after the ping's answer
        if (await alice.call("presence", workspace=ws))["online"].get(pike.me["id"]):
            break
        await asyncio.sleep(0.05)
    return ws, cid, alice, pike


async def test_assignment_on_one_node_sees_an_agent_online_and_loaded_through_another(server):
    """Seed 003 §14: "The highest score gets the task." On PostgreSQL the scoring has presence (from every live
    node), load, trust and response time, as on SQLite: pike, connected to node B, scores online for a send
    through node A, and once it holds an unacknowledged wake, a load-weighted ranking puts nova first."""
    ws, cid, alice, pike = await _translators_pike_on_another_node(server)

    async def ask(title):
        sent = await alice.send(workspace=ws, conversation=cid, topic="new", title=title, type="request",
                                to=["capability:translation"], text="translate this")
        assert sent["op"] == "sent", sent
        return sent["message"]["assignment"]

    a = await ask("First")
    online = {s["name"]: p["value"] for s in a["scores"] for p in s["parts"] if p["name"] == "online"}
    assert online == {"pike": 1.0, "nova": 0.0} and a["scores"][0]["name"] == "pike", a
    assert (await pike.next_delivery(timeout=10))["wake"]  # held, not acknowledged: pike's load is 1 now
    r = await alice.request("set_setting", workspace=ws, key="assign.weights", value={"online": 0, "load": 50})
    assert r["op"] == "set_setting", r
    assert (await ask("Second"))["scores"][0]["name"] == "nova"


async def test_explain_assignment_on_one_node_sees_an_agent_online_through_another(server):
    """docs/protocol.md, `explain_assignment`: who a request to the capability would go to now, with every score's
    parts. On PostgreSQL a send scores an agent connected to another live node online; explain_assignment counted
    this node's connections only, so it showed that agent offline and another one chosen than a send chooses."""
    ws, cid, alice, pike = await _translators_pike_on_another_node(server)
    ex = await alice.call("explain_assignment", workspace=ws, capability="translation", text="translate this")
    online = {s["name"]: p["value"] for s in ex["assignment"]["scores"] for p in s["parts"] if p["name"] == "online"}
    assert online == {"pike": 1.0, "nova": 0.0}, ex
    sent = await alice.send(workspace=ws, conversation=cid, topic="new", title="Job", type="request",
                            to=["capability:translation"], text="translate this")
    assert sent["message"]["assignment"]["chosen"] == ex["assignment"]["chosen"] == pike.me["id"]


async def test_assignment_on_one_node_scores_an_agent_silent_on_another_as_offline(server):
    """Issue 3: "an agent counts as offline after a few minutes of silence" (`presence_timeout`), in the scoring
    on PostgreSQL too (seed 003 §14's online part): pike is connected to node B and says nothing; node A, whose
    presence_timeout is 1 s here, shows it offline in `presence` and scores it offline, as on SQLite."""
    from tests.net.test_party import setup_party

    ws, cid, _, keys = await setup_party(server)
    scorer = await server.node(Limits(auth_timeout=5.0, presence_timeout=1.0))
    alice = await server.person("alice", url=f"ws://127.0.0.1:{scorer.port}/")
    for name in ("pike", "nova"):
        r = await alice.request("set_profile", agent=name, title="Translator", capabilities=["translation"])
        assert r["op"] == "set_profile", r
    pike = await server.client(api_key=keys["pike"])  # on node B (the fixture's), silent from here on
    await pike.request("ping")
    await asyncio.sleep(1.5)
    assert (await alice.call("presence", workspace=ws))["online"].get(pike.me["id"]) is False
    assert server.conn.execute("SELECT count(*) FROM presence WHERE participant = ?", (pike.me["id"],)).fetchone()[0]
    sent = await alice.send(workspace=ws, conversation=cid, topic="new", title="Job", type="request",
                            to=["capability:translation"], text="translate this")
    assert sent["op"] == "sent", sent
    scores = sent["message"]["assignment"]["scores"]
    online = {s["name"]: p["value"] for s in scores for p in s["parts"] if p["name"] == "online"}
    assert online == {"pike": 0.0, "nova": 0.0}, scores


async def test_a_batch_split_after_a_failure_keeps_an_authors_sends_in_order(server, pg_url):
    """ygg_server/writer/batch.py (`Batch.run`) and loop.py: "An author's later sends are left with its first one, so each
    participant's sends are still decided in the order they came". So too when a batch failed and is
    decided again one send at a time: a send left for a topic another node holds keeps its author's later
    sends behind it (each was decided alone, and the later one went first)."""
    store = server.gw.writer.store
    write, failed = store.write, []

    async def fail_once(outcome):
        if not failed and outcome.decisions:
            failed.append(True)
            raise RuntimeError("a batch that fails, to be split")
        return await write(outcome)

    try:
        await _sends_while_another_node_holds_a_topic(
            server, pg_url, before=lambda: setattr(store, "write", fail_once),
            while_held=lambda: failed or pytest.fail("the batch was not split"))
    finally:
        store.write = write


async def test_a_topic_event_from_another_node_reaches_every_follower_of_a_general_topic(server):
    """docs/protocol.md's topic events: a topic of General is seen by everyone following its workspace (a
    direct conversation's only by its members). Through another node too: node B, which never decided
    anything in the workspace, did not know its General and showed the topic to the topic's members only."""
    other = await server.node()
    server.admin(admin.add_person, "alice", PW)
    server.admin(admin.add_person, "bob", PW)
    ws = server.admin(admin.add_workspace, "team", "alice")["id"]
    server.admin(admin.add_member, ws, "bob")
    server.admin(admin.add_agent, "helper", "alice")
    bob = await server.person("bob", url=f"ws://127.0.0.1:{other.port}/")
    await bob.subscribe(ws)
    alice = await server.person("alice")  # on node A
    sent = await alice.send(workspace=ws, topic="new", title="Across", to=["helper"], type="request", text="hi")
    assert sent["op"] == "sent", sent
    while True:
        ev = await bob.next_event(timeout=10)
        if ev.get("kind") == "topic":
            break
    assert ev["topic"]["id"] == sent["message"]["topic"]


async def test_followers_on_another_node_are_told_of_the_workspace_s_groups(server):
    """docs/protocol.md's `groups`: a group made through node A, or by the operator, reaches a follower on node B."""
    other = await server.node()
    server.admin(admin.add_person, "alice", PW)
    ws = server.admin(admin.add_workspace, "team", "alice")["id"]
    helper = server.admin(admin.add_agent, "helper", "alice")["id"]
    follower = await server.person("alice", url=f"ws://127.0.0.1:{other.port}/")
    await follower.subscribe(ws)

    async def groups():
        while True:
            ev = await follower.next_event(timeout=10)
            if ev.get("kind") == "groups":
                return ev["groups"]

    made = await (await server.person("alice")).call("add_group", workspace=ws, name="crew", members=["helper"])
    assert made["op"] == "add_group", made
    assert await groups() == [{"name": "crew", "members": [helper]}]
    server.admin(admin.remove_group, ws, "crew")
    assert await groups() == []


async def test_followers_on_another_node_are_told_who_left_and_who_joined(server):
    """docs/protocol.md's `members`: every node rescans after a membership changes, so a follower connected to
    node B hears of someone leaving through node A, of an agent made there, and whose role or permissions
    changed (`changed`), wherever it was written."""
    other = await server.node()
    server.admin(admin.add_person, "alice", PW)
    server.admin(admin.add_person, "bob", PW)
    ws = server.admin(admin.add_workspace, "team", "alice")["id"]
    server.admin(admin.add_member, ws, "bob")
    alice = await server.person("alice", url=f"ws://127.0.0.1:{other.port}/")
    await alice.subscribe(ws)
    bob = await server.person("bob")  # on node A

    async def members():
        while True:
            ev = await alice.next_event(timeout=10)
            if ev.get("kind") == "members":
                return ev

    await bob.call("leave_workspace", workspace=ws)
    ev = await members()
    assert (ev["workspace"], ev["joined"], ev["left"]) == (ws, [], [bob.me["id"]])
    made = server.admin(admin.add_agent, "helper", "alice")  # by the operator (the admin CLI's connection)
    ev = await members()
    assert (ev["workspace"], ev["joined"], ev["left"]) == (ws, [made["id"]], [])
    assert "changed" not in ev, "no role or permission changed"
    await alice.call("set_permissions", workspace=ws, agent="helper", takes_from=["@alice"])  # through node B
    ev = await members()
    assert (ev["joined"], ev["left"], ev["changed"]) == ([], [], [made["id"]])
    other_bob = await server.person("bob")  # added back on node A, then made admin there: told on node B
    await alice.call("add_member", workspace=ws, handle="bob")
    invitation = (await other_bob.call("list_invitations"))["invitations"][0]["id"]  # (issue 18: he accepts)
    await other_bob.call("accept_invitation", invitation=invitation)
    assert (await members())["joined"] == [other_bob.me["id"]]
    await (await server.person("alice")).call("add_member", workspace=ws, handle="bob", role="admin")
    ev = await members()
    assert (ev["joined"], ev["left"], ev["changed"]) == ([], [], [other_bob.me["id"]])


def test_two_owners_leaving_at_once_through_two_connections_leave_one_owner(pg_url):
    """docs/protocol.md, `leave_workspace`: "its last owner cannot leave it (`last_owner`: delete it instead)";
    seed 003 §66: the owner keeps "deleting the workspace". On PostgreSQL two nodes (or a node and the admin CLI)
    judge leaves at once: while one owner's leave is written but not committed, the other's must wait for it and
    then be refused, not both see two owners and leave none."""
    import threading

    a, b = pg.connect_sync(pg_url), pg.connect_sync(pg_url)
    try:
        alice = admin.add_person(a, "alice", PW, now=now_us())["id"]
        admin.add_person(a, "carol", PW, now=now_us())
        ws = admin.add_workspace(a, "team", "alice", now=now_us())["id"]
        admin.add_member(a, ws, "carol", "owner", now=now_us())
        out: list = []

        def carol_leaves():
            try:
                out.append(admin.leave_workspace(b, ws, "carol"))
            except admin.AdminError as e:
                out.append(e.code)

        a.execute("BEGIN")  # alice's leave, judged and written on another connection, not committed yet
        a.execute("DELETE FROM memberships WHERE workspace = ? AND participant = ?", (ws, alice))
        t = threading.Thread(target=carol_leaves)
        t.start()
        t.join(0.5)
        a.execute("COMMIT")
        t.join(10)
        assert out == ["last_owner"], out
        owners = a.execute("SELECT participant FROM memberships WHERE workspace = ? AND role = 'owner'", (ws,)).fetchall()
        assert len(owners) == 1, "a workspace keeps an owner"
    finally:
        a.close()
        b.close()


class _HeldAtCommit:
    """A connection whose transaction stops just before its COMMIT until `go` is set: another node's
    transaction caught between its checks and its commit."""

    def __init__(self, conn):
        self.conn, self.at_commit, self.go = conn, threading.Event(), threading.Event()

    def __getattr__(self, name):
        return getattr(self.conn, name)

    def execute(self, sql, params=()):
        if sql.lstrip().upper().startswith("COMMIT"):
            self.at_commit.set()
            self.go.wait(10)
        return self.conn.execute(sql, params)


def _until_waiting_or_done(watcher, thread: threading.Thread, timeout: float = 10) -> None:
    """Until `thread` is done or some session of this database waits for a lock (the other's)."""
    end = time.monotonic() + timeout
    while thread.is_alive() and time.monotonic() < end:
        if watcher.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                           "AND wait_event_type = 'Lock'").fetchone()[0]:
            return
        time.sleep(0.02)


def _race(held: _HeldAtCommit, watcher, first, second) -> None:
    """`first` (on `held`) runs to its COMMIT and is held there; `second` starts, through another connection, and
    runs until it waits for a lock (or is done); then `first` commits and both finish."""
    a = threading.Thread(target=first)
    a.start()
    assert held.at_commit.wait(10)
    b = threading.Thread(target=second)
    b.start()
    _until_waiting_or_done(watcher, b)
    held.go.set()
    a.join(10)
    b.join(10)


def test_two_nodes_never_give_a_person_a_second_free_organization(pg_url):
    """Seed 002: "Each person gets one Free organization." Checked, then inserted: two create_org for one
    person through two nodes at once (two connections, READ COMMITTED) take turns, so the second sees the
    first one's organization and is refused free_org_limit."""
    a, b, watcher = pg.connect_sync(pg_url), pg.connect_sync(pg_url), pg.connect_sync(pg_url)
    try:
        carol = admin.add_person(a, "carol", PW, now=now_us())["id"]  # her own organization is on Team (the default)
        held, got = _HeldAtCommit(a), {}

        def create(conn, name):
            try:
                got[name] = admin.add_org(conn, name, "carol", "free", now=now_us())["plan"]
            except admin.AdminError as e:
                got[name] = e.code

        _race(held, watcher, lambda: create(held, "One"), lambda: create(b, "Two"))
        assert got == {"One": "free", "Two": "free_org_limit"}, got
        assert watcher.execute("SELECT count(*) FROM orgs WHERE owner = ? AND plan = 'free'", (carol,)).fetchone()[0] == 1
    finally:
        for c in (a, b, watcher):
            c.close()


def _left_of(conn, ws: str, message_ids: list[str]) -> dict[str, int]:
    """What remains of a deleted workspace: rows of its messages, their deliveries, its topics, conversations."""
    out = {t: conn.execute(f"SELECT count(*) FROM {t} WHERE workspace = ?", (ws,)).fetchone()[0]
           for t in ("messages", "topics", "conversations", "memberships")}
    out["deliveries"] = sum(conn.execute("SELECT count(*) FROM deliveries WHERE message = ?", (m,)).fetchone()[0]
                            for m in message_ids)
    return {k: n for k, n in out.items() if n}


async def _until_waiting_or_done_async(watcher, task, timeout: float = 10) -> None:
    end = time.monotonic() + timeout
    while not task.done() and time.monotonic() < end:
        if watcher.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                           "AND wait_event_type = 'Lock'").fetchone()[0]:
            return
        await asyncio.sleep(0.02)


async def test_a_workspace_deleted_while_a_batch_writes_in_it_leaves_nothing_behind(server, pg_url):
    """admin.delete_workspace: "Delete a workspace and everything in it". On PostgreSQL a batch of sends and the
    delete (another node's connection) may run at once, in either order: the delete waits for a batch that
    holds the workspace, and a batch that comes during a delete waits for it and is refused (the workspace is
    gone); either way no message, delivery or topic of the workspace is left behind."""
    server.admin(admin.add_person, "alice", PW)
    one = server.admin(admin.add_workspace, "one", "alice")["id"]
    two = server.admin(admin.add_workspace, "two", "alice")["id"]
    server.admin(admin.add_agent, "helper", "alice")
    alice = await server.person("alice")

    async def before(ws):
        return (await alice.send(workspace=ws, topic="new", title="Before", to=["helper"], text="0"))["message"]["id"]

    sent = [await before(one)]
    other, watcher = pg.connect_sync(pg_url), pg.connect_sync(pg_url)
    store = server.gw.writer.store
    write = store.write
    loaded, release = asyncio.Event(), asyncio.Event()

    async def held_write(outcome):  # the batch, its rows loaded and locked, waits here before writing
        if outcome.decisions and not release.is_set():
            loaded.set()
            await release.wait()
        return await write(outcome)

    try:
        # the batch first: it holds workspace one while the delete starts
        store.write = held_write
        send = asyncio.ensure_future(alice.send(workspace=one, topic="new", title="During", to=["helper"], text="1"))
        await asyncio.wait_for(loaded.wait(), 10)
        delete = asyncio.ensure_future(asyncio.to_thread(admin.delete_workspace, other, one))
        await _until_waiting_or_done_async(watcher, delete)
        release.set()
        reply = await asyncio.wait_for(send, 10)
        assert reply["op"] == "sent", reply
        assert (await asyncio.wait_for(delete, 10))["deleted"]
        assert _left_of(watcher, one, [sent[0], reply["message"]["id"]]) == {}
        store.write = write

        # the delete first: a batch in workspace two comes while it is not yet committed (this node has seen
        # every change before it: the version the batch reads first is not the delete's)
        sent.append(await before(two))
        held = _HeldAtCommit(other)
        delete = asyncio.ensure_future(asyncio.to_thread(admin.delete_workspace, held, two))
        assert await asyncio.to_thread(held.at_commit.wait, 10)
        send = asyncio.ensure_future(alice.send(workspace=two, topic="new", title="During", to=["helper"], text="2"))
        await _until_waiting_or_done_async(watcher, send)
        held.go.set()
        assert (await asyncio.wait_for(delete, 10))["deleted"]
        reply = await asyncio.wait_for(send, 10)
        assert reply["op"] == "refused" and reply["reason"] == "unknown_workspace", reply
        assert _left_of(watcher, two, [sent[1]]) == {}
    finally:
        store.write = write
        release.set()
        other.close()
        watcher.close()


async def test_a_funding_during_a_workspace_delete_waits_for_it_and_leaves_nothing_behind(server, pg_url):
    """admin.delete_workspace: "Delete a workspace and everything in it". Funding a workspace's pool on
    PostgreSQL is its own transaction: one that comes while another node deletes the workspace waits for the
    delete and is refused (the workspace is gone), leaving no wallet or ledger row of it behind."""
    server.admin(admin.add_person, "alice", PW)
    ws = server.admin(admin.add_workspace, "gone", "alice")["id"]
    alice = await server.person("alice")
    assert (await alice.request("fund", workspace=ws, pool=True, amount=5))["op"] == "funded"
    other, watcher = pg.connect_sync(pg_url), pg.connect_sync(pg_url)
    try:
        held = _HeldAtCommit(other)
        delete = asyncio.ensure_future(asyncio.to_thread(admin.delete_workspace, held, ws))
        assert await asyncio.to_thread(held.at_commit.wait, 10)
        fund = asyncio.ensure_future(alice.request("fund", workspace=ws, pool=True, amount=7))
        await _until_waiting_or_done_async(watcher, fund)
        held.go.set()
        assert (await asyncio.wait_for(delete, 10))["deleted"]
        reply = await asyncio.wait_for(fund, 10)
        assert reply["op"] == "refused" and reply["reason"] == "unknown_workspace", reply
        left = {t: watcher.execute(f"SELECT count(*) FROM {t} WHERE workspace = ?", (ws,)).fetchone()[0]
                for t in ("wallets", "ledger")}
        assert left == {"wallets": 0, "ledger": 0}, left
    finally:
        held.go.set()
        other.close()
        watcher.close()


def test_a_join_while_another_node_restricts_the_workspace_waits_and_is_refused(pg_url):
    """docs/protocol.md, `join_workspace`: "a restricted one only as an organization owner or admin"; seed 002:
    "A restricted workspace is open only to the organization's admins and the people added to it directly". A
    restriction judged and written through one node, not committed yet, while bob joins through another: his
    join waits for it and is refused, rather than slip in a row the restriction's sweep never saw."""
    a, b, watcher = pg.connect_sync(pg_url), pg.connect_sync(pg_url), pg.connect_sync(pg_url)
    try:
        admin.add_person(a, "alice", PW, now=now_us())
        bob = admin.add_person(a, "bob", PW, now=now_us())["id"]
        ws = admin.add_workspace(a, "team", "alice", now=now_us())["id"]
        org = a.execute("SELECT org FROM workspaces WHERE id = ?", (ws,)).fetchone()[0]
        admin.add_org_member(a, org, "bob", now=now_us())
        admin.leave_workspace(a, ws, "bob")
        held, got = _HeldAtCommit(a), {}

        def restrict():
            got["restrict"] = admin.set_restricted(held, ws, True, now=now_us())["restricted"]

        def join():
            try:
                got["join"] = admin.join_workspace(b, ws, "bob", now=now_us())["joined"]
            except admin.AdminError as e:
                got["join"] = e.code

        _race(held, watcher, restrict, join)
        assert got == {"restrict": True, "join": "unknown_workspace"}, got
        assert watcher.execute("SELECT count(*) FROM memberships WHERE workspace = ? AND participant = ?",
                               (ws, bob)).fetchone()[0] == 0, "bob is not in the restricted workspace"
    finally:
        for c in (a, b, watcher):
            c.close()


@pytest.mark.parametrize("op", ["add_member", "add_group", "add_org_member", "add_agent"])
def test_a_write_into_a_workspace_another_node_is_deleting_leaves_nothing_of_it(pg_url, op):
    """admin.delete_workspace: "Delete a workspace and everything in it". A management op that writes rows into a
    workspace (a membership, a group, the organization's members, an agent following its owner) through another
    node while the delete is written but not committed found the workspace's row (the delete not committed yet)
    and wrote beside it: a membership or group of a deleted workspace, with which that person could still list its
    members, follow it and open conversations in it. It now waits for the delete and finds the workspace gone."""
    a, b, watcher = pg.connect_sync(pg_url), pg.connect_sync(pg_url), pg.connect_sync(pg_url)
    try:
        admin.add_person(a, "alice", PW, now=now_us())
        admin.add_person(a, "carol", PW, now=now_us())
        ws = admin.add_workspace(a, "team", "alice", now=now_us())["id"]
        org = a.execute("SELECT org FROM workspaces WHERE id = ?", (ws,)).fetchone()[0]
        held, got = _HeldAtCommit(a), {}
        writes = {"add_member": lambda: admin.add_member(b, ws, "carol", now=now_us()),
                  "add_group": lambda: admin.add_group(b, ws, "pair", ["@alice"]),
                  "add_org_member": lambda: admin.add_org_member(b, org, "carol", now=now_us()),
                  "add_agent": lambda: admin.add_agent(b, "scout", "alice", now=now_us())}

        def delete():
            got["delete"] = admin.delete_workspace(held, ws)["deleted"]

        def write():
            try:
                got[op] = writes[op]()
            except admin.AdminError as e:
                got[op] = e.code

        _race(held, watcher, delete, write)
        assert got["delete"] is True, got
        if op in ("add_member", "add_group"):
            assert got[op] == "unknown_workspace", got
        left = {t: watcher.execute(f"SELECT count(*) FROM {t} WHERE workspace = ?", (ws,)).fetchone()[0]
                for t in ("memberships", "groups")}
        assert left == {"memberships": 0, "groups": 0}, (left, got)
    finally:
        for c in (a, b, watcher):
            c.close()
