"""A small world for core tests: a workspace, a fake clock, and assertions by reason."""

from __future__ import annotations

import itertools

from msgspec.structs import replace

from ygg_server.core.funding import set_budget
from ygg_server.core.lifecycle import holds_slot, unfunded
from ygg_server.core.side import side_id
from ygg_server.core.state import LiveState
from ygg_server.core import (
    POOL, SYSTEM, Conversation, ConversationKind, Decision, Directory, Membership, MessageType,
    Participant, Post, Kind, Role, Topic, View, decide, due, fund, general_id,
)
from ygg_server.core.rules import HOUR, MAX_HOPS, SECOND, THROTTLE_DIRECT, THROTTLE_GROUP

T0 = 1_767_225_600 * SECOND  # 2026-01-01T00:00:00Z


class Wallets:
    """One workspace's wallets as a dict by agent, over the live state's (workspace, agent) keys."""

    def __init__(self, held: dict, ws: str):
        self.held, self.ws = held, ws

    def get(self, agent, default=None):
        return self.held.get((self.ws, agent), default)

    def __getitem__(self, agent):
        return self.held[(self.ws, agent)]

    def __setitem__(self, agent, value):
        self.held[(self.ws, agent)] = value

    def __delitem__(self, agent):
        del self.held[(self.ws, agent)]

    def __contains__(self, agent):
        return (self.ws, agent) in self.held

    def __iter__(self):
        return iter([a for ws, a in self.held if ws == self.ws])

    def values(self):
        return [v for (ws, _), v in self.held.items() if ws == self.ws]


