"""The wire: the one place that names fields on the socket (docs/protocol.md).

Client frames are JSON objects with an "op"; `parse` turns text into (op, ref, body)
or a `BadFrame`. Server frames are built by the functions below, so every field
name is written once.
"""

from __future__ import annotations

import os
import time
from datetime import datetime, timezone
from typing import Any

import msgspec

from . import names
from ..core import SYSTEM, Message, MessageType, Post, State
from ..core.assign import explain
from ..core.party import PartyView, roster_obj

MAX_FRAME = 1 << 20  # bytes; larger frames close the connection with 1009
MAX_TEXT = 200_000  # characters in one message
PRESENCE_TIMEOUT = 180.0  # seconds: an agent silent this long (no frame, no pong) counts as offline (issue 3)


class BadFrame(Exception):
    def __init__(self, detail: str, ref: Any = None):
        super().__init__(detail)
        self.detail, self.ref = detail, ref


_decoder = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder()

CLIENT_OPS = frozenset({
    "auth", "send", "ack", "fund", "history", "search_messages", "list_agents", "list_conversations",
    "list_topics", "list_members", "subscribe", "unsubscribe", "presence", "ping", "topic", "whoami",
    "list_workspaces", "list_groups", "create_workspace", "add_member", "add_agent", "set_budget", "balances",
    "create_org", "add_org_member", "set_restricted", "set_permissions", "leave_org", "delete_workspace", "list_orgs",
    "leave_workspace", "join_workspace", "list_joinable", "revoke_agent", "rotate_key", "add_group",
    "remove_group", "my_agents",
    *("add_participant", "remove_participant", "set_lead", "set_profile", "set_setting", "explain_assignment"),
    *("get_persona", "set_persona", "get_rulebook", "set_rulebook"),
})
# Ops the engine runs as commands, with the whole frame (docs/protocol.md, "Parties").
ENGINE_OPS = {"add_participant": "party", "remove_participant": "party", "set_lead": "party",
              "set_profile": "set_profile", "set_setting": "set_setting"}


def parse(data: str | bytes) -> tuple[str, Any, dict]:
    """Decode one client frame; raise BadFrame with a reason a person can read."""
    try:
        frame = _decoder.decode(data)
    except (msgspec.DecodeError, UnicodeDecodeError) as e:
        raise BadFrame(f"not JSON: {e}") from None
    except RecursionError:  # msgspec bounds its own depth with Python's recursion limit
        raise BadFrame("not JSON: nested too deeply") from None
    if not isinstance(frame, dict):
        raise BadFrame("a frame is one JSON object")
    ref = frame.get("ref")
    if ref is not None and (isinstance(ref, bool) or not isinstance(ref, (str, int, float))):
        raise BadFrame("ref must be a string or a number")
    op = frame.get("op")
    if not isinstance(op, str):
        raise BadFrame('every frame needs "op"', ref)
    if op not in CLIENT_OPS:
        raise BadFrame(f"unknown op {op!r}", ref)
    return op, ref, frame


def encode(frame: dict) -> str:
    return _encoder.encode(frame).decode()


def encode_utf8(frame: dict) -> bytes:
    """`encode` as the UTF-8 bytes a text frame carries (no str in between)."""
    return _encoder.encode(frame)


# --- send: strict where routing needs it, lenient on content (malformed -> inform) ---

def _str_list(v: Any) -> tuple[tuple[str, ...], bool]:
    if v is None:
        return (), True
    if isinstance(v, str):
        return (v,), True
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return tuple(v), True
    return (), False


def _opt_str(v: Any) -> tuple[str | None, bool]:
    if v is None or isinstance(v, str):
        return v, True
    return None, False


def to_post(frame: dict, *, message_id: str, author: str, workspace: str) -> Post:
    """Build the core's Post from a send frame.

    Server-derived fields (id, author, workspace, cost, created_at) never come from
    the client. Content with the wrong types is kept as well as it can be and
    marked malformed: the core turns it into an inform, never a wake.
    """
    ok = True
    text = frame.get("text")
    if text is None:  # null is as if left out, in every content field
        text = ""
    elif not isinstance(text, str):
        text, ok = encode({"text": text}), False
    if len(text) > MAX_TEXT:
        raise BadFrame(f"text longer than {MAX_TEXT} characters", frame.get("ref"))
    mtype = frame.get("type")
    if mtype is None:
        mtype = "request"
    if not isinstance(mtype, str) or mtype not in MessageType._value2member_map_:
        mtype, ok = MessageType.INFORM, False
    state = frame.get("state")
    if state is not None and (not isinstance(state, str) or state not in State._value2member_map_):
        state, ok = None, False
    to, good = _str_list(frame.get("to"))
    ok &= good
    waiting_for, good = _str_list(frame.get("waiting_for"))
    ok &= good
    in_reply_to, good = _opt_str(frame.get("in_reply_to"))
    ok &= good
    title, good = _opt_str(frame.get("title"))
    ok &= good
    if title is not None and title.strip():  # (a blank title is no title: the core decides what that means)
        try:
            title = names.clean("title", title)
        except names.BadName as e:
            raise BadFrame(e.detail, frame.get("ref")) from None
    topic = frame.get("topic")
    if topic is not None and not isinstance(topic, str):
        raise BadFrame("topic must be a topic id or \"new\"", frame.get("ref"))
    size = frame.get("attachment_bytes")
    if size is None:
        size = 0
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        size, ok = 0, False
    handoff = frame.get("handoff")
    if handoff is not None and type(handoff) is not bool:
        handoff, ok = False, False
    return Post(
        id=message_id, author=author, workspace=workspace, topic=topic or None,
        type=MessageType(mtype), text=text, title=title, to=to,
        state=State(state) if state else None, waiting_for=waiting_for, in_reply_to=in_reply_to,
        attachment_bytes=size, malformed=not ok, handoff=handoff is True,
    )


