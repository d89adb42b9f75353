"""Decide one batch against its snapshot, in arrival order (pure: no I/O).

Each command is judged against the snapshot as the commands before it left it: every decision is
folded into `snap.state` at once (core.state). The outcome holds each command's answer (a typed
result, `protocol.results`: the gateway words it as a reply), the decisions to write, the other rows
to write (acks, kept answers of idempotent sends, profiles, settings, sessions) and what the gateway
publishes after the COMMIT.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

import msgspec

from .. import protocol
from ..core import POOL, Decision, Kind, Refusal, RefusalReason as R, Topic, View, decide, due, fund, next_due, \
    plan_of
from ..core import artifacts as core_artifacts, assign as core_assign, cards as core_cards, files as core_files, \
    party as core_party, side as core_side, threads as core_threads
from ..core.decide import counters_of
from ..core.directory import Unresolved
from ..core.model import ArtifactRef, Post
from ..core.vocabulary import SYSTEM, MessageType, Role, State, TopicStatus
from ..core.funding import set_budget as core_set_budget
from ..core.lifecycle import unfunded
from ..core.revise import Revision, revise
from ..core.schedule import Schedule, after_run
from ..core.rules import party_limits
from ..protocol import ErrorCode as E, configurable, frames, names
from ..protocol.posts import MAX_TEXT
from ..protocol.results import (Acked, BudgetSet, Duplicate, Failed, Funded, PartyChanged, ProfileSet, Refused, Result,
                                Revised, Sent, SettingSet, ThreadSettled, ArtifactSaved, CardPressed, keep)
from ..store.port import Snapshot
from ..store.rows import profile
from .commands import Command
from .plan import funded_account

log = logging.getLogger("ygg.writer")


class CommandFailed(Exception):
    """Deciding one command raised: the batch is decided again without it, and it is answered with the error."""

    def __init__(self, index: int, error: BaseException):
        super().__init__(f"command {index} failed: {error!r}")
        self.index, self.error = index, error


@dataclass(slots=True)
class Outcome:
    answers: dict[int, Result | None] = field(default_factory=dict)  # command index -> its answer
    later: list[Command] = field(default_factory=list)  # left for the next batch (their topic is held elsewhere)
    decisions: list[tuple[Decision, int, str | None, str | None]] = field(default_factory=list)  # (d, now, org, month)
    idem: list[tuple[str, str, bytes, int]] = field(default_factory=list)  # (participant, client_id, kept, now)
    acks: list[tuple[str, list[int], list[int]]] = field(default_factory=list)  # (participant, ids, ids retired)
    profiles: list[tuple[str, str]] = field(default_factory=list)  # (agent, profile json)
    settings: list[tuple[str, str]] = field(default_factory=list)  # (workspace, settings json)
    sessions: list[tuple[tuple, str | None]] = field(default_factory=list)  # (row, key)
    memories: list[tuple[str, tuple]] = field(default_factory=list)  # (op, args): store.writes.write_memory
    revisions: list[tuple[Revision, int, int]] = field(default_factory=list)  # (edit or delete, message seq, now)
    artifacts: list[tuple] = field(default_factory=list)  # (action, Head after, author, message, now, comment)
    files: list[tuple[str, str]] = field(default_factory=list)  # (message id, upload id): uploads sent
    pools_charged: set[str] = field(default_factory=set)
    catalog_changed: bool = False  # a profile changed: directories and party views are read again
    # published after the COMMIT (the store fills deliveries and messages as it writes)
    topics: list[Topic] = field(default_factory=list)
    balances: list[tuple[str, str, int]] = field(default_factory=list)
    conversations: dict = field(default_factory=dict)
    parties: dict = field(default_factory=dict)
    deliveries: list = field(default_factory=list)
    messages: list = field(default_factory=list)
    leased: dict[int, str] = field(default_factory=dict)  # delivery id -> the holder it was leased to as written
    schedules: list[Schedule] = field(default_factory=list)  # reminders and routines as their run left them


class Batch:
    """One batch being decided: the snapshot, the clock's value, and the outcome so far."""

    def __init__(self, snap: Snapshot, now: int, month: str, new_id: Callable[[], str] = protocol.new_id):
        self.snap, self.state, self.now, self.month, self.new_id = snap, snap.state, now, month, new_id
        self.out = Outcome()
        self.idem: dict[tuple[str, str], bytes] = {}  # answers kept by this batch (results.keep)
        self.wakes: dict[str, int] = {}  # this batch's wakes of the agents in snap.fitness
        self.revised: dict[str, tuple] = {}  # messages this batch edited, as it left them (the snapshot's stay as read)
        self.heads: dict[str, core_artifacts.Head] = {}  # artifacts this batch moved, as it left them
        self.sent_files: set[str] = set()  # uploads this batch sent

    def run(self, cmds: list[Command], fired: list[tuple[Schedule, Command | None]] = ()) -> Outcome:
        held: set[str] = set()  # authors whose earlier send was left for later: so are their next ones
        busy = self.snap.busy
        for i, c in enumerate(cmds):
            if c.kind == "send" and busy:
                t = c.args[1].topic
                if c.args[0] in held or t in busy:
                    held.add(c.args[0])
                    self.out.later.append(c)
                    continue
            try:
                self.out.answers[i] = getattr(self, "_" + c.kind)(*c.args)
            except Exception as e:
                raise CommandFailed(i, e) from e
        self._scheduled(fired)
        self._due()
        return self.out

    # --- applying a decision ---

    def commit(self, d: Decision, ws: str, month: str | None) -> None:
        """Fold a decision into the state, and note what it writes and publishes."""
        snap, state, out = self.snap, self.state, self.out
        org = snap.orgs.get(ws)
        c = d.conversation
        if c is not None and c.id in snap.party_views:  # a new Lead or new members: a new view (counters are not in it)
            old = state.conversations.get(ws, {}).get(c.id)
            if old is None or old.members != c.members or old.lead != c.lead:
                del snap.party_views[c.id]
        for r in d.routed:  # each conversation this decision delivers in, as its agents are shown it
            cid = r.message.conversation
            if r.deliveries and cid not in out.parties:
                pv = snap.party_views.get(cid)
                if pv is None:
                    conv = c if c is not None and c.id == cid else state.conversations.get(ws, {}).get(cid)
                    pv = snap.party_views[cid] = core_party.party_view(snap.directory(ws), conv)
                out.parties[cid] = pv
        for t in d.topics:
            # who may see the topic's event (Gateway._readers): its conversation as it is now (a funding resumes an
            # agent's topics in every workspace it is in: the store reads those it does not hold as it writes)
            conv = c if c is not None and c.id == t.conversation else \
                state.conversations.get(t.workspace, {}).get(t.conversation)
            if conv is not None:
                out.conversations[t.conversation] = conv
        for e in d.ledger:
            if e.account == POOL:
                state.pools.setdefault(e.workspace, None)
                out.pools_charged.add(e.workspace)
            else:
                state.wallets.setdefault((e.workspace, e.account), None)
        counted = org[0] if d.usage and org and month else None
        state.fold(d, counted, month)
        out.topics += d.topics
        for e in d.ledger:
            out.balances.append((e.workspace, e.account, state.balance(e.workspace, e.account) or 0))
        if snap.fitness:  # a later send to a capability in this batch counts these wakes in the load
            for r in d.routed:
                for x in r.deliveries:
                    if x.wake and x.recipient in snap.fitness:
                        self.wakes[x.recipient] = self.wakes.get(x.recipient, 0) + 1
        out.decisions.append((d, self.now, org[0] if org else None, month))

    def _plan_left(self, ws: str) -> int | None:
        org = self.snap.orgs.get(ws)
        if org is None:
            return None
        limit = plan_of(*org[1:]).messages_per_month
        if limit is None:
            return None
        return max(0, limit - self.state.usage.get((org[0], self.month), 0))

    # --- the commands ---

    def _send(self, author: str, frame: frames.Send) -> Result:
        client_id = frame.client_id
        if client_id is not None:
            kept = self.idem.get((author, client_id)) or self.snap.idem.get((author, client_id))
            if kept is not None:
                return Duplicate(kept)
        ws, conv_ref = frame.workspace, frame.conversation
        snap, state = self.snap, self.state
        directory = snap.directory(ws)
        if author not in directory.memberships:
            return Refused(R.UNKNOWN_WORKSPACE, "no such workspace")
        try:
            post = protocol.to_post(frame, message_id=self.new_id(), author=author, workspace=ws)
        except protocol.BadFrame as e:
            return Failed(E.BAD_FRAME, e.detail)
        if frame.card is not None:  # a result card, resolved and stamped into the message (core/cards.py)
            try:
                card = core_cards.resolve(frame.card)
            except core_cards.CardError as e:
                return Refused(R.BAD_CARD, str(e))
            post = msgspec.structs.replace(post, card=card, body_chars=core_cards.size(card))
        if frame.files:  # the uploads it sends, as stored: charged by their real size (core/files.py)
            refs = core_files.attach(frame.files, snap.files, author, ws, self.sent_files)
            if isinstance(refs, Refusal):
                return Refused(refs.reason, refs.detail)
            post = msgspec.structs.replace(post, files=refs, attachment_bytes=sum(f.size for f in refs))
        known = state.conversations.get(ws, {})
        conv = directory.conversation(conv_ref, author, known)
        topic = state.topics.get(post.topic) if post.topic and post.topic != "new" else None
        if topic is not None and topic.workspace != ws:
            topic = None  # another workspace's topic is answered like one that does not exist
        agent = directory.participants[author].kind == Kind.AGENT
        settings = snap.settings.get(ws) or {}
        view = View(
            directory, conv, topic,
            open_opened=state.opened.get(author, 0) if agent else 0,
            wallet=state.wallets.get((ws, author)) if agent else None,
            pool=state.pools.get(ws) or 0 if agent else 0,
            draws_pool=agent and author in (settings.get("credits.poolDraw") or ()),
            plan_left=self._plan_left(ws),
            flags=frozenset(state.flags or ()),
            new_conversation=conv is not None and conv.id not in known,
            **party_limits(settings),
            side=core_side.existing(conv, post.topic, known),  # (a person's message there resets its counters)
        )
        if any(r.startswith(core_assign.PREFIX) for r in post.to):
            wakes = self.wakes
            fitness = {a: msgspec.structs.replace(f, load=f.load + wakes[a]) if a in wakes else f
                       for a, f in snap.fitness.items()}
            view = msgspec.structs.replace(view, weights=core_assign.weights_of(settings.get("assign.weights")),
                                           fitness=fitness)
        parts = core_threads.extract(post.text) if conv is not None and not post.malformed else None
        if parts is not None and parts.parts:
            return self._send_threads(author, client_id, view, post, parts)
        d = decide(view, post, self.now)
        self.commit(d, ws, self.month)
        if d.refusal:
            return Refused(d.refusal.reason, d.refusal.detail)
        main = d.routed[0]
        return self._sent(author, client_id, Sent(main.message, main.deliveries))

    def _sent(self, author: str, client_id: str | None, sent: Sent) -> Sent:
        for f in sent.message.files:  # (written with the message: the upload is the message's from now on)
            self.sent_files.add(f.id)
            self.out.files.append((sent.message.id, f.id))
        if client_id is not None:
            kept = keep(sent)
            self.idem[(author, client_id)] = kept
            self.out.idem.append((author, client_id, kept, self.now))
        return sent

    def _fresh(self, view: View, author: str) -> View:
        """`view` with the author's wallet, the pool, its open topics and the plan as this batch left them."""
        ws, state = view.directory.workspace, self.state
        if view.directory.participants[author].kind != Kind.AGENT:
            return msgspec.structs.replace(view, plan_left=self._plan_left(ws))
        return msgspec.structs.replace(view, open_opened=state.opened.get(author, 0),
                                       wallet=state.wallets.get((ws, author)), pool=state.pools.get(ws) or 0,
                                       plan_left=self._plan_left(ws))

    def _send_threads(self, author: str, client_id: str | None, view: View, post: Post,
                      ex: core_threads.Extracted) -> Result:
        """A message with `<dm>` parts (core/threads.py): every target known, or nothing is stored; the message
        judged as it will be stored; then each part, a request opening a topic in its side thread (paid like any
        message: a refused part is answered in `threads_refused`, not stored); then the message, carrying the
        threads its accepted parts went to."""
        d, conv, ws = view.directory, view.conversation, view.directory.workspace
        targets = []
        for part in ex.parts:
            found = d.resolve(part.targets)
            if found.__class__ is Unresolved or SYSTEM in found:
                why = found.detail if found.__class__ is Unresolved else "system.ygg has no side threads"
                return Refused(R.UNKNOWN_RECIPIENT, f"<dm target>: {why}")
            found = tuple(t for t in found if t != author)
            if not found:
                return Refused(R.UNKNOWN_RECIPIENT, "<dm target> names nobody but you")
            targets.append(found)
        main = msgspec.structs.replace(post, text=ex.text or "\u2192 side thread")
        probe = decide(view, main, self.now)
        if probe.refusal:
            self.commit(probe, ws, self.month)
            return Refused(probe.refusal.reason, probe.refusal.detail)
        topic = view.topic
        title = post.title or (topic.title if topic is not None else None) or "side thread"
        known = self.state.conversations.get(ws, {})
        holder = counters_of(view, conv, topic) if topic is not None else known.get(conv.id, conv)
        opened, refused, extra = [], [], 0
        for part, to in zip(ex.parts, targets):
            tid = core_threads.thread_id(conv.id, frozenset({author, *to}))
            before = known.get(tid)
            if before is not None and not core_threads.is_thread(before):
                refused.append((tid, R.UNKNOWN_CONVERSATION.value))
                continue
            thread = core_threads.opened(d, conv, author, to, post.id, before, holder)
            pv = msgspec.structs.replace(self._fresh(view, author), conversation=thread, topic=None, side=None,
                                         new_conversation=thread is not before)
            pd = decide(pv, Post(self.new_id(), author, ws, "new", MessageType.REQUEST, part.body, title=title,
                                 to=to, state=State.WAITING), self.now)  # (it waits on them there)
            self.commit(pd, ws, self.month)
            if pd.refusal:
                refused.append((tid, pd.refusal.reason.value))
            else:
                opened.append(tid)
                extra += pd.routed[0].message.cost
        main = msgspec.structs.replace(main, threads=tuple(dict.fromkeys(opened)))
        d2 = decide(self._fresh(view, author), main, self.now)
        self.commit(d2, ws, self.month)
        if d2.refusal:  # (its parts were paid first and are stored: docs/protocol.md, "Side threads")
            return Refused(d2.refusal.reason, d2.refusal.detail)
        m = d2.routed[0]
        return self._sent(author, client_id, Sent(m.message, m.deliveries, extra, tuple(refused)))

    def _thread(self, who: str, frame: frames.SettleThread) -> Result:
        """settle_thread: a side thread marked resolved, abandoned or ongoing, with its summary (core/threads.py)."""
        ws = frame.workspace
        directory = self.snap.directory(ws)
        if who not in directory.memberships:
            return Refused(R.UNKNOWN_WORKSPACE, "no such workspace")
        summary = frame.summary if isinstance(frame.summary, str) else None
        thread = self.state.conversations.get(ws, {}).get(frame.thread)
        d = core_threads.settle(directory, thread, who, frame.state, summary, self.now, f"settle:{uuid.uuid4()}")
        self.commit(d, ws, None)
        if d.refusal:
            return Refused(d.refusal.reason, d.refusal.detail)
        c = d.conversation
        return ThreadSettled(c.id, c.thread, c.summary)

    def _artifact(self, who: str, frame) -> Result:
        """create_artifact / update_artifact / comment_artifact (core/artifacts.py): the message that posts the
        version (or the comment) decided like a send, in the artifact's conversation; the rows written with it."""
        ws, op = frame.workspace, frame.op
        directory = self.snap.directory(ws)
        if who not in directory.memberships:
            return Refused(R.UNKNOWN_WORKSPACE, "no such workspace")
        head = None
        if op != "create_artifact":
            head = self.heads.get(frame.artifact) or self.snap.artifacts.get(frame.artifact)
            if head is None or head.workspace != ws:
                return Refused(R.UNKNOWN_ARTIFACT, "no such artifact")
        texts = {}
        for field_ in ("title", "body", "language", "topic_title") + (("text",) if op == "comment_artifact" else ()):
            v = getattr(frame, field_, None)
            if v is not None and not isinstance(v, str):
                return Failed(E.BAD_FRAME, f"{field_} is text")
            texts[field_] = v
        try:
            title = names.clean("title", texts["title"]) if texts["title"] else None
            topic_title = names.clean("title", texts["topic_title"]) if texts["topic_title"] else None
        except names.BadName as e:
            return Failed(E.BAD_NAME, e.detail)
        to = tuple(r for r in frame.to if isinstance(r, str)) if isinstance(frame.to, list) else ()
        mid = self.new_id()
        if op == "comment_artifact":
            text = (texts["text"] or "").strip()
            version = frame.version if frame.version is not None else head.version
            if type(version) is not int or not 1 <= version <= head.version:
                return Refused(R.UNKNOWN_ARTIFACT, f"no version {version!r} of this artifact")
            if not text or len(text) > core_artifacts.MAX_COMMENT:
                return Refused(R.BAD_ARTIFACT, f"a comment is 1 to {core_artifacts.MAX_COMMENT} characters")
            ref = ArtifactRef(head.id, version, head.title, head.kind, core_artifacts.COMMENTED)
            after, body = msgspec.structs.replace(head, version=version), ""
            post = core_artifacts.announce(mid, who, ws, frame.topic, ref, text=text, to=to, title=topic_title)
        else:
            kind = frame.kind if op == "create_artifact" else head.kind
            why = core_artifacts.problem(title if op == "create_artifact" else None, kind, texts["body"])
            if why is None and op == "create_artifact" and (texts["body"] is None or title is None):
                why = "an artifact has a title and a body"
            if why is None and op == "update_artifact" and texts["body"] is None and title is None:
                why = "an edit gives a new body or a new title"
            if why:
                return Refused(R.BAD_ARTIFACT, why)
            if op == "create_artifact":
                conv = directory.conversation(frame.conversation, who, self.state.conversations.get(ws, {}))
                if conv is None:
                    return Refused(R.UNKNOWN_CONVERSATION, "no such conversation for you")
                made = conv
                after = core_artifacts.Head(self.new_id(), ws, conv.id, title, kind, texts["language"], 1,
                                            texts["body"])
            else:
                body = texts["body"] if texts["body"] is not None else head.body
                if body == head.body and (title is None or title == head.title):  # the same again: nothing to write
                    return ArtifactSaved(op, head.id, head.version, head.title, head.kind, unchanged=True)
                after = msgspec.structs.replace(head, version=head.version + 1, title=title or head.title, body=body)
            body = after.body
            ref = ArtifactRef(after.id, after.version, after.title, after.kind,
                              core_artifacts.CREATED if op == "create_artifact" else core_artifacts.UPDATED)
            post = core_artifacts.announce(mid, who, ws, frame.topic, ref, body=body, to=to, title=topic_title)
        d = self._decide_in(who, ws, made if op == "create_artifact" else after.conversation, post)
        if d.refusal:
            if op != "create_artifact" and d.refusal.reason == R.UNKNOWN_CONVERSATION:
                return Refused(R.UNKNOWN_ARTIFACT, "no such artifact")  # (one in a conversation not theirs: alike)
            return Refused(d.refusal.reason, d.refusal.detail)
        m = d.routed[0]
        if op != "comment_artifact":
            self.heads[after.id] = after
        action = ref.action
        self.out.artifacts.append((action, after, who, m.message.id, self.now,
                                   post.text if op == "comment_artifact" else None))
        return ArtifactSaved(op, after.id, after.version if op != "comment_artifact" else ref.version, ref.title,
                             ref.kind, m.message, m.deliveries)

    def _decide_in(self, who: str, ws: str, where, post: Post):
        """`post` decided in conversation `where` (one, or its id), as a send there is; folded in."""
        directory = self.snap.directory(ws)
        known = self.state.conversations.get(ws, {})
        conv = known.get(where) if isinstance(where, str) else where
        topic = self.state.topics.get(post.topic) if post.topic and post.topic != "new" else None
        if topic is not None and topic.workspace != ws:
            topic = None
        settings = self.snap.settings.get(ws) or {}
        agent = directory.participants[who].kind == Kind.AGENT
        view = self._fresh(View(directory, conv, topic, flags=frozenset(self.state.flags or ()),
                                draws_pool=agent and who in (settings.get("credits.poolDraw") or ()),
                                new_conversation=conv is not None and conv.id not in known, **party_limits(settings)),
                           who)
        d = decide(view, post, self.now)
        self.commit(d, ws, self.month)
        return d

    def _card(self, who: str, frame: frames.PressCard) -> Result:
        """A card's button (core/cards.py): pressed by one who may read its message; acted on in place (the card's
        new state written over its message, those it reached told as context) or handed to the card's author as
        a request, decided as a send is (in the card's topic when the frame names it, else a new one)."""
        ws, mid = frame.workspace, frame.message
        directory = self.snap.directory(ws)
        if who not in directory.memberships:
            return Refused(R.UNKNOWN_WORKSPACE, "no such workspace")
        row = self.revised.get(mid) or self.snap.revised.get(mid)
        if row is not None and (row[0].workspace != ws or (row[3] is not None and who not in row[3])):
            row = None  # another workspace's message, or one the presser may not read: as one that does not exist
        found, seq, reached, readers = row if row is not None else (None, 0, (), None)
        if not isinstance(frame.action, str):
            return Refused(R.UNKNOWN_ACTION, "action is the name of one of the card's buttons")
        r = core_cards.press(found, who, frame.action, reached, self.now, self.new_id())
        if isinstance(r, Refusal):
            return Refused(r.reason, r.detail)
        if isinstance(r, Revision):
            if directory.memberships[who].role == Role.VIEWER:
                return Refused(R.PERMISSION_DENIED, "a viewer does not act on cards")
            self.revised[mid] = (r.message, seq, reached, readers)
            self.out.revisions.append((r, seq, self.now))
            return CardPressed(mid, frame.action, r.message, r.deliveries, in_place=True)
        topic = self.state.topics.get(found.topic) if found.topic and frame.topic == found.topic else None
        if topic is None or topic.status == TopicStatus.CLOSED:
            r = msgspec.structs.replace(r, topic="new")
        d = self._decide_in(who, ws, found.conversation, r)
        if d.refusal:
            return Refused(d.refusal.reason, d.refusal.detail)
        m = d.routed[0]
        return CardPressed(mid, frame.action, m.message, m.deliveries)

    def _fund(self, funder: str, frame: frames.Fund) -> Result:
        ws, account, amount = frame.workspace, frame.account, frame.amount
        directory = self.snap.directory(ws)
        if funder not in directory.memberships:
            return Refused(R.UNKNOWN_WORKSPACE, "no such workspace")
        account = funded_account(directory, account)
        topics = self.state.topics
        paused = [topics.get(t.id, t) for t in self.snap.paused.get((ws, account), ())]
        # and those this batch's commands paused before it (they waited for nothing when the rows were loaded)
        found = {t.id for t in paused}
        for t in self.out.topics:
            if t.id not in found and (t.workspace == ws if account == POOL else account in unfunded(t)):
                found.add(t.id)
                paused.append(topics[t.id])
        view = View(directory, None, flags=frozenset(self.state.flags or ()))
        d = fund(view, funder, account, amount, tuple(t for t in paused if unfunded(t)), self.now, f"fund:{uuid.uuid4()}")
        self.commit(d, ws, None)
        if d.refusal:
            return Refused(d.refusal.reason, d.refusal.detail)
        return Funded(account, self.state.balance(ws, account))

    def _set_budget(self, who: str, frame: frames.SetBudget) -> Result:
        """A topic's credit budget (seed 000: "the agent (or the topic's budget) is out of credits"):
        set by a person who is the workspace's owner or admin, or who is in the topic; null removes it."""
        ws, topic_id, budget = frame.workspace, frame.topic, frame.budget
        directory = self.snap.directory(ws)
        t = self.state.topics.get(topic_id)
        if who not in directory.memberships or t is None or t.workspace != ws:
            return Refused(R.UNKNOWN_TOPIC, "no such topic")
        p = directory.participants[who]
        role = directory.memberships[who].role
        if p.kind != Kind.HUMAN or not (role in ("owner", "admin") or (role != "viewer" and who in t.members)):
            return Refused(R.PERMISSION_DENIED, "a person in the topic, or an admin, sets its budget")
        if budget is not None and (type(budget) is not int or not 0 <= budget <= 10**9):
            return Refused(R.BAD_AMOUNT, "a budget is a whole number of credits, or null for none")
        # raising it wakes each agent it had stopped there (core.funding.set_budget)
        self.commit(core_set_budget(t, budget, self.now, f"budget:{uuid.uuid4()}"), ws, None)
        return BudgetSet(topic_id, budget)

    def _party(self, who: str, frame: frames.AddParticipant | frames.RemoveParticipant | frames.SetLead) -> Result:
        """add_participant / remove_participant / set_lead (docs/rules.md, "Parties"): a core decision."""
        op, ws, conv_ref, target = frame.op, frame.workspace, frame.conversation, frame.target
        directory = self.snap.directory(ws)
        if who not in directory.memberships:
            return Refused(R.UNKNOWN_WORKSPACE, "no such workspace")
        known = self.state.conversations.get(ws, {})
        conv = directory.conversation(conv_ref, who, known)
        if conv is not None and conv.id not in known:
            conv = None  # a direct conversation nobody wrote in yet is not there to change
        view = View(directory, conv, flags=frozenset(self.state.flags or ()))
        if op == "set_lead":
            d = core_party.set_lead(view, who, target)
        else:
            d = core_party.change_members(view, who, "add" if op == "add_participant" else "remove", target, self.now)
        self.commit(d, ws, None)
        if d.refusal:
            return Refused(d.refusal.reason, d.refusal.detail)
        c = d.conversation or conv
        return PartyChanged(op, c.id, sorted(c.members), c.lead, d.conversation is not None)

    def _set_profile(self, who: str, frame: frames.SetProfile) -> Result:
        """An agent's owner sets its profile: title, description, capabilities, tools, generalist, cost."""
        row = self.snap.agents.get((who, frame.agent))
        if row is None:
            return Failed(E.NOT_FOUND, "no such agent of yours")
        try:  # only what the frame sets (what was stored before these checks does not block another field's change)
            given = configurable.check_profile(frame.profile())
        except names.BadName as e:
            return Failed(E.BAD_NAME, e.detail)
        prof = msgspec.structs.replace(profile(row[1]), **given)
        self.out.profiles.append((row[0], msgspec.json.encode(prof).decode()))
        self.out.catalog_changed = True  # every workspace the agent is in sees the new profile
        return ProfileSet(row[0], prof)

    def _set_setting(self, who: str, frame: frames.SetSetting) -> Result:
        """A workspace setting (owners and admins); effective from the next message decided."""
        ws, key, value = frame.workspace, frame.key, frame.value
        directory = self.snap.directory(ws)
        if who not in directory.memberships:
            return Refused(R.UNKNOWN_WORKSPACE, "no such workspace")
        if directory.participants[who].kind != Kind.HUMAN or directory.memberships[who].role not in ("owner", "admin"):
            return Refused(R.PERMISSION_DENIED, "owners and admins change workspace settings")
        if key == "credits.poolDraw" and isinstance(value, list) and not all(
                isinstance(a, str) and a in directory.memberships and directory.participants[a].kind == Kind.AGENT
                for a in value):
            return Refused(R.UNKNOWN_RECIPIENT, "credits.poolDraw lists agents of this workspace by id")
        try:
            problem = configurable.setting_problem(key, value)
        except configurable.UnknownSetting:
            return Failed(E.BAD_FRAME, f"unknown setting {key!r}")
        if problem:
            return Refused(R.BAD_AMOUNT, problem)
        s = dict(self.snap.settings.get(ws) or {})
        if value is None:
            s.pop(key, None)
        else:
            s[key] = value
        self.snap.settings[ws] = s
        self.out.settings.append((ws, msgspec.json.encode(s).decode()))
        return SettingSet(ws, key, value)

    def _revise(self, who: str, frame: frames.EditMessage | frames.DeleteMessage) -> Result:
        """One's own message edited (the older text kept as a version) or deleted (core/revise.py); those it
        reached are told as context, never woken."""
        ws, mid = frame.workspace, frame.message
        directory = self.snap.directory(ws)
        if who not in directory.memberships:
            return Refused(R.UNKNOWN_WORKSPACE, "no such workspace")
        text = getattr(frame, "text", None)  # (a delete has none)
        if text is not None and len(text) > MAX_TEXT:
            return Failed(E.BAD_FRAME, f"text longer than {MAX_TEXT} characters")
        row = self.revised.get(mid) or self.snap.revised.get(mid)
        if row is not None and (row[0].workspace != ws or (row[3] is not None and who not in row[3])):
            row = None  # another workspace's message, or one the asker may not read: as one that does not exist
        found, seq, reached, readers = row if row is not None else (None, 0, (), None)
        r = revise(found, who, text, reached, self.now, agent=directory.participants[who].kind == Kind.AGENT)
        if isinstance(r, Refusal):
            return Refused(r.reason, r.detail)
        if r.message is r.before:  # the same text again: nothing to write
            return Revised(frame.op, r.message)
        self.revised[mid] = (r.message, seq, reached, readers)  # a second edit in this batch starts from this one
        self.out.revisions.append((r, seq, self.now))
        return Revised(frame.op, r.message, r.deliveries)

    def _ack(self, participant: str, ids: list[int], ref: Any = None) -> Acked:
        """Retired with the batch's other acks in one statement, which fills in the answer's ids. (`ref`, the ack
        frame's, is the gateway's to answer with: it is not part of the result.)"""
        done: list[int] = []
        self.out.acks.append((participant, ids, done))
        return Acked(done)

    def _session(self, *row_and_key) -> None:
        """A session's row, then `key` (ops.auth.session_row, a person's ops.accounts.session_row: the token's digest,
        never the token; flat, so each argument crosses to a writer process as itself), an agent's written only while
        `key`, the API key it signed in with, is still its own."""
        *row, key = row_and_key
        self.out.sessions.append((tuple(row), key))

    def _memory(self, op: str, *args) -> None:
        """An agent's memory kept or marked used (store.writes.write_memory), with the batch: on SQLite the writer's
        own commit, so no cache is dropped and no connection rescanned for it."""
        self.out.memories.append((op, args))

    def _sync(self) -> None:
        return None

    # --- the clock: reminders and routines, then nudges, closure polls, auto-done ---

    def _scheduled(self, fired: list[tuple[Schedule, Command | None]]) -> None:
        """Each due reminder or routine sends what core.schedule.fire said, as any send of the batch."""
        for s, c in fired:
            if c is None:
                continue
            try:
                r = self._send(*c.args)
            except Exception:  # a bug in deciding it must not fail every batch after: it is told in the row
                log.exception("schedule %s failed", s.id)
                r = None
            result = "sent" if isinstance(r, Sent) else str(getattr(r, "reason", None) or getattr(r, "code", "failed"))
            self.out.schedules.append(after_run(s, self.now, result))


    def _due(self) -> None:
        state, now = self.state, self.now
        for t in self.snap.due:
            t = state.topics.get(t.id, t)  # as this batch's commands left it
            when = next_due(t)
            if when is None or when > now:
                continue
            conv = state.conversations.get(t.workspace, {}).get(t.conversation)
            d = due(View(self.snap.directory(t.workspace), conv, flags=frozenset(state.flags or ())), t, now)
            if d.topics:
                self.commit(d, t.workspace, None)
