"""Loopback tests of the protocol's fixed names (PROTOCOL.md) against a real server."""

import asyncio
import json

import pytest
import websockets

pytestmark = pytest.mark.backends("sqlite", "process", "postgres")


async def test_request_wakes_agent_and_response_wakes_person(team):
    alice = await team.person("alice")
    researcher = await team.client(api_key=team.keys["researcher"])
    sent = await alice.send(workspace=team.ws, conversation="general", topic="new", title="Question",
                            type="request", to=["researcher"], text="What is Ygg?")
    assert sent["op"] == "sent", sent
    d = await researcher.next_delivery(timeout=5)
    assert d["wake"] is True and d["message"]["text"] == "What is Ygg?"
    await researcher.ack([d["id"]])
    reply = await researcher.send(workspace=team.ws, conversation="general", topic=d["message"]["topic"],
                                  type="response", in_reply_to=d["message"]["id"], state="done", text="A chat.")
    assert reply["op"] == "sent" and reply["cost"] == 1, reply
    got = await alice.next_delivery(timeout=5)
    assert got["message"]["text"] == "A chat." and got["wake"] is True


async def test_bad_frame_keeps_connection_open(team):
    async with websockets.connect(team.url) as ws:
        await ws.send("{not json")
        err = json.loads(await ws.recv())
        assert err["op"] == "error" and err["code"] == "bad_frame"
        await ws.send(json.dumps({"op": "send", "ref": 7}))
        err = json.loads(await ws.recv())
        assert err["code"] == "unauthenticated" and err["ref"] == 7
        await ws.send(json.dumps({"op": "auth", "ref": 1, "api_key": team.keys["reviewer"]}))
        s = json.loads(await ws.recv())
        assert s["op"] == "session" and s["me"]["kind"] == "agent", s
        await ws.send(json.dumps({"op": "frobnicate", "ref": 2}))
        err = json.loads(await ws.recv())
        assert err["code"] == "bad_frame" and err["ref"] == 2
        await ws.send(json.dumps({"op": "ping", "ref": 3}))
        assert json.loads(await ws.recv())["op"] == "pong"
