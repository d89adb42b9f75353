"""A connection's frames are pipelined: `send` and `ack` go to the writer as soon as they are read, and
every answer comes back in the order the frames were sent (net/gateway.py, `Gateway._frame`)."""

from __future__ import annotations

import asyncio
import json

import pytest
import websockets

from ygg_server.net import gateway

pytestmark = pytest.mark.backends("sqlite", "process", "postgres")


async def raw_agent(team, name: str):
    ws = await websockets.connect(team.url)
    await ws.send(json.dumps({"op": "auth", "ref": "a", "api_key": team.keys[name]}))
    assert json.loads(await ws.recv())["op"] == "session"
    return ws


async def answers(ws, n: int) -> list[dict]:
    out = []
    while len(out) < n:
        f = json.loads(await asyncio.wait_for(ws.recv(), 10))
        if f["op"] != "deliver":
            out.append(f)
    return out


async def test_frames_sent_without_waiting_are_decided_and_answered_in_order(team):
    ws = await raw_agent(team, "researcher")
    try:
        await ws.send(json.dumps({"op": "send", "ref": 0, "workspace": team.ws, "topic": "new", "title": "T",
                                  "to": ["@alice"], "text": "m0"}))
        (first,) = await answers(ws, 1)
        topic = first["message"]["topic"]
        n = 40
        frames = []
        for i in range(1, n + 1):
            frames.append({"op": "send", "ref": i, "workspace": team.ws, "topic": topic, "type": "inform",
                           "to": ["@alice"], "text": f"m{i}"})
            if i % 7 == 0:  # other frames among them: an ack (of nothing) and a query, answered in their turn
                frames.append({"op": "ack", "ref": f"ack{i}", "ids": [10**9 + i]})
            if i % 13 == 0:
                frames.append({"op": "history", "ref": f"h{i}", "workspace": team.ws, "topic": topic, "limit": 200})
        for f in frames:  # all written before any answer is read
            await ws.send(json.dumps(f))
        got = await answers(ws, len(frames))
        assert [g["ref"] for g in got] == [f["ref"] for f in frames], "answers come back in the frames' order"
        sent = [g for g in got if g["op"] == "sent"]
        assert [g["message"]["text"] for g in sent] == [f"m{i}" for i in range(1, n + 1)]
        for g in got:
            if g["op"] == "history":  # a query sees every send before it
                k = int(g["ref"][1:])
                texts = {m["text"] for m in g["messages"]}
                assert {f"m{i}" for i in range(k + 1)} <= texts
        page = await (await team.person("alice")).call("history", workspace=team.ws, topic=topic, limit=200)
        stored = [m["text"] for m in reversed(page["messages"])]  # newest first
        assert stored == [f"m{i}" for i in range(n + 1)], "stored in the order sent"
    finally:
        await ws.close()


async def test_reading_pauses_when_too_many_frames_await_their_commit(team, monkeypatch):
    monkeypatch.setattr(gateway, "MAX_INFLIGHT", 3)
    ws = await raw_agent(team, "researcher")
    writer = team.gw.writer
    submitted = []
    real = writer.submit

    def held(kind, *args):  # answers held back until released: the connection's frames stay in flight
        fut = asyncio.get_running_loop().create_future()
        submitted.append((fut, real(kind, *args)))
        return fut

    monkeypatch.setattr(writer, "submit", held)
    try:
        for i in range(6):
            await ws.send(json.dumps({"op": "ack", "ref": i, "ids": [10**9 + i]}))
        await asyncio.sleep(0.5)
        assert len(submitted) == 3, "at MAX_INFLIGHT frames awaiting their answers, the next is not read"
        while len(submitted) < 6 or not all(f.done() for f, _ in submitted):
            for fut, inner in submitted:
                if not fut.done():
                    fut.set_result(await inner)
            await asyncio.sleep(0.05)
        got = await answers(ws, 6)
        assert [g["ref"] for g in got] == list(range(6))
    finally:
        await ws.close()