# --- ids ---

_ids: list[str] = []  # random bytes for the next ids, 32 hex digits each
_VARIANT = {c: "89ab"[int(c, 16) & 3] for c in "0123456789abcdef"}
os.register_at_fork(after_in_child=_ids.clear)  # a child never hands out its parent's next ids


def new_id() -> str:
    """A random UUID (version 4, as `str(uuid.uuid4())`), from the OS's CSPRNG, which is read once for
    256 ids: a quarter of the cost of `uuid.uuid4()` (one getrandom call and a UUID object per id)."""
    try:
        h = _ids.pop()
    except IndexError:
        raw = os.urandom(16 * 256).hex()
        _ids.extend([raw[i:i + 32] for i in range(0, len(raw), 32)])
        h = _ids.pop()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{_VARIANT[h[16]]}{h[17:20]}-{h[20:]}"


# --- server frames ---

_second: tuple[int, str] = (0, "1970-01-01T00:00:00")  # the last second formatted, shared by every thread


def iso(us: int) -> str:
    """Microsecond UTC timestamps on the wire: 2026-11-29T23:16:41.123456Z (the date and time of day formatted
    once a second)."""
    s, frac = divmod(us, 1_000_000)
    last = _second
    if last[0] != s:
        last = _set_second(s)
    return f"{last[1]}.{frac:06d}Z"


def _set_second(s: int) -> tuple[int, str]:
    global _second
    _second = last = (s, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(s)))
    return last


def from_iso(s: str) -> int:
    dt = datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)
    return int(dt.timestamp()) * 1_000_000 + dt.microsecond


def message_obj(m: Message) -> dict:
    out = {
        "id": m.id, "workspace": m.workspace, "conversation": m.conversation, "topic": m.topic,
        "author": m.author, "type": m.type, "to": list(m.to), "state": m.state,
        "waiting_for": list(m.waiting_for), "in_reply_to": m.in_reply_to, "text": m.text,
        "created_at": iso(m.created_at), "cost": m.cost, "title": m.title,
    }
    if m.notice:
        out["notice"] = m.notice
    if m.malformed:
        out["malformed"] = True
    if m.handoff:
        out["handoff"] = True
    if m.assignment is not None:
        out["assignment"] = explain(m.assignment)
    return out


def for_agent(obj: dict, pv: PartyView | None) -> dict:
    """A message object as an agent sees it (docs/rules.md, "What agents see"): in a party, an agent
    author's name rides along (`author_name`); an agent author no longer in the conversation loses its
    author (`author: null`, `author_removed: true`), its text kept. People's copies are never changed."""
    if pv is None:
        return obj
    author = obj.get("author")
    name = pv.names.get(author)
    if name is not None:
        return {**obj, "author_name": name} if pv.party else obj
    if author is not None and author != SYSTEM and not author.startswith("human."):  # an agent: removed
        return {**obj, "author": None, "author_removed": True}
    return obj


def roster_for(pv: PartyView | None, me: str) -> list[dict]:
    """The `roster` field of an agent's deliver frame: who else is in the party."""
    return [] if pv is None else roster_obj(tuple(e for e in pv.roster if e.id != me))


def error(ref: Any, code: str, detail: str = "") -> dict:
    return {"op": "error", "ref": ref, "code": code, "detail": detail}


def refused(ref: Any, reason: str, detail: str) -> dict:
    return {"op": "refused", "ref": ref, "reason": reason, "detail": detail}


def party_target(frame: dict) -> tuple[str | None, dict | None]:
    """add_participant / remove_participant / set_lead: the frame's target (the participant, or the
    Lead, which may be null), or a `bad_frame` error naming what is missing (both engines)."""
    op, ref = frame.get("op"), frame.get("ref")
    target = frame.get("lead") if op == "set_lead" else frame.get("participant")
    if not isinstance(frame.get("workspace"), str) or not isinstance(frame.get("conversation"), str) or not (
            isinstance(target, str) or (op == "set_lead" and target is None)):
        return None, error(ref, "bad_frame", f"{op} needs workspace, conversation and "
                           + ("lead (or null)" if op == "set_lead" else "participant"))
    return target, None


def answer(ref: Any, d) -> dict:
    """A send's answer from its decision (`core.Decision`): `refused`, or `sent` with the message as
    stored, who it reached and how, and its cost (both engines)."""
    if d.refusal:
        return refused(ref, d.refusal.reason, d.refusal.detail)
    main = d.routed[0]
    return {
        "op": "sent", "ref": ref, "message": message_obj(main.message),
        "deliveries": [{"to": x.recipient, "wake": x.wake, "reason": x.reason} for x in main.deliveries],
        "cost": main.message.cost,
    }
