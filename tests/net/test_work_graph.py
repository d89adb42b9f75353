"""The work graph (issue 21; seed 003 §49; docs/protocol.md, "The work graph") over real websockets, on both stores:
one read-only query, scoped to what the asker may read."""

from __future__ import annotations

import pytest

from ygg_server.ops import admin

from .conftest import acked_until

pytestmark = pytest.mark.backends("sqlite", "postgres")


def _edges(g: dict, kind: str | None = None) -> list[tuple]:
    return [(e["from"], e["to"], e["kind"]) for e in g["edges"] if kind is None or e["kind"] == kind]


async def _work(team) -> dict:
    """In General, alice asks researcher for a report; researcher opens a side thread with reviewer, delegates
    table 2 to it, writes an artifact, and asks for a person. In alice's direct conversation with researcher, it
    delegates a private task to reviewer (a side conversation) beside a private artifact."""
    alice = await team.person("alice")
    researcher = await team.client(api_key=team.keys["researcher"])
    ask = await alice.send(workspace=team.ws, topic="new", title="Report", to=["researcher"], type="request",
                           text="write it")
    topic = ask["message"]["topic"]
    await acked_until(researcher, lambda d: d["message"]["id"] == ask["message"]["id"])
    said = await researcher.send(workspace=team.ws, topic=topic, type="inform",
                                 text='Drafting.\n<dm target="reviewer">check the totals</dm>')
    deleg = await researcher.send(workspace=team.ws, topic=topic, type="request", to=["reviewer"],
                                  text="recompute table 2")
    handed = await researcher.send(workspace=team.ws, topic=topic, type="request", to=["reviewer"], handoff=True,
                                   text="take the appendix from here")
    assert handed["op"] == "sent" and handed["message"].get("handoff"), handed
    made = await researcher.request("create_artifact", workspace=team.ws, topic=topic, title="Report draft",
                                    body="# Report\n")
    asked = await researcher.send(workspace=team.ws, topic=topic, type="inform", state="needs_human",
                                  text="which quarter?")
    assert {x["op"] for x in (said, deleg, asked)} == {"sent"} and made["op"] == "create_artifact", (said, made)
    hello = await alice.send(workspace=team.ws, conversation="dm:researcher", topic="new", title="Secret",
                             to=["researcher"], type="request", text="a private task")
    await acked_until(researcher, lambda d: d["message"]["id"] == hello["message"]["id"])
    side = await researcher.send(workspace=team.ws, conversation=hello["message"]["conversation"],
                                 topic=hello["message"]["topic"], type="request", to=["reviewer"],
                                 text="the private part")
    secret = await alice.request("create_artifact", workspace=team.ws, conversation="dm:researcher",
                                 topic=hello["message"]["topic"], title="Secret plan", body="x")
    assert side["op"] == "sent" and secret["op"] == "create_artifact", (side, secret)
    return {"alice": alice, "researcher": researcher, "topic": topic, "thread": said["message"]["threads"][0],
            "artifact": made["artifact"]["id"], "dm": hello["message"]["conversation"],
            "dm_topic": hello["message"]["topic"], "side": side["message"]["conversation"],
            "secret": secret["artifact"]["id"], "general": ask["message"]["conversation"]}


async def test_the_graph_connects_topics_threads_side_conversations_delegations_and_artifacts(team):
    """Seed 003 §49: "a visual, structural view of how work is really connected: which task depends on which, how
    agents and conversations link up, a map of relationships instead of a flat list or a chat thread." """
    w = await _work(team)
    g = await w["alice"].call("work_graph", workspace=team.ws)
    nodes = {n["id"]: n for n in g["nodes"]}
    r, v = w["researcher"].me["id"], (await team.client(api_key=team.keys["reviewer"])).me["id"]
    t = f"topic:{w['topic']}"
    assert nodes[t]["label"] == "Report" and nodes[t]["state"] == "paused" and nodes[t]["pause"] == "needs_human"
    edges = _edges(g)
    assert (t, f"conversation:{w['general']}", "in") in edges
    waits = {(e["to"], e.get("why")) for e in g["edges"] if e["from"] == t and e["kind"] == "waits_on"}
    assert ("need:person", "needs_human") in waits and (f"agent:{v}", "answer") in waits, waits
    assert next(e for e in g["edges"] if e["to"] == "need:person")["by"] == [r]
    assert (f"thread:{w['thread']}", t, "opened_from") in edges, "a side thread hangs off its origin's topic"
    assert nodes[f"thread:{w['thread']}"]["state"] == "ongoing"
    assert (f"side:{w['side']}", f"topic:{w['dm_topic']}", "delegated_from") in edges
    deleg = [e for e in g["edges"] if e["kind"] == "delegated" and e["topic"] == w["topic"]]
    assert [(e["from"], e["to"], e["count"]) for e in deleg] == [(f"agent:{r}", f"agent:{v}", 1)]
    handoffs = [e for e in g["edges"] if e["kind"] == "handed_off"]
    assert [(e["from"], e["to"], e["topic"]) for e in handoffs] == [(f"agent:{r}", f"agent:{v}", w["topic"])]
    a = f"artifact:{w['artifact']}"
    assert nodes[a]["label"] == "Report draft" and nodes[a]["topic"] == w["topic"]
    assert (a, f"agent:{r}", "made_by") in edges and (a, f"conversation:{w['general']}", "in") in edges
    assert (f"agent:{r}", f"conversation:{w['general']}", "serves") in edges
    assert f"artifact:{w['secret']}" in nodes, "alice reads her own direct conversation"

    # filters: by state, by agent
    paused = await w["alice"].call("work_graph", workspace=team.ws, state="needs_human")
    topics = {n["id"] for n in paused["nodes"] if n["kind"] == "topic"}
    assert topics == {t} and paused["state"] == "needs_human"
    assert f"conversation:{w['general']}" in {n["id"] for n in paused["nodes"]}, "and where it sits"
    ongoing = await w["alice"].call("work_graph", workspace=team.ws, state="ongoing")
    assert {n["id"] for n in ongoing["nodes"] if n["kind"] == "thread"} == {f"thread:{w['thread']}"}
    assert not [n for n in ongoing["nodes"] if n["kind"] == "side"]
    mine = await w["alice"].call("work_graph", workspace=team.ws, agent="reviewer")
    assert mine["agent"] == v
    assert {n["id"] for n in mine["nodes"] if n["kind"] == "topic"} >= {t}
    assert f"artifact:{w['secret']}" not in {n["id"] for n in mine["nodes"]}, "not reviewer's work"
    for bad, reason in (({"state": "sleepy"}, "bad_filter"), ({"agent": "nobody-here"}, "unknown_member"),
                        ({"state": 3}, "bad_filter")):
        out = await w["alice"].request("work_graph", workspace=team.ws, **bad)
        assert out["op"] == "refused" and out["reason"] == reason, out


