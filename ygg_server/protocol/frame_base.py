"""What every client frame is made of (frames.py, work_frames.py): the tagged Struct, its workspace and
conversation bases, and the field types the ops share."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import Meta

ShortText = Annotated[str, Meta(min_length=1, max_length=200)]
DeliveryId = Annotated[int, Meta(ge=-(2**63), le=2**63 - 1)]  # a 64-bit integer, as the stores keep it
Strings = Annotated[list[Any], Meta(max_length=100)]  # each item checked as a name (names.clean_each)


class Frame(msgspec.Struct, tag_field="op", kw_only=True, frozen=True, gc=False, omit_defaults=True):
    """Every client frame: its op (the tag) and the `ref` its reply echoes (any JSON value here; `decode`
    accepts a string or a number)."""

    ref: Any = None

    @property
    def op(self) -> str:
        return self.__struct_config__.tag


class InWorkspace(Frame, kw_only=True, frozen=True, gc=False):
    workspace: str


class InConversation(InWorkspace, kw_only=True, frozen=True, gc=False):
    conversation: str
