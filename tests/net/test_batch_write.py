"""The writer writes a batch's decisions together (store/writeset.py, store/sqlite.write).

Each test hands the writer one batch directly (`ThreadRunner.tick`), so the commands are known to
share a transaction, and then checks the database against what the callers were answered.
"""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from ygg_server.clock import now_us
from ygg_server.ops import admin
from ygg_server.compose import on_sqlite
from ygg_server.writer import Published
from ygg_server.writer.commands import Command
from ygg_server.store import rows as codec, sqlite as db
from ygg_server.protocol import frames

from tests.writer import decide_fails_on, rendered

from .conftest import migrated_before



@pytest.fixture
def world(tmp_path):
    path = db.db_path(tmp_path)
    conn = db.connect(path)
    admin.add_person(conn, "alice", "pw-" + "x" * 8, now=now_us())
    ws = admin.add_workspace(conn, "team", "alice", now=now_us())["id"]
    ids = {}
    for name in ("researcher", "reviewer"):
        ids[name] = admin.add_agent(conn, name, "alice", ws, now=now_us())["id"]
        admin.fund(conn, name, 1000, now=now_us())
    conn.close()
    writer = on_sqlite(path)
    yield writer, ws, ids, path
    writer.stop()


async def run_batch(writer, *commands: tuple) -> tuple[list, list[Published]]:
    """Run `commands` as one batch; return each caller's answer (or exception) and what was published."""
    loop = asyncio.get_running_loop()
    published: list[Published] = []
    batch = [Command(kind, args, None, loop) for kind, *args in commands]
    results, _, out = writer.tick(batch)
    if out is not None:
        published.append(out)
    answers = [error if error is not None else rendered(cmd, result) for cmd, result, error in results]
    return answers, published


def send(ws: str, author: str, **frame) -> tuple:
    return ("send", author, frames.Send(workspace=ws, conversation="general", **frame))


def rows(path, sql: str, *args) -> list[tuple]:
    c = sqlite3.connect(path)
    try:
        return c.execute(sql, args).fetchall()
    finally:
        c.close()


async def test_a_topic_changed_twice_in_a_batch_is_stored_in_its_last_state_with_every_delivery(world):
    writer, ws, ids, path = world
    (opened,), _ = await run_batch(writer, send(ws, ids["researcher"], topic="new", title="T", to=["reviewer"],
                                                text="first", type="request"))
    topic = opened["message"]["topic"]
    answers, published = await run_batch(
        writer,
        send(ws, ids["reviewer"], topic=topic, to=["researcher"], text="answer", type="response",
             in_reply_to=opened["message"]["id"]),
        send(ws, ids["researcher"], topic=topic, to=["reviewer"], text="again", type="request"),
    )
    assert [a["op"] for a in answers] == ["sent", "sent"]
    (state,) = rows(path, "SELECT state FROM topics WHERE id = ?", topic)[0]
    assert codec.decode_topic(state) == writer.store.snap.state.topics[topic]
    assert len(writer.store.snap.state.topics[topic].recent) >= 3, "the stored state has every message of the batch"
    stored = {(i, m, r) for i, m, r in rows(path, "SELECT id, message, recipient FROM deliveries")}
    out = [(s.id, s.message.id, s.recipient) for p in published for s in p.deliveries]
    assert out and set(out) <= stored, "every delivery published carries the id its row has"
    assert len(out) == len({i for i, _, _ in out})
    sent_to = {(a["message"]["id"], d["to"]) for a in answers for d in a["deliveries"]}
    assert sent_to == {(m, r) for _, m, r in out}
    (balance,) = rows(path, "SELECT balance FROM wallets WHERE account = ?", ids["researcher"])[0]
    assert balance == writer.store.snap.state.wallets[(ws, ids["researcher"])] == 1000 - 2


async def test_one_client_id_twice_in_one_batch_is_one_message(world):
    writer, ws, ids, path = world
    frame = dict(topic="new", title="T", to=["reviewer"], text="once", type="request", client_id="c-1")
    (first, second), _ = await run_batch(writer, send(ws, ids["researcher"], **frame),
                                         send(ws, ids["researcher"], **frame))
    assert first["op"] == second["op"] == "sent"
    assert second["duplicate"] is True and second["message"]["id"] == first["message"]["id"]
    assert rows(path, "SELECT count(*) FROM messages WHERE text = 'once'") == [(1,)]
    (third,), _ = await run_batch(writer, send(ws, ids["researcher"], **frame))
    assert third["duplicate"] is True and third["message"]["id"] == first["message"]["id"]


