"""Work that runs later, nobody asking at that moment: reminders and routines (seed 003 §35-36, §41-42).

Pure: the time comes in as `now` (integer microseconds UTC), nothing is read or written here. A schedule is a
stored row (`Schedule`); the writer asks `fire(s, now)` for each one the store found due and sends what it
answers through the one send pipeline (`decide`), as any message: it is charged, bounded and delivered as any
other. `after_run` then says when the schedule next runs.

- A **reminder** runs once, at its time: its agent writes to its owner (the person reminded) in their direct
  conversation, in the workspace it was made in (`workspace`, stamped when it was set), never anywhere else.
- A **routine** runs on a fixed interval (`every`, seconds) or a cron schedule (`cron`, Debian cron semantics
  through `cronsim`, in the time zone `tz`, so a daylight-saving change neither skips nor doubles a run). The
  scheduler looks every five minutes (`TICK`): a run falls on the first tick at or after its time. Each run is a
  request from the agent's owner to the agent, in their direct conversation in the routine's workspace: a real
  task, in the workspace the routine is attached to. A run missed while the server was down runs once when it is
  back (the next time is counted from `now`, not from the missed one).
- A **loop**'s iteration and a **pulse** (core/goals.py decides what follows them) fire as a routine's run does, on
  their own time rather than the tick; a loop then waits for its iteration's verdict (`next_at` None until
  ops/goals.py sets it). A **tell** is one message of the agent to its owner, sent once.
"""

from __future__ import annotations

from datetime import datetime, timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import msgspec
from cronsim import CronSim, CronSimError
from msgspec.structs import replace

TICK = 5 * 60 * 1_000_000  # "A scheduler checks every five minutes which routines are due"
MAX_ROUTINES = 10  # "an agent can hold up to ten routines at once"
MIN_EVERY = 5 * 60  # a routine's interval, in seconds: no shorter than the tick
MAX_EVERY = 366 * 24 * 3600
MAX_TEXT = 2000  # an instruction's or a reminder's text, in characters
MAX_NAME = 60
REMINDER, ROUTINE = "reminder", "routine"
# issue 22's loops and pulses (core/goals.py decides them) fire as schedules too; a `tell` is one message of an agent
# to its owner, sent once (a pulse worth telling, a loop that stopped)
LOOP, PULSE, TELL = "loop", "pulse", "tell"


