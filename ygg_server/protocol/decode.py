"""A client frame's text to its typed frame (`frames.py`), once, at the edge; or a `BadFrame` saying why.

The usual frame takes one msgspec decode into its Struct. A frame that does not fit is decoded again as plain
JSON, only to say what is wrong in the order a person reads it: not JSON, not an object, a `ref` that is not a
string or a number, no `op`, an unknown op, then the field and what is wrong with it. A key written twice
counts as written last, as in any JSON object.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from .frames import BY_OP, ClientFrame, Frame

MAX_FRAME = 1 << 20  # bytes; larger frames close the connection with 1009
MAX_RESPONSE = 1 << 24  # bytes: the largest frame clients accept (client.py, docs/protocol.md); none is larger

# What a `bad_frame` adds about a field, after naming it and what is wrong (decode.py)
HINTS = {
    "workspace": "workspace is a workspace id (see list_workspaces)",
    "conversation": "conversation is general, dm:<participant>, group:<name> or a conversation id",
    "topic": 'topic is a topic id (or "new" in a send)',
    "client_id": "client_id is a short string (1 to 200 characters)",
    "before": "before is the cursor of a previous page",
    "ids": "ids must be a list of delivery ids: the integer id of each deliver frame",
    "prefetch": "prefetch is a whole number from 1 to 256 (default 16)",
    "directives": "directives is true or false (default true)",
    "monitor": "monitor is true or false",
    "restricted": "restricted is true or false",
    "send": "send is true or false",
    "receive": "receive is true or false",
    "generalist": "generalist is true or false",
    "can_message": "can_message is a list of participants (empty: anyone)",
    "takes_from": "takes_from is a list of participants (empty: anyone)",
    "capabilities": "capabilities must be a list of up to 100 short strings",
    "tools": "tools must be a list of up to 100 short strings",
    "cost": "cost is a whole number from 0 to 1,000,000",
    "agent": "agent is an agent's id, or a name",
    "participant": "participant is a participant's name or id",
    "lead": "lead is a participant's name or id, or null for none",
    "members": "members is a list of names, as in a send's to",
    "org": "org is an organization id (see list_orgs)",
    "role": "role is owner, admin, member or viewer",
    "capability": "capability is a capability agents declare",
    "key": "key is a setting's name",
    "workspaces": "workspaces is a list of workspace ids, or null to unpin",
    "message": "message is a message id",
    "text": "text is the message's new text",
    "handle": "handle is a person's handle (@alice or alice)",
    "invitation": "invitation is an invitation's id (see list_invitations)",
    "agents": "agents is true or false (whether your agents follow you there; default false)",
    "session": 'session is a session id (see list_sessions), "others" or "all"',
}


class BadFrame(Exception):
    """`detail` says what is wrong; `ref` is the frame's, if it had a good one; `op` is set when the op is known
    and only its fields are wrong (before sign-in such a frame is `unauthenticated`, as any other op is)."""

    def __init__(self, detail: str, ref: Any = None, op: str | None = None):
        super().__init__(detail)
        self.detail, self.ref, self.op = detail, ref, op


_frames = msgspec.json.Decoder(ClientFrame)
_json = msgspec.json.Decoder()
_REF = frozenset({str, int, float, type(None)})


def decode(data: str | bytes) -> Frame:
    """One client frame, typed; raise BadFrame with a reason a person can read."""
    if type(data) is not str:  # a binary frame (clients send text): read whole, its UTF-8 checked throughout
        return _refit(data)
    try:
        frame = _frames.decode(data)
    except msgspec.ValidationError:
        return _refit(data)
    except (msgspec.DecodeError, UnicodeError) as e:  # (a str holding a lone surrogate is no UTF-8 text)
        raise BadFrame(f"not JSON: {e}") from None
    except RecursionError:  # msgspec bounds its own depth with Python's recursion limit
        raise BadFrame("not JSON: nested too deeply") from None
    if type(frame.ref) not in _REF:
        raise BadFrame("ref must be a string or a number")
    return frame


def _refit(data: str | bytes) -> Frame:
    """A frame decoded as plain JSON first: why it is not a frame, or (a key written twice, the last one good; a
    binary frame) the frame."""
    try:
        obj = _json.decode(data)
    except (msgspec.DecodeError, UnicodeError) as e:
        raise BadFrame(f"not JSON: {e}") from None
    except RecursionError:
        raise BadFrame("not JSON: nested too deeply") from None
    if not isinstance(obj, dict):
        raise BadFrame("a frame is one JSON object")
    ref = obj.get("ref")
    if type(ref) not in _REF:
        raise BadFrame("ref must be a string or a number")
    op = obj.get("op")
    if not isinstance(op, str):
        raise BadFrame('every frame needs "op"', ref)
    kind = BY_OP.get(op)
    if kind is None:
        raise BadFrame(f"unknown op {op!r}", ref)
    try:
        return msgspec.convert(obj, kind)
    except msgspec.ValidationError as e:
        raise BadFrame(why(op, e), ref, op) from None
    except RecursionError:
        raise BadFrame("not JSON: nested too deeply", ref) from None


_AT = re.compile(r"(.*?)(?: - at `\$\.?(.*)`)?", re.S)
_MISSING = re.compile(r"Object missing required field `(.*)`")


def why(op: str, e: msgspec.ValidationError) -> str:
    """A `bad_frame`'s detail: the op, the field and what is wrong with it, and what the field is (HINTS).

    `ack: ids[0] expected int, got str; ids must be a list of delivery ids: …`; a check of several fields
    (a `__post_init__`) says its own words."""
    message, where = _AT.fullmatch(str(e)).groups()
    missing = _MISSING.fullmatch(message)
    if missing:
        where = f"{where}.{missing[1]}" if where else missing[1]
        problem = "is missing"
    elif where:
        problem = message[0].lower() + message[1:].replace("`", "")
    else:
        return message
    hint = HINTS.get(re.match(r"\w*", where)[0])
    return f"{op}: {where} {problem}" + (f"; {hint}" if hint else "")
