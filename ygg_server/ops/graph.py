"""The work graph (seed 003 §49; docs/protocol.md, "The work graph"): how work connects in a workspace, as nodes
and edges, read-only, on a reader connection.

Nodes (`id` is `<kind>:<id>`): `conversation` (General, direct, group), `thread` (a side thread, seed 003 §5-7),
`side` (a side conversation for a delegated task, §15), `topic`, `artifact`, `agent`, `person`, and two needs:
`need:person` (a topic paused for a person, or with an agent in it that asked for one) and `need:credits` (agents
waiting for funds).

Edges (`from` → `to`, `kind`):
    in            topic → its conversation; artifact → its conversation (`topic`: where its first version was posted)
    waits_on      topic → need:person (`by`: the agents that asked), need:credits (`by`: {agent: what ran dry}),
                  or a participant (`why`: "answer" owed to a request, or "working" on it)
    opened_from   thread → the topic (or conversation) of the message its `<dm>` part came from (`message`)
    delegated_from  side → the topic (or conversation) its task was delegated from
    delegated, handed_off   agent → agent, in `topic` (`count`: requests of that kind seen)
    made_by       artifact → each participant who wrote a version (`versions`)
    serves        agent → a conversation it is a member of, or a topic of which it takes part in (`lead`)

Scope: the asker's workspace only (anyone else: `not_found`, as a workspace that does not exist), and only the
conversations the asker may read (`queries._visible`): a node or an edge of another conversation is not there,
nor an edge to a conversation the asker cannot read. One query per table (conversations, topics, messages,
artifacts and their versions, the directory): a workspace's hundreds of topics cost no query each.

Filters: `agent` (a participant, named as a send names one: what touches it, and where that hangs), `state`
(`STATES`: a topic's status; `needs_human` or `credits`: a topic that waits on a person, or on funds; a
thread's state). The tree the TUI draws is built from this answer.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import msgspec

from ..core import SYSTEM, TopicStatus, Unresolved
from ..core.threads import STATES as THREAD_STATES
from ..protocol import frames
from ..store import loaders, rows as codec
from .access import chunks
from .queries import _history_floor, _member, _visible
from .refusals import Refused

MAX_TOPICS = 500  # the most recently active topics drawn (`more`: there were others)
MAX_REQUESTS = 5000  # the most recent agents' requests read for delegations and handoffs
TOPIC_STATES = ("open", "paused", "closed", "needs_human", "credits")
STATES = TOPIC_STATES + THREAD_STATES
PERSON, CREDITS = "need:person", "need:credits"


def _p(pid: str) -> str:
    return ("agent:" if pid.startswith("agent.") else "person:") + pid


def _party(raw) -> dict:
    try:
        p = msgspec.json.decode(raw or "{}")
    except msgspec.DecodeError:
        return {}
    return p if isinstance(p, dict) else {}


class _Graph:
    def __init__(self):
        self.nodes: dict[str, dict] = {}
        self.edges: list[dict] = []

    def node(self, nid: str, kind: str, label: str, **extra) -> str:
        self.nodes.setdefault(nid, {"id": nid, "kind": kind, "label": label, **extra})
        return nid

    def edge(self, a: str, b: str, kind: str, **extra) -> None:
        self.edges.append({"from": a, "to": b, "kind": kind, **extra})


def work_graph(conn, pid: str, f: frames.WorkGraph, now: int) -> dict:
    ws = f.workspace
    _, monitor = _member(conn, ws, pid)
    state = _state(f.state)
    d = loaders.load_directory(conn, ws)
    who = _who(d, f.agent)
    visible = _visible(conn, ws, pid, monitor)
    g = _Graph()
    names = {p.id: p.display for p in d.participants.values()}

    def participant(p: str) -> str:
        return g.node(_p(p), "agent" if p.startswith("agent.") else "person", names.get(p, p), ref=p)

    convs = _conversations(conn, ws, visible, g)
    topics, more = _topics(conn, ws, convs, state, g, participant)
    _links(conn, convs, topics, g)
    _serves(convs, topics, g, participant)
    _requests(conn, topics, _history_floor(conn, ws, now), g, participant)
    _artifacts(conn, ws, convs, topics, g, participant)
    if state is not None:
        need = {"needs_human": PERSON, "credits": CREDITS}.get(state)
        _keep(g, {n for n, x in g.nodes.items() if x.get("state") == state or x.get("pause") == state}
              | {e["from"] for e in g.edges if need is not None and e["to"] == need})
    if who is not None:
        participant(who)
        _keep(g, {_p(who)} | {n for n, x in g.nodes.items() if x["kind"] == "topic" and who in x["members"]})
    return {"workspace": ws, "agent": who, "state": state, "more": more,
            "nodes": list(g.nodes.values()), "edges": g.edges}


def _state(raw: Any) -> str | None:
    if raw is None:
        return None
    if not isinstance(raw, str) or raw not in STATES:
        raise Refused("bad_filter", f"state: one of {', '.join(STATES)}")
    return raw


def _who(d, raw: Any) -> str | None:
    """The participant `agent` names (an id, a name, an @handle), or None; else `unknown_member`."""
    if raw is None:
        return None
    found = d.resolve((raw,)) if isinstance(raw, str) and raw else None
    if found is None or isinstance(found, Unresolved) or len(found) != 1 or found[0] not in d.memberships:
        raise Refused("unknown_member", "agent: name one participant of this workspace")
    return found[0]


def _conversations(conn, ws: str, visible, g: _Graph) -> dict[str, dict]:
    """The conversations the asker reads, as nodes; {id: their row}."""
    out = {}
    for cid, kind, name, members, party in conn.execute(
            "SELECT id, kind, name, members, party FROM conversations WHERE workspace = ? ORDER BY created_at, id",
            (ws,)):
        if visible is not None and cid not in visible:
            continue
        p = _party(party)
        row = {"kind": kind, "name": name, "members": msgspec.json.decode(members), "lead": p.get("lead"),
               "origin": p.get("origin"), "origin_topic": p.get("origin_topic"),
               "origin_message": p.get("origin_message"), "thread": p.get("thread")}
        out[cid] = row
        nk = "thread" if isinstance(row["thread"], str) else "side" if kind == "side" else "conversation"
        extra = {"state": row["thread"]} if nk == "thread" else {}
        g.node(f"{nk}:{cid}", nk, name or "", conversation=cid, conversation_kind=kind, members=row["members"],
               **extra)
        row["node"] = f"{nk}:{cid}"
    return out


def _topics(conn, ws: str, convs: dict, state: str | None, g: _Graph, participant) -> tuple[dict[str, str], bool]:
    """The most recently active topics of those conversations, as nodes with what each waits on; ({id: its
    conversation}, whether there were more)."""
    sql, args = f"SELECT conversation, state FROM topics WHERE {loaders.IN_WORKSPACE}", [ws]
    if state in ("open", "paused", "closed"):
        sql += " AND status = ?"
        args.append(state)
    elif state in ("needs_human", "credits"):  # (paused for it, or an agent in it waits so: `_keep` chooses)
        sql += " AND status != 'closed'"
    rows: list[tuple] = []
    for c, blob in conn.execute(sql + " ORDER BY updated_at DESC", args):  # (read until one more than drawn)
        if c in convs:
            rows.append((c, blob))
            if len(rows) > MAX_TOPICS:
                break
    out: dict[str, str] = {}
    for cid, blob in rows[:MAX_TOPICS]:
        t = codec.decode_topic(blob)
        out[t.id] = cid
        nid = g.node(f"topic:{t.id}", "topic", t.title or "", conversation=cid, topic=t.id, state=t.status,
                     pause=t.pause, members={p: m.state for p, m in t.members.items()})
        g.edge(nid, convs[cid]["node"], "in")
        if t.status == TopicStatus.CLOSED:
            continue
        asking = [p for p, m in t.members.items() if m.state == "needs_human"]
        if t.pause == "needs_human" or asking:
            g.edge(nid, g.node(PERSON, "need", "a person"), "waits_on", why="needs_human", by=asking)
        dry = dict(t.unfunded) or ({t.paused_by: "wallet"} if t.pause == "credits" and t.paused_by else {})
        if dry:
            g.edge(nid, g.node(CREDITS, "need", "credits"), "waits_on", why="credits", by=dry)
        owed = {p for x in t.pending.values() for p in x.remaining if p != SYSTEM}
        for p in sorted(owed):
            g.edge(nid, participant(p), "waits_on", why="answer")
        for p, m in t.members.items():
            if p not in owed and p.startswith("agent.") and (m.state == "working" or m.wake_pending):
                g.edge(nid, participant(p), "waits_on", why="working")
    return out, len(rows) > MAX_TOPICS


def _origin(convs: dict, topics: dict, cid: str | None, tid: str | None) -> str | None:
    """The node a thread or side conversation came from: its topic if drawn, else its conversation if readable."""
    if tid in topics:
        return f"topic:{tid}"
    return convs[cid]["node"] if cid in convs else None


def _links(conn, convs: dict, topics: dict, g: _Graph) -> None:
    """Side threads to the topic of their origin message; side conversations to the topic they came from."""
    msgs = [c["origin_message"] for c in convs.values() if isinstance(c["origin_message"], str)]
    where = dict(chunks(conn, "SELECT id, topic FROM messages WHERE id IN ({})", msgs))
    for cid, c in convs.items():
        if c["node"].startswith("thread:"):
            to = _origin(convs, topics, c["origin"], where.get(c["origin_message"]))
            if to is not None:
                g.edge(c["node"], to, "opened_from", message=c["origin_message"])
        elif c["node"].startswith("side:"):
            to = _origin(convs, topics, c["origin"], c["origin_topic"])
            if to is not None:
                g.edge(c["node"], to, "delegated_from")


def _serves(convs: dict, topics: dict, g: _Graph, participant) -> None:
    """Each agent and the conversations it serves: a member of it, or taking part in one of its topics."""
    serving: dict[str, set[str]] = {}
    for cid, c in convs.items():
        for p in c["members"]:
            serving.setdefault(cid, set()).add(p)
    for tid, cid in topics.items():
        serving.setdefault(cid, set()).update(g.nodes[f"topic:{tid}"]["members"])
    for cid, who in serving.items():
        for p in sorted(who):
            if p.startswith("agent."):
                g.edge(participant(p), convs[cid]["node"], "serves", lead=convs[cid]["lead"] == p)


def _requests(conn, topics: dict, floor: int, g: _Graph, participant) -> None:
    """Delegations and handoffs: agents' requests to other agents in the drawn topics (the most recent
    MAX_REQUESTS of each 500 topics, within the plan's history window), counted per topic, sender and recipient."""
    seen: Counter = Counter()
    tids = list(topics)
    for i in range(0, len(tids), 500):  # (the drawn topics' messages only: their index, no scan of the workspace)
        chunk = tids[i:i + 500]
        rows = conn.execute(
            f"""SELECT body FROM messages WHERE topic IN ({",".join("?" * len(chunk))}) AND type = 'request'
                AND author LIKE 'agent.%' AND created_at >= ? ORDER BY seq DESC LIMIT ?""",
            (*chunk, floor, MAX_REQUESTS)).fetchall()
        _count(rows, topics, seen)
    for (tid, a, b, kind), n in sorted(seen.items()):
        g.edge(participant(a), participant(b), kind, topic=tid, count=n)


