"""decide(view, post, now): the whole Agent'Ygg rulebook for one message, as data."""

from __future__ import annotations

from hashlib import blake2b

from msgspec.structs import replace

from . import rules
from .decision import Decision, Delivery, Entry, Flag, Routed, View, refused
from .directory import Directory, Unresolved
from .lifecycle import everyone_done, move, someone_done
from .model import Conversation, Member, Message, Participant, Pending, Post, Sig, Topic
from .notices import human_members, notice
from .vocabulary import (
    POOL,
    SYSTEM,
    ContextReason as C,
    ConversationKind,
    Kind,
    MessageType as T,
    Notice,
    RefusalReason as R,
    Role,
    State,
    TopicStatus,
)

BLOCKED, BROKE = "blocked", "broke"


def decide(view: View, post: Post, now: int) -> Decision:
    d = view.directory
    author = d.participants.get(post.author)
    membership = d.memberships.get(post.author)
    if author is None or membership is None:
        return refused(R.PERMISSION_DENIED, "you are not a member of this workspace")
    if membership.role == Role.VIEWER:
        return refused(R.PERMISSION_DENIED, "a viewer reads but cannot send")
    if not membership.send:
        return refused(R.PERMISSION_DENIED, "this membership has no send permission")
    conv = view.conversation
    if conv is None or not _may_write(conv, author):
        return refused(R.UNKNOWN_CONVERSATION, "no such conversation")
    agent = author.kind == Kind.AGENT

    # Topics: "Every message names its topic: the one it continues, or new to open one."
    if not post.topic:
        return refused(R.TOPIC_REQUIRED, "name a topic id, or new to open one")
    topic = None
    if post.topic != "new":
        topic = view.topic
        if topic is None or topic.id != post.topic or topic.conversation != conv.id:
            return refused(R.UNKNOWN_TOPIC, "no such topic in this conversation")
        if topic.status == TopicStatus.CLOSED:
            return refused(R.TOPIC_CLOSED, "the topic is closed; open a new one")
    title = (post.title or "").strip() or None
    if agent and title is None and (topic is None or topic.title is None):
        what = "opening a topic" if topic is None else "writing first in an untitled topic"
        return refused(R.TITLE_REQUIRED, f"give a title when {what}")
    if topic is None and agent and view.open_opened >= rules.TOPIC_LIMIT:
        return refused(
            R.TOPIC_LIMIT,
            f"you already hold {rules.TOPIC_LIMIT} open topics you opened; finish one first",
            flags=(Flag(BLOCKED, author.id),),
        )

    # Recipients, as written or by default.
    pending = topic.pending.get(post.in_reply_to) if topic and post.in_reply_to else None
    if post.to:
        found = d.resolve(post.to)
        if isinstance(found, Unresolved):
            return refused(R.UNKNOWN_RECIPIENT, found.detail)
    else:
        found = _default_recipients(conv, topic, pending, author.id, d.memberships)
    found = tuple(r for r in found if r != author.id)
    absorbed = found == (SYSTEM,)
    recipients = tuple(r for r in found if r != SYSTEM)
    state = post.state or (topic.members[author.id].state if topic and author.id in topic.members else None)
    state = state or State.WORKING
    waiting_for: tuple[str, ...] = ()
    if state == State.WAITING:
        wf = d.resolve(post.waiting_for) if post.waiting_for else recipients
        if isinstance(wf, Unresolved):
            return refused(R.UNKNOWN_RECIPIENT, "waiting_for: " + wf.detail)
        waiting_for = tuple(w for w in wf if w not in (author.id, SYSTEM))

    denial = _permission(d, author.id, recipients)
    if denial:
        return refused(R.PERMISSION_DENIED, denial)
    usage = 0 if absorbed else max(1, len(recipients))
    if view.plan_left is not None and usage > view.plan_left:
        return refused(R.PLAN_LIMIT, f"the organization's plan allows {view.plan_left} more messages this month")

    # Credits: "Every message an agent sends costs credits, even one delivered as context."
    cost, ledger, budget = 0, (), topic.budget if topic else None
    if agent and not absorbed:
        cost = rules.message_cost(post.text, post.attachment_bytes, len(recipients))
        payer = _payer(view, author.id, cost, budget)
        if payer is None:
            return _exhausted(view, post, author, topic, cost, now)
        ledger = (Entry(d.workspace, payer, -cost, post.id),)
        if budget is not None:
            budget -= cost

    return _accept(view, post, now, author, conv, topic, title, recipients, absorbed,
                   state, waiting_for, pending, cost, ledger, budget, usage)


