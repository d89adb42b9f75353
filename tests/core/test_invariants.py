"""Hypothesis stateful tests: the seed's guarantees hold whatever the agents do.

Seed 000, "Why loops cannot form": "So the total number of agent messages is bounded by the
credits humans hand out, whatever the agents say. None of this depends on a model choosing to
stay quiet."

The population is adversarial: an agent that answers every wake with a new request, one that
copies the text it was sent, one that never says done, one that answers twice; people who open
topics, write and fund; and a clock that jumps ahead and runs the timers. Every decision is
checked as it is applied, against the state just before it:

(a) agent messages that were accepted and delivered to anyone never exceed the credits people funded;
(b) a closed topic never wakes anyone, and no decision changes a closed topic;
(c) a participant whose state was done is never woken by an agent's message;
(d) a request yields at most one waking response per recipient.
"""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, event, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from ygg_server.core import POOL, SYSTEM, Decision, Kind, MessageType, State, TopicStatus
from ygg_server.core.rules import HOUR, MINUTE, NUDGE_AFTER

from .harness import World

ASKER, COPIER, STUBBORN, DOUBLE = "asker", "copier", "stubborn", "double"
AGENTS = (ASKER, COPIER, STUBBORN, DOUBLE)
PEOPLE = ("alice", "bob")

