"""The safety promise over the real writer and a real store (issue 17, "Must show" 1; docs/rules.md, "The bound").

Seed 000: "So the total number of agent messages is bounded by the credits humans hand out, whatever the agents
say." Seed 004: "One of your messages buys a bounded number of NPC-to-NPC hops".

Hypothesis draws a population of adversarial agents (each answers every wake with its own script: any type,
state, recipient, `in_reply_to`, topic, delegation out of a direct conversation, repeated and huge texts,
messages to system.ygg), and a person who funds C credits and writes M messages. The real writer decides
everything (the `Writer` over `SqliteStore`, and over `PgStore` on a fresh PostgreSQL schema; one command a
batch); the agents then act on every wake
they get, and the clock moves on by the hour while anything is left, until nothing wakes anyone. For every run:

- agent messages stored <= credits funded + closure polls (the only notices a free answer may answer);
- hops (an agent's message waking another agent) per person's message and topic <= party.maxHops;
- nothing wakes anyone in a topic after it closed, and no agent's message wakes a participant done there;
- no balance goes below 0;
- the run goes quiet with no person acting.
"""

from __future__ import annotations

import asyncio
import secrets

import asyncpg
from hypothesis import HealthCheck, example, given, settings, strategies as st

from ygg_server.core import Kind, TopicStatus
from ygg_server.core.rules import HOUR, MAX_HOPS, SECOND
from ygg_server.core.side import side_id
from ygg_server.ops import admin
from ygg_server.protocol import frames
from ygg_server.protocol.results import Funded, Sent
from ygg_server.store import postgres as pg, sqlite as db
from ygg_server.store.postgres.writer_store import PgStore
from ygg_server.store.sqlite.writer_store import SqliteStore
from ygg_server.writer import Writer
from ygg_server.writer.commands import Command

AGENTS = ("ada", "bix", "cor")
T0 = 1_767_225_600 * SECOND  # 2026-01-01T00:00:00Z
CAP = 3000  # messages: a run still going after this many never went quiet
PW = "pw-" + "x" * 8

# One move of an agent's script: what it sends when woken (or, first, unprompted).
move = st.fixed_dictionaries({
    "type": st.sampled_from(["request", "response", "inform", "bogus"]),
    "to": st.sampled_from([(), ("system.ygg",), ("@alice",), *[(a,) for a in AGENTS], AGENTS, ("cor", "system.ygg")]),
    "state": st.sampled_from([None, "working", "done", "waiting", "needs_human"]),
    "reply": st.booleans(),  # in_reply_to the message that woke it
    "where": st.sampled_from(["same", "same", "new", "dm"]),  # its topic, a new one, or a direct one to delegate
    "text": st.sampled_from(["ok", "same again", "x" * 5000, None]),  # None: a text of its own each time
})
population = st.fixed_dictionaries({a: st.lists(move, min_size=1, max_size=6) for a in AGENTS})
unprompted = st.fixed_dictionaries({a: st.integers(0, 8) for a in AGENTS})  # moves an agent makes unwoken
person = st.fixed_dictionaries({
    "credits": st.lists(st.tuples(st.sampled_from(AGENTS + ("pool",)), st.integers(1, 150)), min_size=1, max_size=4),
    "messages": st.lists(st.tuples(st.sampled_from(["task1", "task2", "dm"]), st.sampled_from(AGENTS),
                                  st.sampled_from(["request", "inform"])), min_size=1, max_size=4),
})


