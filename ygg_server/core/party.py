"""Parties and turn-taking (docs/rules.md, "Parties"): pure functions of a View.

- `named_at_start(directory, text)`: the agent a person addresses with `@Name` at the very start.
- `turn_queue(directory, candidates, text)`: seed 003 §17's order among agents who could answer.
- `change_members(view, actor, action, ref, now)` and `set_lead(view, actor, ref)`: a party's
  membership and Lead, as a Decision carrying the new Conversation.
- `roster(directory, conversation, me)`: who else is in the party, as each agent is told (seed 004).
"""

from __future__ import annotations

import re

import msgspec
from msgspec.structs import replace

from .decision import Decision, View, refused
from .directory import Directory, Unresolved
from .model import Conversation, Profile
from .vocabulary import ConversationKind, Kind, RefusalReason as R, Role

_AT_START = re.compile(r"\s*@([^\s,:;!?]+)")
_WORD = re.compile(r"[\w-]+")
_NO_PROFILE = Profile()
LINE = 160  # characters of an agent's description its colleagues are told (seed 004: "a short line")


class RosterEntry(msgspec.Struct, frozen=True, gc=False):
    """One colleague in a party, as the others are told of it: name, job title, one line of description."""

    id: str
    name: str
    title: str = ""
    line: str = ""
    lead: bool = False


def first_line(text: str, limit: int = LINE) -> str:
    """The first non-empty line of `text`, cut to `limit` characters (with an ellipsis when cut)."""
    line = next((x.strip() for x in text.splitlines() if x.strip()), "")
    return line if len(line) <= limit else line[:limit - 1].rstrip() + "\u2026"


def roster(d: Directory, conv: Conversation | None, me: str | None = None) -> tuple[RosterEntry, ...]:
    """Seed 004: "Each NPC is told who else is in the Party — names, job titles and a short line from each
    description". The conversation's agents still in the workspace, except `me`, by name then id.

    General's party is the whole workspace's agents. Pure and deterministic: the same party gives the
    same tuple (the directive's stable part renders it).
    """
    if conv is None:
        return ()
    ps = d.participants
    ids = d.memberships.keys() if conv.kind == ConversationKind.GENERAL else conv.members
    out = []
    for a in ids:
        p = ps.get(a)
        if a == me or p is None or p.kind != Kind.AGENT or a not in d.memberships:
            continue
        prof = d.profiles.get(a, _NO_PROFILE)
        out.append(RosterEntry(a, p.name, first_line(prof.title, LINE), first_line(prof.description), a == conv.lead))
    out.sort(key=lambda e: (e.name, e.id))
    return tuple(out)


class PartyView(msgspec.Struct, frozen=True, gc=False):
    """What an agent is shown of one conversation's party (docs/rules.md, "What agents see").

    `roster`: every agent of the party (each recipient is told the others); `names`: the agents in the
    conversation now (an agent author outside it was removed, or left the workspace); `party`: more
    than one agent, so replies carry their author's name.
    """

    roster: tuple[RosterEntry, ...] = ()
    names: dict[str, str] = {}  # the agents in the conversation now, id -> name
    party: bool = False


def party_view(d: Directory, conv: Conversation | None) -> PartyView:
    everyone = roster(d, conv)
    return PartyView(everyone, {e.id: e.name for e in everyone}, len(everyone) > 1)


def roster_obj(entries: tuple[RosterEntry, ...]) -> list[dict]:
    """The roster as the wire carries it (docs/protocol.md, `roster` on agents' deliver frames)."""
    return [{"id": e.id, "name": e.name, "title": e.title, "description": e.line, "lead": e.lead} for e in entries]


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
