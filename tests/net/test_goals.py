"""Loops and pulses over real websockets, on both stores, with the writer on a clock the test moves (core/goals.py
decides; each iteration and each pulse is a send of the one pipeline; verdicts and reports are socket ops)."""

from __future__ import annotations

import asyncio

import pytest

from ygg_server.ops import goals

from ..backends import serving
from .test_schedules import Clock, _history, _team

pytestmark = pytest.mark.backends("sqlite", "postgres")

MIN = 60 * 10**6


async def _task(bot, timeout: float = 10.0) -> dict:
    """The next wake delivered to `bot` (acked)."""
    while True:
        d = await bot.next_delivery(timeout=timeout)
        await bot.ack([d["id"]])
        if d.get("wake"):
            return d["message"]


async def _quiet(bot, quiet: float = 0.5) -> list[dict]:
    out = []
    while True:
        try:
            d = await bot.next_delivery(timeout=quiet)
        except (asyncio.TimeoutError, TimeoutError):
            return out
        await bot.ack([d["id"]])
        out.append(d["message"])


async def _loop(client, ws: str, lid: str) -> dict:
    return next(x for x in (await client.call("list_loops", workspace=ws))["loops"] if x["id"] == lid)


async def test_a_loop_iterates_until_the_server_sees_no_progress(backend, database):
    """Seed 003 §38-39: a Loop "gives the agent a goal and lets it iterate [...] until the goal is met, it gets stuck,
    or it hits a safeguard"; "it is the server, not the agent, that decides whether the Loop goes on"."""
    clock = Clock(1_800_000_000 * 10**6)
    async with serving(backend, database, clock=clock) as server:
        ws, keys = _team(server)
        alice, bob = await server.person("alice"), await server.person("bob")
        bot = await server.client(api_key=keys["researcher"])
        with pytest.raises(Exception) as e:
            await bob.call("add_loop", workspace=ws, agent="researcher", goal="x")
        assert "permission_denied" in str(e.value)
        with pytest.raises(Exception) as e:
            await alice.call("add_loop", workspace=ws, agent="researcher", goal="x", max_iterations=0)
        assert "bad_schedule" in str(e.value)
        made = (await alice.call("add_loop", workspace=ws, agent="researcher", goal="collect the notes on credits",
                                 name="notes", stall_after=2, max_iterations=5))["loop"]
        assert made["status"] == "running" and made["deadline"] == clock.now + 24 * 60 * MIN
        m = await _task(bot)
        assert m["title"] == "Loop: notes (iteration 1)" and m["type"] == "request"
        with pytest.raises(Exception) as e:
            await bot.call("loop_verdict", workspace=ws, verdict="maybe", report="x")
        assert "bad_verdict" in str(e.value)
        with pytest.raises(Exception) as e:  # only the agent ends its iterations
            await alice.call("loop_verdict", workspace=ws, loop=made["id"], verdict="done", report="x")
        assert "not_found" in str(e.value)
        got = await bot.call("loop_verdict", workspace=ws, verdict="continue", report="found 2 notes")
        assert (got["iteration"], got["status"], got["next_at"]) == (1, "running", clock.now), "continuous"
        with pytest.raises(Exception) as e:
            await bot.call("loop_verdict", workspace=ws, loop=made["id"], iteration=1, verdict="continue", report="x")
        assert "bad_verdict" in str(e.value), "an iteration is ended once"
        m = await _task(bot)
        assert m["title"] == "Loop: notes (iteration 2)"
        got = await bot.call("loop_verdict", workspace=ws, loop=made["id"], verdict="continue", report="Found 2 notes.")
        assert got["status"] == "ended" and got["reason"] == "no_progress" and got["next_at"] is None
        assert await _quiet(bot) == [], "no third iteration"
        told = [x for x in await _history(alice, ws, "dm:researcher", want=3) if x["author"] == made["agent"]]
        assert told and "ended (no_progress)" in told[-1]["text"], "the owner is told why"
        listed = await _loop(alice, ws, made["id"])
        assert listed["reason"] == "no_progress" and [r["n"] for r in listed["reports"]] == [2, 1]
        assert listed["may_manage"] is True and listed["waiting"] is None
        assert (await bob.call("list_loops", workspace=ws))["loops"] == [], "not shown to others"
        assert (await alice.call("delete_schedule", workspace=ws, id=made["id"]))["deleted"] == made["id"]
        assert (await alice.call("list_loops", workspace=ws))["loops"] == []


