"""Who a message goes to: a capability's assignee, the defaults with no `to`, whose turn it is in a party,
and seed 002's permissions on each recipient."""

from __future__ import annotations

from .assign import PREFIX as CAPABILITY, WEIGHTS, assign, left_out
from .decision import View, refused
from .directory import BARRED, Directory, Unresolved
from .model import Conversation, Pending, Post, Topic
from .party import named_at_start, turn_queue
from .vocabulary import SYSTEM, ConversationKind, Kind, RefusalReason as R

_AGENT, _GENERAL = Kind.AGENT, ConversationKind.GENERAL  # Enum class attributes are slow to read


def by_capability(view: View, post: Post):
    """Seed 003 §14: a `capability:<name>` recipient is the eligible agent with the highest score.

    One capability per message; the author is never assigned its own request. Returns (recipients,
    Assignment), or a refusal: `no_eligible_agent` when no agent here declares the capability, or seed 002's
    permissions bar the author from every one that does (the refusal names each and why).
    """
    caps = [r for r in post.to if r.startswith(CAPABILITY)]
    if len(caps) > 1:
        return refused(R.UNKNOWN_RECIPIENT, "address one capability per message")
    cap = caps[0][len(CAPABILITY):].strip()
    if not cap:
        return refused(R.UNKNOWN_RECIPIENT, "name the capability: capability:<name>")
    me = frozenset((post.author,))
    a = assign(view.directory, cap, post.text, view.fitness, view.weights or WEIGHTS, me, post.author)
    if a is None:
        barred = left_out(view.directory, cap, post.author, me)
        if barred:  # seed 002's permissions leave out every agent that declares it: say which and why
            return refused(R.NO_ELIGIBLE_AGENT, f"no agent that declares {cap!r} may get your request: "
                           + "; ".join(BARRED[x.reason].format(x.name) for x in barred))
        return refused(R.NO_ELIGIBLE_AGENT, f"no agent in this workspace declares {cap!r}")
    found = view.directory.resolve(tuple(a.chosen if r == caps[0] else r for r in post.to))
    if found.__class__ is Unresolved:
        return refused(R.UNKNOWN_RECIPIENT, found.detail)
    return found, a


def whose_turn(d: Directory, conv: Conversation, found: tuple[str, ...], me: str,
                text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Who answers a person's message sent with no `to` (docs/rules.md, "Who answers").

    `@Name` at the very start names the agent; else the conversation's Lead, if the party has more
    than one agent; else, when several agents would get it, seed 003 §17's turn queue picks the
    first. The chosen agent is the only agent recipient; the party's other agents get it as context.
    """
    ps = d.participants
    party = [a for a in (conv.members if conv.kind != _GENERAL else ())
             if a != me and a in d.memberships and ps[a].kind == _AGENT]
    agents = [r for r in found if ps[r].kind == _AGENT]
    pool = set(party) | set(agents)
    chosen = named_at_start(d, text)
    if chosen is not None and chosen != me and (conv.kind == _GENERAL or chosen in pool):
        pass
    elif len(pool) > 1 and conv.lead is not None and conv.lead in party:
        chosen = conv.lead
    elif len(agents) > 1:
        chosen = turn_queue(d, tuple(agents), text)[0]
    else:
        return found, ()
    kept = tuple(r for r in found if ps[r].kind != _AGENT)
    others = tuple(sorted(a for a in pool if a != chosen))
    return (chosen,) + kept, others


def permission_denial(d: Directory, author: str, recipients: tuple[str, ...]) -> str | None:
    """Seed 002: receive, can message, takes messages from (`Directory.barred`), for each recipient."""
    for r in recipients:
        why = d.barred(author, r)
        if why is not None:
            return BARRED[why].format(d.participants[r].display)
    return None


def default_recipients(conv: Conversation, topic: Topic | None, pending: Pending | None, me: str,
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
