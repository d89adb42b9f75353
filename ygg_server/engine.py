"""The single writer: Load -> Decide -> Apply -> Publish, a batch per tick.

One thread owns the SQLite writer connection and the live state (directories,
conversations, topics, balances, flags, usage). Commands arrive in order; each is
judged by the core against the live state, and only after the COMMIT of its
batch are the callers answered and the new deliveries published. Nothing is
answered before it is durable; a batch amortizes the commit over many sends
(group commit).

Sends are decided against the live state, which each decision updates at once;
their rows are written together before the COMMIT (`_flush`, `db.apply_many`:
a topic or a conversation once in its last state, messages and deliveries in
one statement each). Whatever would read the database first writes what is
pending, so every read sees every decision before it. Other commands (which
write directly) run in a savepoint each, so a failure undoes that command alone.

Another connection (the admin CLI, the socket's management ops) may change the
database at any time: `PRAGMA data_version` tells, and the live state is then
dropped and reloaded from the database before the batch is decided.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
import queue
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable

import msgspec

from .ops import auth
from .protocol import frames, names
from . import idempotency, protocol
from .core import (
    POOL, Conversation, Decision, Directory, Kind, Post, Topic, TopicStatus, View, decide, due, fund, next_due, plan_of,
)
from .core import assign as core_assign, party as core_party, side as core_side
from .core.funding import set_budget as core_set_budget
from .core.rules import MAX_HOPS, MAX_HOPS_CEILING, THROTTLE_DIRECT, THROTTLE_GROUP
from .store import sqlite as db

log = logging.getLogger("ygg.engine")
MAX_BATCH = 512
# The search index is fed in chunks (db.index_messages), which costs far less per message than a row at a
# time: when this many messages wait for it, or the oldest has waited this long (an idle writer ticks every
# 0.1 s). Search reads the messages not indexed yet too (db.search_tail), so it finds every stored message.
# A chunk is indexed inside a batch, whose callers wait for it: 100 rows take 1-3 ms (500 took up to 8 ms,
# every quarter second at 2,000 msgs/s: a tail of the latency), at no measurable cost per message.
INDEX_ROWS = 100
INDEX_WAIT_NS = 250_000_000


def now_us() -> int:
    return time.time_ns() // 1000


@dataclass(slots=True)
class Published:
    """What one committed batch hands to the gateway."""

    deliveries: list[db.Stored] = field(default_factory=list)
    messages: list = field(default_factory=list)  # every message stored, in order (monitors see all, even undelivered)
    topics: list[Topic] = field(default_factory=list)
    balances: list[tuple[str, str, int]] = field(default_factory=list)  # (workspace, account, balance)
    rescan: bool = False  # someone else changed the database: look at every connection again
    parties: dict = field(default_factory=dict)  # conversation id -> PartyView, for agents' deliveries
    conversations: dict = field(default_factory=dict)  # conversation id -> Conversation, of the topics here


@dataclass(slots=True)
class _Command:
    kind: str
    args: tuple
    future: asyncio.Future
    loop: asyncio.AbstractEventLoop


# set_profile's text, read by other agents and people (rosters, lists, `capability:` sends): checked as names are
# (a table here, not on Engine: PostgreSQL's node runs set_profile on its own side object, pg_engine._Side)
_PROFILE_TEXT = {
    "title": lambda v: names.clean_or_blank("job_title", v),
    "description": lambda v: names.clean_text("description", v),
    "capabilities": lambda v: names.clean_each("capability", "capabilities", v),
    "tools": lambda v: names.clean_each("tool", "tools", v),
}

class Engine:
    def __init__(self, path, *, clock: Callable[[], int] = now_us, idempotency_window: int = idempotency.WINDOW_US):
        self.path = path
        self.clock = clock
        self.idempotency_window = idempotency_window  # how long a client_id's answer is kept (microseconds)
        self._sweep_at = 0  # when the next chunk of older idempotency rows goes (`_sweep`)
        self.conn = db.connect(path)
        self._checkpoints = db.Checkpointer(path, self.conn)
        self._queue: queue.SimpleQueue[_Command | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._publish: Callable[[Published], None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._data_version = None
        self.present: set[str] = set()  # who is connected now (`seen`; the writer thread only asks `in`)
        self.events = True  # hand over topic and balance events (on a thread they cost nothing to hand over)
        self._out = Published()  # the batch being decided: what a `_flush` writes goes out with it
        self._reset()

    # --- lifecycle ---

    def start(self, loop: asyncio.AbstractEventLoop, publish: Callable[[Published], None]) -> None:
        self._loop, self._publish = loop, publish
        self._thread = threading.Thread(target=self._run, name="ygg-writer", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._thread:
            self._queue.put(None)
            self._thread.join(timeout=10)
            self._thread = None
        self._checkpoints.stop()
        self.conn.close()

    async def aclose(self) -> None:
        await asyncio.to_thread(self.stop)

    def submit(self, kind: str, *args) -> asyncio.Future:
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        self._queue.put(_Command(kind, args, fut, loop))
        return fut

    # --- live state ---

    def _reset(self) -> None:
        self.directories: dict[str, Directory] = {}
        self.conversations: dict[str, dict[str, Conversation]] = {}
        self.topics: dict[str, Topic] = {}
        self.opened: dict[str, int] = {}
        self.balances: dict[tuple[str, str], int | None] = {}
        self.orgs: dict[str, tuple[str, str]] = {}
        self.usage: dict[tuple[str, str], int] = {}
        self.flags: set[tuple[str, str]] | None = None
        self.settings: dict[str, dict] = {}
        self.party_views: dict[str, core_party.PartyView] = {}
        self.timers: list[tuple[int, str]] = []
        self._pending: list[tuple[Decision, int, str | None, str | None]] = []  # decided, not yet written
        self._idem: dict[tuple[str, str], tuple[bytes, int]] = {}  # (participant, client_id) -> (reply, time), unwritten
        self._acks: list[tuple[str, list[int], list[int]]] = []  # (participant, ids, answer's ids), unwritten
        self._unindexed, self._index_at = 1, 0  # messages not in the search index yet, and when to index them:
        # not known here, so at the next flush (at start, this indexes what an earlier run left unindexed)
        for when, tid in db.due_topics(self.conn):
            heapq.heappush(self.timers, (when, tid))

    def directory(self, ws: str) -> Directory:
        d = self.directories.get(ws)
        if d is None:
            d = db.load_directory(self.conn, ws)
            if d.memberships:  # a made-up workspace id is not kept: any client could fill memory with them
                self.directories[ws] = d
        return d

    def _conversations(self, ws: str) -> dict[str, Conversation]:
        c = self.conversations.get(ws)
        if c is None:
            self._flush()
            c = self.conversations[ws] = db.load_conversations(self.conn, ws)
        return c

    def _topic(self, tid: str) -> Topic | None:
        t = self.topics.get(tid)
        if t is None:
            self._flush()
            t = db.load_topic(self.conn, tid)
            if t is not None:
                self.topics[tid] = t
        return t

    def _settings(self, ws: str) -> dict:
        s = self.settings.get(ws)
        if s is None:
            s = self.settings[ws] = db.settings(self.conn, ws)
        return s

    def _party_limits(self, ws: str) -> dict:
        """The workspace's party settings as View fields (docs/rules.md, "Parties")."""
        s = self._settings(ws)
        hops = s.get("party.maxHops", MAX_HOPS)
        direct = s.get("party.throttleDirect", THROTTLE_DIRECT)
        group = s.get("party.throttleGroup", THROTTLE_GROUP)
        return {"max_hops": hops, "throttle": (direct, group)}

    def _assignment(self, ws: str, directory: Directory, to: tuple[str, ...]) -> dict:
        """For a send to a `capability:`: the workspace's weights and what is known of the eligible agents
        (seed 003 §14; docs/rules.md, "Assignment scoring") as View fields. Empty for any other send."""
        if not any(r.startswith(core_assign.PREFIX) for r in to):
            return {}
        agents = core_assign.asked(directory, to)
        present = self.present
        self._flush()  # fitness reads the deliveries and messages: the batch's earlier ones too
        return {"weights": core_assign.weights_of(self._settings(ws).get("assign.weights")),
                "fitness": db.fitness(self.conn, agents, present.__contains__)}

    def _opened(self, agent: str) -> int:
        n = self.opened.get(agent)
        if n is None:
            self._flush()
            n = self.opened[agent] = db.open_opened(self.conn, agent)
        return n

    def _balance(self, ws: str, account: str) -> int | None:
        key = db.wallet_key(ws, account)
        if key not in self.balances:
            self._flush()
            self.balances[key] = db.balance(self.conn, ws, account)
        return self.balances[key]

    def _flags(self) -> set[tuple[str, str]]:
        if self.flags is None:
            self._flush()
            self.flags = db.load_flags(self.conn)
        return self.flags

    def _org(self, ws: str) -> tuple[str, str] | None:
        if ws not in self.orgs:
            self.orgs[ws] = db.org_of(self.conn, ws)
        return self.orgs[ws]

    def _plan_left(self, ws: str, month: str) -> int | None:
        org = self._org(ws)
        if org is None:
            return None
        limit = plan_of(*org[1:]).messages_per_month
        if limit is None:
            return None
        key = (org[0], month)
        if key not in self.usage:
            self._flush()
            self.usage[key] = db.usage(self.conn, org[0], month)
        return max(0, limit - self.usage[key])

    # --- the writer thread ---

    def _run(self) -> None:
        while True:
            try:
                first = self._queue.get(timeout=self.idle_seconds())
            except queue.Empty:
                first = _IDLE
            if first is None:
                return
            batch = [] if first is _IDLE else [first]
            while len(batch) < MAX_BATCH:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    self._queue.put(None)
                    break
                batch.append(nxt)
            answers, out = self.tick(batch)
            _resolve(answers)
            if out is not None and self._publish:
                self._loop.call_soon_threadsafe(self._publish, out)

    def seen(self, pid: str, online: bool) -> None:
        """The gateway's word that `pid` came (its first connection) or went (its last)."""
        (self.present.add if online else self.present.discard)(pid)

    def idle_seconds(self) -> float:
        """How long the writer may wait for a command before a topic's timer is due (at most 0.1 s)."""
        if self.timers:
            return min(0.1, max(0.0, (self.timers[0][0] - self.clock()) / 1e6))
        return 0.1

    def tick(self, batch: list) -> tuple[list[tuple[Any, Any, BaseException | None]], Published | None]:
        """Decide and commit one batch (commands with `kind` and `args`; an empty batch runs due timers).
        Returns each command's answer (a result, or the error that undid it; every command gets the
        error when the COMMIT fails) and what to publish, or None when nothing is."""
        out = self._out = Published()
        results: list[tuple[Any, Any]] = []
        try:
            with db.Tx(self.conn):
                version = self.conn.execute("PRAGMA data_version").fetchone()[0]
                if version != self._data_version:
                    if self._data_version is not None:
                        self._reset()
                        out.rescan = True
                    self._data_version = version
                for cmd in batch:
                    results.append((cmd, self._one(cmd, out)))
                self._timers(out)
                self._sweep()
                self._flush()
        except Exception as e:  # the commit failed: nothing in this batch happened
            log.exception("batch failed")
            self._pending, self._idem = [], {}
            self._reset()
            return [(cmd, None, e) for cmd in batch], None
        answers = [(cmd, result, None) for cmd, result in results]
        if out.deliveries or out.messages or out.topics or out.balances or out.rescan:
            return answers, out
        return answers, None

    _UNSAVED = frozenset({"send", "ack"})  # write only through `_pending`, or in one statement: no savepoint

    def _one(self, cmd: _Command, out: Published) -> Any:
        """Run one command; a failure undoes it alone (what it left pending, and its savepoint if it has one)."""
        saved = cmd.kind not in self._UNSAVED
        if saved:
            self._flush()  # what earlier commands left pending is theirs: not inside this one's savepoint
            self.conn.execute("SAVEPOINT cmd")
        mark = (len(out.deliveries), len(out.topics), len(out.balances), len(out.messages), len(self._pending),
                len(self._idem))
        try:
            result = getattr(self, "_do_" + cmd.kind)(*cmd.args, out=out)
        except Exception as e:
            log.exception("command %s failed", cmd.kind)
            if saved:
                self.conn.execute("ROLLBACK TO cmd")
                self.conn.execute("RELEASE cmd")
                del out.deliveries[mark[0]:], out.messages[mark[3]:]  # written inside its savepoint: undone
            # (without a savepoint, the rows in `out` since the mark were written by a flush of earlier
            # commands' decisions, which stand: they are published with the batch)
            del out.topics[mark[1]:], out.balances[mark[2]:]
            del self._pending[mark[4]:]
            for k in list(self._idem)[mark[5]:]:
                del self._idem[k]
            self._flush()  # the earlier commands' decisions stand; the live state is read again after them
            self._reset()
            return e
        if saved:
            self.conn.execute("RELEASE cmd")
        return result

    def _flush(self) -> None:
        """Write the decisions, acks and idempotency replies still pending (inside the batch's transaction); what
        they store goes out with the batch being decided (`self._out`)."""
        if self._acks:
            acks, self._acks = self._acks, []
            db.ack(self.conn, acks, self.clock())
        if self._idem:
            self.conn.executemany(
                "INSERT INTO idempotency (participant, client_id, reply, created_at) VALUES (?,?,?,?)",
                [(*k, v, now) for k, (v, now) in self._idem.items()])
            self._idem = {}
        if self._pending:
            pending, self._pending = self._pending, []
            stored = db.apply_many(self.conn, pending)
            out = self._out
            out.deliveries += stored
            written = {id(s.message) for s in stored}
            out.messages += [r.message for d, *_ in pending for r in d.routed if not r.deliveries or id(r.message) in written]
            routed = sum(len(d.routed) for d, *_ in pending)
            if routed and not self._unindexed:
                self._index_at = time.monotonic_ns() + INDEX_WAIT_NS
            self._unindexed += routed
        if self._unindexed and (self._unindexed >= INDEX_ROWS or time.monotonic_ns() >= self._index_at):
            db.index_messages(self.conn)
            self._unindexed = 0

    def _commit(self, d: Decision, ws: str, now: int, out: Published, month: str | None = None) -> None:
        """Apply a decision to the live state now, and to the database with the rest of its batch (`_flush`)."""
        org = self._org(ws)
        c = d.conversation
        if c is not None and c.id in self.party_views:  # a new Lead or new members: a new view (counters are not in it)
            old = self._conversations(ws).get(c.id)
            if old is None or old.members != c.members or old.lead != c.lead:
                del self.party_views[c.id]
        self._party_views(ws, d, out)
        for t in d.topics:
            # who may see the topic's event (Gateway._readers): its conversation as it is now (in the topic's
            # own workspace: funding an agent resumes its topics in every workspace it is in)
            conv = c if c is not None and c.id == t.conversation else \
                self._conversations(t.workspace).get(t.conversation)
            if conv is not None:
                out.conversations[t.conversation] = conv
            before = self._topic(t.id)
            self._count_open(before, t)
            self.topics[t.id] = t
            when = next_due(t)
            if when is not None:
                heapq.heappush(self.timers, (when, t.id))
            out.topics.append(t)
        if d.conversation is not None:
            self._conversations(d.conversation.workspace)[d.conversation.id] = d.conversation
        for e in d.ledger:
            key = db.wallet_key(e.workspace, e.account)
            self.balances[key] = (self._balance(e.workspace, e.account) or 0) + e.delta
            out.balances.append((e.workspace, e.account, self.balances[key]))
        if d.flags:
            flags = self._flags()
            for f in d.flags:
                (flags.add if f.on else flags.discard)((f.name, f.agent))
        if d.usage and org and month:
            self._plan_left(ws, month)  # the month's count, read before this decision is pending
            self.usage[(org[0], month)] = self.usage.get((org[0], month), 0) + d.usage
        self._pending.append((d, now, org[0] if org else None, month))

    def _party_views(self, ws: str, d: Decision, out: Published) -> None:
        """Each conversation this decision delivers in, as its agents are shown it (roster, who is still there)."""
        for r in d.routed:
            cid = r.message.conversation
            if r.deliveries and cid not in out.parties:
                pv = self.party_views.get(cid)
                if pv is None:
                    conv = d.conversation if d.conversation is not None and d.conversation.id == cid else \
                        self._conversations(ws).get(cid)
                    pv = self.party_views[cid] = core_party.party_view(self.directory(ws), conv)
                out.parties[cid] = pv

    def _count_open(self, before: Topic | None, after: Topic) -> None:
        was_open = before is not None and before.status != TopicStatus.CLOSED
        is_open = after.status != TopicStatus.CLOSED
        if was_open != is_open and after.opener in self.opened:
            self.opened[after.opener] += 1 if is_open else -1

    def _timers(self, out: Published) -> None:
        now = self.clock()
        while self.timers and self.timers[0][0] <= now:
            _, tid = heapq.heappop(self.timers)
            t = self._topic(tid)
            when = next_due(t) if t else None
            if when is None or when > now:
                continue
            ws = t.workspace
            conv = self._conversations(ws).get(t.conversation)
            view = View(self.directory(ws), conv, flags=frozenset(self._flags()))
            d = due(view, t, now)
            if d.topics:
                self._commit(d, ws, now, out)

    def _sweep(self) -> None:
        """Idempotency rows older than the window go, a chunk (2-3 ms) every 0.05 s while a backlog lasts, then
        once a minute (`idempotency.sweep_sqlite`), inside the batch being committed: never a long delete."""
        now = self.clock()
        if now >= self._sweep_at:
            self._sweep_at = idempotency.next_sweep(now, idempotency.sweep_sqlite(self.conn, now, self.idempotency_window))

    # --- commands (run in the writer thread, inside the batch's transaction) ---

    def _do_send(self, author: str, frame: frames.Send, *, out: Published) -> dict:
        ref, client_id = frame.ref, frame.client_id
        if client_id is not None:
            pending = self._idem.get((author, client_id))
            row = (pending[0],) if pending else self.conn.execute(
                "SELECT reply FROM idempotency WHERE participant = ? AND client_id = ?", (author, client_id)
            ).fetchone()
            if row:
                return {**msgspec.json.decode(row[0]), "ref": ref, "duplicate": True}
        ws, conv_ref = frame.workspace, frame.conversation
        directory = self.directory(ws)
        if author not in directory.memberships:
            return protocol.refused(ref, "unknown_workspace", "no such workspace")
        now = self.clock()
        try:
            post = protocol.to_post(frame, message_id=protocol.new_id(), author=author, workspace=ws)
        except protocol.BadFrame as e:
            return protocol.error(ref, "bad_frame", e.detail)
        conversations = self._conversations(ws)
        conv = directory.conversation(conv_ref, author, conversations)
        topic = self._topic(post.topic) if post.topic and post.topic != "new" else None
        if topic is not None and topic.workspace != ws:
            topic = None  # another workspace's topic is answered like one that does not exist
        agent = directory.participants[author].kind == Kind.AGENT
        month = _month(now)
        view = View(
            directory, conv, topic,
            open_opened=self._opened(author) if agent else 0,
            wallet=self._balance(ws, author) if agent else None,
            pool=self._balance(ws, POOL) or 0 if agent else 0,
            plan_left=self._plan_left(ws, month),
            flags=frozenset(self._flags()),
            new_conversation=conv is not None and conv.id not in conversations,
            **self._party_limits(ws), **self._assignment(ws, directory, post.to),
            side=core_side.existing(conv, post.topic, conversations) if agent else None,
        )
        d = decide(view, post, now)
        self._commit(d, ws, now, out, month)
        reply = protocol.answer(ref, d)
        if client_id is not None and reply["op"] == "sent":
            self._idem[(author, client_id)] = (msgspec.json.encode({k: v for k, v in reply.items() if k != "ref"}), now)
        return reply

    def _do_fund(self, funder: str, frame: frames.Fund, *, out: Published) -> dict:
        ws, account, amount, ref = frame.workspace, frame.account, frame.amount, frame.ref
        directory = self.directory(ws)
        if funder not in directory.memberships:
            return protocol.refused(ref, "unknown_workspace", "no such workspace")
        if account != POOL:
            found = directory.resolve((account,))
            if isinstance(found, tuple) and len(found) == 1:
                account = found[0]
        paused = db.credit_paused(self.conn, workspace=ws) if account == POOL else db.credit_paused(self.conn, agent=account)
        paused = [self.topics.get(t.id, t) for t in paused]
        now = self.clock()
        view = View(directory, None, flags=frozenset(self._flags()))
        d = fund(view, funder, account, amount, tuple(paused), now, f"fund:{uuid.uuid4()}")
        self._commit(d, ws, now, out)
        if d.refusal:
            return protocol.refused(ref, d.refusal.reason, d.refusal.detail)
        return {"op": "funded", "ref": ref, "account": account, "balance": self._balance(ws, account)}

    def _do_set_budget(self, who: str, frame: frames.SetBudget, *, out: Published) -> dict:
        """A topic's credit budget (seed 000: "the agent (or the topic's budget) is out of credits"):
        set by a person who is the workspace's owner or admin, or who is in the topic; null removes it."""
        ws, topic_id, budget, ref = frame.workspace, frame.topic, frame.budget, frame.ref
        directory = self.directory(ws)
        t = self._topic(topic_id)
        if who not in directory.memberships or t is None or t.workspace != ws:
            return protocol.refused(ref, "unknown_topic", "no such topic")
        p = directory.participants[who]
        role = directory.memberships[who].role
        if p.kind != Kind.HUMAN or not (role in ("owner", "admin") or (role != "viewer" and who in t.members)):
            return protocol.refused(ref, "permission_denied", "a person in the topic, or an admin, sets its budget")
        if budget is not None and (type(budget) is not int or not 0 <= budget <= 10**9):
            return protocol.refused(ref, "bad_amount", "a budget is a whole number of credits, or null for none")
        now = self.clock()
        # raising it wakes each agent it had stopped there (core.funding.set_budget)
        self._commit(core_set_budget(t, budget, now, f"budget:{uuid.uuid4()}"), ws, now, out)
        return {"op": "set_budget", "ref": ref, "topic": topic_id, "budget": budget}

    # --- parties (docs/rules.md, "Parties") ---

    def _do_party(self, who: str, frame: frames.AddParticipant | frames.RemoveParticipant | frames.SetLead, *,
                  out: Published) -> dict:
        """add_participant / remove_participant / set_lead: a core decision on the live conversation."""
        op, ref, ws, conv_ref, target = frame.op, frame.ref, frame.workspace, frame.conversation, frame.target
        directory = self.directory(ws)
        if who not in directory.memberships:
            return protocol.refused(ref, "unknown_workspace", "no such workspace")
        conversations = self._conversations(ws)
        conv = directory.conversation(conv_ref, who, conversations)
        if conv is not None and conv.id not in conversations:
            conv = None  # a direct conversation nobody wrote in yet is not there to change
        view = View(directory, conv, flags=frozenset(self._flags()))
        now = self.clock()
        if op == "set_lead":
            d = core_party.set_lead(view, who, target)
        else:
            d = core_party.change_members(view, who, "add" if op == "add_participant" else "remove", target, now)
        self._commit(d, ws, now, out)
        if d.refusal:
            return protocol.refused(ref, d.refusal.reason, d.refusal.detail)
        c = d.conversation or conv
        return {"op": op, "ref": ref, "conversation": c.id, "members": sorted(c.members), "lead": c.lead,
                "changed": d.conversation is not None}

    def _do_set_profile(self, who: str, frame: frames.SetProfile, *, out: Published) -> dict:
        """An agent's owner sets its profile: title, description, capabilities, generalist."""
        ref, agent = frame.ref, frame.agent
        row = self.conn.execute("SELECT id, profile FROM agents WHERE owner = ? AND (id = ? OR name = ?) AND revoked = 0",
                                (who, agent, agent)).fetchone()
        if row is None:
            return protocol.error(ref, "not_found", "no such agent of yours")
        prof, given = db.profile(row[1]), frame.profile()
        body = {"title": prof.title, "description": prof.description, "capabilities": list(prof.capabilities),
                "generalist": prof.generalist, "tools": list(prof.tools), "cost": prof.cost, **given}
        try:  # only what the frame sets (what was stored before these checks does not block another field's change)
            body.update({k: check(body[k]) for k, check in _PROFILE_TEXT.items() if k in given})
        except names.BadName as e:
            return protocol.error(ref, "bad_name", e.detail)
        self.conn.execute("UPDATE agents SET profile = ? WHERE id = ?", (msgspec.json.encode(body).decode(), row[0]))
        self.directories.clear()  # every workspace the agent is in sees the new profile
        self.party_views.clear()
        return {"op": "set_profile", "ref": ref, "agent": row[0], "profile": body}

    _SETTINGS = {  # key: (lowest, highest) for whole-number settings
        "party.maxHops": (0, MAX_HOPS_CEILING),
        "party.throttleDirect": (1, MAX_HOPS_CEILING),
        "party.throttleGroup": (1, MAX_HOPS_CEILING),
    }

    def _do_set_setting(self, who: str, frame: frames.SetSetting, *, out: Published) -> dict:
        """A workspace setting (owners and admins); effective from the next message decided."""
        ref, ws, key, value = frame.ref, frame.workspace, frame.key, frame.value
        directory = self.directory(ws)
        if who not in directory.memberships:
            return protocol.refused(ref, "unknown_workspace", "no such workspace")
        if directory.participants[who].kind != Kind.HUMAN or directory.memberships[who].role not in ("owner", "admin"):
            return protocol.refused(ref, "permission_denied", "owners and admins change workspace settings")
        if key in self._SETTINGS:
            lo, hi = self._SETTINGS[key]
            if value is not None and (type(value) is not int or not lo <= value <= hi):
                return protocol.refused(ref, "bad_amount", f"{key} is a whole number from {lo} to {hi}, or null")
        elif key == "assign.weights":
            if value is not None and (not isinstance(value, dict) or not all(
                    k in core_assign.WEIGHTS and type(v) in (int, float) and 0 <= v <= 1000 for k, v in value.items())):
                return protocol.refused(ref, "bad_amount", "assign.weights maps parts (" + ", ".join(core_assign.WEIGHTS)
                                        + ") to numbers from 0 to 1000")
        else:
            return protocol.error(ref, "bad_frame", f"unknown setting {key!r}")
        s = dict(self._settings(ws))
        if value is None:
            s.pop(key, None)
        else:
            s[key] = value
        self.conn.execute("UPDATE workspaces SET settings = ? WHERE id = ?", (msgspec.json.encode(s).decode(), ws))
        self.settings[ws] = s
        return {"op": "set_setting", "ref": ref, "workspace": ws, "key": key, "value": value}

    def _do_ack(self, participant: str, ids: list[int], ref: Any, *, out: Published) -> dict:
        """Retired with the batch's other acks in one statement (`_flush`, `db.ack`), which fills in the
        answer's ids; the answer goes out after the COMMIT, as every answer does."""
        done: list[int] = []
        self._acks.append((participant, ids, done))
        return {"op": "acked", "ref": ref, "ids": done}

    def _do_session(self, participant: str, lifetime: int, key: str | None = None, *, out: Published) -> tuple[str, int]:
        return auth.new_session(self.conn, participant, self.clock(), lifetime, key)

    def _do_sync(self, *, out: Published) -> None:
        """A no-op that returns once everything submitted before it is committed."""
        return None