async def test_the_graph_never_shows_what_the_asker_cannot_read(team):
    """Seed 003 §10 (artifacts "inherit that conversation's membership and visibility") and the brief's rule: no
    tenant learns anything about another; a conversation one is not in is not in one's graph, nor are its topics,
    artifacts, side conversations or the edges to them."""
    w = await _work(team)
    bob = await team.person("bob")
    g = await bob.call("work_graph", workspace=team.ws)
    ids = {n["id"] for n in g["nodes"]}
    hidden = (f"conversation:{w['dm']}", f"topic:{w['dm_topic']}", f"side:{w['side']}", f"artifact:{w['secret']}")
    assert not ids & set(hidden), ids & set(hidden)
    assert f"topic:{w['topic']}" in ids, "General's work is bob's to see"
    assert all(e["from"] in ids and e["to"] in ids for e in g["edges"]), "no edge to a node left out"
    text = repr(g)
    assert w["dm"] not in text and w["dm_topic"] not in text and "Secret" not in text
    # an agent asks: it reads General and its own conversations, not alice's direct one with researcher
    reviewer = await team.client(api_key=team.keys["reviewer"])
    mine = await reviewer.call("work_graph", workspace=team.ws)
    ids = {n["id"] for n in mine["nodes"]}
    assert f"side:{w['side']}" in ids, "reviewer is in the side conversation it serves"
    assert f"conversation:{w['dm']}" not in ids and f"artifact:{w['secret']}" not in ids
    assert not [e for e in mine["edges"] if e["from"] == f"side:{w['side']}"], \
        "its origin (a direct conversation reviewer is not in) is not shown"
    # another workspace: answered as one that does not exist
    team.admin(admin.add_person, "dave", "pw-" + "x" * 8)
    other = team.admin(admin.add_workspace, "elsewhere", "dave")["id"]
    dave = await team.person("dave")
    for ws in (team.ws, "ws.nope"):
        out = await dave.request("work_graph", workspace=ws)
        assert out["op"] == "error" and out["code"] == "not_found", out
    out = await w["alice"].request("work_graph", workspace=other)
    assert out["op"] == "error" and out["code"] == "not_found", out
    assert [n["kind"] for n in (await dave.call("work_graph", workspace=other))["nodes"]] == ["conversation"], \
        "dave's own workspace: its General alone"


@pytest.mark.backends("sqlite")
async def test_the_graph_costs_the_same_queries_for_many_topics(team, monkeypatch):
    """Issue 21's work graph stays fast for a workspace with hundreds of topics: one query per table, never one per
    topic (counted on the SQLite reader: 3 topics or 200, the same statements); past its limit, the most recently
    active topics, and `more`."""
    import time as clock

    from ygg_server.ops import graph
    from ygg_server.protocol import frames

    alice = await team.person("alice")
    researcher = await team.client(api_key=team.keys["researcher"])

    async def topics(first: int, n: int) -> None:
        for i in range(first, first + n):
            sent = await alice.send(workspace=team.ws, topic="new", title=f"Task {i}", to=["researcher"],
                                    type="request", text="please")
            await researcher.send(workspace=team.ws, topic=sent["message"]["topic"], type="request",
                                  to=["reviewer"], text="your part")

    def counted() -> tuple[int, dict, float]:
        seen = []
        team.conn.set_trace_callback(seen.append)
        start = clock.perf_counter()
        try:
            g = graph.work_graph(team.conn, alice.me["id"], frames.WorkGraph(workspace=team.ws), team.gw.clock())
        finally:
            team.conn.set_trace_callback(None)
        return len(seen), g, clock.perf_counter() - start

    await topics(0, 3)
    few, g, _ = counted()
    assert sum(n["kind"] == "topic" for n in g["nodes"]) == 3
    await topics(3, 197)
    many, g, took = counted()
    assert sum(n["kind"] == "topic" for n in g["nodes"]) == 200
    assert sum(e["kind"] == "delegated" for e in g["edges"]) == 200
    assert many == few, f"{few} statements for 3 topics, {many} for 200"
    assert took < 2.0, f"{took:.2f} s for 200 topics"
    assert g["more"] is False
    monkeypatch.setattr(graph, "MAX_TOPICS", 150)
    _, g, _ = counted()
    drawn = [n["label"] for n in g["nodes"] if n["kind"] == "topic"]
    assert g["more"] is True and len(drawn) == 150 and drawn[0] == "Task 199" and "Task 49" not in drawn
