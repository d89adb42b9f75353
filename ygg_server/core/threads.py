"""Side threads (seed 003 §5-7; docs/rules.md, "Side threads"): `<dm target="…">…</dm>` in a message.

The tag is the whole mechanism (§6): the server takes each well-formed part out of the message, and posts it as
a request in the side thread of exactly the author and the targets (a side conversation, kind `side`, marked
`thread`, linked to its origin conversation and to the message it came from: one per origin conversation and set
of participants, reused). The origin message keeps the rest of its text and the ids of its threads, which the
clients draw as a small card under it. A thread does not bring its result back by itself (§7): any member posts a
summary and marks it resolved (or abandoned); the origin's card marker changes, no message is added there.

Parsing, verbatim rules (docs/protocol.md, "Side threads"):
- a part is `<dm target="A">body</dm>` (or `target='A'`; several targets separated by commas); at most
  `MAX_PARTS` per message, the rest left as text;
- a `<dm …>` inside a part is not a part of its own: it stays as text of the outer part (tags nest by count);
- a malformed tag (no closing `</dm>`, no or an empty target, an empty body, a stray `</dm>`) is left as text,
  never dropped.
"""

from __future__ import annotations

import re

from msgspec import Struct
from msgspec.structs import replace

from .decision import Decision, refused
from .directory import Directory, derived_id
from .model import Conversation
from .notices import human_members, notice
from .vocabulary import ConversationKind, Notice, RefusalReason as R

MAX_PARTS = 8  # side-thread parts taken out of one message
SUMMARY_CHARS = 2000
ONGOING, RESOLVED, ABANDONED = "ongoing", "resolved", "abandoned"
STATES = (ONGOING, RESOLVED, ABANDONED)
_OPEN = re.compile(r"""<dm\s+target\s*=\s*(?:"([^"<>]*)"|'([^'<>]*)')\s*>""", re.IGNORECASE)
_START = re.compile(r"<dm\b", re.IGNORECASE)
_TAG = re.compile(r"<dm\b[^>]*>|</dm\s*>", re.IGNORECASE)


class DmPart(Struct, frozen=True, gc=False):
    targets: tuple[str, ...]  # as written (names, @handles, ids)
    body: str


class Extracted(Struct, frozen=True, gc=False):
    text: str  # the message without its parts
    parts: tuple[DmPart, ...] = ()


def extract(text: str) -> Extracted:
    """The well-formed `<dm>` parts of `text`, in order, and the text left (see the module's rules)."""
    if "<" not in text or _START.search(text) is None:  # (every send passes here: no copy of its text)
        return Extracted(text)
    parts: list[DmPart] = []
    kept: list[str] = []
    pos = 0
    while len(parts) < MAX_PARTS:
        m = _OPEN.search(text, pos)
        if m is None:
            break
        end = _closing(text, m.end())
        targets = tuple(t.strip() for t in (m.group(1) if m.group(1) is not None else m.group(2)).split(",")
                        if t.strip())
        if end is None:  # never closed: the rest stays as text
            break
        body = text[m.end():end[0]].strip()
        if not targets or not body:  # malformed: left as text, scanning goes on after it
            kept.append(text[pos:end[1]])
            pos = end[1]
            continue
        kept.append(text[pos:m.start()])
        parts.append(DmPart(targets, body))
        pos = end[1]
    kept.append(text[pos:])
    if not parts:
        return Extracted(text)
    rest = re.sub(r"[ \t]+\n", "\n", re.sub(r"\n{3,}", "\n\n", "".join(kept))).strip()
    return Extracted(rest, tuple(parts))


def _closing(text: str, start: int) -> tuple[int, int] | None:
    """Where the `</dm>` that closes a part opened just before `start` begins and ends (nested tags counted)."""
    depth = 1
    for t in _TAG.finditer(text, start):
        depth += -1 if t.group(0).startswith("</") else 1
        if depth == 0:
            return t.start(), t.end()
    return None


def thread_id(origin: str, participants: frozenset[str]) -> str:
    """The one thread of an origin conversation for exactly these participants (derived: every node agrees)."""
    return derived_id("thread", origin, *sorted(participants))


def is_thread(c: Conversation | None) -> bool:
    return c is not None and c.kind == ConversationKind.SIDE and c.thread is not None


def opened(d: Directory, origin: Conversation, author: str, targets: tuple[str, ...], message: str,
           known: Conversation | None, counters) -> Conversation:
    """The thread a part goes to: `known` (reopened if it was settled), or a new one. Its members are the author
    and the targets, and the origin's people, who see it as they see the origin (seed 003 §10). Hops follow the
    bound across threads (docs/rules.md): the thread carries on the exchange of `counters` (the origin topic's, or
    its conversation's) when they are further along than its own."""
    if known is None:
        names = ", ".join(d.participants[t].display for t in targets if t in d.participants)
        people = human_members(d, origin)
        c = Conversation(thread_id(origin.id, frozenset({author, *targets})), origin.workspace,
                         ConversationKind.SIDE, f"thread: {names}"[:200], frozenset({author, *targets, *people}),
                         origin=origin.id, origin_message=message, thread=ONGOING)
    else:
        c = known if known.thread == ONGOING else replace(known, thread=ONGOING)
    if counters is not None and counters.hops > c.hops:
        c = replace(c, hops=counters.hops, run=max(c.run, counters.run), hop_noticed=counters.hop_noticed,
                    throttle_noticed=counters.throttle_noticed)
    return c


def settle(d: Directory, thread: Conversation | None, who: str, state: str, summary: str | None,
           now: int, cause: str) -> Decision:
    """Seed 003 §7: "post a summary back and mark the thread resolved" (or "abandoned", or `ongoing` again):
    any member of the thread. The thread keeps the state and summary (its card in the origin shows them; no
    message is added to the origin); its members get a `thread_settled` notice in the thread, as context."""
    if not is_thread(thread) or who not in thread.members:
        return refused(R.UNKNOWN_CONVERSATION, "no such side thread for you")
    if state not in STATES:
        return refused(R.BAD_THREAD_STATE, "a thread's state is ongoing, resolved or abandoned")
    if summary is not None:
        summary = summary.strip()[:SUMMARY_CHARS] or None
    c = replace(thread, thread=state, summary=summary if summary is not None else thread.summary)
    p = d.participants.get(who)
    to = tuple(sorted(m for m in thread.members if m != who))
    n = notice(Notice.THREAD_SETTLED, workspace=thread.workspace, conversation=thread.id, topic=None, to=to,
               now=now, cause=cause, wake=False, who=p.display if p else who, state=state,
               summary=f": {c.summary}" if c.summary else "")
    return Decision(routed=(n,) if to else (), conversation=c)
