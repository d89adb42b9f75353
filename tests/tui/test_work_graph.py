"""The work graph in the TUI (issue 21; seed 003 §49): `w` (or the palette) draws how the workspace's work connects
as a tree; `a` and `s` filter it by agent and by state; ⏎ on a node opens its topic in the main screen."""

import asyncio
import time

from textual.command import CommandPalette
from textual.widgets import Tree

from ygg_tui.screens.work_graph import WorkGraphScreen

from .conftest import SIZE, ready, screen_text, wait_for, wait_text
from .test_snapshots import quiet


async def _work(team) -> dict:
    """researcher asks reviewer for the report's totals (a delegation, and a side thread from its `<dm>` part) and
    posts the draft as an artifact; in another topic it waits on a person."""
    researcher = await team.agent("researcher")
    sent = await researcher.send(workspace=team.ws, conversation="general", topic="new", title="Quarterly report",
                                 type="request", to=["reviewer"], text='Check table 2, please.\n'
                                 '<dm target="reviewer">the totals look off</dm>')
    assert sent["op"] == "sent" and sent["message"]["threads"], sent
    topic = sent["message"]["topic"]
    made = await researcher.request("create_artifact", workspace=team.ws, topic=topic, title="Report draft",
                                    body="# Q3\n")
    assert made["op"] == "create_artifact", made
    paused = await researcher.send(workspace=team.ws, conversation="general", topic="new", title="Budget",
                                   type="inform", state="needs_human", text="which budget line?")
    assert paused["op"] == "sent", paused
    return {"topic": topic, "budget": paused["message"]["topic"]}


async def _open(pilot) -> WorkGraphScreen:
    main = await ready(pilot)
    main.messages.focus()
    await pilot.press("w")
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, WorkGraphScreen) and pilot.app.screen.graph,
                   what="the work graph")
    return pilot.app.screen


async def test_the_graph_shows_how_work_connects_filters_and_opens_a_topic(team):
    """Seed 003 §49: "a visual, structural view of how work is really connected: which task depends on which, how
    agents and conversations link up, a map of relationships instead of a flat list or a chat thread." """
    w = await _work(team)
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot)
        await wait_text(pilot, "Work graph of team", "Quarterly report", "◷ waits on reviewer (an answer)",
                        "⇢ researcher delegated to reviewer", "▣ Report draft · document v1 · by researcher",
                        "⑂ side thread with researcher, reviewer · ◌ ongoing", "Budget · needs_human  researcher ⚑",
                        "⚑ waits on a person (asked by researcher)", "◆ researcher", "serves General")
        await pilot.press("s", "s")  # state: open, then needs_human
        await wait_for(pilot, lambda: screen.graph["state"] == "needs_human", what="filtered by state")
        text = await wait_text(pilot, "state: needs_human", "Budget", "⚑ waits on a person")
        assert "Quarterly report" not in text, "nobody waits on a person there"
        await pilot.press(*"s" * 7)  # round the states, back to all
        await wait_for(pilot, lambda: screen.graph["state"] is None and "Budget" in screen_text(app),
                       what="every state again")
        await pilot.press("a")  # agent: the first agent (researcher), then reviewer
        await pilot.press("a")
        await wait_for(pilot, lambda: screen.graph["agent"] == team.ids["reviewer"], what="filtered by agent")
        text = await wait_text(pilot, "agent: reviewer", "Quarterly report")
        assert "Budget" not in text, "reviewer has no part in it"
        tree = screen.query_one(Tree)

        def topic_line():
            line = next(i for i in range(tree.last_line + 1)
                        if (tree.get_node_at_line(i).data or (None, None))[1] == w["topic"])
            tree.cursor_line = line
            return True
        await wait_for(pilot, topic_line, what="the topic's node")
        await pilot.press("enter")
        await wait_for(pilot, lambda: not isinstance(app.screen, WorkGraphScreen), what="closed")
        await wait_for(pilot, lambda: app.main.topic == w["topic"], what="the topic opened")
        await wait_text(pilot, "Check table 2, please.")


async def test_a_thread_node_opens_the_thread_and_the_palette_opens_the_graph(team):
    """Seed 003 §49 ("how agents and conversations link up"): a side thread's node opens its conversation; the
    graph is in the command palette too."""
    await _work(team)
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette), what="the palette")
        await pilot.press(*"workgraphofteam")
        await wait_text(pilot, "Work graph of team")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, WorkGraphScreen) and app.screen.graph, what="graph")
        screen = app.screen
        tree = screen.query_one(Tree)
        thread = next(n["conversation"] for n in screen.graph["nodes"] if n["kind"] == "thread")

        def thread_line():
            tree.cursor_line = next(i for i in range(tree.last_line + 1)
                                    if tree.get_node_at_line(i).data == (thread, None))
            return True
        await wait_for(pilot, thread_line, what="the thread's node")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.main.conversation == thread, what="the thread opened")
        await wait_text(pilot, "the totals look off")


def test_work_graph_snapshot(snap_compare, sync_team):
    asyncio.run(_work(sync_team))
    asyncio.run(sync_team.close_clients())
    time.sleep(0.3)

    async def before(pilot):
        await _open(pilot)
        await wait_text(pilot, "Report draft", "serves General")
        quiet(pilot)
        await pilot.pause(0.1)

    assert snap_compare(sync_team.app(), terminal_size=SIZE, run_before=before)


def test_the_tree_tells_what_a_topic_waits_on_and_who_handed_off():
    """Seed 003 §49 ("which task depends on which"), drawn from an answer (ygg_tui/graph_tree.py, no server)."""
    from ygg_tui.graph_tree import build

    a, b = "agent.a", "agent.b"
    g = {"nodes": [
        {"id": "conversation:c", "kind": "conversation", "label": "General", "conversation": "c"},
        {"id": "topic:t", "kind": "topic", "label": "Launch", "conversation": "c", "topic": "t", "state": "paused",
         "pause": "credits", "members": {a: "working"}},
        {"id": "need:credits", "kind": "need", "label": "credits"},
        {"id": f"agent:{a}", "kind": "agent", "label": "ann", "ref": a},
        {"id": f"agent:{b}", "kind": "agent", "label": "bo", "ref": b},
        {"id": "side:s", "kind": "side", "label": "For you", "conversation": "s"},
    ], "edges": [
        {"from": "topic:t", "to": "conversation:c", "kind": "in"},
        {"from": "topic:t", "to": "need:credits", "kind": "waits_on", "why": "credits", "by": {a: "budget"}},
        {"from": f"agent:{a}", "to": f"agent:{b}", "kind": "handed_off", "topic": "t", "count": 2},
        {"from": "side:s", "to": "topic:t", "kind": "delegated_from"},
        {"from": f"agent:{a}", "to": "conversation:c", "kind": "serves", "lead": True},
    ]}
    (general, agents) = build(g)
    (topic,) = general.children
    assert topic.at == ("c", "t") and str(topic.label).startswith("$ Launch · paused:credits")
    assert [str(k.label) for k in topic.children] == ["$ waits on credits (ann: budget)", "⇢ ann handed off to bo ×2",
                                                      "↳ For you"]
    assert topic.children[2].at == ("s", None), "⏎ on a side conversation opens it"
    assert [str(k.label) for k in agents.children] == ["◆ ann", "◆ bo"]
    assert [(str(k.label), k.at) for k in agents.children[0].children] == [("serves General (Lead)", ("c", None))]
