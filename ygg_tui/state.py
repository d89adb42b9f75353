"""What the TUI knows, kept apart from how it is shown (no Textual imports here).

The `Store` is fed by the session (replies, deliveries, events) and answers the
widgets' questions: which conversations, which topics with which states, which
messages in a topic, who is unread, who waits on a person, who ran out of credits.
Every message is kept once, by id, whichever way it arrived (history page, live
delivery, monitor event, our own `sent` reply, a redelivery after a reconnect).
"""

from __future__ import annotations

from bisect import insort
from collections import Counter
from dataclasses import dataclass, field
from itertools import count

from .words import printable, topic_status

SYSTEM = "system.ygg"
# a delivery's reason: a message shown again as it is now (edited, deleted, its result card acted on in place)
REVISIONS = ("message_edited", "message_deleted", "card_updated")


def newer_revision(new: dict, old: dict) -> bool:
    """Whether `new` is a later edit (or the delete) of the message `old` is a copy of."""
    if old.get("deleted"):
        return False
    if bool(new.get("deleted")) or (new.get("version") or 0) > (old.get("version") or 0):
        return True
    return ((new.get("card") or {}).get("state_at") or "") > ((old.get("card") or {}).get("state_at") or "")


FROZEN = ("to", "waiting_for", "woke")  # a message's lists, read and never changed here


def _drawable(msg: dict) -> None:
    """A message's text made safe to draw (`words.printable`) once, as it comes in, not at every layout; its lists
    made tuples. A dict holding only strings, numbers and tuples of strings is one the garbage collector stops
    tracking: with lists, 100,000 messages were 200,000 objects that every full collection walked, and one landed
    on a keypress now and then (372 ms in `python -m ygg_tui.bench`)."""
    if msg.get("text"):
        msg["text"] = printable(msg["text"])
    for k in FROZEN:
        if isinstance(msg.get(k), list):
            msg[k] = tuple(msg[k])
POOL = "pool"


def thread_key(conversation: str, topic: str | None) -> str:
    """A topic's messages, or a conversation's messages that belong to no topic (some notices)."""
    return topic if topic else f"notices:{conversation}"


@dataclass
class Thread:
    """The messages of one topic loaded so far, oldest first."""

    key: str
    workspace: str
    conversation: str
    topic: str | None
    messages: list[dict] = field(default_factory=list)
    ids: set[str] = field(default_factory=set)
    cursor: int | None = None  # `before` for the next older page
    more: bool = True  # older pages exist
    loaded: bool = False  # the newest page was fetched
    version: int = 0  # bumps on every change, so views know when to re-read

    def add_live(self, msg: dict) -> bool:
        if msg["id"] in self.ids:
            return False
        self.ids.add(msg["id"])
        if not self.messages or self.messages[-1]["created_at"] <= msg["created_at"]:
            self.messages.append(msg)
        else:
            insort(self.messages, msg, key=lambda m: m["created_at"])
        self.version += 1
        return True

    def revise(self, msg: dict) -> bool:
        """A message here edited or deleted since (`newer_revision`): its copy replaced, in place."""
        for i, old in enumerate(self.messages):
            if old["id"] == msg["id"]:
                if not newer_revision(msg, old):
                    return False
                self.messages[i] = msg
                self.version += 1
                return True
        return False

    def add_page(self, page: list[dict], cursor: int | None, more: bool) -> int:
        """A history page (newest first). Returns how many messages went in before the old first one."""
        for m in page:
            if m["id"] in self.ids:
                self.revise(m)
        fresh = [m for m in reversed(page) if m["id"] not in self.ids]
        if self.topic is None:
            fresh = [m for m in fresh if not m.get("topic")]
        self.cursor, self.more = cursor, more
        self.loaded = True
        if not fresh:
            return 0
        self.ids.update(m["id"] for m in fresh)
        first = self.messages[0]["created_at"] if self.messages else None
        older = [m for m in fresh if first is None or m["created_at"] <= first]
        newer = [m for m in fresh if first is not None and m["created_at"] > first]
        self.messages[:0] = older
        for m in newer:
            insort(self.messages, m, key=lambda x: x["created_at"])
        self.version += 1
        return len(older)


