"""decide(view, post, now): the whole Agent'Ygg rulebook for one message, as data.

Its parts live beside it: who a message goes to (recipients.py), running out of credits
(credits.py), a topic's closing round (closing.py), loop detection (loops.py).

Speed notes (`python -m ygg_server.bench core`): this runs once per message, so the hot path
reads enum members from module constants (an attribute of an Enum class costs ~0.2 us in
Python 3.11, its metaclass defines __getattr__), decides once what is the same for every
recipient, builds each struct once, and shares what it does not change (a topic's `pending`
dict when no request is added or answered). tests/core/test_fast_paths.py holds the fast paths
to the plain definitions they replace.
"""

from __future__ import annotations

from msgspec.structs import replace

from .assign import PREFIX as CAPABILITY
from .closing import BLOCKED, any_asked, on_close, poll, resume_folded
from .credits import exhausted
from .decision import Decision, Delivery, Entry, Flag, Routed, View, refused
from .directory import Unresolved
from .lifecycle import move
from .loops import loop_suspected, signature
from .model import Conversation, Member, Message, Participant, Pending, Post, Topic
from .notices import human_members, notice
from .recipients import by_capability, default_recipients, permission_denial, whose_turn
from .side import redirect, result as side_result
from .rules import (
    ATTACHMENT_BYTES_PER_CREDIT, CHARS_PER_CREDIT, LOOP_MEMORY, THROTTLE_DIRECT, THROTTLE_GROUP, TOPIC_LIMIT,
)
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

_AGENT, _HUMAN = Kind.AGENT, Kind.HUMAN
_VIEWER = Role.VIEWER
_REQUEST, _RESPONSE, _INFORM = T.REQUEST, T.RESPONSE, T.INFORM
_WORKING, _WAITING, _NEEDS_HUMAN, _DONE = State.WORKING, State.WAITING, State.NEEDS_HUMAN, State.DONE
_OPEN, _PAUSED, _CLOSED = TopicStatus.OPEN, TopicStatus.PAUSED, TopicStatus.CLOSED
_GENERAL, _GROUP, _DIRECT = ConversationKind.GENERAL, ConversationKind.GROUP, ConversationKind.DIRECT
_SIDE = ConversationKind.SIDE
_C_INFORM, _C_DONE, _C_PAUSED = C.CONTEXT_INFORM, C.RECIPIENT_DONE, C.TOPIC_PAUSED
_C_ORPHAN, _C_LOOP, _C_COALESCED, _C_OBSERVER = C.ORPHAN_RESPONSE, C.LOOP_SUSPECTED, C.WAKE_COALESCED, C.OBSERVER
_C_NOT_ADDRESSED, _C_HOP_LIMIT, _C_THROTTLED = C.NOT_ADDRESSED, C.HOP_LIMIT, C.THROTTLED
_ABSORBED = (SYSTEM,)


