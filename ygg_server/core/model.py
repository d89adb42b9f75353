"""The nouns the core reasons about: immutable snapshots, never live objects.

Times are integers: microseconds since the Unix epoch, UTC.
"""

from __future__ import annotations

import msgspec

from .vocabulary import (
    SYSTEM,
    ConversationKind,
    Kind,
    MessageType,
    Pause,
    Role,
    State,
    TopicStatus,
)


class Participant(msgspec.Struct, frozen=True, gc=False):
    """A person (`human.<id>`, shown as @handle), an agent, or system.ygg."""

    id: str
    kind: Kind
    name: str  # an agent's name, a person's handle
    owner: str | None = None  # an agent's person

    @property
    def display(self) -> str:
        return f"@{self.name}" if self.kind == Kind.HUMAN else self.name


SYSTEM_PARTICIPANT = Participant(SYSTEM, Kind.SYSTEM, SYSTEM)


class Profile(msgspec.Struct, frozen=True, gc=False):
    """An agent's profile (agents.profile): what the party is told of it, and what it answers best.

    `capabilities` are domains or keywords (lowercase words); a `generalist` takes questions that
    span several domains first (seed 003 §17).
    """

    title: str = ""
    description: str = ""
    capabilities: tuple[str, ...] = ()
    generalist: bool = False
    tools: tuple[str, ...] = ()  # the tools it is connected to (assignment scoring, seed 003 §14)
    cost: int = 0  # what a turn of it costs, as its owner declares it (0: cheapest)


class Membership(msgspec.Struct, frozen=True, gc=False):
    """One participant's place in one workspace, with seed 002's permissions.

    `can_message` / `takes_from` of None mean "anyone in the workspace".
    """

    participant: str
    role: Role = Role.MEMBER
    send: bool = True
    receive: bool = True
    can_message: frozenset[str] | None = None
    takes_from: frozenset[str] | None = None
    monitor: bool = False


class Conversation(msgspec.Struct, frozen=True, gc=False):
    id: str
    workspace: str
    kind: ConversationKind
    name: str
    members: frozenset[str] = frozenset()  # General: empty, meaning the whole workspace
    # Parties (docs/rules.md, "Parties"): the Lead; the turn-taking counters of the conversation's topics no
    # person wrote in (a side conversation's: one exchange with its origin topic); other topics count their own.
    lead: str | None = None
    hops: int = 0  # agent messages that woke another agent since a person last wrote here
    run: int = 0  # agent messages in a row since a person last wrote here (capped at the throttle)
    hop_noticed: bool = False  # the hop_limit notice for this run is already in the transcript
    throttle_noticed: bool = False  # the throttled notice for this run is already in the transcript
    # A side conversation (seed 003 §15): the direct conversation and topic its task was delegated from.
    origin: str | None = None
    origin_topic: str | None = None
    # A side thread (seed 003 §5-7, core/threads.py): the message it was opened from, its state (ongoing,
    # resolved, abandoned; None: not a thread) and the summary a member posted back.
    origin_message: str | None = None
    thread: str | None = None
    summary: str | None = None