_IDLE = object()


def _resolve(answers: list[tuple[_Command, Any, BaseException | None]]) -> None:
    """Answer a batch's callers, in order, with one wake-up of each event loop (not one per command)."""
    by_loop: dict[asyncio.AbstractEventLoop, list] = {}
    for a in answers:
        by_loop.setdefault(a[0].loop, []).append(a)
    for loop, items in by_loop.items():
        loop.call_soon_threadsafe(_settle, items)


def _settle(items: list[tuple[_Command, Any, BaseException | None]]) -> None:
    for cmd, result, error in items:
        if cmd.future.done():
            continue
        if error is not None:
            cmd.future.set_exception(error)
        elif isinstance(result, BaseException):
            cmd.future.set_exception(result)
        else:
            cmd.future.set_result(result)


_month_span: tuple[int, int, str] = (0, 0, "")  # [start, end) of the last month asked about, in us, and its name


def _month(now: int) -> str:
    global _month_span
    start, end, name = _month_span
    if start <= now < end:
        return name
    dt = datetime.fromtimestamp(now / 1e6, tz=timezone.utc)
    first = datetime(dt.year, dt.month, 1, tzinfo=timezone.utc)
    after = datetime(dt.year + dt.month // 12, dt.month % 12 + 1, 1, tzinfo=timezone.utc)
    name = dt.strftime("%Y-%m")
    _month_span = (int(first.timestamp()) * 1_000_000, int(after.timestamp()) * 1_000_000, name)
    return name
