"""fund(...): only a person can fund; a refilled agent alone is woken to resend."""

from __future__ import annotations

from msgspec.structs import replace

from . import rules
from .credits import BROKE
from .decision import Decision, Entry, Flag, Routed, View, refused
from .directory import direct_id
from .lifecycle import BUDGET, WALLET, move, unfunded
from .model import Conversation, Topic
from .notices import notice
from .vocabulary import POOL, ConversationKind, Kind, Notice, Pause, RefusalReason as R, Role, TopicStatus


def fund(view: View, funder: str, account: str, amount: object, paused: tuple[Topic, ...],
         now: int, cause: str) -> Decision:
    """Credit `account` (an agent id, or POOL) with `amount`.

    `paused` are the topics where an agent waits for funds (paused for credits, or reopened
    with others still waiting: `Topic.unfunded`). Each agent the funding concerns that was out
    of credits is woken alone (`credits_refilled`): in each topic where it waits for its wallet
    or the pool, or, when it has none, in its direct conversation with the funder. An agent
    stopped by a topic's budget waits for that budget (`set_budget`), not for a funding.
    """
    d = view.directory
    who = d.participants.get(funder)
    role = d.role(funder)
    if who is None or who.kind != Kind.HUMAN:
        return refused(R.PERMISSION_DENIED, "only a person can fund; an agent never credits itself")
    broke = {a for (flag, a, ws) in view.flags if flag == BROKE and ws == d.workspace}  # (asked here)
    if account == POOL:
        if role not in (Role.OWNER, Role.ADMIN):
            return refused(R.PERMISSION_DENIED, "only the workspace's owners and admins fund its pool")
        agents = {a for t in paused for a, why in unfunded(t).items() if why == WALLET} | broke
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
        refilled = [a for a, why in unfunded(t).items() if why == WALLET and a in agents]
        if not refilled or not _resumable(t):
            continue
        t, notes = _refill(t, refilled, now, cause)
        topics.append(t)
        routed += notes
    conversation = None
    woken = {r.message.to[0] for r in routed}  # (each of them once per topic it waits in)
    for a in sorted(broke & agents - woken):
        conv = Conversation(direct_id(d.workspace, funder, a), d.workspace, ConversationKind.DIRECT, "",
                            frozenset((funder, a)))
        conversation = conv if len(agents) == 1 else None
        routed.append(notice(Notice.CREDITS_REFILLED, workspace=d.workspace, conversation=conv.id,
                             topic=None, to=(a,), now=now, cause=cause))
    flags = tuple(Flag(BROKE, a, on=False, workspace=d.workspace) for a in sorted(broke & agents))
    return Decision(routed=tuple(routed), topics=tuple(topics), flags=flags, conversation=conversation,
                    ledger=(Entry(d.workspace, account, amount, cause),))


def _resumable(t: Topic) -> bool:
    """A refill resumes a topic paused for credits, or one already open again; not one closed or
    paused for a person (the person's answer reopens it)."""
    return t.status == TopicStatus.OPEN or (t.status == TopicStatus.PAUSED and t.pause == Pause.CREDITS)


def _refill(t: Topic, refilled: list[str], now: int, cause: str) -> tuple[Topic, list[Routed]]:
    """Seed 000: "Once refilled, the agent alone is woken to resend what did not go through."

    Each refilled agent gets one `credits_refilled` wake in `t`; the topic reopens so its resend
    goes through; agents still unfunded there stay listed, to be woken when their turn comes.
    """
    members = dict(t.members)
    for a in refilled:
        if a in members:
            members[a] = replace(members[a], wake_pending=True)
    rest = {a: why for a, why in unfunded(t).items() if a not in refilled}
    t = move(t, "refilled", now, members=members, unfunded=rest)
    notes = [notice(Notice.CREDITS_REFILLED, workspace=t.workspace, conversation=t.conversation, topic=t.id,
                    to=(a,), now=now, cause=f"{cause}:{t.id}") for a in refilled]
    return t, notes


def set_budget(topic: Topic, budget: int | None, now: int, cause: str) -> Decision:
    """A topic's budget set by a person (the writer checks who may): seed 000's "(or the topic's
    budget) is out of credits" refilled. Raising it (or removing it, None) wakes each agent that
    the budget had stopped there, alone, to resend, and reopens a topic paused for credits."""
    t = replace(topic, budget=budget)
    raised = budget is None or (topic.budget is not None and budget > topic.budget)
    short = [a for a, why in unfunded(topic).items() if why == BUDGET]
    if not raised or not short or not _resumable(t):
        return Decision(topics=(t,))
    t, notes = _refill(t, short, now, cause)
    return Decision(routed=tuple(notes), topics=(t,))
