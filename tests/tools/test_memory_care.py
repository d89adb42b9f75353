"""Memory's background workers and family layer (issue 23; seed 003 §47-48), with a fake clock, on both stores."""

from __future__ import annotations

import pytest

from ygg_server.agents.recall import uncovered
from ygg_server.ops import admin, memory, memory_care
from ygg_server.ops.memory_care import DAY, HALF_LIFE, Workers

pytestmark = pytest.mark.backends("sqlite", "postgres")


def _ids(team):
    return {n: team.conn.execute("SELECT id FROM agents WHERE name = ?", (n,)).fetchone()[0]
            for n in ("researcher", "reviewer")}


def _texts(team, agent=None):
    sql, args = "SELECT text FROM memories", ()
    if agent:
        sql, args = sql + " WHERE agent = ?", (agent,)
    return sorted(t for (t,) in team.conn.execute(sql + " ORDER BY text", args))


async def test_memory_that_is_not_used_fades_and_what_is_used_stays(team):
    """§48: "letting memory that is no longer relevant fade gradually over time"."""
    a = _ids(team)["researcher"]
    t0 = 1_000 * DAY
    memory.save(team.conn, a, team.ws, "never used", t0)
    memory.save(team.conn, a, team.ws, "used often", t0)
    for _ in range(3):
        memory.search(team.conn, a, team.ws, "often", now=t0 + 10 * DAY)
    assert memory_care.decay(team.conn, t0 + HALF_LIFE) == {"forgotten": 0}  # halved once: still there
    assert memory_care.decay(team.conn, t0 + 2 * HALF_LIFE + DAY) == {"forgotten": 1}
    assert _texts(team) == ["used often"]
    assert memory_care.decay(team.conn, t0 + 5 * HALF_LIFE) == {"forgotten": 1}  # unused since: it goes too


async def test_a_familys_shared_memory_is_consolidated_once_and_offered_to_its_siblings(team):
    """§48: "periodically consolidating what a family of agents has learned together so that it does not pile up
    unchecked"; §47: "what other agents of the same family have learned is added too"."""
    ids = _ids(team)
    memory.save(team.conn, ids["researcher"], team.ws, "Bob deploys on Fridays", 1)
    memory.save(team.conn, ids["reviewer"], team.ws, "bob  deploys on fridays", 2)
    memory.save(team.conn, ids["reviewer"], team.ws, "The reviewer's own note", 3)
    lab = team.admin(admin.add_workspace, "lab", "alice")["id"]
    memory.save(team.conn, ids["researcher"], lab, "Bob deploys on Fridays", 4)  # another workspace: not merged
    assert memory_care.consolidate(team.conn, 10) == {"merged": 2}
    assert _texts(team, "family:" + team.alice) == ["Bob deploys on Fridays"]
    assert _texts(team, ids["researcher"]) == ["Bob deploys on Fridays"]  # lab's, untouched
    assert memory_care.consolidate(team.conn, 11) == {"merged": 0}  # once
    layer = memory_care.family(team.conn, ids["researcher"], team.ws)
    assert [(m["text"], m["from"]) for m in layer] == [("Bob deploys on Fridays", "family"),
                                                       ("The reviewer's own note", "sibling")]
    assert memory_care.family(team.conn, ids["researcher"], lab) == []  # never across workspaces


async def test_a_long_conversation_is_condensed_into_one_memory_for_each_agent_in_it(team):
    """§48: "condensing long conversations into something reusable"."""
    agent, alice = await team.client(api_key=team.keys["researcher"]), await team.person("alice")
    first = await alice.send(workspace=team.ws, conversation="general", topic="new", title="Gateway rollout",
                             type="request", to=["researcher"], text="Plan the gateway rollout")
    topic = first["message"]["topic"]
    await agent.send(workspace=team.ws, conversation="general", topic=topic, type="inform", state="working",
                     text="Step one is the canary")
    await alice.send(workspace=team.ws, conversation="general", topic=topic, type="inform", text="Ship it on Monday")
    assert memory_care.condense(team.conn, 5, at=10) == {"condensed": 0}  # not long yet
    state: dict = {}
    assert memory_care.condense(team.conn, 5, at=3, state=state) == {"condensed": 1}
    (text,) = _texts(team)
    assert text == ("Conversation «Gateway rollout» (3 messages): it opened with “Plan the gateway rollout” and "
                    "ended with “Ship it on Monday”.")
    assert memory_care.condense(team.conn, 6, at=3) == {"condensed": 0}  # once a topic
    assert memory_care.condense(team.conn, 6, at=1, state=state) == {"condensed": 0}  # nothing grew since


async def test_each_worker_runs_on_its_own_schedule(team):
    t = [0.0]
    ran = []

    async def run(fn, *args):
        ran.append(args[0])
        return fn(team.conn, *args)

    w = Workers(run, clock=lambda: 5, monotonic=lambda: t[0])
    assert await w.tick() == ["condense", "decay", "consolidate"]
    t[0] = 700.0
    assert await w.tick() == ["condense"]
    t[0] = 3700.0
    assert await w.tick() == ["condense", "decay"]
    assert w.done["decay"] == {"forgotten": 0}


def test_what_the_fresh_context_covers_is_removed_from_the_family_layer():
    """§47: "whatever the fresh, conversation-specific memory already covers is removed"."""
    fresh = ["Bob said he deploys on Fridays, after lunch", "We agreed: staging first"]
    family = ["Bob deploys on Fridays", "Staging first, always", "Ann owns billing", "ann owns billing!"]
    assert uncovered(family, fresh) == ["Staging first, always", "Ann owns billing"]
