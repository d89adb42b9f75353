"""The Store port's contract, each method on both adapters (store/port.py; docs/architecture.md, "The Store port and
its adapters"): what `catalog`, `load`, `confirm` and `write` promise the writer, whatever the store.

The adapters are driven here as the writer drives them (`writer/loop.py`), one step at a time, with real rows made
through the admin connection.
"""

from __future__ import annotations

import pytest

from ygg_server import compose
from ygg_server.core import POOL
from ygg_server.ops import admin
from ygg_server.protocol import frames
from ygg_server.protocol.results import Sent
from ygg_server.store.port import EMPTY
from ygg_server.writer import plan
from ygg_server.writer.batch import Batch
from ygg_server.writer.commands import Command
from ygg_server.writer.loop import month_of
from ygg_server.clock import now_us

from tests.backends import PW, admin_connection

pytestmark = pytest.mark.backends("sqlite", "postgres")


@pytest.fixture
async def world(backend, database):
    runner = compose.on_postgres(database) if backend == "postgres" else compose.on_sqlite(database)
    if backend == "postgres":
        await runner.open()
    conn = admin_connection(backend, database)
    admin.add_person(conn, "alice", PW, now=now_us())
    ws = admin.add_workspace(conn, "team", "alice", now=now_us())["id"]
    bot = admin.add_agent(conn, "bot", "alice", now=now_us())["id"]
    admin.fund(conn, "bot", 100, now=now_us())
    try:
        yield runner.store, conn, ws, bot
    finally:
        conn.close()
        if backend == "postgres":
            await runner.aclose()
        else:
            runner.stop()


def _send(author: str, ws: str, **f) -> Command:
    return Command("send", (author, frames.Send(workspace=ws, title="T", type="request", **f)))


async def _load(tx, cmds):
    """Catalog and load, planned again while the store says what the plan read moved (PostgreSQL: meta.config)."""
    for _ in range(3):
        snap = await tx.catalog(plan.workspaces(cmds))
        if await tx.load(plan.keys(cmds, snap, month_of(now_us()))):
            return snap
    raise AssertionError("the catalog kept moving")


async def _decide(store, cmds):
    """One batch's steps, as the writer takes them, in one transaction; what the batch decided."""
    now = now_us()
    async with store.batch() as tx:
        snap = await _load(tx, cmds)
        outcome = Batch(snap, now, month_of(now)).run(cmds)
        assert not await tx.confirm(outcome)
        await tx.write(outcome)
    store.committed(outcome)
    return snap, outcome


async def test_catalog_holds_a_members_workspace_and_nothing_for_a_made_up_id(world):
    store, conn, ws, bot = world
    async with store.batch() as tx:
        snap = await tx.catalog({ws, "made-up"})
    assert bot in snap.directory(ws).memberships
    assert snap.directory("made-up") is EMPTY and "made-up" not in snap.directories


async def test_load_brings_every_row_the_plan_names(world):
    store, conn, ws, bot = world
    _, first = await _decide(store, [_send(bot, ws, topic="new", to=["@alice"], text="open", client_id="c1")])
    topic = first.topics[0].id
    cmds = [_send(bot, ws, topic=topic, to=["@alice"], text="again", client_id="c1"),
            _send(bot, ws, topic="new", to=["@alice"], text="another")]
    async with store.batch() as tx:
        snap = await _load(tx, cmds)
    st = snap.state
    assert st.topics[topic].id == topic and st.wallets[(ws, bot)] == 100 - 1 and ws in st.pools
    assert st.opened[bot] == 1, "the topic it opened is counted"
    assert (bot, "c1") in snap.idem, "the stored answer of a client_id"


async def test_write_stores_what_the_batch_decided_and_commits_with_the_block(world):
    store, conn, ws, bot = world
    alice = conn.execute("SELECT id FROM people WHERE handle = 'alice'").fetchone()[0]
    _, outcome = await _decide(store, [_send(alice, ws, topic="new", to=["bot"], text="stored")])
    assert [d.message.text for d in outcome.deliveries] == ["stored"] and all(d.id > 0 for d in outcome.deliveries)
    assert conn.execute("SELECT count(*) FROM deliveries WHERE recipient = ?", (bot,)).fetchone()[0] == 1
    assert [m.text for m in outcome.messages] == ["stored"], "every message stored, for monitors"


async def test_an_error_inside_the_batch_rolls_everything_back(world):
    store, conn, ws, bot = world
    cmds = [_send(bot, ws, topic="new", to=["@alice"], text="never")]
    with pytest.raises(RuntimeError):
        async with store.batch() as tx:
            snap = await _load(tx, cmds)
            await tx.write(Batch(snap, now_us(), month_of(now_us())).run(cmds))
            raise RuntimeError("after the write, before the COMMIT")
    store.failed()
    assert conn.execute("SELECT count(*) FROM messages WHERE text = 'never'").fetchone()[0] == 0
    _, again = await _decide(store, cmds)
    assert type(again.answers[0]) is Sent, "what the failed batch moved in memory was dropped"


async def test_confirm_asks_for_the_batch_again_only_when_a_charged_pool_moved_meanwhile(world, backend):
    """PostgreSQL reads a pool unlocked and locks it only when a decision charges it (and then compares); SQLite has
    one writer, so nothing it read can move under it."""
    store, conn, ws, bot = world
    conn.execute("DELETE FROM wallets WHERE account = ?", (bot,))  # no wallet: the agent pays from the pool
    admin.fund(conn, None, 10, pool_ws=ws, now=now_us())
    cmds = [_send(bot, ws, topic="new", to=["@alice"], text="from the pool")]
    async with store.batch() as tx:
        snap = await _load(tx, cmds)
        outcome = Batch(snap, now_us(), month_of(now_us())).run(cmds)
        assert type(outcome.answers[0]) is Sent and outcome.pools_charged == {ws}, outcome.answers
        other = admin_connection(backend, store.url if backend == "postgres" else store.path)
        if backend == "postgres":  # another node's funding commits between the load and the confirm
            admin.fund(other, None, 5, pool_ws=ws, now=now_us())
        other.close()
        moved = await tx.confirm(outcome)
        assert moved is (backend == "postgres")
        if moved:
            assert snap.state.pools[ws] == 15, "decided again from the pool as it is now"
            assert not await tx.confirm(Batch(snap, now_us(), month_of(now_us())).run(cmds)), "locked now"
