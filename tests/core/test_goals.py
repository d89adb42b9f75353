"""core/goals.py with a fake clock: each loop safeguard, the server's say over a loop, and the pulse report rule."""

from __future__ import annotations

from ygg_server.core import goals as g
from ygg_server.core import schedule
from ygg_server.core.goals import Loop
from ygg_server.core.schedule import LOOP, PULSE, TELL, Schedule

US = 1_000_000
T0 = 1_800_000_000 * US


def _loop(**kw) -> Loop:
    return Loop(**{**dict(id="l1", max_iterations=10, budget=100, deadline=T0 + 3600 * US, stall_after=3), **kw})


def _run(loop: Loop, reports: list[str], every: int | None = 60, credits: int = 1, results=None):
    """Iterations 1.. with these reports, one a minute: the last decision, and every decision."""
    recent, out, now = [], [], T0
    for i, rep in enumerate(reports, 1):
        got = g.after_verdict(loop, i, g.CONTINUE, rep, (results or {}).get(i), credits, recent, every, now)
        out.append(got)
        recent.append(got.iteration)
        loop, now = got.loop, now + 60 * US
        if loop.status != g.RUNNING:
            break
    return out[-1], out


def test_the_server_not_the_agent_decides_whether_the_loop_goes_on():
    """Seed 003 §39: "Every iteration ends the same way: the agent reports continue, done, or stuck-and-needs-help,
    and it is the server, not the agent, that decides whether the Loop goes on"."""
    got = g.after_verdict(_loop(), 1, g.CONTINUE, "read chapter 1", None, 3, [], 60, T0)
    assert got.loop.status == g.RUNNING and got.next_at == T0 + 60 * US and got.tell is None
    assert got.loop.done == 1 and got.loop.spent == 3
    assert g.after_verdict(_loop(), 1, g.CONTINUE, "x", None, 0, [], None, T0).next_at == T0, "continuous: at once"
    done = g.after_verdict(_loop(), 2, g.DONE, "the goal is met", None, 0, [], 60, T0)
    assert (done.loop.status, done.loop.reason, done.next_at) == (g.DONE, g.DONE, None)
    assert done.tell.startswith("Loop is done")
    stuck = g.after_verdict(_loop(), 2, g.STUCK, "I need the API key", None, 0, [], 60, T0)
    assert stuck.loop.status == g.STUCK and "needs help" in stuck.tell and "API key" in stuck.tell


def test_a_loop_ends_at_its_maximum_number_of_iterations():
    """Seed 003 §39: "Safeguards still bound it: a maximum number of iterations"."""
    last, steps = _run(_loop(max_iterations=3), [f"step {i}" for i in range(10)])
    assert len(steps) == 3 and last.loop.reason == g.MAX_ITERATIONS and last.next_at is None
    assert last.loop.status == g.ENDED and "3 of at most 3" in last.loop.detail and last.tell


def test_a_loop_ends_when_its_credit_budget_is_spent():
    """Seed 003 §39: "a token budget" (here in credits, what the agent's wallet was charged)."""
    last, steps = _run(_loop(budget=10), [f"step {i}" for i in range(10)], credits=4)
    assert len(steps) == 3 and last.loop.reason == g.BUDGET and last.loop.spent == 12


def test_a_loop_ends_at_its_deadline_while_iterating_or_waiting():
    """Seed 003 §39: "a deadline"."""
    last, steps = _run(_loop(deadline=T0 + 150 * US), [f"step {i}" for i in range(10)], every=60)
    assert len(steps) == 3 and last.loop.reason == g.DEADLINE  # the third's next run (T0+180 s) is past it
    waiting = _loop(deadline=T0 + 150 * US)
    assert g.expired(waiting, T0 + 149 * US) is None
    assert g.expired(waiting, T0 + 150 * US).reason == g.DEADLINE
    assert g.expired(g.after_verdict(waiting, 1, g.DONE, "ok", None, 0, [], 60, T0).loop, T0 + 10**12) is None


