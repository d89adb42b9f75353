"""What the writer answers each command with: a typed result, never a wire frame (issue 16).

The writer decides; the edge words the answer. Each command's answer is one of the Structs below (`Answer`),
or None for `session` and `sync` (answered once committed, with nothing to say), or the error it ended
with. `replies.render(ref, result)` turns a result into its frame, with the frame's `ref`, once, where the
gateway answers. Results cross the writer process typed (`writer/process.py`: MessagePack, decoded back into
these Structs), and carry no `ref` (a client's ref is any JSON value: it stays with the gateway).

A send with a `client_id` keeps its `Sent` (`keep`: MessagePack of the Struct, not a wire reply) in the
idempotency table; the same send again is answered `Duplicate` of those bytes, rendered at the edge with the
new ref and `duplicate: true`. Rows written before results were kept typed hold the old `sent` reply's JSON
(without its ref); `kept` tells them apart (a JSON object starts with `{`, MessagePack of a Struct never does)
and `replies.render` replays them as they were replayed then.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Union

import msgspec

from ..core import Message, Profile, RefusalReason
from ..core.decision import Delivery


class ErrorCode(StrEnum):
    """An `error` frame's code (docs/protocol.md): the frame could not be taken as it is (a `refused` is a rule's
    answer, with a core.RefusalReason)."""

    BAD_FRAME = "bad_frame"
    BAD_NAME = "bad_name"
    NOT_FOUND = "not_found"
    FORBIDDEN = "forbidden"
    UNAUTHENTICATED = "unauthenticated"
    UNAVAILABLE = "unavailable"
    INTERNAL = "internal"
    BUSY = "busy"  # the server has no room for this now (a full password-check queue): `retry_after` seconds
    RATE_LIMITED = "rate_limited"  # faster than `Limits.send_rate` (sends) or `op_rate` (other ops): `retry_after` seconds
    # people's accounts (issue 18: ops/accounts.py, ops/invitations.py)
    BAD_HANDLE = "bad_handle"  # a handle that breaks a naming rule (protocol/names.py)
    HANDLE_TAKEN = "handle_taken"  # a handle that is, compared as handles are (names.handle_key), another's
    WEAK_PASSWORD = "weak_password"  # shorter than accounts.MIN_PASSWORD
    WRONG_PASSWORD = "wrong_password"  # change_password: the current password given is not it
    NOT_A_MEMBER = "not_a_member"  # remove_member: that person is not in it (an unknown handle is not either)
    OWNER_PERMANENT = "owner_permanent"  # seed 003 §66: an owner is never removed or lowered
    # where agents run and the public directory (issue 24: ops/hosting.py, ops/listings.py)
    UNKNOWN_HOST = "unknown_host"  # no host of that name (or id) of the agent's owner
    PINNED_TO_SHARED = "pinned_to_shared_workspace"  # seed 003 §67: such an agent is not published


class _Result(msgspec.Struct, tag_field="result", frozen=True, gc=False):
    """A command's answer (tagged, so a union of them decodes back into the right one)."""


class Sent(_Result, tag="sent"):
    """A send stored: the message as stored, who it reached and how (its cost is the message's)."""

    message: Message
    deliveries: tuple[Delivery, ...] = ()
    # its `<dm>` parts (core/threads.py): what they cost beyond the message, and those refused (thread, reason)
    threads_cost: int = 0
    threads_refused: tuple[tuple[str, str], ...] = ()


class Duplicate(_Result, tag="duplicate"):
    """A send whose `client_id` was answered before: the first answer as kept (`keep`; or, in a row written before
    results were kept typed, that `sent` reply's JSON), passed on unread."""

    kept: bytes


class Refused(_Result, tag="refused"):
    """A rule's answer: the command changed nothing it asked for."""

    reason: RefusalReason
    detail: str = ""


class Failed(_Result, tag="error"):
    """The command could not be taken as it is (an `error` frame)."""

    code: ErrorCode
    detail: str = ""


class Funded(_Result, tag="funded"):
    account: str
    balance: int | None


class BudgetSet(_Result, tag="set_budget"):
    topic: str
    budget: int | None


class PartyChanged(_Result, tag="party"):
    """add_participant / remove_participant / set_lead (`op`): the conversation as it is now."""

    op: str
    conversation: str
    members: list[str]
    lead: str | None
    changed: bool


class ProfileSet(_Result, tag="set_profile"):
    agent: str
    profile: Profile


class SettingSet(_Result, tag="set_setting"):
    workspace: str
    key: str
    value: Any  # as the frame gave it, checked against the setting


class Revised(_Result, tag="revised"):
    """edit_message / delete_message (`op`): the message as it is now, and who was told (context, never a wake)."""

    op: str
    message: Message
    deliveries: tuple[Delivery, ...] = ()


class ThreadSettled(_Result, tag="settle_thread"):
    """settle_thread: the side thread as it is now."""

    thread: str
    state: str
    summary: str | None


class ArtifactSaved(_Result, tag="artifact"):
    """create_artifact / update_artifact / comment_artifact (`op`): the message that posted it, who it reached, and
    the version as it is now (`unchanged`: the same body again, nothing written)."""

    op: str
    artifact: str
    version: int
    title: str
    kind: str
    message: Message | None = None
    deliveries: tuple[Delivery, ...] = ()
    unchanged: bool = False


class CardPressed(_Result, tag="press_card"):
    """press_card: the card's message as it is now (an in-place button: its card's new state, those it reached
    told), or the request that handed the press to the card's author, and who that reached."""

    card: str  # the card's message id
    action: str
    message: Message
    deliveries: tuple[Delivery, ...] = ()
    in_place: bool = False


class Acked(_Result, tag="acked"):
    """The ids the ack retired, in the order asked, each once (the store fills the list as it writes)."""

    ids: list[int]


Result = Union[Sent, Duplicate, Refused, Failed, Funded, BudgetSet, PartyChanged, ProfileSet, SettingSet, Revised,
               ThreadSettled, ArtifactSaved, CardPressed, Acked]
Answer = Union[Result, None]  # None: `session`, `sync`

_keep = msgspec.msgpack.Encoder()
_kept = msgspec.msgpack.Decoder(Sent)


def keep(sent: Sent) -> bytes:
    """A send's answer as the idempotency table keeps it."""
    return _keep.encode(sent)


def kept(blob: bytes) -> Sent | None:
    """A kept answer back as its `Sent`; None: a row written before answers were kept typed (the old reply's JSON)."""
    blob = bytes(blob)
    if blob[:1] == b"{":
        return None
    return _kept.decode(blob)
