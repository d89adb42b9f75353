"""fund(...): only a person can fund; a refilled agent alone is woken to resend."""

from __future__ import annotations

from msgspec.structs import replace

from . import rules
from .decide import BROKE
from .decision import Decision, Entry, Flag, Routed, View, refused
from .directory import direct_id
from .lifecycle import move
from .model import Conversation, Topic
from .notices import notice
from .vocabulary import POOL, ConversationKind, Kind, Notice, Pause, RefusalReason as R, Role


def fund(view: View, funder: str, account: str, amount: object, paused: tuple[Topic, ...],
         now: int, cause: str) -> Decision:
    """Credit `account` (an agent id, or POOL) with `amount`.

    `paused` are the workspace's topics paused for credits. Each agent the funding
    concerns that was out of credits is woken alone (`credits_refilled`): in the
    topics it paused, or, when it had none, in its direct conversation with the funder.
    """
    d = view.directory
    who = d.participants.get(funder)
    role = d.role(funder)
    if who is None or who.kind != Kind.HUMAN:
        return refused(R.PERMISSION_DENIED, "only a person can fund; an agent never credits itself")
    broke = {a for (flag, a) in view.flags if flag == BROKE}
    if account == POOL:
        if role not in (Role.OWNER, Role.ADMIN):
            return refused(R.PERMISSION_DENIED, "only the workspace's owners and admins fund its pool")
        agents = {t.paused_by for t in paused if t.pause == Pause.CREDITS} | broke
    else:
        agent = d.participants.get(account)
        if agent is None or agent.kind != Kind.AGENT or account not in d.memberships:
            return refused(R.UNKNOWN_RECIPIENT, "no such agent in this workspace")
        if role not in (Role.OWNER, Role.ADMIN) and not (agent.owner == funder and role != Role.VIEWER):
            return refused(R.PERMISSION_DENIED, "you may fund your own agents; admins fund any")
        agents = {account}
    if type(amount) is not int or not 0 < amount <= rules.MAX_FUNDING:
        return refused(R.BAD_AMOUNT, f"fund a whole number of credits from 1 to {rules.MAX_FUNDING}")

    topics: list[Topic] = []
    routed: list[Routed] = []
    for t in paused:
        a = t.paused_by
        if t.pause != Pause.CREDITS or a not in agents:
            continue
        members = t.members if a not in t.members else {**t.members, a: replace(t.members[a], wake_pending=True)}
        topics.append(move(t, "refilled", now, members=members))
        routed.append(notice(Notice.CREDITS_REFILLED, workspace=t.workspace, conversation=t.conversation,
                             topic=t.id, to=(a,), now=now, cause=cause))
    conversation = None
    woken = {r.message.to[0] for r in routed}
    for a in sorted(broke & agents - woken):
        conv = Conversation(direct_id(d.workspace, funder, a), d.workspace, ConversationKind.DIRECT, "",
                            frozenset((funder, a)))
        conversation = conv if len(agents) == 1 else None
        routed.append(notice(Notice.CREDITS_REFILLED, workspace=d.workspace, conversation=conv.id,
                             topic=None, to=(a,), now=now, cause=cause))
    flags = tuple(Flag(BROKE, a, on=False) for a in sorted(broke & agents))
    return Decision(routed=tuple(routed), topics=tuple(topics), flags=flags, conversation=conversation,
                    ledger=(Entry(d.workspace, account, amount, cause),))