def test_a_loop_that_stopped_making_progress_ends():
    """Seed 003 §39: "detection of a Loop that has stopped making real progress".

    Issue 22: "repeated reports or unchanged results over N iterations"."""
    last, steps = _run(_loop(stall_after=3), ["found 2 notes", "found 3 notes", "Found 3 notes.", "found 3 notes!"])
    assert len(steps) == 4 and last.loop.reason == g.NO_PROGRESS, "the same report (its words) three times"
    other, steps = _run(_loop(stall_after=3), ["a", "b", "c", "d", "e"], results={2: "v1", 3: "v1", 4: "v1"})
    assert len(steps) == 4 and other.loop.reason == g.NO_PROGRESS, "the same result three times"
    going, steps = _run(_loop(stall_after=3), ["a", "b", "a", "b", "a"])
    assert going.loop.status == g.RUNNING and len(steps) == 5, "alternating reports are not the same three times"


def test_an_iteration_that_could_not_be_sent_stops_the_loop():
    """Seed 003 §39: "it is the server, not the agent, that decides whether the Loop goes on".

    Issue 22: each safeguard ends "the loop with a visible reason" (an unsent iteration would wait forever)."""
    assert g.unsent(_loop(), 1, "sent", T0) is None
    assert g.unsent(_loop(done=1), 1, "credits_exhausted", T0) is None, "no iteration waiting"
    stopped = g.unsent(_loop(), 1, "credits_exhausted", T0)
    assert stopped.reason == g.BUDGET and "not sent" in stopped.detail


def test_loops_and_pulses_fire_as_requests_in_the_owners_direct_conversation():
    """Seed 003 §38: a Loop "gives the agent a goal and lets it iterate"; §33: an agent "can also wake on its own
    schedule, go through a checklist"."""
    base = dict(workspace="ws", agent="agent.a", owner="human.o", created_by="human.o", next_at=T0)
    loop = Schedule(id="l1", kind=LOOP, text="collect the notes", name="notes", runs=2, **base)
    f = schedule.fire(loop, T0)
    assert (f.author, f.conversation, f.to, f.type) == ("human.o", "dm:agent.a", ("agent.a",), "request")
    assert f.title == "Loop: notes (iteration 3)" and "loop l1, iteration 3" in f.text
    assert schedule.after_run(loop, T0, "sent").next_at is None, "the next waits for this one's verdict"
    pulse = Schedule(id="p1", kind=PULSE, text="- open topics", every=600, **base)
    assert schedule.fire(pulse, T0).title == "Pulse: open topics"
    assert schedule.after_run(pulse, T0 + 5, "sent").next_at == T0 + 5 + 600 * US
    tell = Schedule(id="t1", kind=TELL, text="Pulse: look", name="Pulse: checks", **base)
    f = schedule.fire(tell, T0)
    assert (f.author, f.conversation, f.type) == ("agent.a", "dm:human.o", "inform")
    assert schedule.after_run(tell, T0, "sent").next_at is None


def test_a_pulse_tells_its_owner_only_what_is_worth_telling():
    """Seed 003 §34: "Such a self-started turn produces a structured report rather than an ordinary chat message,
    and if there is something worth telling, the agent proactively messages its owner"."""
    calm = [{"check": "open topics", "status": "ok", "note": "none waiting"}]
    assert g.worth_telling("all quiet", calm, None) is None
    assert g.worth_telling("all quiet", calm, "  ") is None
    hot = calm + [{"check": "credits", "status": "attention", "note": "5 left"}]
    said = g.worth_telling("one thing", hot, None)
    assert said.startswith("Pulse: one thing") and "- credits: 5 left" in said and "open topics" not in said
    assert g.worth_telling("quiet", calm, "the release is tomorrow") == "Pulse: the release is tomorrow"
    assert g.report_problem("s", [{"check": "x", "status": "maybe"}])
    assert g.report_problem("s", "not a list") and g.report_problem(3, [])
    assert g.report_problem("s", calm) is None


def test_limits_are_checked():
    """Seed 003 §39: "Safeguards still bound it: a maximum number of iterations, a token budget, a deadline"; a
    loop's limits out of range are refused when it is made (core decision, docs/rules.md)."""
    assert g.limits_problem({"max_iterations": 0}) and g.limits_problem({"every": 1})
    assert g.limits_problem({"budget": "5"}) and g.limits_problem({"hours": 10**6})
    assert g.limits_problem({"max_iterations": 5, "every": None, "stall_after": 2}) is None
