"""The SQLite writer in its own process (ygg_server/writer/process.py), where it can fail on its own.

Issue 3: "Nothing answered with `sent` is lost if the process is killed right after". Here the process
killed is the writer: what it answered stands, what it held is answered `unavailable` (and stored once
when sent again with its client_id), and a new writer carries on. And when the server is killed, its
writer does not outlive it.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import websockets

from ygg_server.clock import now_us
from ygg_server.ops import admin
from ygg_server.writer.process import WriterProcess, _Batch, _Cmd, _from_wire, _pack, _to_wire, _unpack, _batch_decoder
from ygg_server.protocol import frames
from ygg_server.store import sqlite as db

pytestmark = pytest.mark.backends("process")


async def test_the_writer_killed_mid_stream_loses_nothing_answered_and_a_new_one_carries_on(team):
    writer = team.gw.writer
    assert isinstance(writer, WriterProcess)
    alice = await team.person("alice")
    first = writer._proc
    answers: list[dict] = []

    async def send(i: int) -> dict:  # the raw answer: Client.send turns `unavailable` into a ConnectionError
        return await alice.request("send", workspace=team.ws, topic="new", title=f"T{i}", type="inform", to=["researcher"],
                                text=f"m{i}", client_id=f"c{i}")

    sending = [asyncio.ensure_future(send(i)) for i in range(300)]
    await asyncio.sleep(0.05)
    os.kill(first.pid, signal.SIGKILL)
    answers = await asyncio.wait_for(asyncio.gather(*sending), 30)
    ops = {a["op"] for a in answers}
    assert ops <= {"sent", "error"}, ops
    lost = [i for i, a in enumerate(answers) if a["op"] == "error"]
    assert all(answers[i]["code"] == "unavailable" for i in lost), [answers[i] for i in lost]
    for _ in range(200):  # a new writer starts after a short backoff
        if writer._proc is not first and writer._proc.is_alive():
            break
        await asyncio.sleep(0.05)
    assert writer._proc is not first and writer._proc.is_alive(), "a new writer started"
    again = await asyncio.wait_for(asyncio.gather(*(send(i) for i in lost)), 30)
    assert all(a["op"] == "sent" for a in again), again
    stored = dict(team.conn.execute("SELECT text, count(*) FROM messages WHERE text LIKE 'm%' GROUP BY text"))
    assert stored == {f"m{i}": 1 for i in range(300)}, "every message stored exactly once"
    answered = {a["message"]["id"] for a in answers if a["op"] == "sent"}
    ids = {r[0] for r in team.conn.execute("SELECT id FROM messages")}
    assert answered <= ids, "everything answered `sent` is stored"


async def test_after_the_writer_is_killed_sends_are_answered_and_delivered_by_the_new_one(team):
    writer = team.gw.writer
    researcher = await team.client(api_key=team.keys["researcher"])
    alice = await team.person("alice")
    r = await alice.send(workspace=team.ws, topic="new", title="Before", type="request", to=["researcher"],
                         text="before the crash")
    assert r["op"] == "sent"
    got = await asyncio.wait_for(researcher.next_delivery(), 10)
    assert got["message"]["text"] == "before the crash"
    assert (await researcher.ack([got["id"]]))["ids"] == [got["id"]]
    old = writer._proc
    os.kill(old.pid, signal.SIGKILL)
    for _ in range(100):
        if writer._proc is not old:
            break
        await asyncio.sleep(0.05)
    r = await alice.send(workspace=team.ws, topic=r["message"]["topic"], type="request", to=["researcher"],
                         text="after the crash")
    assert r["op"] == "sent", r
    got = await asyncio.wait_for(researcher.next_delivery(), 10)
    assert got["message"]["text"] == "after the crash"


async def test_an_error_while_publishing_a_batch_does_not_drop_the_writer(team):
    """ygg_server/writer/process.py: "Nothing changes in what is answered or when" with the writer in its own process:
    on a thread, an error in what the gateway does with a committed batch is logged, and the writer carries on;
    so it does here (it used to close the socket to the writer: everything in flight answered `unavailable`)."""
    writer = team.gw.writer
    first, publish, failed = writer._proc, writer._publish, []

    def once(out):
        if not failed:
            failed.append(out)
            raise RuntimeError("a bug while publishing")
        publish(out)

    writer._publish = once
    alice = await team.person("alice")
    sent = [await alice.send(workspace=team.ws, topic="new", title=f"T{i}", type="inform", to=["researcher"],
                             text=f"m{i}") for i in range(3)]
    assert [s["op"] for s in sent] == ["sent"] * 3, sent
    assert failed, "the first batch's publish failed"
    await asyncio.sleep(0.3)
    assert writer._proc is first and first.is_alive(), "the same writer carries on"


async def test_a_second_follower_is_answered_only_once_the_writer_hands_over_events(team):
    """ygg_server/net/gateway.py: topic and balance events cross from the writer process only while someone
    follows, and a subscribe is answered once "every batch after this answer carries the events". So for a
    second follower arriving while the first one's sync is on its way: it waits for that sync too (it was
    answered at once, and could miss a topic event the writer decided without them)."""
    writer = team.gw.writer
    loop = asyncio.get_running_loop()
    gate, submit = asyncio.Event(), writer.submit

    def held_sync(kind, *args):
        fut = submit(kind, *args)
        if kind != "sync":
            return fut
        held = loop.create_future()

        async def release():
            await gate.wait()
            held.set_result(await fut)

        asyncio.ensure_future(release())
        return held

    writer.submit = held_sync
    alice, bob = await team.person("alice"), await team.person("bob")
    first = asyncio.ensure_future(alice.subscribe(team.ws))
    await asyncio.sleep(0.2)
    second = asyncio.ensure_future(bob.subscribe(team.ws))
    done, _ = await asyncio.wait([first, second], timeout=0.5)
    assert not done, "neither follower is answered before the writer has the events turned on"
    gate.set()
    await asyncio.wait_for(asyncio.gather(first, second), 10)
    assert writer.events


async def test_who_is_connected_crosses_as_who_came_and_went(server):
    """docs/architecture.md: "Who is connected (for assignment scoring) goes along in the same stream, as who
    came and who went". Each connection that comes or goes crosses alone (it was everyone connected, sorted
    and sent again each time: with thousands connected, a reconnecting crowd cost the event loop and the
    writer seconds), and the writer still scores presence as the gateway sees it (seed 003 §14: "The highest score gets the task")."""
    from .test_party import setup_party

    writer = server.gw.writer
    crowd = frozenset(f"agent.{i:032x}" for i in range(5000))
    writer.present = writer.present | crowd
    writer.seen("agent.one-more", True)  # as the gateway says it
    assert len(_pack([writer._outbox[-1]])) < 200, "one connection's coming crosses alone"
    assert "agent.one-more" in writer.present
    writer.present = writer.present - crowd - {"agent.one-more"}
    ws, cid, alice, keys = await setup_party(server)
    for name in ("pike", "nova"):
        assert (await alice.request("set_profile", agent=name, title="Translator",
                                    capabilities=["translation"]))["op"] == "set_profile"

    async def online_now() -> dict:
        sent = await alice.send(workspace=ws, conversation=cid, topic="new", title="Job", type="request",
                                to=["capability:translation"], text="translate this")
        a = sent["message"]["assignment"]
        return {s["name"]: p["value"] for s in a["scores"] for p in s["parts"] if p["name"] == "online"}

    nova = await server.client(api_key=keys["nova"])
    await nova.request("ping")
    assert await online_now() == {"nova": 1.0, "pike": 0.0}
    await nova.close()
    pike = await server.client(api_key=keys["pike"])
    await pike.request("ping")
    for _ in range(50):  # (nova's going is noticed as its socket closes)
        if (got := await online_now()) == {"nova": 0.0, "pike": 1.0}:
            break
        await asyncio.sleep(0.05)
    assert got == {"nova": 0.0, "pike": 1.0}


async def test_a_ref_wider_than_64_bits_comes_back_as_it_was(team):
    """docs/protocol.md: a frame "may carry `"ref"` (string or number), echoed in the reply": MessagePack
    holds 64 bits, so such a batch crosses as a pickle."""
    await team.person("alice")
    async with websockets.connect(team.url) as ws:
        await ws.send(json.dumps({"op": "auth", "ref": 1, "handle": "alice", "password": "pw-" + "x" * 8}))
        json.loads(await ws.recv())
        ref = 2**70 + 1
        await ws.send(json.dumps({"op": "send", "ref": ref, "workspace": team.ws, "topic": "new", "title": "Big",
                                  "type": "inform", "to": ["researcher"], "text": "wide ref"}))
        reply = json.loads(await asyncio.wait_for(ws.recv(), 10))
        while reply.get("op") not in ("sent", "refused", "error"):
            reply = json.loads(await asyncio.wait_for(ws.recv(), 10))
    assert reply["op"] == "sent" and reply["ref"] == ref


def test_a_command_crosses_to_the_writer_process_with_its_typed_frame():
    """ygg_server/writer/process.py: a command's args are typed, "a client frame decodes back into its Struct", in
    MessagePack, or in a pickle when MessagePack cannot hold it (a `ref` wider than 64 bits)."""
    from ygg_server import protocol
    from ygg_server.writer.process import _Events, _items_decoder, _Present

    lead = protocol.decode('{"op":"set_lead","ref":"r","workspace":"w","conversation":"general","lead":null}')
    items = [_Cmd(1, "send", ["agent.x", frames.Send(workspace="w", ref=1.5, to=["@alice"], text={"odd": [1]})]),
             _Cmd(2, "party", ["human.a", lead]), _Cmd(3, "fund", ["human.a", frames.Fund(workspace="w", pool=True)]),
             _Cmd(4, "set_profile", ["human.a", frames.SetProfile(agent="x", cost=3)]),
             _Cmd(5, "ack", ["agent.x", [1, 2], None]), _Cmd(6, "session", ["agent.x", 3600, None]), _Cmd(7, "sync", []),
             _Present(["agent.x"], None), _Events(True)]
    body = memoryview(_pack(items))[4:]
    assert body[0] == ord("m"), "MessagePack, not a pickle"
    back = _unpack(body, _items_decoder)
    assert back == items and type(back[1].args[1]) is frames.SetLead and back[3].args[1].title is frames.UNSET
    wide = [_Cmd(8, "send", ["agent.x", frames.Send(workspace="w", ref=2**70)])]
    body = memoryview(_pack(wide))[4:]
    assert body[0] == ord("p") and _unpack(body, _items_decoder) == wide


def test_a_batch_crosses_with_each_message_once_and_deliveries_pointing_at_it():
    from ygg_server.core import Message, MessageType
    from ygg_server.protocol.results import Sent
    from ygg_server.writer import Published
    from ygg_server.store.rows import Stored

    m = Message("m1", "w", "c", "t", "a", MessageType.REQUEST, "hi", 1)
    out = Published(deliveries=[Stored(1, "x", True, "to", m), Stored(2, "y", False, None, m)], messages=[m])
    frame = _pack(_to_wire([(7, Sent(m), None), (8, RuntimeError("boom"), None)], out))
    body = memoryview(frame)[4:]
    assert body[0] == ord("m"), "MessagePack, not a pickle"
    batch = _unpack(body, _batch_decoder)
    assert isinstance(batch, _Batch) and len(batch.messages) == 1
    back = _from_wire(batch)
    assert [(s.id, s.recipient, s.wake, s.reason) for s in back.deliveries] == [(1, "x", True, "to"), (2, "y", False, None)]
    assert back.deliveries[0].message is back.deliveries[1].message is back.messages[0]
    assert back.messages[0] == m
    assert batch.answers[0][2] == Sent(m) and batch.answers[1][2] == "RuntimeError: boom", "a result crosses typed"


def _children(pid: int) -> list[int]:
    kids = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            kids += [int(k) for k in (task / "children").read_text().split()]
        except OSError:
            pass
    return kids


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def test_the_writer_does_not_outlive_a_killed_server(tmp_path):
    conn = db.connect(db.db_path(tmp_path))
    admin.add_person(conn, "alice", "pw-" + "x" * 8, now=now_us())
    conn.close()
    p = subprocess.Popen([sys.executable, "-m", "ygg_server.cli", "serve", "--data-dir", str(tmp_path), "--port", "0"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert json.loads(p.stdout.readline())["listening"]
        writers = [k for k in _children(p.pid) if "multiprocessing" in _cmdline(k) and "resource_tracker" not in _cmdline(k)]
        assert len(writers) == 1, [(k, _cmdline(k)) for k in _children(p.pid)]
        os.kill(p.pid, signal.SIGKILL)
        p.wait(10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and Path(f"/proc/{writers[0]}").exists() \
                and "Z" not in Path(f"/proc/{writers[0]}/stat").read_text().rsplit(")", 1)[1].split()[0]:
            time.sleep(0.05)
        alive = Path(f"/proc/{writers[0]}").exists() and \
            "Z" not in Path(f"/proc/{writers[0]}/stat").read_text().rsplit(")", 1)[1].split()[0]
        assert not alive, "the writer ended with its server"
        c = sqlite3.connect(db.db_path(tmp_path), timeout=5)
        c.execute("BEGIN IMMEDIATE")  # nobody holds the write lock any more
        c.execute("ROLLBACK")
        c.close()
    finally:
        if p.poll() is None:
            p.kill()
        p.stdout.close()


def test_a_command_that_fails_on_bad_input_is_answered_as_on_a_thread():
    """The gateway answers a ValueError or TypeError `bad_frame` (Gateway._failed): the process keeps the kind."""
    wire = _to_wire([(1, ValueError("amount must be a number"), None), (2, None, KeyError("x"))], None)
    assert wire.answers == [(1, 2, "amount must be a number"), (2, 1, "KeyError: 'x'")]


async def test_closing_answers_what_waits_for_a_writer_being_restarted(team):
    writer = team.gw.writer
    old = writer._proc
    os.kill(old.pid, signal.SIGKILL)
    for _ in range(200):
        if writer._transport is None:
            break
        await asyncio.sleep(0.01)
    fut = writer.submit("sync")  # waits in the outbox for the new child (unless it came already)
    await asyncio.wait_for(writer.aclose(), 30)
    try:
        await asyncio.wait_for(fut, 5)  # answered, never left waiting
    except Exception as e:
        assert type(e).__name__ == "WriterGone", e


async def test_a_send_answered_unavailable_is_sent_again_with_its_client_id_by_the_callers_that_retry(team, monkeypatch):
    """docs/protocol.md: frames the writer held are answered `unavailable` ("send them again; a `send` with the
    same `client_id` is stored once"): the client library turns that into the ConnectionError its callers already
    resend on; without a client_id it is the answer, since a resend could store it twice."""
    from ygg_server.writer.process import WriterGone

    writer, alice = team.gw.writer, await team.person("alice")
    real, failures = writer.submit, []

    def flaky(kind, *args):
        fut = real(kind, *args)
        if kind == "send" and len(failures) < 2:  # answered unavailable, though the writer stored it
            failures.append(args)
            lost = asyncio.get_running_loop().create_future()
            fut.add_done_callback(lambda _: lost.set_exception(WriterGone("the writer stopped")))
            return lost
        return fut

    monkeypatch.setattr(writer, "submit", flaky)
    bare = await alice.send(workspace=team.ws, topic="new", title="Bare", type="inform", to=["researcher"], text="b")
    assert (bare["op"], bare["code"]) == ("error", "unavailable"), bare
    fields = dict(workspace=team.ws, topic="new", title="Kept", type="inform", to=["researcher"], text="k",
                  client_id="once")
    with pytest.raises(ConnectionError):
        await alice.send(**fields)
    again = await alice.send(**fields)  # as the TUI's session and the bridge do on a ConnectionError
    assert again["op"] == "sent" and again.get("duplicate"), again
    assert team.conn.execute("SELECT count(*) FROM messages WHERE text = 'k'").fetchone() == (1,)


async def test_a_frame_too_deep_to_cross_is_refused_alone_and_the_others_of_its_turn_still_cross(team):
    """Issue 3, "Bad input": "an unparseable frame or unknown op gets `bad_frame` and the connection stays up". On
    Python 3.12+ (pyproject: >=3.11) a frame nested up to msgspec's C recursion limit parses whatever the stack,
    and the outbox's own nesting then puts it past what MessagePack or pickle holds: the whole turn's write to the
    writer raised, so every command of that turn (anyone's) was never sent nor answered, and each of those
    connections' later answers waited behind it for good. (On 3.11 the gateway's deeper stack refuses such a
    frame first; here it is submitted as the gateway would.) Now it alone is refused, as bad input."""
    writer = team.gw.writer
    loop, deep = asyncio.get_running_loop(), asyncio.get_running_loop().create_future()

    def deeper() -> None:  # one level more than the outbox's frame holds, found where the outbox is written
        text: list = []  # (content of any shape reaches the writer: it is downgraded there, docs/protocol.md)
        while True:
            frame = frames.Send(workspace=team.ws, topic="new", title="Deep", type="inform", to=["researcher"],
                                text=text)
            try:
                _pack([_Cmd(1, "send", [team.alice, frame])])
            except RecursionError:
                return deep.set_result(frame)
            text = [text]

    loop.call_soon(deeper)
    frame = await deep
    bad = writer.submit("send", team.alice, frame)  # the same turn of the loop: one write to the writer
    sync = writer.submit("sync")
    assert await asyncio.wait_for(sync, 10) is None, "the other command of the turn is answered"
    with pytest.raises(ValueError, match="nested too deep"):
        await asyncio.wait_for(bad, 10)



async def test_a_writer_that_cannot_be_started_again_is_tried_again_and_what_waits_is_answered(team, monkeypatch):
    """ygg_server/writer/process.py: "If the child dies, the commands it held are failed … and a new child starts".
    Starting one can fail too (too many open files, no memory): that raised in the loop's callback, and nothing
    tried again, so every command from then on waited in the outbox for good, never answered. Now a failed
    start is a writer lost at once: what waits is answered `unavailable`, and a start is tried after the backoff."""
    writer = team.gw.writer
    spawn, failed = writer._spawn, []

    def once() -> None:
        if not failed:
            failed.append(True)
            raise OSError(24, "Too many open files")
        spawn()

    monkeypatch.setattr(writer, "_spawn", once)
    old = writer._proc
    os.kill(old.pid, signal.SIGKILL)
    for _ in range(200):
        if failed:
            break
        await asyncio.sleep(0.02)
    assert failed, "a start was tried"
    waiting = writer.submit("sync")
    try:
        await asyncio.wait_for(waiting, 10)  # answered: by the next writer, or as lost with the failed start
    except Exception as e:
        assert type(e).__name__ == "WriterGone", e
    assert await asyncio.wait_for(writer.submit("sync"), 10) is None, "a writer runs again"
    assert writer._proc is not old and writer._proc.is_alive()
