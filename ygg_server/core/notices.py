"""System notices: messages from system.ygg that the rulebook itself sends."""

from __future__ import annotations

from .decision import Delivery, Routed
from .directory import Directory, derived_id
from .model import Conversation, Message
from .vocabulary import SYSTEM, ContextReason, Kind, MessageType, Notice

TEXTS = {  # plain texts (no {word}) are sent as they are
    Notice.CLOSURE_POLL: "Others on this topic are done. Are you done too? Answer with state done, or say what is left.",
    Notice.NUDGE: "{waiters} waits on you here. Please answer.",
    Notice.RESUME: "{detail}",
    Notice.CREDITS_REFILLED: "Your credits were refilled. Resend what did not go through.",
    Notice.FUNDING_REQUEST: "{agent} is out of credits ({detail}). Fund it to let it go on.",
    Notice.AUTO_DONE: "{who} did not answer the closure poll for an hour and is counted done.",
    Notice.HOP_LIMIT: ("The agents used the {hops} agent-to-agent hops one person's message allows here; "
                       "they stop waking each other until a person writes."),
    Notice.THROTTLED: ("{run} agent messages in a row with no person in between: this conversation is "
                       "throttled, and agents' messages wake nobody until a person writes."),
    Notice.SIDE_RESULT: "{agent} finished the side task {title!r}: {detail}",
    Notice.THREAD_SETTLED: "{who} marked this side thread {state}{summary}",
}

_REQUEST, _INFORM = MessageType.REQUEST, MessageType.INFORM  # Enum class attributes are slow to read
_CONTEXT_INFORM, _OBSERVER = ContextReason.CONTEXT_INFORM, ContextReason.OBSERVER


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
    text = TEXTS[kind].format(**words) if words else TEXTS[kind]
    msg = Message(derived_id(kind, cause, *to), workspace, conversation, topic, SYSTEM,
                  _REQUEST if wake else _INFORM, text, now, to, None, (), None, None, 0, kind)
    reason = None if wake else _CONTEXT_INFORM
    if len(to) == 1 and not observers:
        return Routed(msg, (Delivery(to[0], wake, reason),))
    deliveries = [Delivery(r, wake, reason) for r in to]
    deliveries += [Delivery(o, False, _OBSERVER) for o in observers if o not in to]
    return Routed(msg, tuple(deliveries))


def human_members(directory: Directory, conversation: Conversation) -> tuple[str, ...]:
    """The people who see a conversation: everyone for General, its members otherwise."""
    everyone = directory.receivers
    if everyone is None:  # a Directory made without build()
        ps, ms = directory.participants, directory.memberships
        everyone = tuple(p for p, m in ms.items() if m.receive and (q := ps.get(p)) is not None and q.kind == Kind.HUMAN)
    if not conversation.members:
        return everyone
    return tuple(p for p in conversation.members if p in everyone)
