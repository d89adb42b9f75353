"""Read-only questions a session may ask, answered from a reader connection.

Every query first checks that the asker is a member of the workspace and may see
the conversation; anything else is answered exactly as for an id that does not
exist (`not_found`), so one workspace learns nothing about another's ids.

Each query of QUERIES is `fn(conn, pid, frame)`; those of `TIMED` take the time too, `fn(conn, pid, frame, now)`
(`now` in microseconds, from the gateway's clock: the plan's history window ends there, a month is counted to it).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Container
from typing import Any

import msgspec

from .. import protocol
from . import reach
from .refusals import Forbidden, NotFound, Refused
from ..core import POOL, SYSTEM, Kind, Role, Unresolved, general_id, plan_of
from ..core import assign as core_assign
from ..protocol import frames
from ..store import loaders, rows as codec

MAX_PAGE = 200
# bytes of stored messages one page holds at most (at least one message): with what a page adds to them (who
# each woke, an agent's view), a page stays well within the frame clients accept (protocol.MAX_RESPONSE)
PAGE_BYTES = protocol.MAX_RESPONSE // 2


def _member(conn: sqlite3.Connection, ws: str, pid: str) -> tuple[str, bool]:
    """(role, monitors) of `pid` in `ws`, or NotFound."""
    row = conn.execute("SELECT role, monitor FROM memberships WHERE workspace = ? AND participant = ?", (ws, pid)).fetchone()
    if row is None:
        raise NotFound
    role, monitor = row
    return role, bool(monitor) or role in (Role.OWNER, Role.ADMIN)


def receives(conn: sqlite3.Connection, ws: str, pid: str) -> bool:
    row = conn.execute("SELECT receive FROM memberships WHERE workspace = ? AND participant = ?", (ws, pid)).fetchone()
    return bool(row and row[0])


def monitors(conn: sqlite3.Connection, ws: str, pid: str) -> bool:
    try:
        return _member(conn, ws, pid)[1]
    except NotFound:
        return False


def _history_floor(conn: sqlite3.Connection, ws: str, now: int) -> int:
    """Seed 002: history past the plan's window (back from `now`) is neither shown nor searchable."""
    row = conn.execute("SELECT o.plan FROM workspaces w JOIN orgs o ON o.id = w.org WHERE w.id = ?", (ws,)).fetchone()
    days = plan_of(row[0]).history_days if row else 90
    return now - days * 86_400_000_000


def _visible(conn: sqlite3.Connection, ws: str, pid: str, monitor: bool) -> list[str] | None:
    """Conversation ids `pid` may read in `ws`; None means all of them."""
    if monitor:
        return None
    rows = conn.execute("SELECT id, kind, members FROM conversations WHERE workspace = ?", (ws,)).fetchall()
    return [cid for cid, kind, members in rows if kind in ("general", "group") or pid in msgspec.json.decode(members)]


def _conversation(conn, ws: str, ref: str, pid: str, monitor: bool) -> str:
    """The id of the conversation `ref` names as a send names it (`general`, `dm:<participant>`, `group:<name>`
    or an id), if `pid` may read it; else NotFound."""
    if ref.startswith(("dm:", "group:")):
        conv = loaders.load_directory(conn, ws).conversation(ref, pid, {})
        if conv is None:
            raise NotFound
        ref = conv.id
    cid = general_id(ws) if ref == "general" else ref
    visible = _visible(conn, ws, pid, monitor)
    row = conn.execute("SELECT 1 FROM conversations WHERE id = ? AND workspace = ?", (cid, ws)).fetchone()
    if row is None or (visible is not None and cid not in visible):
        raise NotFound
    return cid


def _limit(limit: Any) -> int:
    """A page size from 1 to MAX_PAGE (a negative LIMIT means "no limit" to SQLite)."""
    return max(1, min(int(limit or 50), MAX_PAGE))


