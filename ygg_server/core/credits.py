"""Running out of credits: the refusal, the paused topic and the funding request (seed 000)."""

from __future__ import annotations

from msgspec.structs import replace

from .decision import Decision, Flag, Routed, View, refused
from .directory import Directory
from .lifecycle import BUDGET, WALLET, move, unfunded
from .model import Participant, Post, Topic
from .notices import notice
from .vocabulary import Kind, Notice, RefusalReason as R, Role, TopicStatus

BROKE = "broke"  # the flag on an agent whose funders in a workspace were asked; a funding there clears it (funding.py)

_HUMAN, _PAUSED = Kind.HUMAN, TopicStatus.PAUSED  # (Enum class attributes are slow to read)
_VIEWER, _OWNER, _ADMIN = Role.VIEWER, Role.OWNER, Role.ADMIN


def exhausted(view: View, post: Post, author: Participant, topic: Topic | None, cost: int, now: int) -> Decision:
    """Seed 000: "its message is refused, its topic pauses, and the people who can fund it see a request"."""
    d = view.directory
    have = f"needs {cost}, wallet {view.wallet or 0}, pool {view.pool}"
    why = WALLET
    if topic is not None and topic.budget is not None and topic.budget < cost:
        have = f"needs {cost}, topic budget {topic.budget}"
        why = BUDGET
    topics: tuple[Topic, ...] = ()
    waiting = unfunded(topic) if topic is not None else {}
    known = waiting.get(author.id) == why  # already waiting here for the same reason
    if topic is not None and not (known and topic.status == _PAUSED):
        # Every agent that runs out here waits for its funds; paused_by stays the first of them.
        paused = move(topic, "credits_out", now, unfunded={**waiting, author.id: why})
        if paused.pause == "credits" and paused.paused_by is None:
            paused = replace(paused, paused_by=author.id)
        topics = (paused,)
    routed: tuple[Routed, ...] = ()
    flags: tuple[Flag, ...] = ()
    if why == BUDGET:
        # The agent is not broke: the topic's budget is. Its people raise the budget (set_budget),
        # and are asked once per agent stopped by it.
        if not known:
            routed = (notice(Notice.FUNDING_REQUEST, workspace=d.workspace, conversation=topic.conversation,
                             topic=topic.id, to=funders_of(d, author), now=now, cause=post.id,
                             agent=author.name, detail=have),)
    elif (BROKE, author.id, d.workspace) not in view.flags:
        funders = funders_of(d, author)
        conv = topic.conversation if topic else view.conversation.id
        routed = (notice(Notice.FUNDING_REQUEST, workspace=d.workspace, conversation=conv,
                         topic=topic.id if topic else None, to=funders, now=now, cause=post.id,
                         agent=author.name, detail=have),)
        flags = (Flag(BROKE, author.id, workspace=d.workspace),)
    asked = "the topic's people were asked to raise its budget" if why == BUDGET else "those who fund you were asked"
    return refused(R.CREDITS_EXHAUSTED, f"{have}; {asked}: a credits_refilled notice wakes you to send it again",
                   topics=topics, routed=routed, flags=flags)


def funders_of(d: Directory, agent: Participant) -> tuple[str, ...]:
    """The people who can fund an agent: its owner, and the workspace's owners and admins."""
    out = [agent.owner] if agent.owner in d.memberships and d.memberships[agent.owner].role != _VIEWER else []
    out += [p for p, m in d.memberships.items()
            if m.role in (_OWNER, _ADMIN) and p not in out and d.participants[p].kind == _HUMAN]
    return tuple(out)
