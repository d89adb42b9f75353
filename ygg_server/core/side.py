"""Side conversations for tasks (seed 003 §15; docs/rules.md, "Side conversations").

A task an agent delegates from a direct conversation to an agent who is not in it does not spill into
that conversation: it runs in a side conversation (kind `side`, linked to its origin conversation and
topic, one per origin topic), and only its final result — the delegate's response to the delegating
request — comes back to the origin topic, as a `side_result` notice for the origin's people.
"""

from __future__ import annotations

from msgspec.structs import replace

from .decision import Routed, View
from .directory import derived_id
from .model import Conversation, Message, Post, Topic
from .notices import human_members, notice
from .vocabulary import ConversationKind, Kind, MessageType, Notice

_DIRECT, _SIDE = ConversationKind.DIRECT, ConversationKind.SIDE
RESULT_CHARS = 2000  # of the final result carried back (the whole stays in the side conversation)


def side_id(conversation: str, origin_topic: str) -> str:
    """The side conversation of one origin topic (derived, so every node agrees)."""
    return derived_id("side", conversation, origin_topic)


def existing(conv: Conversation | None, topic: str | None, known: dict[str, Conversation]) -> Conversation | None:
    """The side conversation already opened from `topic` of direct conversation `conv`, for the View."""
    if conv is None or conv.kind != _DIRECT or not topic or topic == "new":
        return None
    return known.get(side_id(conv.id, topic))


def redirect(view: View, post: Post, recipients: tuple[str, ...]) -> tuple[View, Post, Conversation | None] | None:
    """Seed 003 §15: "A separate side conversation is opened". For an agent's request in a direct
    conversation to agents not in it: the View and Post that open a topic in the side conversation
    instead (the origin's people are members, so they can follow it), and the direct conversation as the
    opening leaves it (None: unchanged); or None when it stays here."""
    conv, d = view.conversation, view.directory
    if (conv is None or conv.kind != _DIRECT or post.type != MessageType.REQUEST or post.malformed
            or d.participants[post.author].kind != Kind.AGENT):
        return None
    outside = [r for r in recipients if r not in conv.members and d.participants[r].kind == Kind.AGENT]
    if not outside:
        return None
    topic = view.topic
    origin_topic = topic.id if topic is not None else post.id
    side = view.side
    if side is None or side.id != side_id(conv.id, origin_topic):
        people = human_members(d, conv)
        side = Conversation(side_id(conv.id, origin_topic), conv.workspace, _SIDE,
                            (post.title or (topic.title if topic is not None else None) or "side task")[:200],
                            frozenset({post.author, *recipients, *people}), origin=conv.id, origin_topic=origin_topic)
        new = True
    else:
        new = False
    # The delegation continues the exchange a person's message bought in the origin topic: the side conversation
    # takes over the origin topic's turn counters (hop limit, throttle) once, when it opens; from then on the origin
    # topic and its side conversation count as one exchange there (decide), reset when a person writes in either.
    # From a topic no person wrote in, the hops left to the direct conversation's agent-only topics move to the side
    # conversation: they are spent there (issue 17: each such topic's side conversation copied them afresh, so
    # agents opening topics to delegate bought themselves six hops each, with no person writing).
    spent = None
    if new:
        bought = topic is not None and topic.bought
        was = topic if bought else conv
        side = replace(side, hops=was.hops, run=was.run, hop_noticed=was.hop_noticed,
                       throttle_noticed=was.throttle_noticed)
        if not bought and conv.hops < view.max_hops:
            spent = replace(conv, hops=view.max_hops, hop_noticed=False)
    title = post.title or (topic.title if topic is not None else None) or side.name
    return (replace(view, conversation=side, topic=None, new_conversation=new, side=None),
            replace(post, topic="new", title=title, in_reply_to=None), spent)


def result(view: View, conv: Conversation, topic: Topic, msg: Message, answered: bool, now: int) -> Routed | None:
    """Seed 003 §15: "only the final result is sent back where it was asked for": the delegate's
    response to the request that opened a side topic, as a notice in the origin topic (context for the
    origin's people; the delegating agent is woken by the response itself, in the side conversation)."""
    if conv.kind != _SIDE or conv.origin is None or conv.thread is not None or not answered or msg.type != MessageType.RESPONSE \
            or msg.in_reply_to != topic.id:
        return None
    d = view.directory
    people = tuple(p for p in human_members(d, conv))
    if not people:
        return None
    author = d.participants.get(msg.author)
    text = msg.text if len(msg.text) <= RESULT_CHARS else msg.text[:RESULT_CHARS - 1] + "\u2026"
    # a delegation that opened a new topic had no origin topic: the side conversation is keyed by the request's id,
    # which is the side topic's id, no topic of the origin; the result comes back to the conversation itself
    where = None if conv.origin_topic == topic.id else conv.origin_topic
    return notice(Notice.SIDE_RESULT, workspace=conv.workspace, conversation=conv.origin, topic=where,
                  to=people, now=now, cause=msg.id, wake=False, agent=author.name if author else msg.author,
                  title=topic.title or conv.name, detail=text)
