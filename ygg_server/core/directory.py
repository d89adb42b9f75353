"""Who is in a workspace, and how the names people write resolve to ids."""

from __future__ import annotations

import uuid

try:  # CPython's own SHA-1: for the short inputs of derived ids, cheaper to set up than OpenSSL's
    from _sha1 import sha1
except ImportError:  # pragma: no cover
    from hashlib import sha1

import msgspec

from .model import SYSTEM_PARTICIPANT, Conversation, Membership, Participant, Profile
from .vocabulary import SYSTEM, ConversationKind, Kind, Role

_DM_NAMESPACE = uuid.UUID("6f1b1a0e-8f7c-4f8e-9a59-7979676700dd")


class Unresolved(msgspec.Struct, frozen=True, gc=False):
    ref: str
    detail: str


# How each permission that bars a send (`Directory.barred`) is told to its author; {} is the recipient.
BARRED = {"receive": "{} does not receive messages here", "can_message": "you may not message {}",
          "takes_from": "{} does not take messages from you"}


def barred(mine: Membership | None, theirs: Membership, author: str, recipient: str) -> str | None:
    """Which of seed 002's permissions keeps `author` (membership `mine`) from sending to `recipient` (`theirs`)
    in one workspace, or None (`Directory.barred`; who an MCP caller may call, ops/agent_tools.py)."""
    if not theirs.receive:
        return "receive"
    if mine is not None and mine.can_message is not None and recipient not in mine.can_message:
        return "can_message"
    if theirs.takes_from is not None and author not in theirs.takes_from:
        return "takes_from"
    return None


