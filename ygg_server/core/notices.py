"""System notices: messages from system.ygg that the rulebook itself sends."""

from __future__ import annotations

from .decision import Delivery, Routed
from .directory import Directory, derived_id
from .model import Conversation, Message
from .vocabulary import SYSTEM, ContextReason, Kind, MessageType, Notice

TEXTS = {
    Notice.CLOSURE_POLL: "Others on this topic are done. Are you done too? Answer with state done, or say what is left.",
    Notice.NUDGE: "{waiters} waits on you here. Please answer.",
    Notice.RESUME: "{detail}",
    Notice.CREDITS_REFILLED: "Your credits were refilled. Resend what did not go through.",
    Notice.FUNDING_REQUEST: "{agent} is out of credits ({detail}). Fund it to let it go on.",
    Notice.AUTO_DONE: "{who} did not answer the closure poll for an hour and is counted done.",
}


def notice(
    kind: Notice,
    *,
    workspace: str,
    conversation: str,
    topic: str | None,
    to: tuple[str, ...],
    now: int,
    cause: str,
    wake: bool = True,
    observers: tuple[str, ...] = (),
    **words: str,
) -> Routed:
    """A notice to `to` (woken, or context when `wake` is False) and `observers` (context).

    Its id derives from what caused it, so the same notice decided twice is one row.
    """
    text = TEXTS[kind].format(**words)
    mtype = MessageType.REQUEST if wake else MessageType.INFORM
    mid = derived_id(kind, cause, *to)
    msg = Message(mid, workspace, conversation, topic, SYSTEM, mtype, text, now, to=to, notice=kind)
    reason = None if wake else ContextReason.CONTEXT_INFORM
    deliveries = [Delivery(r, wake, reason) for r in to]
    deliveries += [Delivery(o, False, ContextReason.OBSERVER) for o in observers if o not in to]
    return Routed(msg, tuple(deliveries))


def human_members(directory: Directory, conversation: Conversation) -> tuple[str, ...]:
    """The people who see a conversation: everyone for General, its members otherwise."""
    ps, ms = directory.participants, directory.memberships
    pool = ms.keys() if not conversation.members else conversation.members
    return tuple(
        p for p in pool if (q := ps.get(p)) is not None and q.kind == Kind.HUMAN and p in ms and ms[p].receive
    )
