"""The writer answers with typed results, never wire replies (issue 16: "the writer never sees a raw dict and never
builds wire replies"); `replies.render` words each one at the edge, as docs/protocol.md names the frames.

What a send with a `client_id` keeps is its typed result, replayed rendered with the new ref and `duplicate: true`;
rows kept as the old `sent` reply's JSON (before results were typed) replay as they did. Results cross the writer
process typed (MessagePack decoded back into their Structs).
"""

from __future__ import annotations

import asyncio

import msgspec
import pytest

from ygg_server import protocol
from ygg_server.core import ContextReason, Message, MessageType, Profile, RefusalReason, State
from ygg_server.core.decision import Delivery
from ygg_server.protocol import frames, replies, results
from ygg_server.protocol.results import ErrorCode
from ygg_server.writer import Writer
from ygg_server.writer.commands import Command
from ygg_server.writer.process import _batch_decoder, _pack, _to_wire, _unpack

from tests.core.harness import T0
from tests.writer.test_loop import WS, FakeStore

MESSAGE = Message(id="m-1", workspace=WS, conversation="general-ws1", topic="m-1", author="human.alice",
                  type=MessageType.REQUEST, text="hello", created_at=T0 + 123, to=("bot",), state=State.WAITING,
                  waiting_for=("bot",), title="T", cost=1)
DELIVERIES = (Delivery("bot", True), Delivery("human.bob", False, ContextReason.OBSERVER))
SENT = results.Sent(MESSAGE, DELIVERIES)


def _old_sent(ref, m: Message = MESSAGE, deliveries=DELIVERIES) -> dict:
    """The `sent` reply as the writer built it before it answered with results (main, before issue 16's change)."""
    return {"op": "sent", "ref": ref, "message": replies.message_obj(m), "deliveries": replies.deliveries_obj(deliveries),
            "cost": m.cost}


def _old_kept(reply: dict) -> bytes:
    """What the idempotency table held then: the `sent` reply's JSON, without its ref."""
    return msgspec.json.encode({k: v for k, v in reply.items() if k != "ref"})


def send(text: str, client_id: str | None = None, workspace: str = WS, ref=None) -> Command:
    return Command("send", ("human.alice", frames.Send(ref=ref, workspace=workspace, topic="new", title="T", to=["bot"],
                                                       text=text, type="request", client_id=client_id)))


def run(store, *cmds):
    return asyncio.run(Writer(store, lambda: T0).run(list(cmds)))


class Keeping(FakeStore):
    """The fake store, keeping what the batch gives the idempotency table."""

    async def write(self, outcome):
        await super().write(outcome)
        self.kept = list(outcome.idem)


def test_every_answer_of_the_writer_is_a_typed_result_and_what_it_keeps_is_one_too():
    store = Keeping()
    cmds = [send("first", "c-1", ref=1), send("first", "c-1", ref=2), send("lost", workspace="nope"),
            Command("ack", ("bot", [7], "r")), Command("sync", ())]
    answers, _, _ = run(store, *cmds)
    sent, dup, refused, acked, synced = (answers[id(c)] for c in cmds)
    assert type(sent) is results.Sent and sent.message.text == "first"
    assert type(dup) is results.Duplicate, "the same client_id again, in the same batch"
    assert refused == results.Refused(RefusalReason.UNKNOWN_WORKSPACE, "no such workspace")
    assert type(acked) is results.Acked and synced is None
    assert not any(isinstance(a, dict) for a in answers.values())
    (kept,) = store.kept
    assert kept[:2] == ("human.alice", "c-1") and results.kept(kept[2]) == sent, "the result kept, decodable"
    assert dup.kept == kept[2]


def test_a_result_renders_to_the_frame_the_writer_used_to_build():
    """Byte for byte: the same keys, values and order as before."""
    enc = protocol.encode
    assert enc(replies.render(12, SENT)) == enc(_old_sent(12))
    assert list(replies.render("r", SENT)) == ["op", "ref", "message", "deliveries", "cost"]
    assert enc(replies.render(3, results.Refused(RefusalReason.BAD_AMOUNT, "why"))) == \
        '{"op":"refused","ref":3,"reason":"bad_amount","detail":"why"}'
    assert enc(replies.render(3, results.Failed(ErrorCode.BAD_FRAME, "why"))) == \
        '{"op":"error","ref":3,"code":"bad_frame","detail":"why"}'
    assert replies.render(3, results.Funded("agent.x", 40)) == {"op": "funded", "ref": 3, "account": "agent.x",
                                                                 "balance": 40}
    assert replies.render(3, results.BudgetSet("t", None)) == {"op": "set_budget", "ref": 3, "topic": "t",
                                                                "budget": None}
    assert replies.render(3, results.PartyChanged("set_lead", "c", ["a", "b"], "a", True)) == {
        "op": "set_lead", "ref": 3, "conversation": "c", "members": ["a", "b"], "lead": "a", "changed": True}
    assert enc(replies.render(3, results.ProfileSet("agent.x", Profile("T", "d", ("x",), True, ("t",), 2)))) == enc({
        "op": "set_profile", "ref": 3, "agent": "agent.x", "profile": {
            "title": "T", "description": "d", "capabilities": ["x"], "generalist": True, "tools": ["t"], "cost": 2}})
    assert replies.render(3, results.SettingSet("w", "assign.weights", {"load": 2})) == {
        "op": "set_setting", "ref": 3, "workspace": "w", "key": "assign.weights", "value": {"load": 2}}
    assert replies.render(3, results.Acked([1, 2])) == {"op": "acked", "ref": 3, "ids": [1, 2]}


@pytest.mark.parametrize("form", ["typed", "old JSON"])
def test_a_kept_answer_replays_with_the_new_ref_and_duplicate_as_before(form):
    """A row written by this writer (the typed result) and one written before it (the `sent` reply's JSON) replay
    the same frame, byte for byte, as the old writer replayed its rows: `{**kept, "ref": ref, "duplicate": true}`."""
    kept = results.keep(SENT) if form == "typed" else _old_kept(_old_sent(1))
    before = {**msgspec.json.decode(_old_kept(_old_sent(1))), "ref": 99, "duplicate": True}
    assert protocol.encode(replies.render(99, results.Duplicate(kept))) == protocol.encode(before)


def test_a_kept_answer_of_either_form_is_told_apart():
    assert results.kept(results.keep(SENT)) == SENT
    assert results.kept(_old_kept(_old_sent(1))) is None
    assert results.kept(memoryview(results.keep(SENT))) == SENT, "(as a driver may hand a blob over)"


def test_results_cross_the_writer_process_typed():
    """writer/process.py: each answer decodes back into its own Struct, not a dict."""
    answers = [SENT, results.Duplicate(results.keep(SENT)), results.Refused(RefusalReason.UNKNOWN_TOPIC, "no"),
               results.Failed(ErrorCode.NOT_FOUND, "no"), results.Funded("pool", None), results.BudgetSet("t", 5),
               results.PartyChanged("add_participant", "c", ["a"], None, False),
               results.ProfileSet("agent.x", Profile("T", "", ("a", "b"))),
               results.SettingSet("w", "party.maxHops", 3), results.Acked([4]), None]
    frame = _pack(_to_wire([(i, a, None) for i, a in enumerate(answers)], None))
    assert frame[4:5] == b"m", "MessagePack, not the pickle fallback"
    back = _unpack(memoryview(frame)[4:], _batch_decoder)
    assert [a for _, _, a in back.answers] == answers
    assert [type(a) for _, _, a in back.answers] == [type(a) for a in answers]