class Schedule(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    kind: str  # REMINDER or ROUTINE
    workspace: str  # where it was made: where it is delivered, wherever its agent is pinned since
    agent: str
    owner: str  # the person reminded; a routine's: the agent's owner, whose request each run is
    created_by: str
    text: str
    name: str = ""
    every: int | None = None  # seconds
    cron: str | None = None
    tz: str = "UTC"
    next_at: int | None = None  # None: ran (a reminder) or nothing left to run
    paused: bool = False
    runs: int = 0
    last_run_at: int | None = None
    last_result: str | None = None  # "sent", or the reason the send was refused
    created_at: int = 0


class Firing(msgspec.Struct, frozen=True):
    """What a due schedule sends, as a message of `author`'s in `conversation` ("dm:<id>")."""

    author: str
    conversation: str
    to: tuple[str, ...]
    type: str
    title: str
    text: str
    state: str | None = None


def _zone(tz: str) -> ZoneInfo | None:
    try:
        return ZoneInfo(tz) if isinstance(tz, str) and tz else None
    except (ZoneInfoNotFoundError, ValueError):
        return None


def spec_problem(cron: object, every: object, tz: object) -> str | None:
    """Why a routine's schedule cannot be kept (None: it can): exactly one of `cron` and `every`."""
    if (cron is None) == (every is None):
        return "a routine runs on a cron schedule or every so many seconds: give one of cron, every"
    if not isinstance(tz, str) or _zone(tz) is None:
        return f"unknown time zone {tz!r}"
    if every is not None:
        if type(every) is not int or not MIN_EVERY <= every <= MAX_EVERY:
            return f"every is a whole number of seconds from {MIN_EVERY} to {MAX_EVERY}"
        return None
    if not isinstance(cron, str) or len(cron) > 100:
        return "cron is a schedule like '0 8 * * 1-5'"
    try:
        CronSim(cron, datetime(2026, 1, 1, tzinfo=timezone.utc))
    except (CronSimError, ValueError, KeyError, IndexError) as e:
        return f"cron {cron!r}: {e}"
    return None


def on_tick(t: int) -> int:
    """The first tick of the scheduler at or after `t`."""
    return -(-t // TICK) * TICK


def next_run(cron: str | None, every: int | None, tz: str, after: int) -> int | None:
    """A routine's next run after `after`, on the tick it falls on (None: a cron that never matches again)."""
    if every is not None:
        return on_tick(after + every * 1_000_000)
    start = datetime.fromtimestamp(after / 1e6, tz=_zone(tz) or timezone.utc)
    try:
        nxt = next(CronSim(cron, start))
    except StopIteration:
        return None
    return on_tick(int(nxt.timestamp()) * 1_000_000)


def routine_problem(existing: int) -> str | None:
    """Whether an agent holding `existing` routines may be given one more."""
    if existing >= MAX_ROUTINES:
        return f"an agent holds at most {MAX_ROUTINES} routines"
    return None


def text_problem(text: object, name: object = "") -> str | None:
    if not isinstance(text, str) or not text.strip() or len(text) > MAX_TEXT:
        return f"the text is 1 to {MAX_TEXT} characters"
    if not isinstance(name, str) or len(name) > MAX_NAME:
        return f"a name is at most {MAX_NAME} characters"
    return None


def fire(s: Schedule, now: int) -> Firing | None:
    """What `s` sends at `now` (None: nothing is due)."""
    if s.paused or s.next_at is None or now < s.next_at:
        return None
    if s.kind == REMINDER:
        head = s.text.strip().splitlines()[0][:50]
        return Firing(s.agent, f"dm:{s.owner}", (s.owner,), "inform", f"Reminder: {head}",
                      f"Reminder: {s.text}", state="done")
    if s.kind == TELL:
        return Firing(s.agent, f"dm:{s.owner}", (s.owner,), "inform", s.name or "Pulse", s.text, state="done")
    name = s.name or s.text.strip().splitlines()[0].lstrip("-*• ")[:40]  # (a checklist's first line, unbulleted)
    if s.kind == LOOP:  # seed 003 §39: "Every iteration ends the same way: the agent reports continue, done, or stuck"
        n = s.runs + 1
        return Firing(s.owner, f"dm:{s.agent}", (s.agent,), "request", f"Loop: {name} (iteration {n})",
                      f"{s.text}\n\n(loop {s.id}, iteration {n}: end it with loop_verdict: continue, done or stuck, "
                      "and a report)")
    if s.kind == PULSE:  # §34: "a self-started turn produces a structured report"
        return Firing(s.owner, f"dm:{s.agent}", (s.agent,), "request", f"Pulse: {name}",
                      f"{s.text}\n\n(pulse {s.id}: go through this checklist and answer with pulse_report)")
    title = f"Routine: {name}"
    return Firing(s.owner, f"dm:{s.agent}", (s.agent,), "request", title, s.text)


def after_run(s: Schedule, now: int, result: str) -> Schedule:
    """`s` once it ran at `now` with `result`: a reminder is spent; a routine's (a pulse's) next run is counted from
    now, so runs missed while the server was down are run once, not once per missed interval."""
    if s.kind == ROUTINE:
        nxt = next_run(s.cron, s.every, s.tz, now)
    elif s.kind == PULSE:
        nxt = now + (s.every or MIN_EVERY) * 1_000_000
    else:  # a reminder and a tell are spent; a loop waits for its iteration's verdict (core/goals.py)
        nxt = None
    return replace(s, next_at=nxt, runs=s.runs + 1, last_run_at=now, last_result=result)


def resumed(s: Schedule, now: int) -> Schedule:
    """A paused schedule set going again: a routine from its next run after now (what it missed is not run);
    a reminder whose time passed while paused runs at once."""
    if s.kind == ROUTINE:
        return replace(s, paused=False, next_at=next_run(s.cron, s.every, s.tz, now))
    if s.kind == PULSE:
        return replace(s, paused=False, next_at=now + (s.every or MIN_EVERY) * 1_000_000)
    return replace(s, paused=False)