async def test_a_failing_command_undoes_itself_alone(world):
    writer, ws, ids, path = world
    answers, published = await run_batch(
        writer,
        send(ws, ids["researcher"], topic="new", title="A", to=["reviewer"], text="before", type="request"),
        ("send", ids["researcher"], "not a frame"),
        send(ws, ids["reviewer"], topic="new", title="B", to=["researcher"], text="after", type="request"),
    )
    assert answers[0]["op"] == "sent" and answers[2]["op"] == "sent"
    assert isinstance(answers[1], Exception)
    assert sorted(t for (t,) in rows(path, "SELECT text FROM messages")) == ["after", "before"]
    assert {s.message.text for p in published for s in p.deliveries} == {"before", "after"}
    assert rows(path, "SELECT count(*) FROM deliveries") == [(sum(len(p.deliveries) for p in published),)]
    (balance,) = rows(path, "SELECT balance FROM wallets WHERE account = ?", ids["researcher"])[0]
    assert balance == 999 and writer.store.snap.state.wallets.get((ws, ids["researcher"]), 999) == 999  # (if held)


async def test_topics_an_agent_opened_count_at_once_toward_its_topic_limit(world):
    """Seed 000: "An agent may hold at most 3 topics it opened at a time."

    The running writer counts the topics it opened itself, whether they were opened in earlier batches
    or earlier in the same batch."""
    writer, ws, ids, path = world
    opening = lambda i: send(ws, ids["researcher"], topic="new", title=f"T{i}", to=["reviewer"], text=f"t{i}")  # noqa: E731
    (first,), _ = await run_batch(writer, opening(0))
    answers, _ = await run_batch(writer, opening(1), opening(2), opening(3))
    assert [a["op"] for a in [first, *answers]] == ["sent", "sent", "sent", "refused"]
    assert answers[-1]["reason"] == "topic_limit"
    (later,), _ = await run_batch(writer, opening(4))
    assert later["reason"] == "topic_limit"


async def test_a_failing_send_keeps_the_deliveries_written_before_it(world, monkeypatch):
    """A send whose deciding fails is answered with its error and the batch is decided again without it: the
    decisions before it stand, and their deliveries are published with the batch."""
    writer, ws, ids, path = world
    decide_fails_on(monkeypatch, "boom")
    answers, published = await run_batch(
        writer,
        send(ws, ids["researcher"], topic="new", title="A", to=["reviewer"], text="before", type="request"),
        # the reviewer's caches are cold: building its view writes what is pending, then the send fails
        send(ws, ids["reviewer"], topic="new", title="B", to=["researcher"], text="boom", type="request"),
    )
    assert answers[0]["op"] == "sent" and isinstance(answers[1], Exception)
    stored = {(i, r) for i, r in rows(path, "SELECT id, recipient FROM deliveries")}
    out = {(s.id, s.recipient) for p in published for s in p.deliveries}
    assert stored and out == stored, "every delivery written is published"
    assert [m.text for p in published for m in p.messages] == ["before"]


async def test_the_wal_is_copied_back_beside_the_writer_not_inside_its_commits(world):
    """store/sqlite.Checkpointer: the writer's COMMIT never checkpoints; a thread of its own does, as the WAL grows."""
    writer, ws, ids, path = world
    assert writer.store.conn.execute("PRAGMA wal_autocheckpoint").fetchone() == (0,)
    (r,), _ = await run_batch(writer, send(ws, ids["researcher"], topic="new", title="T", to=["reviewer"],
                                          text="x", type="inform"))
    for i in range(20):
        (r,), _ = await run_batch(writer, send(ws, ids["researcher"], topic=r["message"]["topic"], to=["reviewer"],
                                              text="x" * 3000, type="inform"))
        assert r["op"] == "sent", r
    for _ in range(100):
        last = writer.store._checkpoints.last
        if last is not None and last[1] > 0 and last[1] == last[2]:
            break
        await asyncio.sleep(0.05)
    assert last is not None and last[0] == 0 and last[1] > 0 and last[1] == last[2], last