def _accept(view, post, now, author, conv, topic, title, recipients, absorbed,
            state, waiting_for, pending, cost, ledger, budget, usage) -> Decision:
    d = view.directory
    agent = author.kind == Kind.AGENT
    human = author.kind == Kind.HUMAN
    mtype = T.INFORM if post.malformed else post.type
    if topic is None:
        topic = Topic(post.id, d.workspace, conv.id, author.id, now, title=title)
    elif topic.title is None and title:
        topic = replace(topic, title=title)
    old = topic.members

    # Who is in the topic after this message, and in which state.
    members = dict(old)
    prev = old.get(author.id)
    folded = prev.folded if prev else 0
    members[author.id] = Member(state=state, last_at=now, waiting_for=waiting_for)
    for w in waiting_for:
        m = members.get(w) or Member(last_at=now)
        members[w] = m if m.awaited_since is not None else replace(m, awaited_since=now)
    for r in recipients:
        if r not in members:
            members[r] = Member(last_at=now)
    closing = everyone_done(members)
    answers = pending is not None and author.id in pending.remaining
    paused_after = not closing and not human and (
        topic.status == TopicStatus.PAUSED or (agent and state == State.NEEDS_HUMAN)
    )
    sig = _sig(author.id, recipients, post.text) if agent else None
    looping = agent and _looping(topic.recent, sig)

    # Route: each recipient is woken, or gets it as context with the reason.
    deliveries: list[Delivery] = []
    if not absorbed:
        for r in recipients:
            p = d.participants[r]
            reason = _context_reason(
                mtype, human, p, old.get(r), closing, paused_after, looping, pending, answers
            )
            deliveries.append(Delivery(r, reason is None, reason))
            if reason is None and p.kind == Kind.AGENT:
                members[r] = replace(members[r], wake_pending=True, folded=0)
            elif reason == C.WAKE_COALESCED:
                members[r] = replace(members[r], folded=members[r].folded + 1)
        addressed = set(recipients)
        deliveries += [
            Delivery(o, False, C.OBSERVER) for o in human_members(d, conv) if o != author.id and o not in addressed
        ]

    # Requests owed answers.
    owed = dict(topic.pending)
    if answers:
        left = pending.remaining - {author.id}
        if left:
            owed[post.in_reply_to] = Pending(pending.requester, left)
        else:
            del owed[post.in_reply_to]
    if mtype == T.REQUEST and recipients and not absorbed:
        owed[post.id] = Pending(author.id, frozenset(recipients))

    recent = (*topic.recent, sig)[-rules.LOOP_MEMORY:] if sig else () if human else topic.recent
    msg = Message(
        post.id, d.workspace, conv.id, topic.id, author.id, mtype, post.text, now,
        to=(SYSTEM,) if absorbed else recipients, state=state, waiting_for=waiting_for,
        in_reply_to=post.in_reply_to, title=title, cost=cost, malformed=post.malformed,
    )
    routed = [Routed(msg, tuple(deliveries))]
    flags: list[Flag] = []

    # The topic moves.
    if closing:
        topic = move(topic, "all_done", now, members=members, budget=budget)
        routed += _on_close(view, topic, now, flags)
    else:
        resume = agent and folded and any(author.id in p.remaining for p in owed.values())
        if resume:  # the resume notice is a wake: further requests fold into it
            members[author.id] = replace(members[author.id], wake_pending=True)
        fields = dict(members=members, pending=owed, recent=recent, budget=budget)
        if human:
            topic = move(topic, "person_wrote", now, **fields)
        elif agent and state == State.NEEDS_HUMAN:
            topic = move(topic, "needs_human", now, **fields)
        else:
            topic = replace(topic, **fields)
        if resume:
            routed.append(_resume_folded(topic, author.id, folded, now, post.id))
        if someone_done(topic.members) and topic.status == TopicStatus.OPEN:
            topic, polls = poll(d, topic, now, post.id, skip={author.id})
            routed += polls

    conversation = _grown(conv, author, recipients, view.new_conversation)
    return Decision(
        routed=tuple(routed), topics=(topic,), conversation=conversation, ledger=ledger,
        usage=usage, flags=tuple(flags), absorbed=absorbed,
    )