def history(conn, pid: str, f: frames.History, now: int) -> dict:
    """A page of messages, newest first; `before` is the `cursor` of the previous page: the id of its last
    (oldest) message, so a cursor tells nothing about the server's other conversations (seq is server-wide)."""
    ws = f.workspace
    _, monitor = _member(conn, ws, pid)
    cid = _conversation(conn, ws, f.conversation, pid, monitor)
    limit = _limit(f.limit)
    before = f.before
    sql = "SELECT seq, body FROM messages WHERE conversation = ? AND created_at >= ?"
    args: list[Any] = [cid, _history_floor(conn, ws, now)]
    if isinstance(f.topic, str):
        sql += " AND topic = ?"
        args.append(f.topic)
    if before is not None:
        row = conn.execute("SELECT seq FROM messages WHERE id = ? AND conversation = ?", (before, cid)).fetchone()
        if row is None:  # not a message of this conversation: as for an id that does not exist
            raise NotFound
        sql += " AND seq < ?"
        args.append(row[0])
    rows = conn.execute(sql + " ORDER BY seq DESC LIMIT ?", (*args, limit + 1)).fetchall()
    more = len(rows) > limit
    rows = rows[:limit]
    n = _fitting([b for _, b in rows])
    more, rows = more or n < len(rows), rows[:n]
    messages = [protocol.message_obj(codec.decode_message(b)) for _, b in rows]
    if pid.startswith("agent."):  # agents see the history as agents see it (docs/rules.md, "What agents see")
        pv = loaders.party_views(conn, [(ws, cid)])[cid]
        messages = [protocol.for_agent(m, pv) for m in messages]
    woke = _woke(conn, [seq for seq, _ in rows], [m["id"] for m in messages])
    for m in messages:
        m["woke"] = woke.get(m["id"], [])
    return {
        "messages": messages,
        "cursor": messages[-1]["id"] if messages else None, "more": more, "conversation": cid,
    }


def _fitting(bodies: list) -> int:
    """How many of `bodies` (stored messages, in page order) fit in PAGE_BYTES: at least one."""
    total = 0
    for n, b in enumerate(bodies):
        total += len(b)
        if total > PAGE_BYTES and n:
            return n
    return len(bodies)


def _woke(conn, seqs: list[int], ids: list[str]) -> dict[str, list[str]]:
    """Who each message (given by seq and id, in the same order) woke."""
    woke: dict[str, list[str]] = {}
    if seqs:
        by_seq = dict(zip(seqs, ids))
        marks = ",".join("?" * len(seqs))
        for seq, who in conn.execute(
                f"SELECT message_seq, recipient FROM deliveries WHERE wake = 1 AND message_seq IN ({marks})", seqs):
            woke.setdefault(by_seq[seq], []).append(who)
    return woke


def message_versions(conn, pid: str, f: frames.MessageVersions, now: int) -> dict:
    """A message's texts, oldest first, the current last (edit_message keeps each older one); a deleted message's
    are gone. Readable by whoever may read the message (as `history`)."""
    ws = f.workspace
    _, monitor = _member(conn, ws, pid)
    row = conn.execute("SELECT body FROM messages WHERE id = ? AND workspace = ? AND created_at >= ?",
                       (f.message, ws, _history_floor(conn, ws, now))).fetchone()
    if row is None:
        raise NotFound
    m = codec.decode_message(row[0])
    visible = _visible(conn, ws, pid, monitor)
    if visible is not None and m.conversation not in visible:
        raise NotFound
    older = conn.execute("SELECT version, text, created_at FROM message_versions WHERE message = ? ORDER BY version",
                         (m.id,)).fetchall()
    versions = [{"version": v, "text": t, "at": protocol.iso(at)} for v, t, at in older]
    versions.append({"version": m.version, "text": m.text, "at": protocol.iso(m.edited_at or m.created_at)})
    return {"message": protocol.message_obj(m), "versions": versions}


def list_workspaces(conn, pid: str, f: frames.ListWorkspaces) -> dict:
    rows = conn.execute(
        """SELECT w.id, w.name, w.personal_of, m.role, w.org, w.restricted FROM memberships m
           JOIN workspaces w ON w.id = m.workspace WHERE m.participant = ? ORDER BY w.created_at""", (pid,)
    ).fetchall()
    return {"workspaces": [
        {"id": i, "name": n, "personal": p is not None, "role": r, "org": o, "restricted": bool(x)}
        for i, n, p, r, o, x in rows
    ]}