class World:
    """Applies decisions to an in-memory state, like the store does, so tests read naturally."""

    def __init__(self, agents=("researcher", "reviewer", "writer"), people=("alice",), viewers=(), wallet=1000, pool=0,
                 party=False):
        self.now = T0
        # The party safeguards (hop limit, throttle) by default only in party tests (party=True), so the
        # older rule tests can run the long agent exchanges they exercise.
        self.max_hops = MAX_HOPS if party else 10**9
        self.throttle = (THROTTLE_DIRECT, THROTTLE_GROUP) if party else (10**9, 10**9)
        self.profiles = {}
        self.live = LiveState()  # what decisions move, folded as the writer folds them (core.state)
        self.fitness = {}  # assignment scoring's data per agent (online, load, trust, response time)
        self.weights = None  # the workspace's assign.weights (None: the defaults)
        self.ws = "ws1"
        self._ids = itertools.count(1)
        self._participants: dict[str, Participant] = {}
        self._memberships: dict[str, Membership] = {}
        for h in people:
            self.add_person(h, Role.OWNER if h == people[0] else Role.MEMBER, rebuild=False)
        for h in viewers:
            self.add_person(h, Role.VIEWER, rebuild=False)
        self.groups = {"team": frozenset(agents)}
        for a in agents:
            self.add_agent(a, people[0], rebuild=False)
        self._rebuild()
        self.general = Conversation(general_id(self.ws), self.ws, ConversationKind.GENERAL, "General")
        self.live.conversations[self.ws] = {self.general.id: self.general}
        self.live.wallets.update({(self.ws, a): wallet for a in agents})
        self.live.pools[self.ws] = pool
        self.plan_left = None
        self.draws_pool: set[str] = set()  # agents an admin lets draw on the pool beyond their wallet
        self.messages = []
        self.deliveries = []  # (message, delivery)

    @property
    def topics(self) -> dict[str, Topic]:
        return self.live.topics

    @property
    def conversations(self) -> dict[str, Conversation]:
        return self.live.conversations[self.ws]

    @property
    def wallets(self) -> "Wallets":
        """The agents' wallets in this workspace, by agent (the live state keys them by workspace and agent)."""
        return Wallets(self.live.wallets, self.ws)

    @property
    def flags(self) -> set:
        return self.live.flags

    @property
    def pool(self) -> int:
        return self.live.pools[self.ws]

    @pool.setter
    def pool(self, credits: int) -> None:
        self.live.pools[self.ws] = credits

    # -- the workspace's people, agents and permissions

    def _rebuild(self):
        self.directory = Directory.build(
            self.ws, list(self._participants.values()), list(self._memberships.values()), self.groups,
            getattr(self, "profiles", None),
        )

    def add_person(self, handle, role=Role.MEMBER, rebuild=True) -> str:
        pid = f"human.{handle}"
        self._participants[pid] = Participant(pid, Kind.HUMAN, handle)
        self._memberships[pid] = Membership(pid, role)
        if rebuild:
            self._rebuild()
        return pid

    def add_agent(self, name, owner_handle, pid=None, wallet=None, rebuild=True) -> str:
        pid = pid or name
        self._participants[pid] = Participant(pid, Kind.AGENT, name, owner=f"human.{owner_handle}")
        self._memberships[pid] = Membership(pid)
        if wallet is not None:
            self.live.wallets[(self.ws, pid)] = wallet
        if rebuild:
            self._rebuild()
        return pid

    def member(self, pid, **changes):
        """Change one membership (role, send, receive, can_message, takes_from)."""
        self._memberships[pid] = replace(self._memberships[pid], **changes)
        self._rebuild()

    def set_group(self, name, members):
        self.groups[name] = frozenset(members)
        self._rebuild()

    def tick(self, us: int):
        self.now += us

    def view(self, author, conversation="general", topic=None) -> View:
        conv = self.directory.conversation(conversation, author, self.conversations)
        opened = sum(1 for t in self.topics.values() if t.opener == author and holds_slot(t))
        return View(
            self.directory, conv, self.topics.get(topic) if topic else None, open_opened=opened,
            wallet=self.wallets.get(author), pool=self.pool, plan_left=self.plan_left,
            draws_pool=author in self.draws_pool,
            flags=frozenset(self.flags), new_conversation=conv is not None and conv.id not in self.conversations,
            max_hops=self.max_hops, throttle=self.throttle, weights=self.weights, fitness=self.fitness,
            side=self.conversations.get(side_id(conv.id, topic)) if conv is not None and topic else None,
        )

    def open(self, author, text=None, **kw) -> str:
        """Open a topic and return its id (the opening message's id)."""
        d = self.send(author, text, topic="new", **kw)
        assert d.refusal is None, d.refusal
        return d.topics[0].id

    def topic(self, tid) -> Topic:
        return self.topics[tid]

    def state(self, tid, pid):
        m = self.topics[tid].members.get(pid)
        return m.state if m else None

    def send(self, author, text=None, *, topic="new", title="A topic", type="request", to=(), conversation="general", **kw) -> Decision:
        n = next(self._ids)
        text = f"message {n} from {author}" if text is None else text  # distinct unless a test repeats itself
        post = Post(id=f"m{n}", author=author, workspace=self.ws, topic=topic, type=MessageType(type) if type in MessageType._value2member_map_ else MessageType.INFORM,
                    text=text, title=title, to=tuple(to), **kw)
        d = decide(self.view(author, conversation, topic if topic not in (None, "new") else None), post, self.now)
        self.apply(d)
        return d

    def apply(self, d: Decision):
        for e in d.ledger:
            if e.account != POOL:
                self.live.wallets.setdefault((e.workspace, e.account), None)  # one is made when first funded
        self.live.fold(d)
        for r in d.routed:
            self.messages.append(r.message)
            self.deliveries += [(r.message, x) for x in r.deliveries]

    def run_timers(self):
        out = []
        for t in list(self.topics.values()):
            conv = self.conversations.get(t.conversation)
            d = due(View(self.directory, conv, flags=frozenset(self.flags)), t, self.now)
            self.apply(d)
            out.append(d)
        return out

    def fund(self, funder, account, amount):
        paused = tuple(t for t in self.topics.values() if unfunded(t))  # as store.credit_paused finds them
        d = fund(View(self.directory, None, flags=frozenset(self.flags)), funder, account, amount, paused, self.now, f"f{next(self._ids)}")
        self.apply(d)
        return d


    def set_budget(self, tid, budget):
        d = set_budget(self.topics[tid], budget, self.now, f"b{next(self._ids)}")
        self.apply(d)
        return d


def delivery(d: Decision, to: str):
    hits = [x for x in d.routed[0].deliveries if x.recipient == to]
    assert hits, f"no delivery to {to}: {d}"
    return hits[0]


def assert_woken(d: Decision, to: str):
    assert d.refusal is None, d.refusal
    x = delivery(d, to)
    assert x.wake, f"{to} not woken: {x.reason}"


def assert_context(d: Decision, to: str, reason: str):
    assert d.refusal is None, d.refusal
    x = delivery(d, to)
    assert not x.wake and x.reason == reason, f"{to}: wake={x.wake} reason={x.reason}, wanted {reason}"


def assert_refused(d: Decision, reason: str):
    assert d.refusal is not None and d.refusal.reason == reason, f"wanted {reason}, got {d.refusal}"
    assert not d.ledger


def woken(d: Decision) -> set[str]:
    """Everyone any message of the decision wakes (the post's own message and notices)."""
    return {x.recipient for r in d.routed for x in r.deliveries if x.wake}


def notices(d: Decision, kind: str | None = None) -> list:
    """The system notices a decision sends (of one kind), as Messages."""
    return [r.message for r in d.routed if r.message.notice is not None and (kind is None or r.message.notice == kind)]


def notice_deliveries(d: Decision, kind: str) -> list[tuple]:
    return [(r.message, x) for r in d.routed if r.message.notice == kind for x in r.deliveries]