async def test_a_loop_at_intervals_ends_at_its_deadline_or_budget(backend, database):
    """Seed 003 §39: "Safeguards still bound it: a maximum number of iterations, a token budget, a deadline"."""
    clock = Clock(1_800_000_000 * 10**6)
    async with serving(backend, database, clock=clock) as server:
        ws, keys = _team(server)
        alice = await server.person("alice")
        bot = await server.client(api_key=keys["researcher"])
        made = (await alice.call("add_loop", workspace=ws, agent="researcher", goal="watch the queue", every=600,
                                 hours=1))["loop"]
        await _task(bot)
        got = await bot.call("loop_verdict", workspace=ws, verdict="continue", report="3 queued")
        assert got["next_at"] == clock.now + 10 * MIN
        clock.now += 59 * MIN  # the agent never answers iteration 2: the deadline stops it
        await _task(bot)
        server.admin(goals.sweep, clock.now + MIN)  # (the gateway's sweeper, every few seconds; here at once)
        listed = await _loop(alice, ws, made["id"])
        assert listed["reason"] == "deadline" and listed["status"] == "ended"
        with pytest.raises(Exception):
            await bot.call("loop_verdict", workspace=ws, loop=made["id"], verdict="continue", report="late")

        budget = (await alice.call("add_loop", workspace=ws, agent="reviewer", goal="review", budget=1))["loop"]
        rev = await server.client(api_key=keys["reviewer"])
        await _task(rev)
        await rev.call("send", workspace=ws, conversation="general", topic="new", title="t", text="a post", to=["alice"])
        got = await rev.call("loop_verdict", workspace=ws, loop=budget["id"], verdict="continue", report="reviewed")
        assert got["reason"] == "budget" and got["spent"] >= 1


async def test_a_loop_resumes_after_a_restart_and_never_runs_an_iteration_twice(backend, database):
    """Issue 22: "a server restart in the middle of each"; seed 003 §39: the server decides whether the Loop goes
    on, so the loop's state is the server's: stored, not the agent's memory."""
    clock = Clock(1_800_000_000 * 10**6)
    async with serving(backend, database, clock=clock) as server:
        ws, keys = _team(server)
        alice = await server.person("alice")
        bot = await server.client(api_key=keys["researcher"])
        made = (await alice.call("add_loop", workspace=ws, agent="researcher", goal="draft the plan", every=60))["loop"]
        await _task(bot)
        await bot.call("loop_verdict", workspace=ws, verdict="continue", report="outline written")
        clock.now += MIN
        m = await _task(bot)
        assert m["title"].endswith("(iteration 2)")
    clock.now += 30 * MIN  # down for half an hour, iteration 2 waiting for its verdict
    async with serving(backend, database, clock=clock) as server:
        alice = await server.person("alice")
        bot = await server.client(api_key=keys["researcher"])
        again = [x for x in await _quiet(bot) if (x.get("title") or "").startswith("Loop:")]
        assert all(x["title"].endswith("(iteration 2)") for x in again), "no iteration fired again, none skipped"
        assert (await _loop(alice, ws, made["id"]))["waiting"] == 2
        got = await bot.call("loop_verdict", workspace=ws, iteration=2, verdict="continue", report="section 1 done")
        assert got["iteration"] == 2 and got["status"] == "running"
        clock.now += MIN
        assert (await _task(bot))["title"].endswith("(iteration 3)")
        await bot.call("loop_verdict", workspace=ws, verdict="done", report="the plan is drafted")
        listed = await _loop(alice, ws, made["id"])
        assert [r["n"] for r in listed["reports"]] == [3, 2, 1] and listed["status"] == "done"
        asks = [x["text"] for x in await _history(alice, ws, "dm:researcher", want=4) if "(loop " in x["text"]]
        assert sorted(t.split("iteration ")[1][0] for t in asks) == ["1", "2", "3"], "each iteration sent once"