def list_joinable(conn, pid: str, f: frames.ListJoinable) -> dict:
    """The workspaces the asker's organizations open to them that they are not in: what `join_workspace` takes."""
    return {"workspaces": [{"id": i, "name": n, "org": o, "restricted": r}
                           for i, n, o, r, _ in reach.joinable(conn, pid)]}


def id_list(raw: str | None) -> list[str]:
    """A membership's can_message or takes_from column: the ids it names (empty: anyone, seed 002)."""
    return msgspec.json.decode(raw) if raw else []


def list_members(conn, pid: str, f: frames.ListMembers) -> dict:
    return {"members": members(conn, pid, f.workspace)}


def members(conn, pid: str, ws: str) -> list[dict]:
    """Who is in `ws`, as `list_members` lists them (a revoked agent is not); NotFound unless `pid` is too."""
    _member(conn, ws, pid)
    rows = conn.execute(
        """SELECT m.participant, m.role, m.send, m.receive, m.monitor, p.handle, a.name, o.handle, m.can_message,
                  m.takes_from
           FROM memberships m LEFT JOIN people p ON p.id = m.participant
           LEFT JOIN agents a ON a.id = m.participant LEFT JOIN people o ON o.id = a.owner
           WHERE m.workspace = ? AND (a.id IS NULL OR a.revoked = 0)""", (ws,)
    ).fetchall()
    return [{"id": i, "kind": "human" if h else "agent", "name": h or n, "handle": h, "person": oh,
             **standing(r, s, rc, mo, cm, tf)} for i, r, s, rc, mo, h, n, oh, cm, tf in rows]


STANDING = ("role", "send", "receive", "monitor", "can_message", "takes_from")


def standing(role, send, receive, monitor, can_message, takes_from) -> dict:
    """A membership's role and permissions (its columns of `STANDING`), as `list_members` shows them."""
    return {"role": role, "send": bool(send), "receive": bool(receive), "monitor": bool(monitor),
            "can_message": id_list(can_message), "takes_from": id_list(takes_from)}


def standing_of(member: dict) -> tuple:
    """A member's role and permissions (a `list_members` row, or `standing`), comparable."""
    return tuple(tuple(v) if isinstance(v, list) else v for v in (member[k] for k in STANDING))


def list_agents(conn, pid: str, f: frames.ListAgents) -> dict:
    """Seed 002: agents, told apart by their person's handle (`person`); people's own agents too."""
    here = members(conn, pid, f.workspace)
    agents = [{"id": m["id"], "name": m["name"], "person": m["person"], "kind": "agent"} for m in here if m["kind"] == "agent"]
    people = [{"id": m["id"], "name": m["handle"], "person": m["handle"], "kind": "person"} for m in here if m["kind"] == "human"]
    return {"agents": agents + people}


def my_agents(conn, pid: str) -> list[dict]:
    """Seed 002: "Agents belong to a person": `pid`'s own agents, oldest first, wherever they are (one pinned to a
    workspace its owner left, or since deleted: `name` null), revoked ones too (`actions.my_agents` lets only a
    person ask; the gateway adds whether each is online)."""
    rows = conn.execute("SELECT id, name, pinned, revoked FROM agents WHERE owner = ? ORDER BY created_at, id",
                        (pid,)).fetchall()
    pins = {ws for _, _, pinned, _ in rows for ws in id_list(pinned)}
    names = dict(conn.execute("SELECT id, name FROM workspaces WHERE id IN ({})".format(",".join("?" * len(pins))),
                              sorted(pins)).fetchall()) if pins else {}
    return [{"id": i, "name": n, "pinned": [{"id": ws, "name": names.get(ws)} for ws in id_list(pinned)]
             if pinned is not None else None, "revoked": bool(r)} for i, n, pinned, r in rows]


