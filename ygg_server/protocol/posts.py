"""A `send` frame as the core's Post: strict where routing needs it (the frame's types), lenient on content."""

from __future__ import annotations

from typing import Any

from . import names
from .decode import BadFrame
from .frames import Send
from .replies import encode
from ..core import MessageType, Post, State

MAX_TEXT = 200_000  # characters in one message


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


def to_post(frame: Send, *, message_id: str, author: str, workspace: str) -> Post:
    """Build the core's Post from a send frame.

    Server-derived fields (id, author, workspace, cost, created_at) never come from
    the client. Content with the wrong types is kept as well as it can be and
    marked malformed: the core turns it into an inform, never a wake.
    """
    ok = True
    text = frame.text
    if text is None:  # null is as if left out, in every content field
        text = ""
    elif not isinstance(text, str):
        text, ok = encode({"text": text}), False
    if len(text) > MAX_TEXT:
        raise BadFrame(f"text longer than {MAX_TEXT} characters", frame.ref)
    mtype = frame.type
    if mtype is None:
        mtype = "request"
    if not isinstance(mtype, str) or mtype not in MessageType._value2member_map_:
        mtype, ok = MessageType.INFORM, False
    state = frame.state
    if state is not None and (not isinstance(state, str) or state not in State._value2member_map_):
        state, ok = None, False
    to, good = _str_list(frame.to)
    ok &= good
    waiting_for, good = _str_list(frame.waiting_for)
    ok &= good
    in_reply_to, good = _opt_str(frame.in_reply_to)
    ok &= good
    title, good = _opt_str(frame.title)
    ok &= good
    if title is not None and title.strip():  # (a blank title is no title: the core decides what that means)
        try:
            title = names.clean("title", title)
        except names.BadName as e:
            raise BadFrame(e.detail, frame.ref) from None
    handoff = frame.handoff
    if handoff is not None and type(handoff) is not bool:
        handoff, ok = False, False
    return Post(
        id=message_id, author=author, workspace=workspace, topic=frame.topic or None,
        type=MessageType(mtype), text=text, title=title, to=to,
        state=State(state) if state else None, waiting_for=waiting_for, in_reply_to=in_reply_to,
        malformed=not ok, handoff=handoff is True,
    )
