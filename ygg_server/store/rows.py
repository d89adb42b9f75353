"""Rows <-> the core's structs, for both stores: how a column's value encodes a core value, and back.

No SQL here: `loaders.py` runs the statements both stores share, each store adapter its own; they all
encode and decode through these.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from ..core import POOL, Conversation, ConversationKind, Message, Profile, Topic
from ..core.lifecycle import unfunded

_enc = msgspec.json.Encoder()
_topic_dec = msgspec.json.Decoder(Topic)
_msg_dec = msgspec.json.Decoder(Message)
_PARTY_KEYS = ("lead", "hops", "run", "hop_noticed", "throttle_noticed", "origin", "origin_topic",
               "origin_message", "thread", "summary")


def profile(raw: str | bytes | None) -> Profile:
    """An agent's profile from agents.profile (JSON); what does not fit is left out."""
    try:
        p = msgspec.json.decode(raw or "{}")
    except msgspec.DecodeError:
        return Profile()
    if not isinstance(p, dict):
        return Profile()
    caps = p.get("capabilities")
    caps = tuple(c for c in caps if isinstance(c, str)) if isinstance(caps, list) else ()
    s = lambda k: p.get(k) if isinstance(p.get(k), str) else ""  # noqa: E731
    tools = p.get("tools")
    tools = tuple(t for t in tools if isinstance(t, str)) if isinstance(tools, list) else ()
    cost = p.get("cost")
    cost = cost if type(cost) is int and cost >= 0 else 0
    return Profile(s("title"), s("description"), caps, p.get("generalist") is True, tools, cost)


def ids(raw: str | None) -> frozenset[str] | None:
    """A JSON list of ids (memberships.can_message, takes_from); NULL: no list."""
    return None if raw is None else frozenset(msgspec.json.decode(raw))


def conversation(cid, workspace, kind, name, members, party) -> Conversation:
    """A conversations row (its `party` JSON: the Lead and turn-taking counters) as the core's Conversation."""
    c = Conversation(cid, workspace, ConversationKind(kind), name, frozenset(msgspec.json.decode(members)))
    if party and party != "{}":
        try:
            extra = msgspec.json.decode(party)
        except msgspec.DecodeError:
            extra = {}
        if isinstance(extra, dict):
            c = msgspec.structs.replace(c, **{k: extra[k] for k in _PARTY_KEYS if k in extra})
    return c


def party_json(c: Conversation) -> str:
    """conversations.party of `c`."""
    return msgspec.json.encode({k: getattr(c, k) for k in _PARTY_KEYS}).decode()


def encode_topic(t: Topic) -> bytes:
    """A topic's stored state (both stores): JSON without the fields at their defaults, each loop signature
    an array (core.model: Topic, Member, Sig). About 2.9 KB for a topic of 5 agents that remembers 20
    messages, where every field written out took 4 KB (`decode_topic` still reads that form)."""
    return _enc.encode(t)


def decode_topic(raw: bytes | str) -> Topic:
    try:
        return _topic_dec.decode(raw)
    except msgspec.ValidationError:  # stored before signatures were arrays: each one an object
        d = msgspec.json.decode(raw)
        if not isinstance(d, dict) or not isinstance(d.get("recent"), list):
            raise
        d["recent"] = [[s["author"], s["to"], s["text_hash"]] if isinstance(s, dict) else s for s in d["recent"]]
        return msgspec.convert(d, Topic)


def waits_funds(t: Topic) -> int | None:
    """The topics row's `waits_funds`: 1 while agents wait for funds there, else NULL."""
    return 1 if unfunded(t) else None


def encode_message(m: Message) -> bytes:
    """messages.body of `m`."""
    return _enc.encode(m)


def decode_message(body: bytes) -> Message:
    return _msg_dec.decode(body)


def wallet_key(workspace: str, account: str) -> tuple[str, str]:
    """A wallet row's key: an agent has a wallet per workspace it works in (issue 17: one wallet spanned every
    workspace), and each workspace has its pool."""
    return (workspace, account)


@dataclass(slots=True)
class Stored:
    """A delivery row as written, for the publisher."""

    id: int
    recipient: str
    wake: bool
    reason: str | None
    message: Message