async def test_a_batchs_acks_are_one_statement_and_each_answer_lists_what_it_retired(world):
    """Acks of one batch retire their deliveries in one UPDATE (db.ack): each answer still lists only the
    ids it retired, in the order asked and once each; only the recipient's own unacked rows."""
    writer, ws, ids, path = world
    (a, b), _ = await run_batch(
        writer,
        send(ws, ids["researcher"], topic="new", title="A", to=["reviewer"], text="one", type="request"),
        send(ws, ids["reviewer"], topic="new", title="B", to=["researcher"], text="two", type="request"),
    )
    to_reviewer = [i for (i,) in rows(path, "SELECT id FROM deliveries WHERE recipient = ?", ids["reviewer"])]
    to_researcher = [i for (i,) in rows(path, "SELECT id FROM deliveries WHERE recipient = ?", ids["researcher"])]
    assert to_reviewer and to_researcher
    x, y = to_reviewer[0], to_researcher[0]
    statements: list[str] = []
    writer.store.conn.set_trace_callback(statements.append)
    try:
        answers, _ = await run_batch(
            writer,
            ("ack", ids["reviewer"], [y, x, x, 10**9], "r1"),  # the researcher's delivery: not the reviewer's to ack
            ("ack", ids["reviewer"], [x], "r2"),  # already retired by the ack before it in the batch
            ("ack", ids["researcher"], [y], "r3"),
        )
    finally:
        writer.store.conn.set_trace_callback(None)
    assert answers == [{"op": "acked", "ref": "r1", "ids": [x]}, {"op": "acked", "ref": "r2", "ids": []},
                       {"op": "acked", "ref": "r3", "ids": [y]}]
    assert len([s for s in statements if s.lstrip().startswith("UPDATE deliveries")]) == 1
    assert rows(path, "SELECT count(*) FROM deliveries WHERE id IN (?, ?) AND acked_at IS NOT NULL", x, y) == [(2,)]
    (again,), _ = await run_batch(writer, ("ack", ids["researcher"], [y], "r4"))
    assert again["ids"] == []


async def test_each_delivery_of_a_batch_points_at_its_messages_seq(world):
    """Migration 8: a delivery finds its message by seq (the index history's "woke" uses): in a batch of
    several messages, each delivery's message_seq is the seq its own message's row got."""
    writer, ws, ids, path = world
    await run_batch(writer, *(send(ws, ids["researcher" if i % 2 else "reviewer"], topic="new", title=f"T{i}",
                                   to=["reviewer" if i % 2 else "researcher"], text=f"m{i}", type="request")
                              for i in range(6)))
    pairs = rows(path, "SELECT d.message_seq, m.seq FROM deliveries d JOIN messages m ON m.id = d.message")
    assert len(pairs) >= 6 and all(a == b for a, b in pairs), pairs


def test_deliveries_stored_before_migration_8_get_their_messages_seq(tmp_path):
    path = db.db_path(tmp_path)
    c = migrated_before(path, "message_seq")
    for i in range(3):  # seqs 10, 17, 24; deliveries in another order (a seq never equals a delivery's id)
        c.execute("""INSERT INTO messages (seq, id, workspace, conversation, topic, author, type, text, body, created_at)
                     VALUES (?, ?, 'ws', 'c', NULL, 'a', 'inform', 'x', x'', 0)""", (10 + 7 * i, f"m{i}"))
    for i in (2, 0, 2, 1):
        c.execute("INSERT INTO deliveries (message, recipient, wake) VALUES (?, 'r', 1)", (f"m{i}",))
    c.close()
    db.connect(path).close()
    assert rows(path, "SELECT message, message_seq FROM deliveries ORDER BY id") == \
        [("m2", 24), ("m0", 10), ("m2", 24), ("m1", 17)]
    assert rows(path, "SELECT count(*) FROM sqlite_master WHERE name = 'deliveries_message'") == [(0,)]


def test_topics_stored_before_migration_9_that_wait_for_funds_are_marked(tmp_path):
    """Migration 9 marks the rows the old scan found (paused, or open with agents still unfunded), so a funding
    after the upgrade still finds them; the others stay unmarked."""
    path = db.db_path(tmp_path)
    c = migrated_before(path, "waits_funds")
    for tid, status, state in (("paused", "paused", '{"paused_by":"a"}'), ("open", "open", '{"x":1}'),
                               ("unfunded", "open", '{"unfunded":{"a":"wallet"}}'), ("closed", "closed", '{}')):
        c.execute("""INSERT INTO topics (id, workspace, conversation, opener, status, state, created_at, updated_at)
                     VALUES (?, 'ws', 'c', 'a', ?, ?, 0, 0)""", (tid, status, state))
    c.close()
    db.connect(path).close()
    assert rows(path, "SELECT id FROM topics WHERE waits_funds IS NOT NULL ORDER BY id") == [("paused",), ("unfunded",)]