def list_conversations(conn, pid: str, f: frames.ListConversations) -> dict:
    ws = f.workspace
    _, monitor = _member(conn, ws, pid)
    visible = _visible(conn, ws, pid, monitor)
    rows = conn.execute(
        """SELECT c.id, c.kind, c.name, c.members,
                  (SELECT created_at FROM messages WHERE conversation = c.id ORDER BY seq DESC LIMIT 1), c.party
           FROM conversations c WHERE c.workspace = ? ORDER BY c.created_at""", (ws,)
    ).fetchall()
    return {"conversations": [
        {"id": i, "kind": k, "name": n, "members": msgspec.json.decode(m),
         "last_at": protocol.iso(last) if last is not None else None, **_party(party)}
        for i, k, n, m, last, party in rows if visible is None or i in visible
    ]}


def _party(party: str | bytes | None) -> dict:
    """A conversation's Lead and, for a side conversation, its origin (a side thread's state too), from its `party`
    column."""
    try:
        p = msgspec.json.decode(party or "{}")
    except msgspec.DecodeError:
        p = {}
    p = p if isinstance(p, dict) else {}
    out = {k: p.get(k) if isinstance(p.get(k), str) else None for k in ("lead", "origin", "origin_topic")}
    if not out["origin"]:
        return {"lead": out["lead"]}
    if isinstance(p.get("thread"), str):  # a side thread (core/threads.py): its state, origin message and summary
        out.update({k: p.get(k) if isinstance(p.get(k), str) else None for k in ("thread", "origin_message", "summary")})
    return out


def list_topics(conn, pid: str, f: frames.ListTopics) -> dict:
    ws = f.workspace
    _, monitor = _member(conn, ws, pid)
    sql, args = f"SELECT conversation, state FROM topics WHERE {loaders.IN_WORKSPACE}", [ws]  # (no read of all topics)
    if f.conversation is not None:
        sql += " AND conversation = ?"
        args.append(_conversation(conn, ws, f.conversation, pid, monitor))
    if isinstance(f.status, str):
        sql += " AND status = ?"
        args.append(f.status)
    visible = _visible(conn, ws, pid, monitor)
    rows = conn.execute(sql + " ORDER BY updated_at DESC LIMIT ?", (*args, MAX_PAGE)).fetchall()
    return {"topics": [protocol.topic_obj(codec.decode_topic(s)) for c, s in rows if visible is None or c in visible]}


def topic(conn, pid: str, f: frames.GetTopic) -> dict:
    ws = f.workspace
    _, monitor = _member(conn, ws, pid)
    t = loaders.load_topic(conn, f.topic) if isinstance(f.topic, str) else None
    if t is None or t.workspace != ws:
        raise NotFound
    _conversation(conn, ws, t.conversation, pid, monitor)
    return {"topic": protocol.topic_obj(t)}


def balances(conn, pid: str, f: frames.Balances) -> dict:
    ws = f.workspace
    _member(conn, ws, pid)
    agents = [r[0] for r in conn.execute(
        """SELECT m.participant FROM memberships m JOIN agents a ON a.id = m.participant
           WHERE m.workspace = ? AND a.revoked = 0""", (ws,))]
    return {"pool": loaders.balance(conn, ws, POOL) or 0,
            "agents": {a: loaders.balance(conn, ws, a) for a in agents}}