def decide(view: View, post: Post, now: int) -> Decision:
    d = view.directory
    aid = post.author
    author = d.participants.get(aid)
    membership = d.memberships.get(aid)
    if author is None or membership is None:
        return refused(R.PERMISSION_DENIED, "you are not a member of this workspace")
    if membership.role == _VIEWER:
        return refused(R.PERMISSION_DENIED, "a viewer reads but cannot send")
    if not membership.send:
        return refused(R.PERMISSION_DENIED, "this membership has no send permission")
    conv = view.conversation
    agent = author.kind == _AGENT
    # Who may write in a conversation: anyone in General, its members, and any person in a group's.
    if conv is None or not (conv.kind == _GENERAL or aid in conv.members
                            or (conv.kind == _GROUP and author.kind == _HUMAN)):
        return refused(R.UNKNOWN_CONVERSATION, "no such conversation for you: write in general, dm:<participant>, "
                       "or a group or conversation you are a member of")

    # Topics: "Every message names its topic: the one it continues, or new to open one."
    tref = post.topic
    if not tref:
        return refused(R.TOPIC_REQUIRED, "name a topic id, or new to open one")
    topic = None
    if tref != "new":
        topic = view.topic
        if topic is None or topic.id != tref or topic.conversation != conv.id:
            return refused(R.UNKNOWN_TOPIC, "no such topic in this conversation")
        if topic.status == _CLOSED:
            return refused(R.TOPIC_CLOSED, "the topic is closed; open a new one")
    title = post.title
    if title is not None:
        title = title.strip() or None
    if agent and title is None and (topic is None or topic.title is None):
        what = "opening a topic" if topic is None else "writing first in an untitled topic"
        return refused(R.TITLE_REQUIRED, f"give a title when {what}")
    if topic is None and agent and view.open_opened >= TOPIC_LIMIT:
        return refused(
            R.TOPIC_LIMIT,
            f"you already hold {TOPIC_LIMIT} open topics you opened; write in one of them, or wait: when one closes "
            "(everyone in it done) a resume notice wakes you",
            flags=(Flag(BLOCKED, aid),),
        )

    # Recipients, as written or by default.
    in_reply_to = post.in_reply_to
    pending = topic.pending.get(in_reply_to) if topic is not None and in_reply_to else None
    assignment = None
    if post.to:
        found = d.resolve(post.to)
        if found.__class__ is Unresolved:
            if not found.ref.startswith(CAPABILITY):
                return refused(R.UNKNOWN_RECIPIENT, found.detail)
            found = by_capability(view, post)
            if found.__class__ is Decision:
                return found
            found, assignment = found
    else:
        found = default_recipients(conv, topic, pending, aid, d.memberships)
    if aid in found:
        found = tuple(r for r in found if r != aid)
    others: tuple[str, ...] = ()  # agents of the party who get a person's message as context (not their turn)
    if (not post.to and author.kind == _HUMAN and post.type == _REQUEST and not post.malformed
            and not (pending is not None and aid in pending.remaining)):
        found, others = whose_turn(d, conv, found, aid, post.text)
    if post.handoff and not (post.type == _REQUEST and not post.malformed and len(found) == 1
                             and d.participants[found[0]].kind == _AGENT):
        return refused(R.BAD_HANDOFF, "a handoff is a request to exactly one colleague (an agent)")
    if agent and conv.kind == _DIRECT and post.type == _REQUEST:  # seed 003 §15: delegation runs on the side
        moved = redirect(view, post, found)
        if moved is not None:
            side_view, side_post, spent = moved
            out = decide(side_view, side_post, now)
            return out if spent is None or out.refusal is not None else replace(out, side=spent)
    absorbed = found == _ABSORBED
    # Seed 000: "A reply an agent sends to Agent'Ygg itself (system.ygg) is absorbed: not delivered, not charged":
    # free only as the single answer to a system notice that asked for one (a closure poll, still owed by the author);
    # anything else to system.ygg is absorbed (delivered to nobody) but costs like any other message.
    free = absorbed and pending is not None and pending.requester == SYSTEM and aid in pending.remaining
    recipients = tuple(r for r in found if r != SYSTEM) if SYSTEM in found else found
    state = post.state
    if not state:
        prev = topic.members.get(aid) if topic is not None else None
        state = (prev.state if prev is not None else None) or _WORKING
    waiting_for: tuple[str, ...] = ()
    if state == _WAITING:
        wf = d.resolve(post.waiting_for) if post.waiting_for else recipients
        if wf.__class__ is Unresolved:
            return refused(R.UNKNOWN_RECIPIENT, "waiting_for: " + wf.detail)
        waiting_for = tuple([w for w in wf if w != aid and w != SYSTEM])

    if d.restricted:
        denial = permission_denial(d, aid, recipients)
        if denial:
            return refused(R.PERMISSION_DENIED, denial)
    usage = 0 if free else (len(recipients) or 1)
    if view.plan_left is not None and usage > view.plan_left:
        return refused(R.PLAN_LIMIT, f"the organization's plan allows {view.plan_left} more messages this month")

    # Credits: "Every message an agent sends costs credits, even one delivered as context."
    cost, ledger, budget = 0, (), topic.budget if topic is not None else None
    if agent and not free:
        # rules.message_cost, inlined: 1 per started 1,000 characters, at least 1; files by size; per recipient
        cost = (len(post.text) + post.body_chars + CHARS_PER_CREDIT - 1) // CHARS_PER_CREDIT or 1
        if post.attachment_bytes > 0:
            cost += (post.attachment_bytes + ATTACHMENT_BYTES_PER_CREDIT - 1) // ATTACHMENT_BYTES_PER_CREDIT
        cost *= len(recipients) or 1
        # Seed 000: "Credits come from the agent's own wallet, or from the workspace pool if it has none": a wallet
        # is the agent's cap; the pool pays for an agent with none, or one its admins let draw on it when its wallet
        # runs short (`credits.poolDraw`). Within the topic's budget if it has one.
        if budget is not None and budget < cost:
            payer = None
        elif view.wallet is not None and view.wallet >= cost:
            payer = aid
        elif (view.wallet is None or view.draws_pool) and view.pool >= cost:
            payer = POOL
        else:
            payer = None
        if payer is None:
            return exhausted(view, post, author, topic, cost, now)
        ledger = (Entry(d.workspace, payer, -cost, post.id),)
        if budget is not None:
            budget -= cost

    return _accept(view, post, now, author, conv, topic, title, recipients, absorbed,
                   state, waiting_for, pending, cost, ledger, budget, usage, others, assignment, free)


