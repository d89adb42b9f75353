"""Time-driven rules: nudges, closure polls, the one-hour auto-done.

`next_due(topic)` says when a topic next needs looking at; `due(view, topic, now)`
decides what happens then. The store keeps `next_due` beside each topic, so the
timer task only ever touches topics that have something to do.
"""

from __future__ import annotations

from msgspec.structs import replace

from . import rules
from .closing import on_close, poll
from .decision import Decision, Flag, Routed, View
from .lifecycle import everyone_done, move, someone_done, waiting_on
from .model import Topic
from .notices import human_members, notice
from .vocabulary import Kind, Notice, State, TopicStatus

_OPEN, _DONE, _AGENT = TopicStatus.OPEN, State.DONE, Kind.AGENT  # Enum class attributes are slow to read


def next_due(topic: Topic) -> int | None:
    if topic.status != _OPEN:
        return None  # closed for good; paused until a person (or a funding) moves it
    times: list[int] = []
    anyone_done = someone_done(topic.members)
    for pid, m in topic.members.items():
        if m.state == _DONE:
            continue
        if m.polled_at is not None:
            times.append(m.polled_at + rules.AUTO_DONE_AFTER)
        elif anyone_done:
            times.append(m.last_at + rules.AUTO_DONE_AFTER)  # answered the poll, then went quiet
        if m.awaited_since is not None and m.nudges < rules.MAX_NUDGES:
            times.append(m.awaited_since + rules.NUDGE_AFTER * (m.nudges + 1))
    return min(times, default=None)


def due(view: View, topic: Topic, now: int) -> Decision:
    """What the clock decides for `topic` at `now` (nothing, if nothing is due)."""
    if topic.status != _OPEN:
        return Decision()
    start = topic
    d = view.directory
    conv = view.conversation
    observers = human_members(d, conv) if conv is not None else ()
    members = dict(topic.members)
    routed: list[Routed] = []
    cause = f"{topic.id}:{now}"

    # "after an hour without an answer they are counted done"
    for pid, m in topic.members.items():
        if m.state != _DONE and m.polled_at is not None and now >= m.polled_at + rules.AUTO_DONE_AFTER:
            members[pid] = replace(m, state=State.DONE, polled_at=None, wake_pending=False, awaited_since=None)
            routed.append(notice(Notice.AUTO_DONE, workspace=topic.workspace, conversation=topic.conversation,
                                 topic=topic.id, to=(), now=now, cause=f"{cause}:{pid}", wake=False,
                                 observers=observers, who=d.participants[pid].display if pid in d.participants else pid))
    topic = replace(topic, members=members)
    flags: list[Flag] = []
    if everyone_done(members):
        topic = move(topic, "all_done", now)
        routed += on_close(view, topic, now, flags)
        return Decision(routed=tuple(routed), topics=(topic,), flags=tuple(flags))

    # Re-poll whoever answered a poll and then stayed quiet for an hour.
    if someone_done(members):
        quiet = {p for p, m in members.items()
                 if m.state != _DONE and m.polled_at is None and now >= m.last_at + rules.AUTO_DONE_AFTER}
        topic, polls = poll(d, topic, now, cause, skip=set(members) - quiet, again=quiet)
        routed += polls

    # "If they stay silent, the backend nudges them, at most 3 times."
    members = dict(topic.members)
    for pid, m in topic.members.items():
        if m.awaited_since is None or m.nudges >= rules.MAX_NUDGES:
            continue
        waiters = waiting_on(members, pid)
        if not waiters or m.state == _DONE:
            members[pid] = replace(m, awaited_since=None, nudges=0)
            continue
        if now < m.awaited_since + rules.NUDGE_AFTER * (m.nudges + 1):
            continue
        agent = pid in d.participants and d.participants[pid].kind == _AGENT
        members[pid] = replace(m, nudges=m.nudges + 1, wake_pending=m.wake_pending or agent)
        names = ", ".join(d.participants[w].display for w in waiters if w in d.participants)
        routed.append(notice(Notice.NUDGE, workspace=topic.workspace, conversation=topic.conversation,
                             topic=topic.id, to=(pid,), now=now, cause=f"{cause}:{m.nudges}", waiters=names))
    topic = replace(topic, members=members)
    if topic == start:
        return Decision()
    return Decision(routed=tuple(routed), topics=(topic,))