def list_orgs(conn, pid: str, f: frames.ListOrgs, now: int) -> dict:
    """The organizations a person is in, with their role, plan and its limits (seed 002, "Plans and
    limits"; null: none), and a metered plan's messages counted this month (UTC)."""
    rows = conn.execute(
        """SELECT o.id, o.name, m.role, o.plan, o.licensed FROM org_members m JOIN orgs o ON o.id = m.org
           WHERE m.person = ? ORDER BY o.created_at, o.id""", (pid,)).fetchall()
    month = time.strftime("%Y-%m", time.gmtime(now // 1_000_000))
    out = []
    for oid, name, role, plan, licensed in rows:
        p = plan_of(plan, licensed)
        used = None
        if p.messages_per_month is not None:
            used = loaders.usage(conn, oid, month)
        out.append({"id": oid, "name": name, "role": role, "plan": plan, "licensed": licensed,
                    "messages_per_month": p.messages_per_month, "agents": p.agents, "workspaces": p.workspaces,
                    "history_days": p.history_days, "messages_this_month": used})
    return {"orgs": out}


def list_groups(conn, pid: str, f: frames.ListGroups) -> dict:
    ws = f.workspace
    _member(conn, ws, pid)
    rows = conn.execute("SELECT name, members FROM groups WHERE workspace = ? ORDER BY name", (ws,)).fetchall()
    here = loaders.load_directory(conn, ws).memberships
    return {"groups": [group_row(n, m, here) for n, m in rows]}


def group_row(name: str, members: str | bytes, here: Container[str]) -> dict:
    """A group as `list_groups` (and the `groups` event) shows it: its members as a send to the group reaches them
    (`Directory.resolve`), those in the workspace (`here`): not a revoked agent, nor someone who left (back in the
    group if they come back)."""
    return {"name": name, "members": [i for i in msgspec.json.decode(members) if i in here]}


def explain_assignment(conn, pid: str, f: frames.ExplainAssignment, present: frozenset[str] = frozenset()) -> dict:
    """Seed 003 §14, for the workspace's people: who a request to `capability` (with `text`) would go to
    now, every eligible agent's score and its parts. Not a query of QUERIES: the gateway adds presence."""
    ws = f.workspace
    _member(conn, ws, pid)
    cap, text = f.capability, f.text
    cap = cap[len(core_assign.PREFIX):] if cap.startswith(core_assign.PREFIX) else cap
    d = loaders.load_directory(conn, ws)
    if d.participants[pid].kind != Kind.HUMAN:
        raise Refused("permission_denied", "the workspace's people see assignment scores")
    sender = pid
    if f.sender is not None:  # whose request: seed 002's permissions are the sender's (default: the asker)
        found = d.resolve((f.sender,)) if isinstance(f.sender, str) else None
        if found is None or isinstance(found, Unresolved) or len(found) != 1 or found[0] == SYSTEM:
            raise Refused("unknown_member", "sender: name one participant of this workspace")
        sender = found[0]
    weights = core_assign.weights_of(loaders.settings(conn, ws).get("assign.weights"))
    me = frozenset((sender,))
    fitness = loaders.fitness(conn, list(core_assign.eligible(d, cap, me, sender)), present.__contains__)
    a = core_assign.assign(d, cap, text, fitness, weights, me, sender)
    if a is None:
        out = core_assign.left_out(d, cap, sender, me)
        why = "no agent that declares it may get this sender's request" if out else f"no agent in this workspace declares {cap!r}"
        raise Refused("no_eligible_agent", why, left_out=core_assign.explain_left_out(out))
    return {"assignment": core_assign.explain(a), "weights": weights}


def unacked(conn, pid: str, after: int, n: int, wakes: bool) -> list[tuple]:
    """`pid`'s first `n` unacked deliveries above id `after` (`wakes`: wakes only), in id order, each as
    (id, wake, reason, message object, PartyView for an agent's or None): an inbox's page (`net.inbox.Item`)."""
    rows = conn.execute(
        f"""SELECT d.id, d.wake, d.reason, m.body FROM deliveries d JOIN messages m ON m.id = d.message
            WHERE d.recipient = ? AND d.acked_at IS NULL AND d.id > ?{" AND d.wake = 1" if wakes else ""}
            ORDER BY d.id LIMIT ?""", (pid, after, n)
    ).fetchall()
    msgs = [(i, w, r, codec.decode_message(b)) for i, w, r, b in rows]
    views = loaders.party_views(conn, [(m.workspace, m.conversation) for *_, m in msgs]) if pid.startswith("agent.") else {}
    return [(i, bool(w), r, protocol.message_obj(m), views.get(m.conversation)) for i, w, r, m in msgs]


from .search import search_messages  # noqa: E402 (its module reads the helpers above)

QUERIES = {
    "list_groups": list_groups, "list_orgs": list_orgs,
    "history": history, "search_messages": search_messages, "list_workspaces": list_workspaces,
    "list_joinable": list_joinable,
    "list_members": list_members, "list_agents": list_agents, "list_conversations": list_conversations,
    "list_topics": list_topics, "topic": topic, "balances": balances, "message_versions": message_versions,
}
TIMED = frozenset({"history", "search_messages", "list_orgs", "message_versions"})  # the queries that take the time