def _accept(view, post, now, author, conv, topic, title, recipients, absorbed,
            state, waiting_for, pending, cost, ledger, budget, usage, others=(), assignment=None,
            free=False) -> Decision:
    d = view.directory
    ps = d.participants
    aid = author.id
    agent = author.kind == _AGENT
    human = author.kind == _HUMAN
    mtype = _INFORM if post.malformed else post.type
    if topic is None:
        topic = Topic(post.id, d.workspace, conv.id, aid, now, title=title)
    elif topic.title is None and title:
        topic = replace(topic, title=title)
    old = topic.members

    # Who is in the topic after this message, and in which state.
    members = dict(old)
    prev = old.get(aid)
    folded = prev.folded if prev is not None else 0
    # state, last_at, wake_pending, folded, waiting_for; `asked` outlives the author's answer to a poll
    members[aid] = Member(state, now, False, 0, waiting_for, asked=prev is not None and prev.asked,
                          repolled=prev is not None and prev.repolled)
    for w in (() if free else waiting_for):  # a free answer starts no nudges (docs/rules.md, "The bound")
        m = members.get(w)
        if m is None:
            members[w] = Member(None, now, awaited_since=now)
        elif m.awaited_since is None:
            members[w] = replace(m, awaited_since=now)
    for r in recipients:
        if r not in members:
            members[r] = Member(None, now)
    closing, any_done = True, False  # lifecycle.everyone_done and someone_done, in one pass
    for p, m in members.items():
        if m.state == _DONE:
            any_done = True
        elif p != SYSTEM:
            closing = False
    answers = pending is not None and aid in pending.remaining
    paused_after = not closing and not human and (
        topic.status == _PAUSED or (agent and state == _NEEDS_HUMAN)
    )
    sig = signature(aid, recipients, post.text) if agent else None
    looping = agent and loop_suspected(topic.recent, sig)

    # Route: each recipient is woken, or gets it as context with the reason (_context_reason,
    # with what is the same for every recipient of this message decided once).
    deliveries: list[Delivery] = []
    gate_notice = None
    if not absorbed:
        same = _C_DONE if closing else _C_INFORM if mtype == _INFORM else None
        if same is not None or human:
            wake = same is None
            for r in recipients:
                deliveries.append(Delivery(r, wake, same))
                if wake and ps[r].kind == _AGENT:
                    members[r] = replace(members[r], wake_pending=True, folded=0)
        else:  # an agent's (or system's) request or response: _context_reason, per recipient
            response, request = mtype == _RESPONSE, mtype == _REQUEST
            orphan = pending is None or not answers
            for r in recipients:
                p = ps[r]
                before = old.get(r)
                if before is not None and before.state == _DONE:
                    reason = _C_DONE
                elif paused_after and p.kind == _AGENT:
                    reason = _C_PAUSED
                elif response:
                    reason = (_C_ORPHAN if orphan else _C_INFORM if r != pending.requester else _C_LOOP if looping
                              # a multi-recipient request: the requester wakes on the answer that completes the set
                              else _C_COALESCED if len(pending.remaining) > 1 else None)
                elif looping:
                    reason = _C_LOOP
                elif request and before is not None and before.wake_pending and p.kind == _AGENT:
                    reason = _C_COALESCED
                else:
                    reason = None
                deliveries.append(Delivery(r, reason is None, reason))
                if reason is None:
                    if p.kind == _AGENT:
                        members[r] = replace(members[r], wake_pending=True, folded=0)
                elif reason == _C_COALESCED:
                    members[r] = replace(members[r], folded=members[r].folded + 1)
        holder = counters_of(view, conv, topic, human)
        if agent and not closing:
            deliveries, gate_notice = _gate(view, conv, holder, deliveries, members, old, now, post.id, topic.id)
        deliveries += [Delivery(o, False, _C_NOT_ADDRESSED) for o in others]
        deliveries += [Delivery(o, False, _C_OBSERVER) for o in human_members(d, conv)
                       if o != aid and o not in recipients]

    # Requests owed answers.
    owed = topic.pending
    if answers:
        owed = dict(owed)
        left = pending.remaining - {aid}
        if left:
            owed[post.in_reply_to] = Pending(pending.requester, left)
        else:
            del owed[post.in_reply_to]
    if mtype == _REQUEST and recipients and not absorbed:
        if owed is topic.pending:
            owed = dict(owed)
        owed[post.id] = Pending(aid, frozenset(recipients))

    if sig is not None:
        recent = (topic.recent + (sig,))[-LOOP_MEMORY:]
    else:
        recent = () if human else topic.recent
    msg = Message(
        post.id, d.workspace, conv.id, topic.id, aid, mtype, post.text, now,
        _ABSORBED if absorbed else recipients, state, waiting_for, post.in_reply_to, title, cost,
        None, post.malformed, post.handoff, assignment, threads=post.threads,
        artifact=post.artifact, card=post.card, press=post.press, files=post.files,
    )
    routed = [Routed(msg, tuple(deliveries))]
    if gate_notice is not None:
        routed.append(gate_notice)
    if conv.kind == _SIDE:
        back = side_result(view, conv, topic, msg, answers, now)
        if back is not None:
            routed.append(back)
    flags: list[Flag] = []

    # The topic moves.
    if closing:
        topic = move(topic, "all_done", now, members=members, budget=budget)
        routed += on_close(view, topic, now, flags)
    else:
        resume = agent and folded and any(aid in p.remaining for p in owed.values())
        if resume:  # the resume notice is a wake: further requests fold into it
            members[aid] = replace(members[aid], wake_pending=True)
        if human and (topic.status != _OPEN or topic.pause is not None or topic.paused_by is not None):
            topic = move(topic, "person_wrote", now, members=members, pending=owed, recent=recent, budget=budget)
        elif agent and state == _NEEDS_HUMAN:
            topic = move(topic, "needs_human", now, members=members, pending=owed, recent=recent, budget=budget)
        else:
            topic = replace(topic, members=members, pending=owed, recent=recent, budget=budget)
        if resume:
            routed.append(resume_folded(topic, aid, folded, now, post.id))
        if any_done and topic.status == _OPEN and not free:  # a free answer wakes nobody, by notice neither
            topic, polls = poll(d, topic, now, post.id, skip=(aid,))
            routed += polls
        elif human and not any_done and any_asked(topic.members):
            # A person wrote and nobody is done: the closure round is over. Only a person ends it: agents
            # flipping done/working would otherwise have the same participants polled again without end.
            topic = replace(topic, members={p: replace(m, asked=False, repolled=False) if m.asked else m
                                            for p, m in topic.members.items()})

    if aid in topic.unfunded:  # it paid for this message: it no longer waits for funds here
        topic = replace(topic, unfunded={a: w for a, w in topic.unfunded.items() if a != aid})
    conversation = _grown(conv, author, recipients, view.new_conversation)
    side = None
    if human and not topic.bought and view.side is None and conv.kind != _SIDE:
        topic = replace(topic, bought=True, run=0, hops=0, hop_noticed=False, throttle_noticed=False)
    elif not absorbed:
        holder = counters_of(view, conv, topic, human)
        counted = _counted(conversation if holder is conv and conversation is not None else holder, conv, view,
                           human, agent, deliveries, gate_notice is not None)
        if counted is None:
            pass
        elif holder is topic:
            topic = counted
        elif holder is conv:
            conversation = counted
        else:
            side = counted
    return Decision(None, tuple(routed), (topic,), conversation, ledger, usage, tuple(flags), absorbed, side)


