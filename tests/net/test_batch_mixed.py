"""Commands of several kinds decided in one batch, on each store: each is judged after those before it.

Each test hands the writer one batch directly (`Writer.run`), so the commands are known to share it; the
database is then read through an admin connection. The two old writers gave each funding, budget and setting
the rows the sends before it left (SQLite wrote what was pending before reading; PostgreSQL decided them in
a transaction after the sends'); the one writer plans the rows before the batch is decided.
"""

from __future__ import annotations

import asyncio

import pytest

from ygg_server.clock import now_us
from ygg_server import compose
from ygg_server.ops import admin
from ygg_server.protocol import frames
from ygg_server.writer.commands import Command

from tests.backends import PW, admin_connection
from tests.writer import rendered

pytestmark = pytest.mark.backends("sqlite", "postgres")


class World:
    def __init__(self, backend, runner, conn):
        self.backend, self.runner, self.conn = backend, runner, conn

    async def run(self, *commands: tuple) -> list:
        """Run `commands` as one batch; each caller's answer (or exception), in order."""
        loop = asyncio.get_running_loop()
        batch = [Command(kind, args, None, loop) for kind, *args in commands]
        if self.backend == "postgres":
            answers, later, _ = await self.runner.writer.run(batch)
            assert not later
            return [rendered(c, answers.get(id(c))) for c in batch]
        results, later, _ = self.runner.tick(batch)
        assert not later
        return [error if error is not None else rendered(c, result) for c, result, error in results]

    def one(self, sql: str, *args):
        return self.conn.execute(sql, args).fetchone()


@pytest.fixture
async def world(backend, database):
    if backend == "postgres":
        runner = compose.on_postgres(database)
        await runner.open()
    else:
        runner = compose.on_sqlite(database)
    conn = admin_connection(backend, database)
    w = World(backend, runner, conn)
    w.alice = admin.add_person(conn, "alice", PW, now=now_us())["id"]
    w.ws = admin.add_workspace(conn, "team", "alice", now=now_us())["id"]
    w.ids = {name: admin.add_agent(conn, name, "alice", now=now_us())["id"] for name in ("researcher", "reviewer")}
    admin.fund(conn, "reviewer", 1000, now=now_us())
    try:
        yield w
    finally:
        conn.close()
        if backend == "postgres":
            await runner.writer.store.aclose()
        else:
            runner.stop()


def send(w: World, author: str, **frame) -> tuple:
    return ("send", w.ids.get(author, author), frames.Send(workspace=w.ws, conversation="general", **frame))


def fund(w: World, agent: str, amount: int) -> tuple:
    return ("fund", w.alice, frames.Fund(workspace=w.ws, agent=agent, amount=amount, ref="f"))


async def test_a_funding_resumes_the_topic_a_send_before_it_in_the_batch_paused(world):
    """Seed 000: "When an agent runs out, its message is refused, its topic pauses, and the people who can fund
    it see a request in the console. Once refilled, the agent alone is woken to resend what did not go through."

    The send that ran the researcher dry and the funding that refills it come in one batch: the funding finds
    the topic the send paused (it was not paused when the batch's rows were loaded), resumes it and wakes the
    researcher there, as it does when they come in two batches."""
    w = world
    admin.fund(w.conn, "researcher", 1, now=now_us())
    (opened,) = await w.run(send(w, "researcher", topic="new", title="T", to=["reviewer"], text="one"))
    assert opened["op"] == "sent", opened
    topic = opened["message"]["topic"]
    dry, funded = await w.run(send(w, "researcher", topic=topic, to=["reviewer"], text="two"),
                              fund(w, "researcher", 100))
    assert dry["op"] == "refused" and dry["reason"] == "credits_exhausted", dry
    assert funded["op"] == "funded" and funded["balance"] == 100, funded
    assert w.one("SELECT status FROM topics WHERE id = ?", topic) == ("open",), "the funding resumed the topic"
    woke = w.one("SELECT count(*) FROM deliveries d JOIN messages m ON m.id = d.message "
                 "WHERE d.recipient = ? AND m.topic = ? AND d.wake = 1 AND m.author = 'system.ygg'",
                 w.ids["researcher"], topic)
    assert woke == (1,), "the researcher is woken in its topic to resend"


