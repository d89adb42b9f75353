"""A topic's life in one table, and the helpers every decision uses to move it.

    open    --needs_human-->  paused(needs_human)   an agent asks for a person
    open    --credits_out-->  paused(credits)       an agent's wallet, the pool or the budget ran dry
    paused  --person_wrote--> open                  a person stepped in
    paused  --refilled----->  open                  (credits only) a person funded the agent
    open    --all_done----->  closed                everyone in it is done (or counted done)
    paused  --all_done----->  closed
    closed  --anything----->  closed                archived: nothing wakes anyone again
"""

from __future__ import annotations

from msgspec.structs import replace

from .model import Member, Topic
from .vocabulary import SYSTEM, Pause, State, TopicStatus

O, P, C = TopicStatus.OPEN, TopicStatus.PAUSED, TopicStatus.CLOSED

TRANSITIONS: dict[tuple[TopicStatus, str], TopicStatus] = {
    (O, "needs_human"): P,
    (O, "credits_out"): P,
    (P, "needs_human"): P,
    (P, "credits_out"): P,
    (P, "person_wrote"): O,
    (O, "person_wrote"): O,
    (P, "refilled"): O,
    (O, "refilled"): O,
    (O, "all_done"): C,
    (P, "all_done"): C,
}


_DONE, _WAITING = State.DONE, State.WAITING  # module constants: Enum class attributes are slow to read
_NEEDS_HUMAN_PAUSE, _CREDITS_PAUSE = Pause.NEEDS_HUMAN, Pause.CREDITS


def move(topic: Topic, event: str, now: int, **fields) -> Topic:
    """Apply one event from the table; events not in it leave the status alone."""
    status = TRANSITIONS.get((topic.status, event), topic.status)
    if status == C:
        members = fields.pop("members", topic.members)
        members = {
            p: m if not (m.wake_pending or m.polled_at is not None or m.awaited_since is not None or m.asked)
            else replace(m, wake_pending=False, polled_at=None, awaited_since=None, asked=False, repolled=False)
            for p, m in members.items()
        }
        return replace(topic, status=C, pause=None, paused_by=None, closed_at=now, members=members, pending={},
                       unfunded={}, **fields)
    if status == O:
        fields.setdefault("pause", None)
        fields.setdefault("paused_by", None)
    elif event == "needs_human":
        fields.setdefault("pause", _NEEDS_HUMAN_PAUSE)
    elif event == "credits_out" and topic.pause is None:
        fields.setdefault("pause", _CREDITS_PAUSE)
    return replace(topic, status=status, **fields)


def everyone_done(members: dict[str, Member]) -> bool:
    if not members:
        return False
    for p, m in members.items():
        if m.state != _DONE and p != SYSTEM:
            return False
    return True


def someone_done(members: dict[str, Member]) -> bool:
    for m in members.values():
        if m.state == _DONE:
            return True
    return False


def waiting_on(members: dict[str, Member], pid: str) -> tuple[str, ...]:
    """Who currently waits on `pid`."""
    return tuple(p for p, m in members.items() if m.state == _WAITING and pid in m.waiting_for)


WALLET, BUDGET = "wallet", "budget"  # what ran dry for an agent in Topic.unfunded


def holds_slot(topic: Topic) -> bool:
    """Whether `topic` counts against its opener's TOPIC_LIMIT: open, or paused for anything but funds (issue 17:
    a credits pause nobody funds held the agent's slots forever). The store counts the same (`OPEN_SLOT`)."""
    return topic.status != C and not (topic.status == P and unfunded(topic))


# `holds_slot` in SQL, over the topics row (`waits_funds` is 1 exactly while `unfunded` is not empty)
OPEN_SLOT = "status != 'closed' AND NOT (status = 'paused' AND waits_funds IS NOT NULL)"


def unfunded(topic: Topic) -> dict[str, str]:
    """The agents waiting for funds on `topic`, and what ran dry for each.

    A topic stored before `unfunded` existed names only `paused_by` (a wallet or the pool).
    """
    if topic.unfunded:
        return topic.unfunded
    if topic.paused_by is not None and topic.pause == _CREDITS_PAUSE:
        return {topic.paused_by: WALLET}
    return {}
