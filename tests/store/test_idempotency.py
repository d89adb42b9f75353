"""A send's `client_id` is remembered for a week, then forgotten by a sweep; a deleted workspace's answers go with
it (docs/protocol.md, "Sending": `client_id`), on both stores."""

from __future__ import annotations

import asyncio
import time

import msgspec
import pytest

from ygg_server.ops import admin
from ygg_server import idempotency, protocol

from tests.backends import PW, start_server, stop_server

pytestmark = pytest.mark.backends("sqlite", "postgres")

DAY = 24 * 3600 * 1_000_000


async def rows(s, sql: str = "SELECT client_id FROM idempotency ORDER BY client_id") -> list:
    return [r[0] for r in s.conn.execute(sql).fetchall()]


async def until(pred, what: str, timeout: float = 15.0):
    deadline = time.monotonic() + timeout
    while not (got := await pred()):
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.05)
    return got


@pytest.fixture
async def clocked(backend, database):
    """A server whose writer's clock the test moves on (`s.later(us)`); alice owns workspaces team and lab."""
    offset = [0]
    s = await start_server(backend, database, clock=lambda: time.time_ns() // 1000 + offset[0])
    s.later = lambda us: offset.__setitem__(0, offset[0] + us)
    s.admin(admin.add_person, "alice", PW)
    s.ws = s.admin(admin.add_workspace, "team", "alice")["id"]
    s.lab = s.admin(admin.add_workspace, "lab", "alice")["id"]
    yield s
    await stop_server(s)


async def test_answers_older_than_the_window_are_swept_oldest_first_in_chunks(clocked):
    """Every send of the TUI and the agent bridge has a client_id, so its answer was stored twice, for good. An
    answer is replayed for a week (the bridge resends after a restart however long); older ones are deleted a
    chunk at a time (a backlog of several chunks goes too), and the same client_id is then a new send."""
    s = clocked
    for i in range(idempotency.CHUNK * 2 + 5):  # written long ago
        s.conn.execute("INSERT INTO idempotency (participant, client_id, reply, created_at) VALUES (?, ?, ?, 0)",
                       ("human.x", f"backlog-{i:04}", b"{}"))
    alice = await s.person("alice")
    first = await alice.send(workspace=s.ws, topic="new", title="Old", text="old", client_id="old")
    s.later(idempotency.EVERY_US)
    await until(lambda: _only(s, ["old"]), "the backlog swept")
    s.later(6 * DAY)
    kept = await alice.send(workspace=s.ws, topic="new", title="Kept", text="kept", client_id="kept")
    assert (await alice.send(workspace=s.ws, topic="new", title="Old", text="old", client_id="old"))["duplicate"]
    s.later(DAY + 1_000_000)  # "old" is a week and a second old; "kept" a day

    await until(lambda: _only(s, ["kept"]), "the week-old answer swept")
    again = await alice.send(workspace=s.ws, topic="new", title="Old", text="old", client_id="old")
    assert "duplicate" not in again and again["message"]["id"] != first["message"]["id"], "a new send now"
    dup = await alice.send(workspace=s.ws, topic="new", title="Kept", text="kept", client_id="kept")
    assert dup["duplicate"] and dup["message"]["id"] == kept["message"]["id"], "within the week: replayed"


def test_a_sqlite_sweep_reads_one_chunk_by_rowid(tmp_path):
    """The writer's sweep never stalls it: it deletes from the CHUNK rows written first (by rowid, no index
    needed), so a backlog goes in chunks, and rows not old enough stop it."""
    from ygg_server.store import sqlite as db

    conn = db.connect(db.db_path(tmp_path))
    put = "INSERT INTO idempotency (participant, client_id, reply, created_at) VALUES ('p', ?, x'7b7d', ?)"
    for i in range(idempotency.CHUNK * 2 + 5):
        conn.execute(put, (f"old-{i}", 0))
    conn.execute(put, ("new", 10 * DAY))
    now = 10 * DAY
    assert [idempotency.sweep_sqlite(conn, now) for _ in range(4)] == [idempotency.CHUNK, idempotency.CHUNK, 5, 0]
    assert conn.execute("SELECT client_id FROM idempotency").fetchall() == [("new",)]
    assert idempotency.next_sweep(now, idempotency.CHUNK) == now + idempotency.AGAIN_US
    assert idempotency.next_sweep(now, 5) == now + idempotency.EVERY_US
    conn.close()


async def _only(s, ids: list[str]) -> bool:
    return await rows(s) == ids


async def test_a_deleted_workspace_takes_the_answers_that_replay_its_messages(clocked):
    """Seed 003 §66: the owner keeps "deleting the workspace", and with it everything in it. The stored answer
    to a send there kept the message's text, and the same client_id was answered with it after the delete."""
    s = clocked
    alice = await s.person("alice")
    await alice.send(workspace=s.lab, topic="new", title="Secret", text="the lab's secret", client_id="in-lab")
    await alice.send(workspace=s.ws, topic="new", title="Plain", text="plain", client_id="in-team")
    assert await rows(s) == ["in-lab", "in-team"]
    await alice.call("delete_workspace", workspace=s.lab)
    assert await rows(s) == ["in-team"]
    r = await alice.request("send", workspace=s.lab, topic="new", title="Secret", text="again", client_id="in-lab")
    assert (r["op"], r.get("reason")) == ("refused", "unknown_workspace"), r
    dup = await alice.send(workspace=s.ws, topic="new", title="Plain", text="plain", client_id="in-team")
    assert dup["duplicate"], "another workspace's answers stay"


@pytest.mark.backends("postgres")
async def test_one_postgresql_node_sweeps_at_a_time(clocked):
    """On PostgreSQL every node's writer would sweep; a node that finds the sweep's lock held leaves it to the
    one holding it (the lock is held here, as by another node mid-sweep), and sweeps when it is free."""
    from ygg_server.store import postgres as pg

    s = clocked
    other = await pg.connect(*pg.parse_dsn(s.database))
    try:
        tx = other.transaction()
        await tx.start()  # (the lock waited for, in case this node's first sweep holds it now)
        await other.execute(idempotency.SWEEP_LOCK.replace("pg_try_advisory_xact_lock", "pg_advisory_xact_lock"))
        s.conn.execute("INSERT INTO idempotency (participant, client_id, reply, created_at) VALUES (?, ?, ?, 0)",
                       ("human.x", "c", b"{}"))
        s.later(idempotency.EVERY_US + 1)
        await asyncio.sleep(2.5)  # (the writer looks once a timer_interval, a second)
        assert await rows(s) == ["c"], "left to the node holding the lock"
        await tx.rollback()
    finally:
        await other.close()
    s.later(idempotency.EVERY_US + 1)
    await until(lambda: _only(s, []), "swept once the lock is free")


def _old_row(answer: dict) -> bytes:
    """A row as the writer kept it before it answered with typed results: the `sent` reply's JSON, without its ref."""
    return msgspec.json.encode({k: v for k, v in answer.items() if k != "ref"})


async def test_a_kept_answer_replays_the_first_answer_with_the_new_ref_and_duplicate_after_it(clocked):
    """docs/protocol.md: "a repeated `client_id` from the same participant returns the first answer with
    `"duplicate": true`": the same fields as the first, in the same order, then the new `ref` and `duplicate`
    (what is kept now is the typed result, not the reply: the frame is the same)."""
    s = clocked
    alice = await s.person("alice")
    first = await alice.request("send", workspace=s.ws, topic="new", title="Once", text="once", client_id="c")
    dup = await alice.request("send", workspace=s.ws, topic="new", title="Once", text="once", client_id="c")
    assert list(first) == ["op", "ref", "message", "deliveries", "cost"], first
    assert list(dup) == ["op", "message", "deliveries", "cost", "ref", "duplicate"], dup
    assert {**dup, "ref": first["ref"]} == {**first, "duplicate": True} and dup["ref"] != first["ref"]
    (kept,) = [r for (r,) in s.conn.execute("SELECT reply FROM idempotency WHERE client_id = 'c'").fetchall()]
    assert not bytes(kept).startswith(b"{"), "the typed result is kept, not the wire reply"


async def test_rows_kept_as_wire_replies_before_still_replay_and_go_with_their_workspace(clocked):
    """Rows written before answers were kept typed (the `sent` reply's JSON) replay as they did, and a deleted
    workspace still takes those that replay its messages (idempotency.forget_workspace reads both forms)."""
    s = clocked
    alice = await s.person("alice")
    now = time.time_ns() // 1000
    old = {}
    for ws, cid in ((s.ws, "old-team"), (s.lab, "old-lab")):
        first = await alice.request("send", workspace=ws, topic="new", title="Old", text=cid)
        old[cid] = first
        s.conn.execute("INSERT INTO idempotency (participant, client_id, reply, created_at) VALUES (?, ?, ?, ?)",
                       (first["message"]["author"], cid, _old_row(first), now))
    dup = await alice.request("send", workspace=s.ws, topic="new", title="Old", text="again", client_id="old-team")
    assert protocol.encode(dup) == protocol.encode({**_row(old["old-team"]), "ref": dup["ref"], "duplicate": True})
    await alice.send(workspace=s.lab, topic="new", title="New", text="typed", client_id="new-lab")
    assert await rows(s) == ["new-lab", "old-lab", "old-team"]
    await alice.call("delete_workspace", workspace=s.lab)
    assert await rows(s) == ["old-team"], "both forms of the lab's rows went; the team's stayed"


def _row(answer: dict) -> dict:
    return msgspec.json.decode(_old_row(answer))