SETTINGS = settings(
    max_examples=500, stateful_step_count=30, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


class CheckedWorld(World):
    """A World that checks every decision against the state it is applied to."""

    def __init__(self):
        super().__init__(agents=AGENTS, people=PEOPLE, wallet=0, pool=0)
        self.member("human.bob", role="member")
        self.funded = 0  # credits people put in
        self.spent = 0  # credits agents' accepted messages cost
        self.delivered_agent_messages = 0
        self.answers: Counter[tuple[str, str]] = Counter()  # (request, responder) -> waking responses
        self.inbox: dict[str, list] = {a: [] for a in AGENTS}  # wakes each agent got: (topic, message)
        self.closed_seen: dict[str, object] = {}

    def apply(self, d: Decision):
        before = dict(self.topics)
        closed = {tid: t for tid, t in before.items() if t.status == TopicStatus.CLOSED}
        ps = self.directory.participants

        # (b) nothing changes a closed topic, nothing in it wakes anyone
        for t in d.topics:
            assert t.id not in closed or t == closed[t.id], f"decision changed closed topic {t.id}"
        for r in d.routed:
            if r.message.topic in closed:
                assert not any(x.wake for x in r.deliveries), f"wake in closed topic: {r}"
                assert d.refusal is not None or r.message.author == SYSTEM, "a message was accepted in a closed topic"

        if d.refusal is None and d.routed and d.routed[0].message.author in ps:
            msg, deliveries = d.routed[0].message, d.routed[0].deliveries
            author = ps[msg.author]
            topic = before.get(msg.topic)
            if author.kind == Kind.AGENT:
                # (a) bookkeeping: each accepted agent message is paid for
                assert d.absorbed or msg.cost >= max(1, len(msg.to)), msg
                self.spent += msg.cost
                if deliveries:
                    self.delivered_agent_messages += 1
                # (c) a done participant is shielded from agents
                for x in deliveries:
                    if x.wake and topic is not None and x.recipient in topic.members:
                        assert topic.members[x.recipient].state != State.DONE, f"agent woke done {x.recipient}"
            # (d) one waking answer per recipient of a request
            if msg.type == MessageType.RESPONSE and msg.in_reply_to and any(x.wake for x in deliveries):
                self.answers[(msg.in_reply_to, msg.author)] += 1
                assert self.answers[(msg.in_reply_to, msg.author)] == 1, f"second waking answer {msg}"

        for e in d.ledger:
            if e.delta > 0:
                self.funded += e.delta
        _coverage(d, closed)
        super().apply(d)
        for e in d.ledger:
            assert (self.pool if e.account == POOL else self.wallets[e.account]) >= 0, "overdrawn"
        for r in d.routed:
            for x in r.deliveries:
                if x.wake and x.recipient in self.inbox and r.message.topic is not None:
                    self.inbox[x.recipient].append((r.message.topic, r.message))


def _coverage(d: Decision, closed) -> None:
    """Hypothesis events, so `--hypothesis-show-statistics` shows what the runs reached."""
    if d.refusal is not None:
        event(f"refused {d.refusal.reason}")
    for r in d.routed:
        if r.message.notice:
            event(f"notice {r.message.notice}")
        for x in r.deliveries:
            if x.reason is not None and x.reason != "observer":
                event(f"context {x.reason}")
    for t in d.topics:
        if t.status == TopicStatus.CLOSED and t.id not in closed:
            event("a topic closed")


class Adversaries(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.w = CheckedWorld()
        self.texts = 0
        for a in AGENTS:  # a start: people fund each agent a little (counted as funding like any other)
            self.w.fund("human.alice", a, 8)

    def text(self) -> str:
        self.texts += 1
        return f"note {self.texts}"

    def topics_of(self, pid):
        return [t for t in self.w.topics.values() if pid in t.members]

    def conv_ref(self, tid):
        return self.w.topics[tid].conversation

    # -- people

    @rule(person=st.sampled_from(PEOPLE), to=st.lists(st.sampled_from(AGENTS), min_size=1, max_size=3, unique=True),
          dm=st.booleans())
    def person_opens(self, person, to, dm):
        conv = f"dm:{to[0]}" if dm else "general"
        self.w.send(f"human.{person}", self.text(), title="Work", to=to[:1] if dm else to, conversation=conv)

    @rule(person=st.sampled_from(PEOPLE), pick=st.integers(0, 50), agent=st.sampled_from(AGENTS),
          mtype=st.sampled_from(["request", "inform", "response"]), state=st.sampled_from([None, "working", "done"]))
    def person_writes(self, person, pick, agent, mtype, state):
        ts = list(self.w.topics.values())
        if not ts:
            return
        t = ts[pick % len(ts)]
        self.w.send(f"human.{person}", self.text(), topic=t.id, type=mtype, to=[agent], state=state,
                    conversation=t.conversation)

    @rule(person=st.sampled_from(PEOPLE), account=st.sampled_from(AGENTS + (POOL,)), amount=st.integers(-2, 30))
    def fund(self, person, account, amount):
        self.w.fund(f"human.{person}", account, amount)

    @rule(agent=st.sampled_from(AGENTS), account=st.sampled_from(AGENTS + (POOL,)), amount=st.integers(1, 50))
    def agent_tries_to_fund(self, agent, account, amount):
        assert self.w.fund(agent, account, amount).refusal is not None

    @rule(minutes=st.sampled_from([1, NUDGE_AFTER // MINUTE, 30, HOUR // MINUTE, 3 * HOUR // MINUTE]))
    def tick(self, minutes):
        self.w.tick(minutes * MINUTE)
        self.w.run_timers()

    # -- agents

    @rule(agent=st.sampled_from(AGENTS), pick=st.integers(0, 50), to=st.sampled_from(AGENTS + ("human.alice",)))
    def agent_opens(self, agent, pick, to):
        self.w.send(agent, self.text(), title="Mine", to=[to])

    @rule(agent=st.sampled_from(AGENTS), pick=st.integers(0, 50), other=st.sampled_from(AGENTS), done=st.booleans())
    def agent_takes_a_wake(self, agent, pick, other, done):
        """The agent's persona answers the oldest wake it got (or a random topic it is in)."""
        w = self.w
        inbox = w.inbox[agent]
        if inbox:
            tid, msg = inbox.pop(0)
        else:
            mine = self.topics_of(agent)
            if not mine:
                return
            t = mine[pick % len(mine)]
            tid, msg = t.id, None
        conv = self.conv_ref(tid)
        requester = msg.author if msg is not None and msg.author != agent else other
        reply_to = msg.id if msg is not None and msg.type == MessageType.REQUEST else None
        if agent == ASKER:  # answers, and always asks something new
            w.send(agent, self.text(), topic=tid, type="response", in_reply_to=reply_to, conversation=conv,
                   state="done" if done else "working")
            w.send(agent, self.text(), topic=tid, type="request", to=[other], conversation=conv)
        elif agent == COPIER:  # sends back what it was sent, to someone
            text = msg.text if msg is not None else "copy"
            w.send(agent, text, topic=tid, type="response", in_reply_to=reply_to, conversation=conv)
            w.send(agent, text, topic=tid, type="request", to=[other], conversation=conv)
        elif agent == STUBBORN:  # never done: waits on whoever asked
            w.send(agent, self.text(), topic=tid, type="request", to=[requester], conversation=conv,
                   state="waiting", waiting_for=[requester])
        else:  # DOUBLE: answers twice
            for _ in range(2):
                w.send(agent, self.text(), topic=tid, type="response", in_reply_to=reply_to, conversation=conv,
                       to=[requester], state="done" if done else "working")

    @rule(agent=st.sampled_from((ASKER, COPIER, DOUBLE)), pick=st.integers(0, 50),
          to=st.sampled_from(AGENTS + (SYSTEM, "human.alice")))
    def agent_says_done(self, agent, pick, to):
        ts = list(self.w.topics.values())  # closed ones too: refused topic_closed
        if ts:
            t = ts[pick % len(ts)]
            self.w.send(agent, self.text(), topic=t.id, type="inform", to=[to], state="done", conversation=t.conversation)

    @rule(agent=st.sampled_from(AGENTS), pick=st.integers(0, 50))
    def agent_needs_a_human(self, agent, pick):
        mine = self.topics_of(agent)
        if mine:
            t = mine[pick % len(mine)]
            self.w.send(agent, self.text(), topic=t.id, type="request", to=["human.alice"], state="needs_human",
                        conversation=t.conversation)

    # -- the bound

    @invariant()
    def agent_traffic_is_bounded_by_funding(self):
        w = self.w
        assert w.delivered_agent_messages <= w.funded
        assert w.spent <= w.funded
        assert w.spent + sum(w.wallets.values()) + w.pool == w.funded  # the ledger balances


Adversaries.TestCase.settings = SETTINGS
TestAdversaries = Adversaries.TestCase
