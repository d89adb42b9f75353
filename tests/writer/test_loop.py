"""The writer's loop over a fake store (issue 16: "the batch logic itself does no I/O and is tested against a fake
store"): Load -> Decide -> Apply -> Publish in that order, the steps a store asks for, and what happens when one
fails. No database, no sockets: the fake store holds a workspace in memory and records each call.

Core decision (docs/architecture.md, "The writer"): "Only after COMMIT are the callers answered"; a batch the store
could not serialize "is rolled back and decided again, whole"; "A command whose deciding raised is answered with its
error, and the batch is decided again without it"; "Sends whose topic another node holds are left for the next batch".
"""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager

import pytest

from ygg_server.core import Conversation, ConversationKind, Directory, Kind, Membership, Participant, Role, general_id
from ygg_server.protocol import frames
from ygg_server.protocol.results import Sent
from ygg_server.store.port import Snapshot
from ygg_server.writer import Writer
from ygg_server.writer.commands import Command
from ygg_server.writer.loop import drive

from tests.core.harness import T0
from tests.writer import decide_fails_on

WS = "ws1"


class Conflict(Exception):
    """What a store raises for a batch it could not serialize (another node wrote the same rows)."""


class FakeStore:
    retryable = (Conflict,)

    def __init__(self, conflicts: int = 0, moves: int = 0, busy: frozenset = frozenset()):
        self.calls: list[str] = []
        self.conflicts, self.moves, self.busy = conflicts, moves, busy
        self.committed_rows: list = []
        people = [Participant("human.alice", Kind.HUMAN, "alice"), Participant("bot", Kind.AGENT, "bot", owner="human.alice")]
        self.directory = Directory.build(WS, people, [Membership("human.alice", Role.OWNER), Membership("bot")])

    @asynccontextmanager
    async def batch(self):
        self.calls.append("begin")
        try:
            yield self
        except BaseException:
            self.calls.append("rollback")
            raise
        self.calls.append("commit")

    async def schedules_due(self, now):
        return []

    async def catalog(self, workspaces):
        self.calls.append("catalog")
        self.snap = Snapshot(directories={WS: self.directory}, settings={WS: {}}, orgs={WS: None}, busy=set(self.busy))
        self.snap.state.wallets[(WS, "bot")] = 100
        self.snap.state.pools[WS] = 0
        self.snap.state.opened["bot"] = 0
        general = Conversation(general_id(WS), WS, ConversationKind.GENERAL, "General")
        self.snap.state.conversations[WS] = {general.id: general}
        return self.snap

    async def load(self, keys):
        self.calls.append("load")
        self.keys = keys
        return True

    async def confirm(self, outcome):
        self.calls.append("confirm")
        if self.moves:
            self.moves -= 1
            return True
        return False

    async def write(self, outcome):
        self.calls.append("write")
        if self.conflicts:
            self.conflicts -= 1
            raise Conflict()
        self.committed_rows += [r.message.text for d, *_ in outcome.decisions for r in d.routed]

    def committed(self, outcome):
        self.calls.append("committed")

    def failed(self):
        self.calls.append("failed")


def send(author: str, text: str, topic: str = "new") -> Command:
    return Command("send", (author, frames.Send(workspace=WS, topic=topic, title="T", to=["bot"] if author != "bot"
                                                 else ["@alice"], text=text, type="request")))


def run(store, *cmds):
    return asyncio.run(Writer(store, lambda: T0).run(list(cmds)))


def test_a_batch_is_planned_loaded_decided_confirmed_written_and_committed_in_that_order():
    store = FakeStore()
    answers, later, out = run(store, send("human.alice", "hello"))
    assert store.calls == ["begin", "catalog", "load", "confirm", "write", "commit", "committed"]
    assert [type(a) for a in answers.values()] == [Sent] and later == []
    assert store.committed_rows == ["hello"] and store.keys.workspaces == {WS}
    assert out.topics, "what the batch publishes comes out after the commit"


def test_a_batch_the_store_could_not_serialize_is_decided_again_whole():
    store = FakeStore(conflicts=2)
    answers, _, _ = run(store, send("human.alice", "one"), send("human.alice", "two"))
    assert store.calls.count("rollback") == 2 and store.calls.count("failed") == 2 and store.calls[-1] == "committed"
    assert store.committed_rows == ["one", "two"] and [type(a) for a in answers.values()] == [Sent, Sent]


def test_what_a_store_confirms_moved_is_decided_again_before_anything_is_written():
    store = FakeStore(moves=1)
    run(store, send("bot", "paid"))
    assert store.calls == ["begin", "catalog", "load", "confirm", "confirm", "write", "commit", "committed"]


def test_a_command_whose_deciding_raises_is_answered_with_its_error_and_the_rest_are_decided_again(monkeypatch):
    decide_fails_on(monkeypatch, "boom")
    store = FakeStore()
    cmds = [send("human.alice", "before"), send("human.alice", "boom"), send("human.alice", "after")]
    answers, _, _ = run(store, *cmds)
    assert isinstance(answers[id(cmds[1])], RuntimeError)
    assert type(answers[id(cmds[0])]) is type(answers[id(cmds[2])]) is Sent
    assert store.committed_rows == ["before", "after"]
    assert store.calls.count("rollback") == store.calls.count("failed") == 1, "the attempt and what it moved are dropped"


def test_a_batch_whose_write_fails_otherwise_is_split_so_the_bad_command_fails_alone():
    class Broken(FakeStore):
        async def write(self, outcome):
            if any(r.message.text == "bad" for d, *_ in outcome.decisions for r in d.routed):
                raise ValueError("cannot write this one")
            await super().write(outcome)

    store = Broken()
    cmds = [send("human.alice", "good"), send("human.alice", "bad"), send("human.alice", "fine")]
    answers, _, _ = run(store, *cmds)
    assert isinstance(answers[id(cmds[1])], ValueError)
    assert store.committed_rows == ["good", "fine"]


def test_sends_in_a_topic_another_node_holds_wait_for_the_next_batch_with_their_authors_later_sends():
    store = FakeStore(busy=frozenset({"held"}))
    cmds = [send("human.alice", "in held", topic="held"), send("human.alice", "later"), send("bot", "free")]
    answers, later, _ = run(store, *cmds)
    assert later == cmds[:2], "the author's later send keeps its place behind the held one"
    assert list(answers) == [id(cmds[2])] and store.committed_rows == ["free"]


def test_the_store_suspending_is_caught_not_hidden():
    """`drive` runs a store's batch without an event loop only while it never waits on anything."""
    class Waits(FakeStore):
        async def load(self, keys):
            await asyncio.sleep(0)
            return True

    with pytest.raises(RuntimeError, match="suspended"):
        drive(Writer(Waits(), lambda: T0).run([send("human.alice", "x")]))


def test_an_empty_batch_runs_too_for_the_timers_and_the_stores_upkeep():
    """docs/architecture.md, "The writer": "Due timers are decided last, in the same batch": with no command
    queued the writer still runs a batch, or no timer would fire on an idle server."""
    store = FakeStore()
    answers, later, _ = run(store)
    assert store.calls == ["begin", "catalog", "load", "confirm", "write", "commit", "committed"]
    assert answers == {} and later == []