@dataclass
class Workspace:
    id: str
    name: str
    role: str = "member"
    personal: bool = False
    org: str | None = None
    members: dict[str, dict] = field(default_factory=dict)
    conversations: dict[str, dict] = field(default_factory=dict)
    pool: int | None = None
    balances: dict[str, int | None] = field(default_factory=dict)
    presence: dict[str, bool] = field(default_factory=dict)
    monitor: bool = False
    restricted: bool = False
    groups: dict[str, list[str]] = field(default_factory=dict)  # group name -> member ids (list_groups, add_group)

    @property
    def can_fund_pool(self) -> bool:
        return self.role in ("owner", "admin")

    @property
    def manages(self) -> bool:
        """Owners and admins invite people and restrict it (seed 003 §66); a personal one is its person's alone."""
        return self.role in ("owner", "admin") and not self.personal

    @property
    def can_leave(self) -> bool:
        """Never a personal workspace (seed 003 §65), nor as its last owner (`last_owner`)."""
        owners = sum(m.get("role") == "owner" for m in self.members.values())
        return not self.personal and (self.role != "owner" or owners > 1)

    def can_fund(self, agent: str, me: str) -> bool:
        """Seed 000/002: owners and admins fund any agent, and set its permissions; a member, their own agents."""
        if self.role in ("owner", "admin"):
            return True
        m = self.members.get(agent)
        mine = self.members.get(me)
        return bool(m and mine and self.role != "viewer" and m.get("person") == mine.get("handle"))


@dataclass
class Change:
    """What one batch of input changed, so the views redraw only that."""

    threads: dict[str, list[dict]] = field(default_factory=dict)  # thread key -> messages added live
    topics: set[str] = field(default_factory=set)
    conversations: set[str] = field(default_factory=set)  # workspaces whose conversation list changed
    balances: set[str] = field(default_factory=set)  # workspaces
    unread: bool = False
    monitor: list[dict] = field(default_factory=list)  # monitor events (message + deliveries)
    unknown_conversations: set[str] = field(default_factory=set)  # workspaces to ask again
    gone: dict[str, str] = field(default_factory=dict)  # workspaces no longer this person's (forgotten): id -> name
    added: set[str] = field(default_factory=set)  # workspaces this person now reaches, to load
    # workspace -> (joined, left, changed: role or permissions)
    members: dict[str, tuple[list[str], list[str], list[str]]] = field(default_factory=dict)
    narrowed: dict[str, str] = field(default_factory=dict)  # workspace -> why this person follows less of it
    called: set[str] = field(default_factory=set)  # thread keys where a new message woke this person
    revised: dict[str, list[dict]] = field(default_factory=dict)  # thread key -> its messages edited or deleted
    quiet: list[int] = field(default_factory=list)  # deliveries seen at once (a quiet notice, a correction): acked, never unread
    presence: set[str] = field(default_factory=set)  # workspaces where someone came online or went offline
    approvals: bool = False  # an approval this person may decide came or went (issue 22)

    def __bool__(self) -> bool:
        return bool(self.threads or self.topics or self.conversations or self.balances or self.unread
                    or self.monitor or self.unknown_conversations or self.gone or self.added or self.members
                    or self.narrowed or self.called or self.revised or self.quiet or self.presence or self.approvals)

    def merge(self, other: "Change") -> None:
        for k, v in other.threads.items():
            self.threads.setdefault(k, []).extend(v)
        self.topics |= other.topics
        self.called |= other.called
        self.quiet += other.quiet
        self.presence |= other.presence
        self.approvals |= other.approvals
        self.conversations |= other.conversations
        self.balances |= other.balances
        self.unread |= other.unread
        self.monitor += other.monitor
        self.unknown_conversations |= other.unknown_conversations
        self.gone.update(other.gone)
        self.added |= other.added
        for ws, moved in other.members.items():
            for mine, theirs in zip(self.members.setdefault(ws, ([], [], [])), moved):
                mine += theirs
        self.narrowed.update(other.narrowed)
        for k, v in other.revised.items():
            self.revised.setdefault(k, []).extend(v)


