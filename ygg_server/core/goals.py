"""Loops and Pulse (seed 003 §33-34, §38-40): work an agent does with nobody asking at that moment, decided here.

Pure: the time comes in as `now` (integer microseconds UTC). Both ride on a stored schedule (core/schedule.py,
kinds `loop` and `pulse`): the writer fires each due one through the one send pipeline as it fires a routine (a
request from the agent's owner to the agent in their direct conversation, in the workspace it was made in), so an
iteration or a pulse is charged, bounded and delivered like any message.

- A **loop** is a goal the agent iterates on, continuously (`every` None) or at intervals. Each iteration ends
  with the agent's verdict (continue, done or stuck, with a report); the server, here, decides whether it goes on
  (`after_verdict`). Safeguards end it with a visible reason: at most `max_iterations`, a credit `budget` (what its
  wallet was charged while iterations ran), a `deadline`, and no progress (the same report, or the same result,
  `stall_after` iterations in a row). A loop ended, done or stuck is told to its owner in their direct conversation.
- A **pulse** is the agent's own schedule and checklist: each self-started turn ends with a structured report
  (stored, shown to the owner); only a report with something worth telling (`worth_telling`) becomes a message
  to the owner.
"""

from __future__ import annotations

import hashlib
import re

import msgspec
from msgspec.structs import replace

CONTINUE, DONE, STUCK = "continue", "done", "stuck"
VERDICTS = (CONTINUE, DONE, STUCK)
RUNNING, ENDED = "running", "ended"  # a loop's status: running, done, stuck or ended (by a safeguard)
# the reasons a loop stops (seed 003 §39: "a maximum number of iterations, a token budget, a deadline, and detection
# of a Loop that has stopped making real progress"), besides the agent's own done and stuck
MAX_ITERATIONS, BUDGET, DEADLINE, NO_PROGRESS = "max_iterations", "budget", "deadline", "no_progress"

LIMITS = {"max_iterations": (1, 200, 10), "budget": (1, 10**9, 500), "stall_after": (2, 50, 3),
          "hours": (1, 24 * 30, 24)}  # each: (least, most, default); hours: the deadline, from when it is made
MIN_EVERY, MAX_EVERY = 10, 7 * 86400  # a loop's interval, seconds (None: continuous)
PULSE_MIN_EVERY = 60
MAX_REPORT, MAX_ITEMS = 2000, 20
OK, ATTENTION = "ok", "attention"


class Loop(msgspec.Struct, frozen=True, kw_only=True):
    """A loop's goal state beside its schedule row (which holds its goal, interval, next run and runs fired)."""

    id: str
    max_iterations: int
    budget: int  # credits
    deadline: int  # us
    stall_after: int
    spent: int = 0
    done: int = 0  # iterations whose verdict came in
    status: str = RUNNING
    reason: str | None = None  # why it stopped: done, stuck or a safeguard
    detail: str | None = None
    ended_at: int | None = None


class Iteration(msgspec.Struct, frozen=True, kw_only=True):
    loop: str
    n: int
    verdict: str
    report: str
    report_digest: str
    result_digest: str | None
    credits: int
    at: int


class Verdicted(msgspec.Struct, frozen=True):
    loop: Loop
    iteration: Iteration
    next_at: int | None  # the next iteration (None: the loop stopped)
    tell: str | None  # what the owner is told (a loop that stopped)


def digest(text: str) -> str:
    """A report compared by its words: case, spacing and punctuation do not make progress."""
    words = re.findall(r"\w+", text.lower())
    return hashlib.sha256(" ".join(words).encode()).hexdigest()[:32]


def limits_problem(values: dict) -> str | None:
    for k, (lo, hi, _) in LIMITS.items():
        v = values.get(k)
        if v is not None and (type(v) is not int or not lo <= v <= hi):
            return f"{k} is a whole number from {lo} to {hi}"
    every = values.get("every")
    if every is not None and (type(every) is not int or not MIN_EVERY <= every <= MAX_EVERY):
        return f"every is a whole number of seconds from {MIN_EVERY} to {MAX_EVERY} (or none: continuous)"
    return None


def open_iteration(loop: Loop, runs: int) -> int | None:
    """The iteration waiting for its verdict (None: none is: the next one is not fired yet, or the loop stopped)."""
    return runs if loop.status == RUNNING and runs > loop.done else None


def _stalled(recent: list[Iteration], it: Iteration, n: int) -> bool:
    """No progress: the last `n` iterations (this one among them) reported the same, or left the same result."""
    last = [*recent[-(n - 1):], it] if n > 1 else [it]
    if len(last) < n:
        return False
    same_report = len({i.report_digest for i in last}) == 1
    results = {i.result_digest for i in last}
    return same_report or (len(results) == 1 and None not in results)


