"""Reminders and routines over real websockets, on both stores, with the writer on a clock the test moves
(core/schedule.py decides; the writer sends each due one through the one send pipeline)."""

from __future__ import annotations

import asyncio

import pytest

from ygg_server.ops import admin

from ..backends import PW, serving

pytestmark = pytest.mark.backends("sqlite", "postgres")

HOUR = 3600 * 10**6


class Clock:
    def __init__(self, now: int):
        self.now = now

    def __call__(self) -> int:
        return self.now


def _team(server) -> tuple[str, dict]:
    server.admin(admin.add_person, "alice", PW)
    server.admin(admin.add_person, "bob", PW)
    ws = server.admin(admin.add_workspace, "team", "alice")["id"]
    server.admin(admin.add_member, ws, "bob")
    keys = {}
    for name in ("researcher", "reviewer"):
        keys[name] = server.admin(admin.add_agent, name, "alice")["api_key"]
        server.admin(admin.fund, name, 1000, ws_ref=ws)
    return ws, keys


async def _history(client, ws: str, conv: str, want: int = 1, timeout: float = 10.0) -> list[dict]:
    """The messages of `conv`, once there are `want` of them (the writer runs them at its next batch)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        reply = await client.request("history", workspace=ws, conversation=conv)
        msgs = reply.get("messages", [])  # (a direct conversation nobody wrote in yet is not_found)
        if len(msgs) >= want or asyncio.get_running_loop().time() > deadline:
            return msgs
        await asyncio.sleep(0.05)


async def _tasks(bot, quiet: float = 0.4) -> set[str]:
    """The messages delivered to `bot` until none comes for `quiet` seconds (acked)."""
    seen = set()
    while True:
        try:
            d = await bot.next_delivery(timeout=quiet)
        except (asyncio.TimeoutError, TimeoutError):
            return seen
        seen.add(d["message"]["id"])
        await bot.ack([d["id"]])


async def test_a_reminder_is_delivered_in_the_direct_conversation_of_the_workspace_it_was_made_in(
        backend, database):
    """Seed 003 §42: "A reminder always shows up in a direct message with its owner, never in some conversation
    the agent picks [...] it is stamped with the workspace it was made in, so it is delivered back there"."""
    clock = Clock(1_800_000_000 * 10**6)
    async with serving(backend, database, clock=clock) as server:
        ws, keys = _team(server)
        alice = await server.person("alice")
        made = await alice.call("add_reminder", workspace=ws, agent="researcher", at=clock.now + HOUR,
                                text="call the venue")
        s = made["schedule"]
        assert s["workspace"] == ws and s["kind"] == "reminder" and s["next_at"] == clock.now + HOUR
        # the agent is pinned elsewhere since: the reminder still comes back here
        other = server.admin(admin.add_workspace, "elsewhere", "alice")["id"]
        assert other != ws
        await asyncio.sleep(0.2)
        assert await _history(alice, ws, "dm:researcher", timeout=0.3) == [], "not before its time"
        clock.now += HOUR
        msgs = [m for m in await _history(alice, ws, "dm:researcher") if not m["author"].startswith("system")]
        assert [m["text"] for m in msgs] == ["Reminder: call the venue"]
        assert msgs[0]["author"].startswith("agent.")  # (its topic closes as any: the person says done, or an hour)
        assert (await _history(alice, ws, "general", want=0, timeout=0)) == [], "never in General"
        listed = (await alice.call("list_schedules", workspace=ws))["schedules"]
        assert listed[0]["runs"] == 1 and listed[0]["next_at"] is None and listed[0]["last_result"] == "sent"
        clock.now += HOUR
        await asyncio.sleep(0.3)
        again = [m for m in await _history(alice, ws, "dm:researcher") if not m["author"].startswith("system")]
        assert len(again) == 1, "a reminder runs once"


