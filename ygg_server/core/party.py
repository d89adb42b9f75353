"""Parties and turn-taking (docs/rules.md, "Parties"): pure functions of a View.

- `named_at_start(directory, text)`: the agent a person addresses with `@Name` at the very start.
- `turn_queue(directory, candidates, text)`: seed 003 §17's order among agents who could answer.
- `change_members(view, actor, action, ref, now)` and `set_lead(view, actor, ref)`: a party's
  membership and Lead, as a Decision carrying the new Conversation.
"""

from __future__ import annotations

import re

from msgspec.structs import replace

from .decision import Decision, View, refused
from .directory import Directory, Unresolved
from .model import Profile
from .vocabulary import ConversationKind, Kind, RefusalReason as R, Role

_AT_START = re.compile(r"\s*@([^\s,:;!?]+)")
_WORD = re.compile(r"[\w-]+")
_NO_PROFILE = Profile()


def named_at_start(d: Directory, text: str) -> str | None:
    """Seed 004: "The name has to be at the start of the message." The agent `@Name` names, or None."""
    m = _AT_START.match(text)
    if m is None:
        return None
    ref = m.group(1).rstrip(".")
    hit = d.refs.get(ref)
    if hit is None:  # people write names as they say them: @Pike for pike, when only one agent is meant
        low = ref.lower()
        hits = {i for k, i in d.refs.items() if k.lower() == low and i.__class__ is str}
        hit = hits.pop() if len(hits) == 1 else None
    if hit.__class__ is not str or hit not in d.memberships:
        return None
    p = d.participants.get(hit)
    return hit if p is not None and p.kind == Kind.AGENT else None


def words(text: str) -> frozenset[str]:
    return frozenset(w.lower() for w in _WORD.findall(text))


def _caps(p: Profile) -> list[frozenset[str]]:
    return [c for c in (words(x) for x in p.capabilities) if c]


def turn_queue(d: Directory, candidates: tuple[str, ...], text: str) -> tuple[str, ...]:
    """Seed 003 §17: whose turn it is, first to last, among `candidates` (agents).

    A capability matches when all its words are words of the text. The text's domains are the
    capabilities that match. If one specialist (an agent that is not a generalist) declares all of
    them, the question is confined to one domain: that specialist first (the one that matches most,
    then the one with the fewest capabilities, then by name), then the generalists. If they span
    several specialists, the generalists first, then the specialists by how much they match. If
    nothing matches: generalists, then everyone else. Ties go by name, then id, so it is deterministic.
    """
    tw = words(text)
    info = []
    for a in candidates:
        prof = d.profiles.get(a, _NO_PROFILE)
        caps = _caps(prof)
        hits = [c for c in caps if c <= tw]
        p = d.participants.get(a)
        info.append((a, prof.generalist, len(hits), len(caps), frozenset().union(*hits) if hits else frozenset(),
                     p.name if p else a))
    matched = frozenset().union(*(i[4] for i in info))
    general = sorted((i for i in info if i[1]), key=lambda i: (-i[2], i[5], i[0]))
    special = [i for i in info if not i[1]]
    if not matched:
        rest = sorted(special, key=lambda i: (i[5], i[0]))
        return tuple(i[0] for i in general + rest)
    covering = [i for i in special if i[4] == matched]
    ranked = sorted(special, key=lambda i: (-i[2], i[3], i[5], i[0]))
    if covering:  # confined to one domain: the best-matching specialist before the generalist
        best = min(covering, key=lambda i: (-i[2], i[3], i[5], i[0]))
        return tuple([best[0]] + [i[0] for i in general] + [i[0] for i in ranked if i[0] != best[0]])
    return tuple(i[0] for i in general + ranked)  # several domains: the generalist first


def _actor_ok(view: View, actor: str):
    d = view.directory
    p, m = d.participants.get(actor), d.memberships.get(actor)
    if p is None or m is None:
        return refused(R.PERMISSION_DENIED, "you are not a member of this workspace")
    if p.kind != Kind.HUMAN or m.role == Role.VIEWER:
        return refused(R.PERMISSION_DENIED, "a person (not a viewer) changes a party")
    conv = view.conversation
    if conv is None or conv.kind == ConversationKind.GENERAL:
        return refused(R.UNKNOWN_CONVERSATION, "no such conversation (General is everyone's)")
    if actor not in conv.members and m.role not in (Role.OWNER, Role.ADMIN):
        return refused(R.UNKNOWN_CONVERSATION, "no such conversation")
    return None


def _one(d: Directory, ref: str) -> str | Decision:
    found = d.resolve((ref,))
    if isinstance(found, Unresolved) or len(found) != 1 or found[0] not in d.memberships:
        return refused(R.UNKNOWN_RECIPIENT, found.detail if isinstance(found, Unresolved) else f"nobody by {ref!r}")
    return found[0]


def change_members(view: View, actor: str, action: str, ref: str, now: int) -> Decision:
    """Add or remove one participant (seed 004, "Adding and removing").

    Adding one already there, or removing one not there, changes nothing (no conversation in the
    Decision). Removing the last participant besides the person removing is `last_participant`.
    """
    bad = _actor_ok(view, actor)
    if bad is not None:
        return bad
    d, conv = view.directory, view.conversation
    who = _one(d, ref)
    if isinstance(who, Decision):
        return who
    if action == "add":
        if who in conv.members:
            return Decision()
        p = d.participants[who]
        if (p.kind == Kind.AGENT and p.owner != actor
                and d.memberships[actor].role not in (Role.OWNER, Role.ADMIN)):
            return refused(R.PERMISSION_DENIED, "add an agent you own (owners and admins add any)")
        return Decision(conversation=replace(conv, members=conv.members | {who}))
    if who not in conv.members:
        return Decision()
    left = conv.members - {who}
    if not (left - {actor}):
        return refused(R.LAST_PARTICIPANT, "a conversation keeps at least one participant besides you")
    return Decision(conversation=replace(conv, members=left, lead=None if conv.lead == who else conv.lead))


def set_lead(view: View, actor: str, ref: str | None) -> Decision:
    """A party's Lead (seed 004: "A Party with a Lead sends it every message nobody else is addressed in")."""
    bad = _actor_ok(view, actor)
    if bad is not None:
        return bad
    d, conv = view.directory, view.conversation
    if ref is None:
        return Decision(conversation=replace(conv, lead=None))
    who = _one(d, ref)
    if isinstance(who, Decision):
        return who
    if who not in conv.members or d.participants[who].kind != Kind.AGENT:
        return refused(R.UNKNOWN_RECIPIENT, "the Lead is an agent in this conversation")
    return Decision(conversation=replace(conv, lead=who))