def _stop(loop: Loop, status: str, reason: str, detail: str, now: int) -> Loop:
    return replace(loop, status=status, reason=reason, detail=detail, ended_at=now)


def after_verdict(loop: Loop, n: int, verdict: str, report: str, result: str | None, credits: int,
                  recent: list[Iteration], every: int | None, now: int) -> Verdicted:
    """Iteration `n` ended with the agent's `verdict` and `report` (and `result`, what it produced, if any), having
    cost `credits`; `recent`: the iterations before it, oldest first. The server decides whether the loop goes on
    (seed 003 §39: "it is the server, not the agent, that decides whether the Loop goes on")."""
    it = Iteration(loop=loop.id, n=n, verdict=verdict, report=report, report_digest=digest(report),
                   result_digest=digest(result) if result else None, credits=credits, at=now)
    loop = replace(loop, done=n, spent=loop.spent + credits)
    nxt = now + (every or 0) * 1_000_000
    if verdict == DONE:
        loop = _stop(loop, DONE, DONE, report, now)
    elif verdict == STUCK:
        loop = _stop(loop, STUCK, STUCK, report, now)
    elif n >= loop.max_iterations:
        loop = _stop(loop, ENDED, MAX_ITERATIONS, f"{n} of at most {loop.max_iterations} iterations", now)
    elif loop.spent >= loop.budget:
        loop = _stop(loop, ENDED, BUDGET, f"{loop.spent} credits spent of a budget of {loop.budget}", now)
    elif nxt >= loop.deadline:
        loop = _stop(loop, ENDED, DEADLINE, "its deadline passed before the next iteration", now)
    elif _stalled(recent, it, loop.stall_after):
        loop = _stop(loop, ENDED, NO_PROGRESS, f"the same report or result {loop.stall_after} iterations in a row",
                     now)
    if loop.status == RUNNING:
        return Verdicted(loop, it, nxt, None)
    return Verdicted(loop, it, None, told(loop))


def expired(loop: Loop, now: int) -> Loop | None:
    """A running loop past its deadline (waiting for a verdict, or for its next iteration), stopped; else None."""
    if loop.status != RUNNING or now < loop.deadline:
        return None
    return _stop(loop, ENDED, DEADLINE, "its deadline passed", now)


def unsent(loop: Loop, runs: int, result: str | None, now: int) -> Loop | None:
    """A running loop whose iteration could not be sent (`result`: why; its agent out of credits, say), stopped: no
    verdict would ever come."""
    if open_iteration(loop, runs) is None or result in (None, "sent"):
        return None
    return _stop(loop, ENDED, BUDGET if "credit" in result else "unsent", f"iteration {runs} was not sent: {result}",
                 now)


def told(loop: Loop) -> str:
    """What the owner is told of a loop that stopped."""
    head = {DONE: "is done", STUCK: "is stuck and needs help"}.get(loop.reason or "", f"ended ({loop.reason})")
    return f"Loop {head}: {loop.detail}"[:MAX_REPORT]


# --- Pulse ---

def report_problem(summary: object, items: object) -> str | None:
    """Why a pulse report is not one: a summary, and checklist items each {check, status ok|attention, note}."""
    if not isinstance(summary, str) or len(summary) > MAX_REPORT:
        return f"summary is text of at most {MAX_REPORT} characters"
    if not isinstance(items, list) or len(items) > MAX_ITEMS:
        return f"items is a list of at most {MAX_ITEMS} checks"
    for i in items:
        if not isinstance(i, dict) or not isinstance(i.get("check"), str) or i.get("status") not in (OK, ATTENTION) \
                or not isinstance(i.get("note", ""), str) or len(i["check"]) + len(i.get("note", "")) > 500:
            return "each item is {check, status: ok or attention, note}"
    return None


def worth_telling(summary: str, items: list[dict], tell: str | None) -> str | None:
    """Seed 003 §34: "if there is something worth telling, the agent proactively messages its owner": what the owner
    is told (None: nothing; the report is only stored). Worth telling: a check that needs attention, or what the
    agent chose to say (`tell`)."""
    lines = [f"- {i['check']}: {i.get('note') or 'needs attention'}" for i in items if i["status"] == ATTENTION]
    said = (tell or "").strip()
    if not lines and not said:
        return None
    return "\n".join(["Pulse: " + (said or summary.strip() or "something needs your attention"), *lines])[:MAX_REPORT]
