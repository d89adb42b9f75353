"""The wire (docs/protocol.md): client frames in, server frames out; the one place field names are written.

- `frames.py`: one msgspec Struct per client op, a tagged union on `op`.
- `decode.py`: a frame's text to its typed frame, once, at the edge, or a `BadFrame` naming the field.
- `posts.py`: a `send` frame as the core's Post (content of the wrong type downgraded, never a wake).
- `results.py`: what the writer answers each command with (typed results, no wire form).
- `replies.py`: replies, events and the message and topic objects in them; a writer's result as its reply
  (`render`); `encode`.
- `ids.py`, `times.py`: the ids and timestamps the server gives; `names.py`: the checks of names and titles.
"""

from __future__ import annotations

from .decode import MAX_FRAME, MAX_RESPONSE, BadFrame, decode
from .frames import CLIENT_OPS, ClientFrame, Frame
from .ids import new_id
from .posts import MAX_TEXT, to_post
from . import results
from .replies import encode, encode_utf8, error, for_agent, message_obj, refused, render, reply, roster_for, topic_obj
from .results import ErrorCode
from .times import from_iso, iso

PRESENCE_TIMEOUT = 180.0  # seconds: an agent silent this long (no frame, no pong) counts as offline (issue 3)

__all__ = [
    "MAX_FRAME", "MAX_RESPONSE", "MAX_TEXT", "PRESENCE_TIMEOUT", "CLIENT_OPS", "BadFrame", "ClientFrame", "Frame", "decode",
    "to_post", "new_id", "iso", "from_iso", "encode", "encode_utf8", "error", "refused", "render", "reply", "results",
    "message_obj", "for_agent", "roster_for", "topic_obj", "ErrorCode",
]