class Run:
    """A workspace in a store (SQLite, or PostgreSQL), its writer, and what the checks need of every batch."""

    def __init__(self, conn, store_of):
        self.now = T0
        self.alice = admin.add_person(conn, "alice", PW, now=self.now)["id"]
        self.ws = admin.add_workspace(conn, "team", "alice", now=self.now)["id"]
        self.ids = {a: admin.add_agent(conn, a, "alice", now=self.now)["id"] for a in AGENTS}
        conn.close()
        self.names = {i: a for a, i in self.ids.items()}
        self.store = store_of(lambda: self.now)
        self.writer = Writer(self.store, lambda: self.now)
        self.funded = self.agent_messages = self.polls = 0
        self.hops: dict[tuple, int] = {}  # exchange -> hops since a person last wrote there
        self.worst = 0
        self.bought: set[str] = set()  # topics a person wrote in
        self.closed: set[str] = set()
        self.done: dict[str, set[str]] = {}  # topic -> participants done there (as the last batch left it)
        self.sides: set[str] = set()
        self.topic_polls: dict[str, int] = {}  # closure polls per topic
        self.person_messages: dict[str, int] = {}  # per topic
        self.members: dict[str, int] = {}  # participants per topic
        self.wakes: list = []  # (agent, message) woken, to act on
        self.woke: list = []  # (agent, message) every message that reached an agent, in order
        self.n = 0

    def exchange(self, m) -> tuple:
        """Who counts this message's hops (docs/rules.md, "Parties"): a side conversation with its origin topic,
        a topic a person wrote in, or else the conversation."""
        if m.conversation in self.sides:
            return ("side", m.conversation)
        if m.topic is not None and side_id(m.conversation, m.topic) in self.sides:
            return ("side", side_id(m.conversation, m.topic))
        return ("topic", m.topic) if m.topic in self.bought else ("conversation", m.conversation)

    async def command(self, kind: str, *args):
        answers, later, out = await self.writer.run([Command(kind, args)])
        assert not later
        for w, account, balance in out.balances:
            assert balance >= 0, (account, balance)
        for m in out.messages:
            self.check(m, [s for s in out.deliveries if s.message is m])
        for t in out.topics:
            if t.status == TopicStatus.CLOSED:
                self.closed.add(t.id)
            self.done[t.id] = {p for p, x in t.members.items() if x.state == "done"}
            self.members[t.id] = len(t.members)
        return next(iter(answers.values()), None)

    def kind(self, cid: str) -> str | None:
        """A conversation's kind, as the writer's live state holds it."""
        held = getattr(self.store, "conversations", None)  # (PostgreSQL's: what the node saw)
        c = (self.store.snap.state.conversations if held is None else held).get(self.ws, {}).get(cid)
        return None if c is None else str(c.kind)

    def check(self, m, deliveries) -> None:
        if self.kind(m.conversation) == "side":
            self.sides.add(m.conversation)
        woke = [s for s in deliveries if s.wake]
        assert not (woke and m.topic in self.closed), ("woken after the topic closed", m)
        if m.notice == "closure_poll":
            self.polls += 1
            self.topic_polls[m.topic] = self.topic_polls.get(m.topic, 0) + 1
        if m.author == self.alice:
            self.person_messages[m.topic] = self.person_messages.get(m.topic, 0) + 1
            before = self.exchange(m)
            if m.topic is not None:
                self.bought.add(m.topic)
            self.hops[before] = self.hops[self.exchange(m)] = 0
            return
        if m.author not in self.names:
            return
        self.agent_messages += 1
        done = self.done.get(m.topic, set())
        assert not [s for s in woke if s.recipient in done], ("an agent woke a participant done there", m)
        if any(s.recipient in self.names for s in woke):
            key = self.exchange(m)
            self.hops[key] = self.hops.get(key, 0) + 1
            self.worst = max(self.worst, self.hops[key])
        self.wakes += [(self.names[s.recipient], m) for s in woke if s.recipient in self.names]
        self.woke += [(self.names[s.recipient], m) for s in deliveries if s.recipient in self.names]

    async def send(self, who: str, **kw):
        self.n += 1
        return await self.command("send", who, frames.Send(workspace=self.ws, **kw))


async def act(run: Run, agent: str, script: list[dict], step: int, woken_by) -> None:
    """The agent's next move, whatever woke it (or nothing, unprompted)."""
    mv = script[step % len(script)]
    if mv["where"] == "new" or woken_by is None or woken_by.topic is None:
        conversation, topic = "general", "new"
    elif mv["where"] == "dm" and run.kind(woken_by.conversation) != "direct":
        conversation, topic = "dm:alice", "new"
    else:  # where it was woken (a request there to an agent outside a direct conversation is a delegation)
        conversation, topic = woken_by.conversation, woken_by.topic
    await run.send(run.ids[agent], conversation=conversation, topic=topic, title=f"{agent} {step}", type=mv["type"],
             to=list(mv["to"]) or None, state=mv["state"],
             text=mv["text"] if mv["text"] is not None else f"{agent} step {step}",
             in_reply_to=woken_by.id if mv["reply"] and woken_by is not None else None)


def M(type="request", to=(), state=None, reply=False, where="same", text=None) -> dict:
    return {"type": type, "to": to, "state": state, "reply": reply, "where": where, "text": text}


PING_PONG = {"ada": [M(to=("bix",))], "bix": [M(to=("ada",))], "cor": [M(to=("ada", "bix"))]}
FLIPPERS = {a: [M("inform", ("cor",) if a != "cor" else ("ada",), "done"), M("response", ("system.ygg",), "working",
                                                                               reply=True),
                M("inform", ("bix",) if a != "bix" else ("ada",), "working")] for a in AGENTS}
SPAMMERS = {a: [M("request", ("system.ygg",), text="x" * 5000), M("inform", ("system.ygg",), "done", where="new")]
            for a in AGENTS}
