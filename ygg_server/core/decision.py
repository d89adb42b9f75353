"""What the core hands back: plain data the store applies in one transaction."""

from __future__ import annotations

import msgspec

from .directory import Directory
from .model import Conversation, Fitness, Message, Topic
from .rules import MAX_HOPS, THROTTLE_DIRECT, THROTTLE_GROUP
from .vocabulary import ContextReason, RefusalReason


class Delivery(msgspec.Struct, frozen=True, gc=False):
    """One recipient's copy: a wake, or context with the reason it did not wake."""

    recipient: str
    wake: bool
    reason: ContextReason | None = None


class Routed(msgspec.Struct, frozen=True, gc=False):
    message: Message
    deliveries: tuple[Delivery, ...] = ()


class Entry(msgspec.Struct, frozen=True, gc=False):
    """A ledger line: credits into (+) or out of (-) an agent's wallet or the pool."""

    workspace: str
    account: str  # an agent id, or POOL
    delta: int
    cause: str  # the message or funding that moved it


class Flag(msgspec.Struct, frozen=True, gc=False):
    """A mark the store keeps per agent between decisions, in one workspace or in all ('*').

    `blocked` ('*': an agent's open topics are counted across workspaces): refused topic_limit, to be resumed
    when a slot frees; `broke` (per workspace: another workspace's people neither see it nor are spared a
    request by it): out of credits there, a funding request is already raised there.
    """

    name: str
    agent: str
    on: bool = True
    workspace: str = "*"

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.name, self.agent, self.workspace)


class Refusal(msgspec.Struct, frozen=True, gc=False):
    reason: RefusalReason
    detail: str = ""


class Decision(msgspec.Struct, frozen=True, gc=False):
    """Everything one post (or one timer, or one funding) changes.

    A refusal stores no message and charges nothing, but may still pause a
    topic and raise a funding request (seed 000: credits_exhausted).
    """

    refusal: Refusal | None = None
    routed: tuple[Routed, ...] = ()  # the post's own message first, then notices
    topics: tuple[Topic, ...] = ()  # new states of the topics it touched
    conversation: Conversation | None = None  # made, or given new members
    ledger: tuple[Entry, ...] = ()
    usage: int = 0  # messages counted against the plan (once per recipient)
    flags: tuple[Flag, ...] = ()  # per-agent marks set (on) or cleared (off)
    absorbed: bool = False  # addressed only to system.ygg: stored, not delivered (free only as a notice's answer)
    side: Conversation | None = None  # a direct conversation's side conversation, its turn counters moved

    @property
    def message(self) -> Message | None:
        return self.routed[0].message if self.routed and self.refusal is None else None


class View(msgspec.Struct, frozen=True, gc=False):
    """The snapshot `decide` judges a post against (the Load step fills it)."""

    directory: Directory
    conversation: Conversation | None
    topic: Topic | None = None
    open_opened: int = 0  # topics the author opened that are not closed
    wallet: int | None = None  # the author's wallet here; None: it has none
    pool: int = 0
    draws_pool: bool = False  # an admin lets the author draw on the pool beyond its wallet (`credits.poolDraw`)
    plan_left: int | None = None  # messages the organization may still send this month
    flags: frozenset[tuple[str, str, str]] = frozenset()  # (flag name, agent, workspace) marks in force
    new_conversation: bool = False  # `conversation` is not stored yet (a first direct message)
    max_hops: int = MAX_HOPS  # the workspace's party.maxHops
    throttle: tuple[int, int] = (THROTTLE_DIRECT, THROTTLE_GROUP)  # agent messages in a row: (direct, group)
    # Assignment scoring (seed 003 §14), for a post to a `capability:`: the workspace's weights
    # (`assign.weights`; None: the defaults) and what is known of each agent now (presence, load, ...).
    weights: dict[str, float] | None = None
    fitness: dict[str, Fitness] = {}
    # A direct conversation's side conversation for the post's topic, if it exists (seed 003 §15).
    side: Conversation | None = None


def refused(reason: RefusalReason, detail: str = "", **effects) -> Decision:
    return Decision(refusal=Refusal(reason, detail), **effects)
