"""A topic's closing round: seed 000's closure poll, what closing frees, and the resume notices."""

from __future__ import annotations

from msgspec.structs import replace

from .decision import Delivery, Flag, Routed, View
from .directory import Directory
from .model import Member, Pending, Topic
from .notices import notice
from .vocabulary import SYSTEM, ContextReason, Kind, Notice, State

BLOCKED = "blocked"  # the flag on an agent refused topic_limit; closing one of its topics resumes it

_AGENT, _DONE, _C_COALESCED = Kind.AGENT, State.DONE, ContextReason.WAKE_COALESCED  # (Enum attributes are slow)


def poll(d: Directory, topic: Topic, now: int, cause: str, skip=frozenset(),
         again=frozenset()) -> tuple[Topic, list[Routed]]:
    """Seed 000: "the backend asks the others once if they are done too".

    Once per closure round: a participant already asked (`asked`) is not asked again, even after it
    answered, until a person writes in the topic with nobody done (decide); only the clock re-polls, naming
    them in `again`, and only once per round (`repolled`). So a round polls each participant at most twice.
    An agent that already has an unanswered wake here gets the poll folded into it (seed 000: "further
    requests on that topic are folded into it"): context, `wake_coalesced`, so one decision wakes it once.
    """
    ask = [pid for pid, m in topic.members.items()
           if m.state != _DONE and m.polled_at is None and pid not in skip and pid != SYSTEM
           and (not m.asked or (pid in again and not m.repolled))]
    if not ask:
        return topic, []
    members = dict(topic.members)
    out: list[Routed] = []
    for pid in ask:
        m = members[pid]
        p = d.participants.get(pid)
        agent = p is not None and p.kind == _AGENT
        r = notice(Notice.CLOSURE_POLL, workspace=topic.workspace, conversation=topic.conversation,
                   topic=topic.id, to=(pid,), now=now, cause=f"{cause}:{now}")
        if agent and m.wake_pending:
            r = Routed(r.message, (Delivery(pid, False, _C_COALESCED),))
        members[pid] = replace(m, polled_at=now, asked=True, repolled=m.repolled or m.asked, wake_pending=agent)
        out.append(r)
    pending = dict(topic.pending)
    for r in out:
        pending[r.message.id] = Pending(SYSTEM, frozenset(r.message.to))
    return replace(topic, members=members, pending=pending), out


def any_asked(members: dict[str, Member]) -> bool:
    for m in members.values():
        if m.asked:
            return True
    return False


def on_close(view: View, topic: Topic, now: int, flags: list[Flag]) -> list[Routed]:
    """Closing frees the opener's slot at once; an opener that was refused topic_limit is resumed."""
    opener = topic.opener
    if (BLOCKED, opener, "*") not in view.flags:
        return []
    flags.append(Flag(BLOCKED, opener, on=False))
    return [notice(Notice.RESUME, workspace=topic.workspace, conversation=topic.conversation, topic=None,
                   to=(opener,), now=now, cause=f"close:{topic.id}",
                   detail=f"Topic {topic.title!r} closed: you may open a new topic now.")]


def resume_folded(topic: Topic, agent: str, folded: int, now: int, cause: str) -> Routed:
    """Requests folded into a wake the agent has now answered still need it: wake it once more."""
    return notice(Notice.RESUME, workspace=topic.workspace, conversation=topic.conversation, topic=topic.id,
                  to=(agent,), now=now, cause=cause,
                  detail=f"{folded} more request(s) reached you here while you were busy; they are in your context.")