DELEGATORS = {"ada": [M(to=("bix",), where="dm"), M(to=("cor",), where="dm")],
              "bix": [M("response", ("ada",), reply=True), M(to=("ada",))],
              "cor": [M("response", ("ada",), "done", reply=True), M(to=("bix",))]}
FUND_ALL = {"credits": [("ada", 150), ("bix", 150), ("cor", 150), ("pool", 100)],
            "messages": [("task1", "ada", "request"), ("task2", "bix", "request"), ("dm", "ada", "request")]}


EXAMPLES = (  # what issue 17 tried from outside, each a run of its own
    (PING_PONG, dict.fromkeys(AGENTS, 2), FUND_ALL),
    (FLIPPERS, dict.fromkeys(AGENTS, 30), FUND_ALL),
    (SPAMMERS, dict.fromkeys(AGENTS, 8), {"credits": [("pool", 3)], "messages": [("task1", "ada", "inform")]}),
    (DELEGATORS, {"ada": 3, "bix": 0, "cor": 0}, FUND_ALL),
)


def _examples(test):
    for e in reversed(EXAMPLES):
        test = example(*e)(test)
    return test


@_examples
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(population, unprompted, person)
def test_agent_traffic_stays_within_what_people_fund(tmp_path_factory, scripts, pushy, people):
    path = db.db_path(tmp_path_factory.mktemp("safety"))
    conn = db.connect(path)
    db.migrate(conn)
    run = Run(conn, lambda clock: SqliteStore(path, clock))
    try:
        asyncio.run(_play(run, scripts, pushy, people))
    finally:
        run.store.close()


@_examples
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(population, unprompted, person)
def test_agent_traffic_stays_within_what_people_fund_on_postgres(pg_database, scripts, pushy, people):
    """The same over the PostgreSQL store (its batches under row locks), on a fresh schema each run."""
    schema = f"t_{secrets.token_hex(5)}"

    async def admin_sql(sql):
        c = await asyncpg.connect(pg_database)
        try:
            await c.execute(sql)
        finally:
            await c.close()

    asyncio.run(admin_sql(f'CREATE SCHEMA "{schema}"'))
    url = f"{pg_database}?search_path={schema}"
    try:
        run = Run(pg.connect_sync(url), lambda clock: PgStore(url, clock=clock, timer_interval=0.0))

        async def main():
            await run.store.open()
            try:
                await _play(run, scripts, pushy, people)
            finally:
                await run.store.aclose()

        asyncio.run(main())
    finally:
        asyncio.run(admin_sql(f'DROP SCHEMA "{schema}" CASCADE'))


async def _play(run: Run, scripts: dict, pushy: dict, people: dict) -> None:
    for account, amount in people["credits"]:
        frame = frames.Fund(workspace=run.ws, pool=True, amount=amount) if account == "pool" else \
            frames.Fund(workspace=run.ws, agent=account, amount=amount)
        assert isinstance(await run.command("fund", run.alice, frame), Funded)
        run.funded += amount
    topics: dict[str, str] = {}
    for where, agent, mtype in people["messages"]:
        conv = f"dm:{agent}" if where == "dm" else "general"
        key = (where, agent) if where == "dm" else where
        r = await run.send(run.alice, conversation=conv, topic=topics.get(key, "new"), title=where, type=mtype,
                           to=[agent], text=f"alice: {where}")
        assert isinstance(r, Sent), r
        topics.setdefault(key, r.message.topic)
    steps = dict.fromkeys(AGENTS, 0)
    quiet_hours = 0
    while run.n < CAP:
        for agent in AGENTS:  # agents that speak unwoken: at the start, and whenever all is quiet
            if pushy[agent] and not run.wakes:
                pushy[agent] -= 1
                last = next((m for a, m in reversed(run.woke) if a == agent), None)
                await act(run, agent, scripts[agent], steps[agent], last)
                steps[agent] += 1
        if run.wakes:
            agent, m = run.wakes.pop(0)
            await act(run, agent, scripts[agent], steps[agent], m)
            steps[agent] += 1
            continue
        if any(pushy.values()):
            continue
        run.now += HOUR + 1  # nobody is woken: the clock moves (polls, nudges, auto-done)
        await run.command("sync")
        quiet_hours = 0 if run.wakes else quiet_hours + 1
        if quiet_hours >= 4:
            break
    assert run.n < CAP, "never went quiet"
    assert run.agent_messages <= run.funded + run.polls, (run.agent_messages, run.funded, run.polls)
    assert run.worst <= MAX_HOPS
    for tid, polls in run.topic_polls.items():  # docs/rules.md, "The bound": closure polls per topic
        assert polls <= 2 * run.members[tid] * (1 + run.person_messages.get(tid, 0)), (tid, polls)