def _context_reason(mtype, human_author, p: Participant, before: Member | None, closing,
                    paused, looping, pending: Pending | None, answers) -> C | None:
    """Why recipient `p` gets this as context; None means it is woken."""
    if closing:
        return C.RECIPIENT_DONE  # "A closed topic ... nothing in it can wake anyone again."
    if mtype == T.INFORM:
        return C.CONTEXT_INFORM
    if human_author:
        return None  # "people always wake the agents they address"
    if before is not None and before.state == State.DONE:
        return C.RECIPIENT_DONE
    if paused and p.kind == Kind.AGENT:
        return C.TOPIC_PAUSED
    if mtype == T.RESPONSE:
        if pending is None or not answers:
            return C.ORPHAN_RESPONSE
        if p.id != pending.requester:
            return C.CONTEXT_INFORM  # "wakes the requester only"
    if looping:
        return C.LOOP_SUSPECTED
    if mtype == T.REQUEST and p.kind == Kind.AGENT and before is not None and before.wake_pending:
        return C.WAKE_COALESCED
    return None


def poll(d: Directory, topic: Topic, now: int, cause: str, skip=frozenset()) -> tuple[Topic, list[Routed]]:
    """Seed 000: "the backend asks the others once if they are done too"."""
    members = dict(topic.members)
    out: list[Routed] = []
    for pid, m in topic.members.items():
        if pid in skip or pid == SYSTEM or m.state == State.DONE or m.polled_at is not None:
            continue
        p = d.participants.get(pid)
        members[pid] = replace(m, polled_at=now, wake_pending=p is not None and p.kind == Kind.AGENT)
        out.append(notice(Notice.CLOSURE_POLL, workspace=topic.workspace, conversation=topic.conversation,
                          topic=topic.id, to=(pid,), now=now, cause=f"{cause}:{now}"))
    if not out:
        return topic, out
    pending = dict(topic.pending)
    for r in out:
        pending[r.message.id] = Pending(SYSTEM, frozenset(r.message.to))
    return replace(topic, members=members, pending=pending), out


def _on_close(view: View, topic: Topic, now: int, flags: list[Flag]) -> list[Routed]:
    """Closing frees the opener's slot at once; an opener that was refused topic_limit is resumed."""
    opener = topic.opener
    if (BLOCKED, opener) not in view.flags:
        return []
    flags.append(Flag(BLOCKED, opener, on=False))
    return [notice(Notice.RESUME, workspace=topic.workspace, conversation=topic.conversation, topic=None,
                   to=(opener,), now=now, cause=f"close:{topic.id}",
                   detail=f"Topic {topic.title!r} closed: you may open a new topic now.")]


def _resume_folded(topic: Topic, agent: str, folded: int, now: int, cause: str) -> Routed:
    """Requests folded into a wake the agent has now answered still need it: wake it once more."""
    return notice(Notice.RESUME, workspace=topic.workspace, conversation=topic.conversation, topic=topic.id,
                  to=(agent,), now=now, cause=cause,
                  detail=f"{folded} more request(s) reached you here while you were busy; they are in your context.")


def _exhausted(view: View, post: Post, author: Participant, topic: Topic | None, cost: int, now: int) -> Decision:
    """Seed 000: "its message is refused, its topic pauses, and the people who can fund it see a request"."""
    d = view.directory
    have = f"needs {cost}, wallet {view.wallet or 0}, pool {view.pool}"
    if topic is not None and topic.budget is not None and topic.budget < cost:
        have = f"needs {cost}, topic budget {topic.budget}"
    topics: tuple[Topic, ...] = ()
    if topic is not None and not (topic.pause == "credits" and topic.paused_by == author.id):
        paused = move(topic, "credits_out", now)
        if paused.pause == "credits":
            paused = replace(paused, paused_by=author.id)
        topics = (paused,)
    routed: tuple[Routed, ...] = ()
    flags: tuple[Flag, ...] = ()
    if (BROKE, author.id) not in view.flags:
        funders = funders_of(d, author)
        conv = topic.conversation if topic else view.conversation.id
        routed = (notice(Notice.FUNDING_REQUEST, workspace=d.workspace, conversation=conv,
                         topic=topic.id if topic else None, to=funders, now=now, cause=post.id,
                         agent=author.name, detail=have),)
        flags = (Flag(BROKE, author.id),)
    return refused(R.CREDITS_EXHAUSTED, have, topics=topics, routed=routed, flags=flags)