async def test_a_funding_does_not_count_a_resumed_topic_as_newly_opened(world):
    """Seed 000: "An agent may hold at most 3 topics it opened at a time."

    A topic paused for credits is still one the agent holds: a funding that resumes it (here one the writer's
    memory did not hold, an admin's change having made it read everything again) opens nothing, so the agent
    may still open the topics its limit leaves it."""
    w = world
    admin.fund(w.conn, "researcher", 1, now=now_us())
    (opened,) = await w.run(send(w, "researcher", topic="new", title="T1", to=["reviewer"], text="one"))
    topic = opened["message"]["topic"]
    (dry,) = await w.run(send(w, "researcher", topic=topic, to=["reviewer"], text="two"))
    assert dry["reason"] == "credits_exhausted", dry
    admin.add_person(w.conn, "carol", PW, now=now_us())  # another connection's write: the writer's memory is read again
    (refused,) = await w.run(send(w, "researcher", topic="new", title="T2", to=["reviewer"], text="new"))
    assert refused["reason"] == "credits_exhausted", refused  # (its open topics counted: one, the paused one)
    (funded,) = await w.run(fund(w, "researcher", 100))
    assert funded["op"] == "funded", funded
    assert w.one("SELECT status FROM topics WHERE id = ?", topic) == ("open",)
    answers = await w.run(send(w, "researcher", topic="new", title="T2", to=["reviewer"], text="two"),
                          send(w, "researcher", topic="new", title="T3", to=["reviewer"], text="three"))
    assert [a["op"] for a in answers] == ["sent", "sent"], answers
    (over,) = await w.run(send(w, "researcher", topic="new", title="T4", to=["reviewer"], text="four"))
    assert over["reason"] == "topic_limit", over


@pytest.mark.backends("sqlite", "postgres")
async def test_a_setting_whose_batch_failed_is_not_applied(world, monkeypatch):
    """docs/rules.md, "The hop limit": `party.maxHops` is "read from the workspace's settings for every decision".
    A set_setting whose batch never committed (its connection lost before the COMMIT) changed no setting: the
    next agent message is judged by the setting stored, here the default, and wakes the agent it is for."""
    w = world
    admin.fund(w.conn, "researcher", 100, now=now_us())
    store = w.runner.writer.store
    real = type(store).write

    async def lost(self, outcome):
        await real(self, outcome)
        if outcome.settings:
            raise ConnectionResetError("lost before the COMMIT")

    monkeypatch.setattr(type(store), "write", lost)
    (failed,) = await w.run(("set_setting", w.alice, frames.SetSetting(workspace=w.ws, key="party.maxHops", value=0)))
    assert isinstance(failed, ConnectionResetError), failed
    monkeypatch.setattr(type(store), "write", real)
    (first,) = await w.run(("send", w.alice, frames.Send(workspace=w.ws, topic="new", title="T", to=["researcher"],
                                                        text="go")))
    (sent,) = await w.run(send(w, "researcher", topic=first["message"]["topic"], to=["reviewer"], text="ask",
                               type="request"))
    assert sent["op"] == "sent", sent
    assert [(d["wake"], d["reason"]) for d in sent["deliveries"] if d["to"] == w.ids["reviewer"]] == [(True, None)]


async def test_a_budget_in_a_workspace_that_does_not_exist_is_refused_beside_the_batchs_sends(world):
    """docs/protocol.md: a topic of a workspace one is not in is answered like one that does not exist
    (`unknown_topic`). A set_budget naming a made-up workspace is refused so, and the send beside it in its
    batch goes through: it does not make the batch fail (PostgreSQL waited for a workspace row that is not there,
    and planned again until it gave up)."""
    w = world
    sent, budget = await w.run(
        ("send", w.alice, frames.Send(workspace=w.ws, topic="new", title="T", to=["researcher"], text="go")),
        ("set_budget", w.alice, frames.SetBudget(workspace="ws.made-up", topic="t.none", budget=5, ref="b")))
    assert sent["op"] == "sent", sent
    assert budget["op"] == "refused" and budget["reason"] == "unknown_topic", budget