def throttle_limit(conv: Conversation, limits: tuple[int, int] = (THROTTLE_DIRECT, THROTTLE_GROUP)) -> int:
    """Seed 003 §16: "the limit is a little stricter in a one-to-one conversation than in a group"."""
    return limits[0] if conv.kind == _DIRECT and len(conv.members) <= 2 else limits[1]


def counters_of(view: View, conv: Conversation, topic: Topic, human: bool = False):
    """Who keeps the party's counters for a message in `topic` (docs/rules.md, "Parties"): a side conversation
    (with its origin topic, one exchange), or the topic itself once a person wrote in it (`bought`; a person's
    message does so now), or else the conversation (the topics only agents wrote in share its counters)."""
    if conv.kind == _SIDE:
        return conv
    if view.side is not None:
        return view.side
    return topic if topic.bought or human else conv


def _gate(view: View, conv: Conversation, holder, deliveries: list[Delivery], members: dict, old: dict, now: int,
          cause: str, topic: str | None = None) -> tuple[list[Delivery], Routed | None]:
    """The party's two safeguards on an agent's message: the throttle, then the hop limit.

    `holder` keeps the counters (`run`, `hops`, and whether each notice is out): the topic, or the side
    conversation where a direct conversation's topic delegated work. Throttle (seed 003 §16): after
    `throttle_limit` agent messages in a row with no person in between, an agent's message wakes nobody
    (`throttled`). Hop limit (seed 004): an agent message that wakes another agent is a hop; once `view.max_hops`
    were used since a person last wrote in the topic, its wakes of agents become `hop_limit` context, and a
    `hop_limit` notice goes into the transcript once.
    """
    ps = view.directory.participants
    if holder.run >= throttle_limit(conv, view.throttle):
        reason, hit = _C_THROTTLED, lambda r: True
    elif holder.hops >= view.max_hops:
        reason, hit = _C_HOP_LIMIT, lambda r: ps[r].kind == _AGENT
    else:
        return deliveries, None
    out, stopped = [], False
    for x in deliveries:
        if x.wake and hit(x.recipient):
            stopped = True
            out.append(Delivery(x.recipient, False, reason))
            before = old.get(x.recipient)
            members[x.recipient] = before if before is not None else Member(None, now)
        else:
            out.append(x)
    if not stopped:
        return out, None
    people = human_members(view.directory, conv)
    if reason == _C_HOP_LIMIT:
        if holder.hop_noticed:
            return out, None
        return out, notice(Notice.HOP_LIMIT, workspace=conv.workspace, conversation=conv.id, topic=topic, to=people,
                           now=now, cause=cause, wake=False, hops=str(view.max_hops))
    if holder.throttle_noticed:
        return out, None
    return out, notice(Notice.THROTTLED, workspace=conv.workspace, conversation=conv.id, topic=topic, to=people,
                       now=now, cause=cause, wake=False, run=str(holder.run))