class Directory(msgspec.Struct, frozen=True, gc=False):
    """A workspace's participants, memberships and groups, with a lookup table.

    Build it with `Directory.build(...)`; `refs` maps every way of writing a
    participant (id, agent name, `name@owner`, `@handle`, a person's bare handle)
    to its id, or to a tuple of ids when a bare name is ambiguous.
    """

    workspace: str
    participants: dict[str, Participant]
    memberships: dict[str, Membership]
    groups: dict[str, frozenset[str]]
    refs: dict[str, str | tuple[str, ...]]
    # The people who see the workspace's messages (members, human, with receive), in membership
    # order: General's observers. `build` fills it; None means "work it out" (notices.human_members).
    receivers: tuple[str, ...] | None = None
    # False when no membership here limits sending (receive off, can_message, takes_from): the
    # core then skips seed 002's per-recipient checks. `build` fills it; True is always safe.
    restricted: bool = True
    # Agents' profiles (title, description, capabilities, generalist), by id: parties and turn-taking.
    profiles: dict[str, Profile] = {}

    @classmethod
    def build(
        cls,
        workspace: str,
        participants: list[Participant],
        memberships: list[Membership],
        groups: dict[str, frozenset[str]] | None = None,
        profiles: dict[str, Profile] | None = None,
    ) -> "Directory":
        people = {p.id: p for p in participants}
        people[SYSTEM] = SYSTEM_PARTICIPANT
        refs: dict[str, str | tuple[str, ...]] = {SYSTEM: SYSTEM}
        handles = {p.id: p.name for p in participants if p.kind == Kind.HUMAN}
        for p in participants:
            refs[p.id] = p.id
            if p.kind == Kind.HUMAN:
                refs["@" + p.name] = p.id  # a person by handle; the bare handle is their person agent (below)
            elif p.owner in handles:
                refs[f"{p.name}@{handles[p.owner]}"] = p.id
            # a bare name: an agent's, or a person's handle (seed 002's person agent, "named after their
            # handle"); when several of the workspace's members answer to it, it is ambiguous
            seen = refs.get(p.name)
            if seen is None or seen == p.id:
                refs[p.name] = p.id
            else:
                refs[p.name] = (*((seen,) if isinstance(seen, str) else seen), p.id)
        ms = {m.participant: m for m in memberships}
        receivers = tuple(
            p for p, m in ms.items() if m.receive and (q := people.get(p)) is not None and q.kind == Kind.HUMAN
        )
        restricted = any(not m.receive or m.can_message is not None or m.takes_from is not None for m in ms.values())
        return cls(workspace, people, ms, dict(groups or {}), refs, receivers, restricted, dict(profiles or {}))

    def barred(self, author: str, recipient: str) -> str | None:
        """Which of seed 002's permissions keeps `author` from sending to `recipient` here, or None:
        `receive` (the recipient's is off), `can_message` (the author's list leaves it out), or
        `takes_from` (the recipient's list leaves the author out). `BARRED` words each for the author."""
        return barred(self.memberships.get(author), self.memberships[recipient], author, recipient)

    def role(self, pid: str) -> Role | None:
        m = self.memberships.get(pid)
        return m.role if m else None

    def spelling(self, pid: str) -> str:
        """How to write `pid` so that it is not ambiguous: `@handle` for a person, `name@owner` for an agent."""
        p = self.participants[pid]
        if p.kind == Kind.HUMAN:
            return "@" + p.name
        owner = self.participants.get(p.owner) if p.owner else None
        return f"{p.name}@{owner.name}" if owner is not None else p.id

    def humans(self) -> list[str]:
        return [p for p, v in self.participants.items() if v.kind == Kind.HUMAN and p in self.memberships]

    def _nobody(self, ref: str) -> str:
        """Why `ref` names nobody here, with the spelling of those here it names written otherwise (another case,
        an agent with `@`, a person without it)."""
        near = ref.lstrip("@").lower()
        meant = sorted(p.name if p.kind == Kind.AGENT and self.refs.get(p.name) == i else self.spelling(i)
                       for i in self.memberships if (p := self.participants.get(i)) and p.name.lower() == near)
        return f"nobody by {ref!r} in this workspace" + (f"; did you mean {' or '.join(meant)}?" if meant else "")

    def resolve(self, refs: tuple[str, ...]) -> tuple[str, ...] | Unresolved:
        """Resolve written references to participant ids, in order, without repeats."""
        if len(refs) == 1:  # the common case: one id or name of someone here
            hit = self.refs.get(refs[0])
            if hit.__class__ is str and (hit in self.memberships or hit == SYSTEM) and not refs[0].startswith("group:"):
                return (hit,)
        out: list[str] = []
        for ref in refs:
            if ref.startswith("group:"):
                members = self.groups.get(ref[6:])
                if members is None:
                    return Unresolved(ref, f"no group {ref[6:]!r} in this workspace")
                ids = sorted(m for m in members if m in self.memberships)  # a member who left is skipped
                if not ids:
                    return Unresolved(ref, f"nobody in group {ref[6:]!r} is in this workspace")
            else:
                hit = self.refs.get(ref)
                if isinstance(hit, tuple):  # a bare agent name several owners use
                    hit = tuple(i for i in hit if i in self.memberships)
                    if len(hit) > 1:
                        names = ", ".join(sorted(self.spelling(i) for i in hit))
                        return Unresolved(ref, f"{ref!r} is ambiguous: say {names}")
                    hit = hit[0] if hit else None
                if hit is None or (hit != SYSTEM and hit not in self.memberships):
                    return Unresolved(ref, self._nobody(ref))
                ids = [hit]
            for i in ids:
                if i not in out:
                    out.append(i)
        return tuple(out)

    def conversation(self, ref: str, author: str, known: dict[str, Conversation]) -> Conversation | None:
        """Find the conversation a send names: `general`, `dm:<who>`, `group:<name>` or an id.

        `known` holds the workspace's stored conversations by id. A direct
        conversation that does not exist yet is made here, with an id derived
        from its two members, so two nodes making it at once agree.
        """
        ws = self.workspace
        if ref == "general":
            return known.get(general_id(ws))
        if ref.startswith("dm:"):
            other = self.resolve((ref[3:],))
            if isinstance(other, Unresolved) or len(other) != 1 or other[0] in (author, SYSTEM):
                return None
            cid = direct_id(ws, author, other[0])
            return known.get(cid) or Conversation(
                cid, ws, ConversationKind.DIRECT, "", frozenset((author, other[0]))
            )
        if ref.startswith("group:"):
            members = self.groups.get(ref[6:])
            if members is None:
                return None
            cid = group_id(ws, ref[6:])
            return known.get(cid) or Conversation(cid, ws, ConversationKind.GROUP, ref[6:], members)
        conv = known.get(ref)
        return conv if conv is not None and conv.workspace == ws else None


_NS = _DM_NAMESPACE.bytes


_VARIANT = {c: "89ab"[int(c, 16) & 3] for c in "0123456789abcdef"}  # RFC 4122 variant bits in the 17th digit


def _derived(*parts: str) -> str:
    """str(uuid.uuid5(_DM_NAMESPACE, "\x1f".join(parts))), without building a UUID object (5x faster)."""
    x = sha1(_NS + "\x1f".join(parts).encode()).hexdigest()
    return f"{x[:8]}-{x[8:12]}-5{x[13:16]}-{_VARIANT[x[16]]}{x[17:20]}-{x[20:32]}"


def general_id(workspace: str) -> str:
    return _derived("general", workspace)


def direct_id(workspace: str, a: str, b: str) -> str:
    return _derived("direct", workspace, *sorted((a, b)))


def group_id(workspace: str, name: str) -> str:
    return _derived("group", workspace, name)


def derived_id(*parts: str) -> str:
    """A stable id for something the core makes (a notice), from what caused it."""
    return _derived("derived", *parts)