def funders_of(d: Directory, agent: Participant) -> tuple[str, ...]:
    """The people who can fund an agent: its owner, and the workspace's owners and admins."""
    out = [agent.owner] if agent.owner in d.memberships and d.memberships[agent.owner].role != Role.VIEWER else []
    out += [p for p, m in d.memberships.items()
            if m.role in (Role.OWNER, Role.ADMIN) and p not in out and d.participants[p].kind == Kind.HUMAN]
    return tuple(out)


def _payer(view: View, agent: str, cost: int, budget: int | None) -> str | None:
    """Seed 000: "Credits come from the agent's own wallet, or from the workspace pool if it has none"."""
    if budget is not None and budget < cost:
        return None
    if view.wallet is not None and view.wallet >= cost:
        return agent
    if view.pool >= cost:
        return POOL
    return None


def _permission(d: Directory, author: str, recipients: tuple[str, ...]) -> str | None:
    """Seed 002: send, receive, can message, takes messages from."""
    mine = d.memberships[author]
    for r in recipients:
        theirs = d.memberships[r]
        name = d.participants[r].display
        if not theirs.receive:
            return f"{name} does not receive messages here"
        if mine.can_message is not None and r not in mine.can_message:
            return f"you may not message {name}"
        if theirs.takes_from is not None and author not in theirs.takes_from:
            return f"{name} does not take messages from you"
    return None


def _may_write(conv: Conversation, author: Participant) -> bool:
    if conv.kind == ConversationKind.GENERAL or author.id in conv.members:
        return True
    return conv.kind == ConversationKind.GROUP and author.kind == Kind.HUMAN


def _default_recipients(conv: Conversation, topic: Topic | None, pending: Pending | None, me: str,
                        present: dict) -> tuple[str, ...]:
    """No `to`: the requester for an answer, else the topic's others, else the conversation's.

    Only participants still in the workspace (`present`), or system.ygg, are defaults.
    """
    if pending is not None and me in pending.remaining and (pending.requester == SYSTEM or pending.requester in present):
        return (pending.requester,)
    if topic is not None:
        others = tuple(p for p in topic.members if p != me and p in present)
        if others:
            return others
    return tuple(sorted(p for p in conv.members if p != me and p in present))


def _grown(conv: Conversation, author: Participant, recipients: tuple[str, ...], new: bool) -> Conversation | None:
    """A conversation is made on first use and grows to everyone who writes or is addressed in it."""
    if conv.kind == ConversationKind.GENERAL:
        return None
    joined = conv.members | {author.id} | set(recipients)
    if joined != conv.members:
        return replace(conv, members=frozenset(joined))
    return conv if new else None


def _sig(author: str, to: tuple[str, ...], text: str) -> Sig:
    norm = " ".join(text.lower().split()).encode()
    return Sig(author, tuple(sorted(to)), int.from_bytes(blake2b(norm, digest_size=8).digest(), "big"))


def _looping(recent: tuple[Sig, ...], sig: Sig) -> bool:
    """Seed 000: "the same back-and-forth or the same text repeated" stops waking.

    Repeated text: the same text (case and spacing aside) already seen REPEAT_LIMIT times
    among the agent messages since a person last wrote. Back-and-forth: this message would
    make PING_PONG agent messages in a row that only two agents exchange with each other.
    """
    if sum(1 for s in recent if s.text_hash == sig.text_hash) >= rules.REPEAT_LIMIT:
        return True
    window = (*recent[-(rules.PING_PONG - 1):], sig)
    if len(window) < rules.PING_PONG or len(sig.to) != 1:
        return False
    pair = {sig.author, sig.to[0]}
    return all(len(s.to) == 1 and {s.author, s.to[0]} == pair and s.author != s.to[0] for s in window)