def _counted(holder, conv: Conversation, view: View, human: bool, agent: bool, deliveries: list[Delivery],
             noticed: bool):
    """`holder` (a Topic or a side Conversation) with the party counters after this message, or None when they
    do not change: a person's message resets them, an agent's counts one more in the run, and a hop when it
    woke another agent."""
    if human:
        if holder.run or holder.hops or holder.hop_noticed or holder.throttle_noticed:
            return replace(holder, run=0, hops=0, hop_noticed=False, throttle_noticed=False)
        return None
    if not agent:
        return None
    ps = view.directory.participants
    limit = throttle_limit(conv, view.throttle)
    hop = any(x.wake and ps[x.recipient].kind == _AGENT for x in deliveries)
    run = min(holder.run + 1, limit)
    hops = holder.hops + 1 if hop else holder.hops
    if run == holder.run and hops == holder.hops and not noticed:
        return None
    if not noticed:
        return replace(holder, run=run, hops=hops)
    if holder.run >= limit:  # _gate's order: the throttle before the hop limit
        return replace(holder, run=run, hops=hops, throttle_noticed=True)
    return replace(holder, run=run, hops=hops, hop_noticed=True)


def _grown(conv: Conversation, author: Participant, recipients: tuple[str, ...], new: bool) -> Conversation | None:
    """A conversation is made on first use and grows to everyone who writes or is addressed in it."""
    if conv.kind == _GENERAL:
        return None
    have = conv.members
    if author.id in have and all(r in have for r in recipients):
        return conv if new else None
    return replace(conv, members=have | {author.id} | set(recipients))