def _count(rows, topics: dict, seen: Counter) -> None:
    for (body,) in rows:
        m = codec.decode_message(body)
        if m.topic in topics:
            for to in m.to:
                if to.startswith("agent.") and to != m.author:
                    seen[(m.topic, m.author, to, "handed_off" if m.handoff else "delegated")] += 1


def _artifacts(conn, ws: str, convs: dict, topics: dict, g: _Graph, participant) -> None:
    """Artifacts of the conversations drawn, each to its conversation (and first topic) and to who wrote it."""
    heads = {aid: (cid, title, kind, version) for aid, cid, title, kind, version in conn.execute(
        "SELECT id, conversation, title, kind, version FROM artifacts WHERE workspace = ? ORDER BY created_at, id",
        (ws,)) if cid in convs}
    authors: dict[str, dict[str, list[int]]] = {}
    first: dict[str, str | None] = {}
    for aid, v, author, tid in conn.execute(
            """SELECT v.artifact, v.version, v.author, m.topic FROM artifact_versions v
               JOIN artifacts a ON a.id = v.artifact LEFT JOIN messages m ON m.id = v.message
               WHERE a.workspace = ? ORDER BY v.artifact, v.version""", (ws,)):
        if aid in heads:
            authors.setdefault(aid, {}).setdefault(author, []).append(v)
            first.setdefault(aid, tid)
    for aid, (cid, title, kind, version) in heads.items():
        tid = first.get(aid)
        nid = g.node(f"artifact:{aid}", "artifact", title, artifact=aid, conversation=cid, artifact_kind=kind,
                     version=version, topic=tid if tid in topics else None)
        g.edge(nid, convs[cid]["node"], "in", topic=tid if tid in topics else None)
        for p, vs in authors.get(aid, {}).items():
            g.edge(nid, participant(p), "made_by", versions=vs)


def _keep(g: _Graph, seeds: set[str]) -> None:
    """Narrow the graph to `seeds`, what hangs off them (their edges' other ends, delegations in a seed topic),
    and where each kept node sits (a topic's or an artifact's conversation, a thread's or side's origin)."""
    keep = set(seeds)
    topics = {g.nodes[n].get("topic") for n in seeds if n.startswith("topic:")}
    for e in g.edges:
        if e["from"] in seeds or e["to"] in seeds or (e.get("topic") is not None and e.get("topic") in topics
                                                     and e["kind"] in ("delegated", "handed_off")):
            keep |= {e["from"], e["to"]}
    up = {}
    for e in g.edges:
        if e["kind"] in ("in", "opened_from", "delegated_from"):
            up.setdefault(e["from"], []).append(e["to"])
    todo = list(keep)
    while todo:  # where the kept nodes sit, up to their conversation's root
        for n in up.get(todo.pop(), ()):
            if n not in keep:
                keep.add(n)
                todo.append(n)
    g.nodes = {n: x for n, x in g.nodes.items() if n in keep}
    g.edges = [e for e in g.edges if e["from"] in keep and e["to"] in keep]


QUERIES = {"work_graph": work_graph}
TIMED = frozenset({"work_graph"})