async def test_a_pulse_report_is_stored_and_told_only_when_worth_telling(backend, database):
    """Seed 003 §34: "Such a self-started turn produces a structured report rather than an ordinary chat message,
    and if there is something worth telling, the agent proactively messages its owner"."""
    clock = Clock(1_800_000_000 * 10**6)
    async with serving(backend, database, clock=clock) as server:
        ws, keys = _team(server)
        alice = await server.person("alice")
        bot = await server.client(api_key=keys["researcher"])
        with pytest.raises(Exception) as e:  # its own pulse: once its owner allowed it
            await bot.call("add_pulse", workspace=ws, every=600, checklist="- my credits")
        assert "permission_denied" in str(e.value)
        await alice.call("allow_routines", agent="researcher")
        own = (await bot.call("add_pulse", workspace=ws, every=600, checklist="- my credits"))["pulse"]
        assert own["created_by"] == own["agent"] and own["may_manage"] is True
        assert (await bot.call("delete_schedule", workspace=ws, id=own["id"]))["deleted"] == own["id"]
        made = (await alice.call("add_pulse", workspace=ws, agent="researcher", every=600,
                                 checklist="- topics waiting on a person\n- my credits"))["pulse"]
        with pytest.raises(Exception) as e:
            await alice.call("add_pulse", workspace=ws, agent="researcher", every=600, checklist="again")
        assert "bad_schedule" in str(e.value), "one pulse per agent and workspace"
        with pytest.raises(Exception) as e:
            await bot.call("pulse_report", workspace=ws, summary="early", items=[])
        assert "bad_report" in str(e.value), "no pulse ran yet"
        clock.now += 10 * MIN
        m = await _task(bot)
        assert m["title"].startswith("Pulse:") and "my credits" in m["text"]
        calm = [{"check": "topics waiting", "status": "ok", "note": "none"}]
        assert (await bot.call("pulse_report", workspace=ws, summary="all quiet", items=calm))["told"] is False
        clock.now += 10 * MIN
        await _task(bot)
        hot = calm + [{"check": "credits", "status": "attention", "note": "12 left"}]
        assert (await bot.call("pulse_report", workspace=ws, summary="low credits", items=hot))["told"] is True
        told = [x for x in await _history(alice, ws, "dm:researcher", want=3) if x["author"] == made["agent"]]
        assert len(told) == 1 and "credits: 12 left" in told[0]["text"], "told once: the calm report was not"
        pulse = (await alice.call("list_loops", workspace=ws))["pulses"][0]
        assert [(r["n"], r["told"]) for r in pulse["reports"]] == [(2, True), (1, False)]
        assert pulse["reports"][1]["report"]["summary"] == "all quiet"
        paused = (await alice.call("pause_schedule", workspace=ws, id=made["id"]))["schedule"]
        assert paused["paused"] is True
        clock.now += 30 * MIN
        assert [x for x in await _quiet(bot) if (x.get("title") or "").startswith("Pulse")] == []


async def test_a_deadline_that_passed_while_the_server_was_down_ends_the_loop_when_it_is_back(backend, database):
    """Seed 003 §39: "Safeguards still bound it: [...] a deadline" (the gateway's sweeper looks first thing)."""
    clock = Clock(1_800_000_000 * 10**6)
    async with serving(backend, database, clock=clock) as server:
        ws, keys = _team(server)
        alice = await server.person("alice")
        bot = await server.client(api_key=keys["researcher"])
        made = (await alice.call("add_loop", workspace=ws, agent="researcher", goal="watch", every=600,
                                 hours=1))["loop"]
        await _task(bot)
        await bot.call("loop_verdict", workspace=ws, verdict="continue", report="quiet")
    clock.now += 2 * 60 * MIN
    async with serving(backend, database, clock=clock) as server:
        alice = await server.person("alice")
        deadline = asyncio.get_running_loop().time() + 10
        while (listed := await _loop(alice, ws, made["id"]))["status"] == "running":
            assert asyncio.get_running_loop().time() < deadline, "still running"
            await asyncio.sleep(0.1)
        assert listed["reason"] == "deadline" and listed["next_at"] is None