async def test_a_routine_is_a_task_for_its_agent_and_at_most_ten(backend, database):
    """Seed 003 §36: "A scheduler checks every five minutes which routines are due and hands each one to its agent
    as a real task"; §35: "an agent can hold up to ten routines at once"."""
    clock = Clock(1_800_000_000 * 10**6)
    async with serving(backend, database, clock=clock) as server:
        ws, keys = _team(server)
        alice = await server.person("alice")
        bot = await server.client(api_key=keys["researcher"])
        made = (await alice.call("add_routine", workspace=ws, agent="researcher", name="digest",
                                 text="summarise the inbox", every=3600))["schedule"]
        assert made["next_at"] % (300 * 10**6) == 0, "on the five-minute tick"
        for i in range(9):
            await alice.call("add_routine", workspace=ws, agent="researcher", text=f"r{i}", every=86400)
        with pytest.raises(Exception) as e:
            await alice.call("add_routine", workspace=ws, agent="researcher", text="eleventh", every=86400)
        assert "routine_limit" in str(e.value)
        bob = await server.person("bob")
        with pytest.raises(Exception) as e:  # not bob's agent
            await bob.call("add_routine", workspace=ws, agent="researcher", text="x", every=3600)
        assert "permission_denied" in str(e.value)
        assert (await bob.call("list_schedules", workspace=ws))["schedules"] == [], "not shown to others"

        clock.now = made["next_at"] + 5 * HOUR  # the server missed five runs (it was busy or down)
        d = await bot.next_delivery(timeout=10)
        assert d["message"]["text"] == "summarise the inbox" and d["wake"] is True
        assert d["message"]["type"] == "request" and d["message"]["title"] == "Routine: digest"
        assert await _tasks(bot) <= {d["message"]["id"]}, "missed runs run once, not once per missed interval"
        listed = {s["id"]: s for s in (await alice.call("list_schedules", workspace=ws))["schedules"]}
        assert listed[made["id"]]["runs"] == 1 and listed[made["id"]]["next_at"] > clock.now

        paused = (await alice.call("pause_schedule", workspace=ws, id=made["id"], paused=True))["schedule"]
        assert paused["paused"] is True
        clock.now += 3 * HOUR
        assert await _tasks(bot) <= {d["message"]["id"]}, "a paused routine does not run"
        assert (await alice.call("delete_schedule", workspace=ws, id=made["id"]))["deleted"] == made["id"]
        assert made["id"] not in {s["id"] for s in (await alice.call("list_schedules", workspace=ws))["schedules"]}


async def test_what_fell_due_while_the_server_was_down_runs_once_when_it_is_back(backend, database):
    """Issue 22: "a run missed while the server was down is run once at start, not once per missed interval";
    seed 003 §41: a reminder "runs as scheduled work at the right time; the agent does not have to somehow
    remember it between turns" (it is stored, so a restart keeps it)."""
    clock = Clock(1_800_000_000 * 10**6)
    async with serving(backend, database, clock=clock) as server:
        ws, keys = _team(server)
        alice = await server.person("alice")
        await alice.call("add_reminder", workspace=ws, agent="researcher", at=clock.now + HOUR, text="renew")
        routine = (await alice.call("add_routine", workspace=ws, agent="researcher", text="check the queue",
                                    every=3600))["schedule"]
    clock.now += 10 * HOUR  # down for ten hours: ten routine runs and the reminder missed
    async with serving(backend, database, clock=clock) as server:
        alice = await server.person("alice")
        bot = await server.client(api_key=keys["researcher"])
        msgs = [m for m in await _history(alice, ws, "dm:researcher", want=2) if not m["author"].startswith("system")]
        assert sorted(m["text"] for m in msgs) == ["Reminder: renew", "check the queue"], "each once"
        assert len(await _tasks(bot)) == 1
        listed = {s["id"]: s for s in (await alice.call("list_schedules", workspace=ws))["schedules"]}
        assert listed[routine["id"]]["runs"] == 1


async def test_an_agent_sets_a_reminder_for_its_owner_and_its_own_routines_once_allowed(backend, database):
    """Seed 003 §41: "An agent can set a reminder just as a person can"; §35 and issue 22: routines are "created
    and managed by the agent's owner and by the agent itself (with the owner's standing permission)"."""
    clock = Clock(1_800_000_000 * 10**6)
    async with serving(backend, database, clock=clock) as server:
        ws, keys = _team(server)
        alice = await server.person("alice")
        bot = await server.client(api_key=keys["researcher"])
        made = (await bot.call("add_reminder", workspace=ws, at=clock.now + HOUR, text="the venue closes Friday"))
        assert made["schedule"]["owner_name"] == "@alice" and made["schedule"]["agent_name"] == "researcher"
        with pytest.raises(Exception) as e:
            await bot.call("add_routine", workspace=ws, text="check the queue", every=3600)
        assert "permission_denied" in str(e.value)
        assert (await alice.call("allow_routines", agent="researcher"))["allowed"] is True
        own = (await bot.call("add_routine", workspace=ws, text="check the queue", every=3600))["schedule"]
        assert own["created_by"] == own["agent"] and own["owner_name"] == "@alice"
        mine = {s["id"]: s for s in (await bot.call("list_schedules", workspace=ws))["schedules"]}
        assert set(mine) == {made["schedule"]["id"], own["id"]} and all(s["may_manage"] for s in mine.values())
        await alice.call("allow_routines", agent="researcher", allow=False)
        assert (await bot.call("delete_schedule", workspace=ws, id=made["schedule"]["id"]))["deleted"]
        with pytest.raises(Exception) as e:  # its routines are its owner's again
            await bot.call("pause_schedule", workspace=ws, id=own["id"])
        assert "not_found" in str(e.value)
        clock.now += HOUR
        msgs = [m for m in await _history(alice, ws, "dm:researcher", timeout=0.5) if m["text"].startswith("Remind")]
        assert msgs == [], "a deleted reminder does not run"
