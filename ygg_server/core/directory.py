"""Who is in a workspace, and how the names people write resolve to ids."""

from __future__ import annotations

import uuid

import msgspec

from .model import SYSTEM_PARTICIPANT, Conversation, Membership, Participant
from .vocabulary import SYSTEM, ConversationKind, Kind, Role

_DM_NAMESPACE = uuid.UUID("6f1b1a0e-8f7c-4f8e-9a59-7979676700dd")


class Unresolved(msgspec.Struct, frozen=True, gc=False):
    ref: str
    detail: str


class Directory(msgspec.Struct, frozen=True, gc=False):
    """A workspace's participants, memberships and groups, with a lookup table.

    Build it with `Directory.build(...)`; `refs` maps every way of writing a
    participant (id, agent name, `name@owner`, `@handle`) to its id, or to a
    tuple of ids when a bare agent name is ambiguous.
    """

    workspace: str
    participants: dict[str, Participant]
    memberships: dict[str, Membership]
    groups: dict[str, frozenset[str]]
    refs: dict[str, str | tuple[str, ...]]

    @classmethod
    def build(
        cls,
        workspace: str,
        participants: list[Participant],
        memberships: list[Membership],
        groups: dict[str, frozenset[str]] | None = None,
    ) -> "Directory":
        people = {p.id: p for p in participants}
        people[SYSTEM] = SYSTEM_PARTICIPANT
        refs: dict[str, str | tuple[str, ...]] = {SYSTEM: SYSTEM}
        handles = {p.id: p.name for p in participants if p.kind == Kind.HUMAN}
        for p in participants:
            refs[p.id] = p.id
            if p.kind == Kind.HUMAN:
                refs["@" + p.name] = p.id
                continue
            if p.owner in handles:
                refs[f"{p.name}@{handles[p.owner]}"] = p.id
            seen = refs.get(p.name)
            if seen is None or seen == p.id:
                refs[p.name] = p.id
            else:
                refs[p.name] = (*((seen,) if isinstance(seen, str) else seen), p.id)
        return cls(
            workspace,
            people,
            {m.participant: m for m in memberships},
            dict(groups or {}),
            refs,
        )

    def role(self, pid: str) -> Role | None:
        m = self.memberships.get(pid)
        return m.role if m else None

    def humans(self) -> list[str]:
        return [p for p, v in self.participants.items() if v.kind == Kind.HUMAN and p in self.memberships]

    def resolve(self, refs: tuple[str, ...]) -> tuple[str, ...] | Unresolved:
        """Resolve written references to participant ids, in order, without repeats."""
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
                        names = ", ".join(
                            f"{self.participants[i].name}@{self.participants[o].name}"
                            for i in hit
                            if (o := self.participants[i].owner) in self.participants
                        )
                        return Unresolved(ref, f"{ref!r} is ambiguous: say {names}")
                    hit = hit[0] if hit else None
                if hit is None or (hit != SYSTEM and hit not in self.memberships):
                    return Unresolved(ref, f"nobody by {ref!r} in this workspace")
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


def _derived(*parts: str) -> str:
    return str(uuid.uuid5(_DM_NAMESPACE, "\x1f".join(parts)))


def general_id(workspace: str) -> str:
    return _derived("general", workspace)


def direct_id(workspace: str, a: str, b: str) -> str:
    return _derived("direct", workspace, *sorted((a, b)))


def group_id(workspace: str, name: str) -> str:
    return _derived("group", workspace, name)


def derived_id(*parts: str) -> str:
    """A stable id for something the core makes (a notice), from what caused it."""
    return _derived("derived", *parts)
