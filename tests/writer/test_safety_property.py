"""The safety promise over the real writer and a real store (issue 17, "Must show" 1; docs/rules.md, "The bound").

Seed 000: "So the total number of agent messages is bounded by the credits humans hand out, whatever the agents
say." Seed 004: "One of your messages buys a bounded number of NPC-to-NPC hops".

Hypothesis draws a population of adversarial agents (each answers every wake with its own script: any type,
state, recipient, `in_reply_to`, topic, delegation out of a direct conversation, repeated and huge texts,
messages to system.ygg), and a person who funds C credits and writes M messages. The real writer decides
everything (the `Writer` over `SqliteStore`, and over `PgStore` on a fresh PostgreSQL schema); the agents then
act on every wake they get, up to 3 of them in one writer batch as concurrent connections' sends are, and the
clock moves on by the hour while anything is left, until nothing wakes anyone. For every run:

- agent messages stored <= credits funded + closure polls (the only notices a free answer may answer);
- hops (an agent's message waking another agent) per person's message and topic <= party.maxHops, and the
  topics no person wrote in, with the side conversations grown from them, share their conversation's;
- nothing wakes anyone in a topic after it closed, and no agent's message wakes a participant done there;
- no balance goes below 0;
- the run goes quiet with no person acting.

Its size: YGG_SAFETY_EXAMPLES drawn runs per store (default: a few, for CI; the examples below run always).
"""

from __future__ import annotations

import asyncio
import os
import secrets

import asyncpg
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from ygg_server.core import Kind, TopicStatus
from ygg_server.core.rules import HOUR, MAX_HOPS, SECOND
from ygg_server.core.side import side_id
from ygg_server.ops import admin, auth
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
DRAWN = int(os.environ.get("YGG_SAFETY_EXAMPLES", "0"))  # 0: CI's size (SQLITE_DRAWN, PG_DRAWN)
SQLITE_DRAWN, PG_DRAWN = DRAWN or 8, DRAWN or 2

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
together = st.integers(1, 3)  # wakes acted on in one writer batch
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
        self.sides: dict[str, str | None] = {}  # side conversation -> the conversation whose hops it spends, if any
        self.topic_polls: dict[str, int] = {}  # closure polls per topic
        self.person_messages: dict[str, int] = {}  # per topic
        self.members: dict[str, int] = {}  # participants per topic
        self.wakes: list = []  # (agent, message) woken, to act on
        self.woke: list = []  # (agent, message) every message that reached an agent, in order
        self.n = 0

    def exchange(self, m) -> tuple:
        """Whose hops this message spends (docs/rules.md, "Parties"): a side conversation with its origin topic, a
        topic a person wrote in, or else the conversation (its topics no person wrote in, and the side
        conversations opened from them until a person writes there)."""
        side = m.conversation if m.conversation in self.sides else \
            side_id(m.conversation, m.topic) if m.topic is not None else None
        if side in self.sides:
            origin = self.sides[side]
            return ("side", side) if origin is None else ("conversation", origin)
        return ("topic", m.topic) if m.topic in self.bought else ("conversation", m.conversation)

    async def command(self, kind: str, *args):
        return (await self.commands([(kind, args)]))[0]

    async def commands(self, batch: list[tuple[str, tuple]]) -> list:
        """`batch` decided by the writer together (the commands it leaves for later, in the next batches)."""
        cmds = [Command(kind, args) for kind, args in batch]
        answers, todo = {}, cmds
        while todo:
            got, todo, out = await self.writer.run(todo)
            answers.update(got)
            for w, account, balance in out.balances:
                assert balance >= 0, (account, balance)
            for m in out.messages:
                self.check(m, [s for s in out.deliveries if s.message is m])
            for t in out.topics:
                if t.status == TopicStatus.CLOSED:
                    self.closed.add(t.id)
                self.done[t.id] = {p for p, x in t.members.items() if x.state == "done"}
                self.members[t.id] = len(t.members)
        return [answers.get(id(c)) for c in cmds]

    def conversation(self, cid: str):
        """A conversation, as the writer's live state holds it."""
        held = getattr(self.store, "conversations", None)  # (PostgreSQL's: what the node saw)
        return (self.store.snap.state.conversations if held is None else held).get(self.ws, {}).get(cid)

    def kind(self, cid: str) -> str | None:
        c = self.conversation(cid)
        return None if c is None else str(c.kind)

    def check(self, m, deliveries) -> None:
        if m.conversation not in self.sides and self.kind(m.conversation) == "side":
            c = self.conversation(m.conversation)  # opened now: from a topic a person wrote in, or not
            self.sides[m.conversation] = None if c.origin_topic in self.bought else c.origin
        woke = [s for s in deliveries if s.wake]
        assert not (woke and m.topic in self.closed), ("woken after the topic closed", m)
        if m.notice == "closure_poll":
            self.polls += 1
            self.topic_polls[m.topic] = self.topic_polls.get(m.topic, 0) + 1
        if m.author == self.alice:
            self.person_messages[m.topic] = self.person_messages.get(m.topic, 0) + 1
            if m.topic is not None:
                self.bought.add(m.topic)
            for side in (m.conversation, side_id(m.conversation, m.topic or "")):
                if side in self.sides:
                    self.sides[side] = None  # a person wrote there: the side conversation counts its own
            self.hops[self.exchange(m)] = 0
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
        return (await self.sends([(who, kw)]))[0]

    async def sends(self, posts: list[tuple[str, dict]]) -> list:
        self.n += len(posts)
        return await self.commands([("send", (who, frames.Send(workspace=self.ws, **kw))) for who, kw in posts])