class Store:
    def __init__(self) -> None:
        self.me: dict = {}
        self.workspaces: dict[str, Workspace] = {}
        self.org_names: dict[str, str] = {}  # organization id -> its name (list_orgs)
        self.org_roles: dict[str, str] = {}  # organization id -> this person's role there (list_orgs)
        self.invitations: dict[str, dict] = {}  # invitation id -> list_invitations' row: waiting for an answer
        self.approvals: dict[str, dict] = {}  # approval id -> its row: a tool call waiting on this person (issue 22)
        self.joinable: dict[str, dict] = {}  # workspace id -> its row: one's organizations open it, one is not in
        self.my_agents: dict[str, dict] | None = None  # agent id -> its row (my_agents); None: not answered
        self.names: dict[str, str] = {SYSTEM: SYSTEM}
        self.kinds: dict[str, str] = {SYSTEM: "system"}
        self.topics: dict[str, dict] = {}
        self.activity: dict[str, int] = {}
        self._tick = count(1)
        self.threads: dict[str, Thread] = {}
        self.woke: dict[str, list[str]] = {}  # message id -> participants it woke
        self.context: dict[str, int] = {}  # message id -> how many got it as context
        # unread: deliveries not acked yet, by message
        self.unread: dict[str, tuple[int, str, str, str]] = {}  # message id -> (delivery id, ws, conv, thread)
        self.unread_by_thread: Counter[str] = Counter()
        self.unread_by_conv: Counter[str] = Counter()
        self.acked: set[int] = set()
        # funding requests: (workspace, agent id) -> the notice (or paused topic) that says it ran out there (an
        # agent has a wallet per workspace: out of credits in one, it may still pay in another)
        self.funding: dict[tuple[str, str], dict] = {}
        self.needs_human_seen: dict[str, int] = {}

    # --- who is who ---

    @property
    def my_id(self) -> str:
        return self.me.get("id", "")

    def name(self, pid: str | None) -> str:
        if not pid:
            return "?"
        got = self.names.get(pid)
        if got:
            return got
        if pid.startswith("group:"):
            return pid
        return pid.split(".", 1)[-1][:8]

    def set_members(self, ws: str, members: list[dict]) -> None:
        w = self.workspaces[ws]
        w.members = {m["id"]: m for m in members}
        me = w.members.get(self.my_id)
        if me is not None:  # one's own role as it is now (given or lowered since sign-in: `members` changed)
            w.role = me["role"]
            w.monitor = w.role in ("owner", "admin") or bool(me.get("monitor"))
        for m in members:
            self.names[m["id"]] = f"@{m['handle']}" if m["kind"] == "human" else m["name"]
            self.kinds[m["id"]] = m["kind"]

    def conversation_name(self, conv: dict) -> str:
        kind = conv.get("kind")
        if kind == "general":
            return "General"
        if kind == "group":
            return f"group:{conv.get('name')}"
        if kind == "side":  # seed 003 §15: a task delegated from a direct conversation
            return f"side: {printable(conv.get('name') or '', one_line=True)}"
        others = [p for p in conv.get("members", ()) if p != self.my_id]
        return ", ".join(self.name(p) for p in others) or self.name(self.my_id)

    def conversation(self, cid: str) -> dict | None:
        for w in self.workspaces.values():
            c = w.conversations.get(cid)
            if c is not None:
                return c
        return None

    def workspace_of_conversation(self, cid: str) -> Workspace | None:
        for w in self.workspaces.values():
            if cid in w.conversations:
                return w
        return None

    def group_names(self, ws: str) -> list[str]:
        """The workspace's groups as listed (a new one as soon as it is made, a removed one gone at once); a
        removed group's conversation keeps its name in the sidebar but is not offered to address."""
        w = self.workspaces.get(ws)
        return sorted(w.groups) if w else []

    def set_groups(self, ws: str, groups: list[dict]) -> None:
        self.workspaces[ws].groups = {g["name"]: g["members"] for g in groups}

    # --- loading ---

    def add_workspace(self, row: dict) -> Workspace:
        w = self.workspaces.get(row["id"])
        if w is None:
            w = self.workspaces[row["id"]] = Workspace(row["id"], row["name"])
        w.name, w.role, w.personal = row["name"], row.get("role", "member"), bool(row.get("personal"))
        w.org, w.restricted = row.get("org"), bool(row.get("restricted"))
        w.monitor = w.role in ("owner", "admin")
        return w

    def forget_workspaces(self, ids) -> None:
        """Workspaces this person no longer reaches (deleted, or an organization left): gone with their
        threads, topics and unread counts."""
        gone = set(ids)
        for ws in gone:
            self.workspaces.pop(ws, None)
        for key in [k for k, th in self.threads.items() if th.workspace in gone]:
            del self.threads[key]
        for tid in [t for t, row in self.topics.items() if row.get("workspace") in gone]:
            del self.topics[tid]
        for mid, (_, ws, conv, key) in list(self.unread.items()):
            if ws in gone:
                del self.unread[mid]
                self.unread_by_conv[conv] -= 1
                self.unread_by_thread[key] -= 1

    def orgs_run(self, owner_only: bool = False) -> set[str]:
        """The organizations this person owns (never left: `last_owner`), or owns or is an admin of (invites to)."""
        return {o for o, r in self.org_roles.items() if r == "owner" or (r == "admin" and not owner_only)}

    def own_agents(self) -> dict[str, dict]:
        """This person's agents, not revoked, by id (seed 002: "Agents belong to a person"): as `my_agents`
        answered, wherever they are; from a server without it, those in the workspaces one reaches."""
        if self.my_agents is not None:
            return {a: row for a, row in self.my_agents.items() if not row.get("revoked")}
        me = self.me.get("handle")
        return {m["id"]: {"id": m["id"], "name": m["name"]} for w in self.workspaces.values()
                for m in w.members.values() if m["kind"] == "agent" and m.get("person") == me}

    @staticmethod
    def where_pinned(agent: dict) -> str:
        """Where one's agent (a `my_agents` row) goes: "pinned to side; ", "in every workspace of yours; ", "in no
        workspace …" (its pins went with the workspaces deleted), or "" when the server did not say."""
        if "pinned" not in agent:
            return ""
        if agent["pinned"] is None:
            return "in every workspace of yours; "
        if not agent["pinned"]:
            return "in no workspace (those it was pinned to were deleted); "
        return "pinned to " + ", ".join(p.get("name") or "a deleted workspace" for p in agent["pinned"]) + "; "

    def orgs_to_leave(self) -> dict[str, list[str]]:
        """The organizations one could leave, with the names of their workspaces one reaches: all but those
        one owns (its owner never leaves: `last_owner`), the one of one's personal workspace among them."""
        own = {w.org for w in self.workspaces.values() if w.personal} | self.orgs_run(owner_only=True)
        out: dict[str, list[str]] = {}
        for w in self.workspaces.values():
            if w.org and w.org not in own:
                out.setdefault(w.org, []).append(w.name)
        return out

    def set_conversations(self, ws: str, convs: list[dict]) -> None:
        w = self.workspaces[ws]
        w.conversations = {c["id"]: {**c, "workspace": ws} for c in convs}
        me = w.members.get(self.my_id)
        if me and me.get("monitor"):
            w.monitor = True

    def set_topics(self, topics: list[dict]) -> Change:
        ch = Change()
        for t in reversed(topics):  # oldest activity first, so the newest gets the highest tick
            ch.merge(self.apply_topic(t))
        return ch

    def set_balances(self, ws: str, reply: dict) -> None:
        w = self.workspaces[ws]
        w.pool = reply.get("pool")
        w.balances = dict(reply.get("agents", {}))

    def set_presence(self, ws: str, online: dict[str, bool]) -> bool:
        w = self.workspaces[ws]
        changed = w.presence != online
        w.presence = dict(online)
        return changed

    # --- topics ---

    def apply_topic(self, t: dict) -> Change:
        if t.get("title"):  # (a title is drawn in many places: made safe once, here)
            t = {**t, "title": printable(t["title"], one_line=True)}
        ch = Change(topics={t["id"]})
        old = self.topics.get(t["id"])
        self.topics[t["id"]] = t
        self.activity[t["id"]] = next(self._tick)
        status = topic_status(t)
        if status == "needs_human":
            self.needs_human_seen.setdefault(t["id"], self.activity[t["id"]])
        else:
            self.needs_human_seen.pop(t["id"], None)
        if t.get("pause") == "credits" and t.get("paused_by"):
            self.funding.setdefault((t["workspace"], t["paused_by"]), {"workspace": t["workspace"], "agent": t["paused_by"],
                                                     "topic": t["id"], "text": None})
            ch.balances.add(t["workspace"])
        elif old is not None and old.get("pause") == "credits" and old.get("paused_by"):
            ch.balances.add(t["workspace"])
        w = self.workspaces.get(t["workspace"])
        if w is not None and t["conversation"] not in w.conversations:
            ch.unknown_conversations.add(t["workspace"])
        return ch

    def topics_of(self, conversation: str) -> list[dict]:
        ts = [t for t in self.topics.values() if t["conversation"] == conversation]
        ts.sort(key=lambda t: self.activity.get(t["id"], 0), reverse=True)
        return ts

    def needs_human(self) -> list[dict]:
        """Topics paused until a person steps in, oldest first, across every workspace."""
        ids = sorted(self.needs_human_seen, key=self.needs_human_seen.get)
        return [self.topics[i] for i in ids if i in self.topics]

    # --- messages ---

    def thread(self, ws: str, conversation: str, topic: str | None) -> Thread:
        key = thread_key(conversation, topic)
        th = self.threads.get(key)
        if th is None:
            th = self.threads[key] = Thread(key, ws, conversation, topic)
        return th

    def _take_message(self, msg: dict, ch: Change) -> bool:
        _drawable(msg)
        th = self.thread(msg["workspace"], msg["conversation"], msg.get("topic"))
        if th.add_live(msg):
            ch.threads.setdefault(th.key, []).append(msg)
            w = self.workspaces.get(msg["workspace"])
            if w is not None and msg["conversation"] not in w.conversations:
                ch.unknown_conversations.add(msg["workspace"])
            if msg.get("notice") == "funding_request":
                self._funding_notice(msg, ch)
            return True
        if th.revise(msg):
            ch.revised.setdefault(th.key, []).append(msg)
        return False

    def _funding_notice(self, msg: dict, ch: Change) -> None:
        who = msg.get("agent")
        if not who:  # the notice names the agent in words: "<name> is out of credits (...)"
            name = msg.get("text", "").split(" is out of credits", 1)[0]
            w = self.workspaces.get(msg["workspace"])
            for pid, m in (w.members.items() if w else ()):
                if m.get("kind") == "agent" and m.get("name") == name:
                    who = pid
        if who:
            self.funding[(msg["workspace"], who)] = {"workspace": msg["workspace"], "agent": who, "topic": msg.get("topic"),
                                 "text": msg.get("text")}
            ch.balances.add(msg["workspace"])

    def apply_deliveries(self, frames: list[dict]) -> Change:
        ch = Change()
        for f in frames:
            msg = f["message"]
            self._take_message(msg, ch)
            if f.get("wake"):
                woke = self.woke.setdefault(msg["id"], [])
                if self.my_id and self.my_id not in woke:
                    woke.append(self.my_id)
            if f.get("reason") in REVISIONS:  # shown in place: acked, never counted unread
                ch.quiet.append(f["id"])
                continue
            if f["id"] in self.acked or msg["id"] in self.unread:
                continue
            if self.quiet_notice(msg):
                self.acked.add(f["id"])
                ch.quiet.append(f["id"])
                continue
            key = thread_key(msg["conversation"], msg.get("topic"))
            if f.get("wake") and msg.get("author") != self.my_id:
                ch.called.add(key)
            self.unread[msg["id"]] = (f["id"], msg["workspace"], msg["conversation"], key)
            self.unread_by_thread[key] += 1
            self.unread_by_conv[msg["conversation"]] += 1
            ch.unread = True
        return ch

    def quiet_notice(self, msg: dict) -> bool:
        """A closure poll that asks others (the agents of a topic this person is in) is shown in the topic but
        notifies nobody: nearly every answer was followed by one, each an unread message. One that asks this
        person counts, and wakes them."""
        return msg.get("notice") == "closure_poll" and self.my_id not in (msg.get("to") or ())

    def apply_sent(self, reply: dict) -> Change:
        ch = Change()
        msg = reply.get("message")
        if not msg:
            return ch
        self._take_message(msg, ch)
        self._deliveries(msg["id"], reply.get("deliveries") or [])
        return ch

    def apply_revised(self, reply: dict) -> Change:
        """Our own `edit_message` / `delete_message` answer: the message as it is now, shown in place."""
        ch = Change()
        if reply.get("message"):
            self._take_message(reply["message"], ch)
        return ch

    def _deliveries(self, mid: str, deliveries: list[dict]) -> None:
        self.woke[mid] = [d["to"] for d in deliveries if d.get("wake")]
        self.context[mid] = sum(1 for d in deliveries if not d.get("wake"))

    def take_page(self, messages: list[dict]) -> list[dict]:
        """A history page's messages as they come in: made drawable, and whom each woke noted; returns them."""
        for m in messages:
            _drawable(m)
            if "woke" in m and m["id"] not in self.woke:
                self.woke[m["id"]] = list(m["woke"])
        return messages

    def apply_history(self, th: Thread, reply: dict) -> int:
        page = self.take_page(reply.get("messages", []))
        return th.add_page(page, reply.get("cursor"), bool(reply.get("more")))

    def apply_event(self, frame: dict) -> Change:
        kind = frame.get("kind")
        if kind == "approval" and isinstance(frame.get("approval"), dict):  # a card for this person to decide
            self.approvals[frame["approval"]["id"]] = frame["approval"]
            return Change(approvals=True)
        if kind == "topic":
            return self.apply_topic(frame["topic"])
        if kind == "balance":
            ch = Change(balances={frame["workspace"]})
            w = self.workspaces.get(frame["workspace"])
            if w is not None:
                if frame["account"] == POOL:
                    w.pool = frame["balance"]
                else:
                    w.balances[frame["account"]] = frame["balance"]
                if frame["balance"] and frame["balance"] > 0:
                    if frame["account"] == POOL:  # the pool pays for an agent with no wallet here (docs/rules.md)
                        for (ws, a) in list(self.funding):
                            if ws == w.id and w.balances.get(a) is None:
                                self.funding.pop((ws, a))
                    else:  # (its wallet here: its requests in other workspaces stand)
                        self.funding.pop((w.id, frame["account"]), None)
            return ch
        if kind == "presence":  # the server says it as it happens (the TUI asked every 15 s: 15-30 s late)
            w = self.workspaces.get(frame["workspace"])
            if w is None or w.presence.get(frame["participant"]) == bool(frame["online"]):
                return Change()
            w.presence[frame["participant"]] = bool(frame["online"])
            return Change(presence={w.id})
        if kind == "workspace_added":  # loaded by the session (App.apply_change), unless it is here already
            return Change(added={frame["workspace"]}) if frame["workspace"] not in self.workspaces else Change()
        if kind == "workspace_gone":  # deleted, or no longer this person's: forgotten with what was shown of it
            w = self.workspaces.get(frame["workspace"])
            if w is None:  # (forgotten already: this person deleted or left it from here)
                return Change()
            self.forget_workspaces([w.id])
            return Change(gone={w.id: w.name})
        if kind == "subscription":  # monitor or receive taken away, the membership kept (App: said, operator closed)
            w = self.workspaces.get(frame["workspace"])
            return Change(narrowed={w.id: frame.get("reason") or ""}) if w is not None else Change()
        if kind == "members":  # who left goes now; who joined or changed comes with list_members (App: reload_members)
            w = self.workspaces.get(frame["workspace"])
            if w is None:
                return Change()
            for pid in frame.get("left") or ():
                w.members.pop(pid, None)
                w.presence.pop(pid, None)
            return Change(members={w.id: tuple(list(frame.get(k) or ()) for k in ("joined", "left", "changed"))})
        if kind == "invitation":  # someone invites this person (App: said; the palette offers accept and decline)
            inv = frame.get("invitation") or {}
            if isinstance(inv.get("id"), str):
                self.invitations[inv["id"]] = inv
            return Change()
        if kind == "groups":  # made, changed or removed by anyone: @-completion offers them as they are now
            if frame["workspace"] in self.workspaces:
                self.set_groups(frame["workspace"], frame.get("groups") or [])
            return Change()
        if kind == "message":
            ch = Change()
            msg = frame["message"]
            self._take_message(msg, ch)
            told = frame.get("deliveries") or []
            if not any(d.get("reason") in REVISIONS for d in told):  # (a correction's: who the message woke stays)
                self._deliveries(msg["id"], told)
            ch.monitor.append(frame)
            return ch
        return Change()

    # --- reading ---

    def mark_read(self, key: str) -> list[int]:
        """Everything unread in this thread is now seen; return the delivery ids to ack."""
        if not self.unread_by_thread.get(key):
            return []
        ids = []
        for mid, (did, ws, conv, k) in list(self.unread.items()):
            if k == key:
                ids.append(did)
                del self.unread[mid]
                self.unread_by_conv[conv] -= 1
                self.acked.add(did)
        self.unread_by_thread.pop(key, None)
        return ids

    def next_unread(self, after: str | None = None) -> tuple[str, str] | None:
        """(conversation, thread key) of the next topic with unread messages, oldest unread first."""
        keys: list[tuple[str, str]] = []
        for mid, (did, ws, conv, k) in sorted(self.unread.items(), key=lambda kv: kv[1][0]):
            if (conv, k) not in keys:
                keys.append((conv, k))
        if not keys:
            return None
        for i, (conv, k) in enumerate(keys):
            if k == after:
                return keys[(i + 1) % len(keys)]
        return keys[0]

    def attention(self, conversation: str) -> dict[str, int]:
        """Badges for a conversation: topics waiting on a person, agents out of credits there."""
        nh = sum(1 for tid in self.needs_human_seen if self.topics.get(tid, {}).get("conversation") == conversation)
        funding = 0
        for req in self.funding.values():
            t = self.topics.get(req.get("topic") or "")
            if t is not None and t["conversation"] == conversation:
                funding += 1
        return {"needs_human": nh, "funding": funding}
