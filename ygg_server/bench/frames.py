"""`python -m ygg_server.bench frames`: what the edge costs per message, in microseconds per frame.

A `send` (an agent's answer, as the agent bridge writes it) and an `ack` are the frames of every message:
each is decoded once into its typed frame (`protocol.decode`), and a send becomes the core's Post
(`protocol.to_post`, in the writer); the writer's answer, a typed result, becomes its `sent` reply at the edge
(`replies.render`, then encoded as the connection sends it). Best of `--repeat` runs of `--number` frames each.
"""

from __future__ import annotations

import argparse
import json
import timeit

from .. import protocol
from ..core import ContextReason, Message, MessageType, State
from ..core.decision import Delivery
from ..protocol import replies, results

SEND = json.dumps({
    "op": "send", "ref": 12, "workspace": "6f1c2a8e-3b4d-4e5f-8a9b-0c1d2e3f4a5b", "conversation": "general",
    "topic": "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d", "type": "response", "to": ["@alice"],
    "in_reply_to": "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d", "state": "done",
    "text": "researcher read: " + "the quick brown fox jumps over the lazy dog " * 4, "client_id": "answer-123",
})
ACK = json.dumps({"op": "ack", "ids": [123456]})
_F = json.loads(SEND)
SENT = results.Sent(  # the writer's answer to SEND
    Message(id="5e4d3c2b-1a09-4f8e-9d7c-6b5a4f3e2d1c", workspace=_F["workspace"], conversation="general-6f1c2a8e",
            topic=_F["topic"], author="agent.researcher", type=MessageType.RESPONSE, text=_F["text"],
            created_at=1_767_225_600_123_456, to=("human.alice",), state=State.DONE, in_reply_to=_F["in_reply_to"],
            cost=1),
    (Delivery("human.alice", True), Delivery("agent.reviewer", False, ContextReason.CONTEXT_INFORM)))


def _post() -> None:
    f = protocol.decode(SEND)
    protocol.to_post(f, message_id="m", author="agent.x", workspace=f.workspace)


CASES = {
    "decode send": lambda: protocol.decode(SEND),
    "decode send + to_post": _post,
    "decode ack": lambda: protocol.decode(ACK),
    "render sent": lambda: replies.render(12, SENT),
    "render + encode sent": lambda: protocol.encode_utf8(replies.render(12, SENT)),
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--number", type=int, default=100_000, help="frames per run")
    p.add_argument("--repeat", type=int, default=7, help="runs; the best is reported")


def run(args: argparse.Namespace) -> int:
    for name, fn in CASES.items():
        best = min(timeit.repeat(fn, number=args.number, repeat=args.repeat)) / args.number * 1e6
        print(f"{name:<24} {best:.2f} µs per frame")
    return 0