async def act(run: Run, agent: str, script: list[dict], step: int, woken_by) -> None:
    """The agent's next move, whatever woke it (or nothing, unprompted)."""
    await run.sends([move_of(run, agent, script, step, woken_by)])


def move_of(run: Run, agent: str, script: list[dict], step: int, woken_by) -> tuple[str, dict]:
    """The send an agent makes as its next move: (author, the frame's fields)."""
    mv = script[step % len(script)]
    if mv["where"] == "new" or woken_by is None or woken_by.topic is None:
        conversation, topic = "general", "new"
    elif mv["where"] == "dm" and run.kind(woken_by.conversation) != "direct":
        conversation, topic = "dm:alice", "new"
    else:  # where it was woken (a request there to an agent outside a direct conversation is a delegation)
        conversation, topic = woken_by.conversation, woken_by.topic
    return run.ids[agent], dict(conversation=conversation, topic=topic, title=f"{agent} {step}", type=mv["type"],
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
OPENERS = {"ada": [M(to=("bix",), where="dm"), M(to=("bix",)), M(to=("bix",))],  # new topics to delegate from
           "bix": [M(to=("ada",))], "cor": [M(to=("ada",), where="dm")]}
FUND_ALL = {"credits": [("ada", 150), ("bix", 150), ("cor", 150), ("pool", 100)],
            "messages": [("task1", "ada", "request"), ("task2", "bix", "request"), ("dm", "ada", "request")]}


EXAMPLES = (  # what issue 17 tried from outside, each a run of its own
    (PING_PONG, dict.fromkeys(AGENTS, 2), 1, FUND_ALL),
    (FLIPPERS, dict.fromkeys(AGENTS, 30), 3, FUND_ALL),
    (SPAMMERS, dict.fromkeys(AGENTS, 8), 2, {"credits": [("pool", 3)], "messages": [("task1", "ada", "inform")]}),
    (DELEGATORS, {"ada": 3, "bix": 0, "cor": 0}, 1, FUND_ALL),
    (OPENERS, {"ada": 3, "bix": 0, "cor": 2}, 1, FUND_ALL),
)


def _examples(test):
    for e in reversed(EXAMPLES):
        test = example(*e)(test)
    return test


@pytest.fixture(scope="module", autouse=True)
def _cheap_passwords():
    """alice's password is never checked here: argon2's half second per run goes."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(auth, "hash_password", lambda pw: "not-a-hash")
        yield


@_examples
@settings(max_examples=SQLITE_DRAWN, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(population, unprompted, together, person)
def test_agent_traffic_stays_within_what_people_fund(tmp_path_factory, scripts, pushy, batch, people):
    path = db.db_path(tmp_path_factory.mktemp("safety"))
    conn = db.connect(path)
    db.migrate(conn)
    run = Run(conn, lambda clock: SqliteStore(path, clock))
    try:
        asyncio.run(_play(run, scripts, pushy, batch, people))
    finally:
        run.store.close()


@_examples
@settings(max_examples=PG_DRAWN, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(population, unprompted, together, person)
def test_agent_traffic_stays_within_what_people_fund_on_postgres(pg_schema, scripts, pushy, batch, people):
    """The same over the PostgreSQL store (its batches under row locks), on an emptied schema each run."""
    asyncio.run(_sql(pg_schema, _EMPTY))
    run = Run(pg.connect_sync(pg_schema), lambda clock: PgStore(pg_schema, clock=clock, timer_interval=0.0))

    async def main():
        await run.store.open()
        try:
            await _play(run, scripts, pushy, batch, people)
        finally:
            await run.store.aclose()

    asyncio.run(main())


# every table's rows but the schema's version (a schema made once: made and migrated, it took 1 to 2 s a run;
# TRUNCATE about as long, DELETE of these few rows a tenth of that)
_EMPTY = """DO $$ BEGIN EXECUTE (SELECT string_agg(format('DELETE FROM %I;', table_name), ' ')
  FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'
  AND table_name <> 'meta'); UPDATE meta SET value = 0 WHERE key = 'config'; END $$"""


async def _sql(url: str, sql: str) -> None:
    c = await asyncpg.connect(url)
    try:
        await c.execute(sql)
    finally:
        await c.close()


@pytest.fixture(scope="module")
def pg_schema(pg_database):
    schema = f"t_{secrets.token_hex(5)}"
    asyncio.run(_sql(pg_database, f'CREATE SCHEMA "{schema}"'))
    url = f"{pg_database}?search_path={schema}"
    pg.connect_sync(url).close()  # (migrates)
    yield url
    asyncio.run(_sql(pg_database, f'DROP SCHEMA "{schema}" CASCADE'))


async def _play(run: Run, scripts: dict, pushy: dict, batch: int, people: dict) -> None:
    pushy = dict(pushy)  # (an example's, shared by both stores' tests)
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
            posts = []
            for agent, m in run.wakes[:batch]:  # (the agents' sends, decided in one batch)
                posts.append(move_of(run, agent, scripts[agent], steps[agent], m))
                steps[agent] += 1
            del run.wakes[:batch]
            await run.sends(posts)
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
