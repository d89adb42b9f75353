"""core/schedule.py with a fake clock: when reminders and routines run, and what they send."""

from __future__ import annotations

from datetime import datetime, timezone
from zoneinfo import ZoneInfo

from ygg_server.core import schedule as s
from ygg_server.core.schedule import REMINDER, ROUTINE, Schedule

US = 1_000_000


def _us(dt: datetime) -> int:
    return int(dt.timestamp()) * US


def _local(us: int, tz: str) -> datetime:
    return datetime.fromtimestamp(us / US, tz=ZoneInfo(tz))


def _routine(**kw) -> Schedule:
    base = dict(id="r1", kind=ROUTINE, workspace="ws-a", agent="agent.x", owner="human.o", created_by="human.o",
                text="refresh the report", name="report", cron="0 8 * * *", tz="UTC")
    return Schedule(**{**base, **kw})


def test_a_cron_routine_runs_at_its_local_time_on_the_tick():
    """Seed 003 §35: "A routine runs either at a fixed interval or on a cron-style schedule"."""
    now = _us(datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc))
    nxt = s.next_run("0 8 * * *", None, "Europe/Berlin", now)
    assert _local(nxt, "Europe/Berlin") == datetime(2026, 6, 2, 8, 0, tzinfo=ZoneInfo("Europe/Berlin"))
    odd = s.next_run("7 8 * * *", None, "UTC", now)  # 08:07 falls on the 08:10 tick
    assert datetime.fromtimestamp(odd / US, tz=timezone.utc) == datetime(2026, 6, 2, 8, 10, tzinfo=timezone.utc)


def test_the_scheduler_looks_every_five_minutes():
    """Seed 003 §36: "A scheduler checks every five minutes which routines are due"."""
    assert s.TICK == 5 * 60 * US
    assert s.on_tick(0) == 0 and s.on_tick(1) == s.TICK and s.on_tick(s.TICK) == s.TICK
    every = s.next_run(None, 3600, "UTC", 123 * US)
    assert every % s.TICK == 0 and every >= 3723 * US
    assert s.spec_problem(None, 60, "UTC"), "an interval shorter than the tick is refused"


def test_daylight_saving_changes_neither_skip_nor_double_a_run():
    """Core decision (issue 22): "daylight-saving changes that neither skip nor double a run" (Debian cron: a run in the hour
    that does not exist runs when the clock jumps; one in the hour that happens twice runs once)."""
    tz = "Europe/Berlin"
    spring = _us(datetime(2026, 3, 28, 12, 0, tzinfo=ZoneInfo(tz)))  # 29 March: 02:00 -> 03:00
    runs, t = [], spring
    for _ in range(3):
        t = s.next_run("30 2 * * *", None, tz, t)
        runs.append(_local(t, tz).strftime("%m-%d %H:%M"))
    assert runs == ["03-29 03:00", "03-30 02:30", "03-31 02:30"], "not skipped on the day 02:30 does not exist"
    autumn = _us(datetime(2026, 10, 24, 12, 0, tzinfo=ZoneInfo(tz)))  # 25 October: 03:00 -> 02:00
    runs, t = [], autumn
    for _ in range(3):
        t = s.next_run("30 2 * * *", None, tz, t)
        runs.append(t)
    days = [_local(r, tz).strftime("%m-%d") for r in runs]
    assert days == ["10-25", "10-26", "10-27"], "once on the day 02:30 happens twice"


def test_a_missed_run_runs_once_at_start_not_once_per_missed_interval():
    """Core decision (issue 22): "a run missed while the server was down is run once at start, not once per missed interval"."""
    r = _routine(cron=None, every=3600, next_at=10 * s.TICK)
    back = r.next_at + 30 * 3600 * US  # down for 30 hours
    assert s.fire(r, back) is not None
    after = s.after_run(r, back, "sent")
    assert after.runs == 1 and after.next_at > back, "counted from now: the 29 missed runs are not queued"
    assert s.fire(after, back) is None


def test_at_most_ten_routines():
    """Seed 003 §35: "an agent can hold up to ten routines at once"."""
    assert s.routine_problem(9) is None
    assert s.routine_problem(10) and s.routine_problem(11)


def test_a_routine_is_a_request_to_its_agent_in_its_own_workspace():
    """Seed 003 §36: "Delivery is always into the workspace the routine is attached to, not wherever the agent
    happens to be pinned at that time"."""
    r = _routine(next_at=100)
    f = s.fire(r, 100)
    assert f.author == "human.o" and f.conversation == "dm:agent.x" and f.to == ("agent.x",)
    assert f.type == "request" and f.title == "Routine: report" and f.text == "refresh the report"
    assert s.fire(r, 99) is None and s.fire(_routine(next_at=100, paused=True), 200) is None


def test_a_reminder_goes_to_its_owner_once():
    """Seed 003 §42: "A reminder always shows up in a direct message with its owner"."""
    m = Schedule(id="m", kind=REMINDER, workspace="ws-a", agent="agent.x", owner="human.p", created_by="agent.x",
                 text="the venue closes Friday", next_at=500)
    f = s.fire(m, 600)
    assert f.author == "agent.x" and f.conversation == "dm:human.p" and f.to == ("human.p",)
    assert f.text == "Reminder: the venue closes Friday" and f.type == "inform"
    done = s.after_run(m, 600, "sent")
    assert done.next_at is None and s.fire(done, 10**12) is None
    assert s.resumed(Schedule(**{**{k: getattr(m, k) for k in m.__struct_fields__}, "paused": True}), 700).next_at == 500


def test_schedules_that_cannot_be_kept_are_refused():
    """Core decision (issue 22): a routine runs on one cron schedule (Debian cron) or one interval no shorter than
    the tick, in a time zone that exists; its text is 1 to 2,000 characters."""
    assert s.spec_problem("0 8 * * *", 3600, "UTC"), "one of cron, every"
    assert s.spec_problem(None, None, "UTC")
    assert s.spec_problem("99 * * * *", None, "UTC")
    assert s.spec_problem("0 8 * * *", None, "Mars/Olympus")
    assert s.spec_problem("0 8 * * 1-5", None, "America/New_York") is None
    assert s.text_problem("") and s.text_problem("x" * 2001) and s.text_problem("ok") is None