class Member(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """A participant's standing inside one topic (encoded without the fields at their defaults)."""

    state: State | None = None  # None: addressed, has not written yet
    last_at: int = 0  # when it last wrote here (or joined)
    wake_pending: bool = False  # woken here and has not written since
    folded: int = 0  # requests folded into that pending wake
    waiting_for: tuple[str, ...] = ()
    polled_at: int | None = None  # closure poll outstanding since
    awaited_since: int | None = None  # someone waits on it since (nudges)
    nudges: int = 0
    asked: bool = False  # already polled in this closure round (answering does not clear it; see closing.poll)
    repolled: bool = False  # polled again by the clock in this closure round (once at most; see closing.poll)


class Pending(msgspec.Struct, frozen=True, gc=False):
    """A request (or notice) still owed an answer by `remaining`."""

    requester: str
    remaining: frozenset[str]


class Sig(msgspec.Struct, frozen=True, gc=False, array_like=True):
    """What loop detection remembers of one agent message (encoded as [author, to, text_hash]: a topic
    remembers up to 20, most of its stored state)."""

    author: str
    to: tuple[str, ...]
    text_hash: int


class Topic(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """One topic's state (encoded without the fields at their defaults; store/rows.encode_topic)."""

    id: str
    workspace: str
    conversation: str
    opener: str
    created_at: int
    title: str | None = None
    status: TopicStatus = TopicStatus.OPEN
    pause: Pause | None = None
    paused_by: str | None = None  # the first agent whose credits ran out (all of them: `unfunded`)
    budget: int | None = None  # credits left in the topic's budget, if one is set
    closed_at: int | None = None
    members: dict[str, Member] = {}
    pending: dict[str, Pending] = {}
    recent: tuple[Sig, ...] = ()  # agent messages since the last person wrote
    # Agents refused credits_exhausted here and not yet refilled, in order, with what ran dry:
    # "wallet" (their wallet and the pool) or "budget" (this topic's budget). See lifecycle.unfunded.
    unfunded: dict[str, str] = {}
    # Parties (docs/rules.md, "Parties"): the turn-taking counters since a person last wrote in this topic, once
    # one did (`bought`; before that its conversation's count; a topic of a direct conversation that delegated
    # work counts them on its side conversation instead).
    bought: bool = False  # a person wrote here: the topic counts its own hops
    hops: int = 0  # agent messages that woke another agent
    run: int = 0  # agent messages in a row (capped at the throttle)
    hop_noticed: bool = False  # the hop_limit notice for this run is in the transcript
    throttle_noticed: bool = False  # the throttled notice for this run is in the transcript


class Fitness(msgspec.Struct, frozen=True, gc=False):
    """What the store and the gateway know of an agent right now (none of it is decided here)."""

    online: bool = False
    load: int = 0  # wakes it holds and has not acknowledged
    trust: float | None = None  # 0..1, None: no record yet
    response_us: int | None = None  # its usual (median) time from a wake to its answer; None: unknown


class Part(msgspec.Struct, frozen=True, gc=False):
    name: str
    value: float  # 0..1
    weight: float
    points: float  # value * weight


class Score(msgspec.Struct, frozen=True, gc=False):
    agent: str
    name: str
    total: float
    parts: tuple[Part, ...]


class LeftOut(msgspec.Struct, frozen=True, gc=False):
    """An agent that declares the capability but may not get this sender's request (seed 002's permissions)."""

    agent: str
    name: str
    reason: str  # `Directory.barred`: receive, can_message or takes_from


class Assignment(msgspec.Struct, frozen=True, gc=False):
    """Kept on the message it routed, so the workspace's people can see why (`explain`)."""

    capability: str
    chosen: str
    scores: tuple[Score, ...]  # best first, the chosen one at the head
    left_out: tuple[LeftOut, ...] = ()  # declaring agents the sender's request may not go to, and why


class ArtifactRef(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """What a message says of the artifact it posted, edited or commented on (core/artifacts.py)."""

    id: str
    version: int
    title: str
    kind: str  # document, code, page
    action: str = "created"  # created, updated, commented


class FileRef(msgspec.Struct, frozen=True, gc=False):
    """A file sent with a message (core/files.py): the stored upload it names, as the server measured it."""

    id: str
    name: str
    size: int  # bytes, as stored (what the message is charged by; never a number the sender declares)
    type: str  # a media type, e.g. text/plain
    sha256: str


class CardButton(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """A card's button (core/cards.py): `in_place` acts on the card itself (an email draft's Send, Save draft);
    any other hands the click back to the card's author as a wake."""

    action: str
    label: str
    in_place: bool = False


class Card(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """A result card's resolved layout, stamped into its message when it is saved (seed 003 §12; core/cards.py):
    what every client draws, whatever the template library says later. Rows, callouts, sections, indicators and
    trends are pairs/triples: (label, value), (tone, text), (heading, text), (label, value, change), (label, points)."""

    template: str
    kind: str
    title: str
    subtitle: str | None = None
    image: str | None = None
    price: str | None = None
    rating: float | None = None  # out of 5
    rows: tuple[tuple[str, str], ...] = ()
    chips: tuple[str, ...] = ()
    callouts: tuple[tuple[str, str], ...] = ()  # tone: info, good, warn, bad
    sections: tuple[tuple[str, str], ...] = ()  # Markdown text under a heading
    indicators: tuple[tuple[str, str, float], ...] = ()  # the change's sign says up or down
    trends: tuple[tuple[str, tuple[float, ...]], ...] = ()
    buttons: tuple[CardButton, ...] = ()
    fallback: bool = False  # the template was unknown: the kind's default layout
    state: str | None = None  # an in-place card's state (an email draft: saved, sent)
    state_by: str | None = None
    state_at: int | None = None


class Press(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """What a button press hands back to a card's author (core/cards.py): which card, which action."""

    message: str  # the card's message
    action: str
    label: str
    card: str  # the card's title
    template: str


class Message(msgspec.Struct, frozen=True, gc=False):
    id: str
    workspace: str
    conversation: str
    topic: str | None
    author: str
    type: MessageType
    text: str
    created_at: int
    to: tuple[str, ...] = ()
    state: State | None = None
    waiting_for: tuple[str, ...] = ()
    in_reply_to: str | None = None
    title: str | None = None
    cost: int = 0
    notice: str | None = None
    malformed: bool = False
    handoff: bool = False  # a request handing the conversation to one colleague (seed 004)
    assignment: Assignment | None = None  # a request to a capability: who scored what (seed 003 §14)
    version: int = 0  # how many times its author edited it (core/revise.py); the older texts are kept apart
    edited_at: int | None = None  # when it was last edited or deleted
    deleted: bool = False  # its author deleted it: its text is gone
    threads: tuple[str, ...] = ()  # the side threads its `<dm>` parts went to (core/threads.py)
    artifact: ArtifactRef | None = None  # the artifact version it posted or commented on (core/artifacts.py)
    card: Card | None = None  # its result card, resolved when it was saved (core/cards.py)
    press: Press | None = None  # the card button press it hands back to the card's author
    files: tuple[FileRef, ...] = ()  # the files sent with it (core/files.py)


class Post(msgspec.Struct, frozen=True, gc=False):
    """A send as the core sees it: decoded, authenticated, not yet judged.

    `to` and `waiting_for` hold references as written (`researcher`, `@alice`,
    `group:reviewers`, ids); the core resolves them.
    """

    id: str  # the message id the server drew for it
    author: str
    workspace: str
    topic: str | None  # a topic id, "new", or None (missing)
    type: MessageType
    text: str = ""
    title: str | None = None
    to: tuple[str, ...] = ()
    state: State | None = None
    waiting_for: tuple[str, ...] = ()
    in_reply_to: str | None = None
    attachment_bytes: int = 0  # the files' stored sizes (core/files.py): set by the writer, never by the sender
    malformed: bool = False  # fields had the wrong types: downgraded to an inform
    handoff: bool = False  # a request handing the conversation to exactly one colleague
    threads: tuple[str, ...] = ()  # the side threads its `<dm>` parts went to (stamped into the message)
    artifact: ArtifactRef | None = None  # an artifact version it posts or comments on (core/artifacts.py)
    body_chars: int = 0  # that version's body: paid for like text (seed 000), not shown in the message
    card: Card | None = None  # a result card, resolved (core/cards.py)
    press: Press | None = None  # a card button press handed back to the card's author
    files: tuple[FileRef, ...] = ()  # the uploads it sends (their sizes summed in attachment_bytes)


class Plan(msgspec.Struct, frozen=True, gc=False):
    """An organization's plan (seed 002): None means unlimited."""

    name: str
    messages_per_month: int | None
    agents: int | None
    workspaces: int | None
    history_days: int


PLANS = {
    "free": Plan("free", 300, 5, 1, 7),
    "team": Plan("team", None, None, None, 90),
}
TEAM_AGENTS_PER_MESSAGES, TEAM_AGENTS_AT_LEAST = 100, 50  # seed 002: "one per 100 messages, at least 50"


def plan_of(name: str | None, licensed: int | None = None) -> Plan:
    """An organization's limits: its plan's, with a Team plan's messages "as licensed" (seed 002) - the
    organization's licensed messages a month - and its agents "one per 100 messages, at least 50". A Team
    plan with no licensed count (a self-hosted server's default) is not metered. Unknown names are Team."""
    p = PLANS.get(name or "team", PLANS["team"])
    if p.name != "team" or licensed is None:
        return p
    return Plan(p.name, licensed, max(TEAM_AGENTS_AT_LEAST, licensed // TEAM_AGENTS_PER_MESSAGES), p.workspaces,
                p.history_days)

