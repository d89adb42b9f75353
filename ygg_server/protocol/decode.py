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

from .frames import BY_OP, HINTS, ClientFrame, Frame

MAX_FRAME = 1 << 20  # bytes; larger frames close the connection with 1009
MAX_RESPONSE = 1 << 24  # bytes: the largest frame clients accept (client.py, docs/protocol.md); none is larger


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
