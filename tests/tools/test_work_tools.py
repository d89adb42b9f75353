"""The registry's task and routine tools, and registry calls held by the approvals (issue 23; seed 003 §35, §41,
§51-52, §59-61), over loopback on both stores."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from ygg_server.client import Refused
from ygg_server.core import approvals as core_approvals

from tests.backends import serving
from tests.net.test_approvals import _event
from tests.net.test_schedules import Clock, _team
from tests.tools.conftest import use_web

pytestmark = pytest.mark.backends("sqlite", "postgres")

WORK = ("schedules_list", "routine_create", "reminder_create", "schedule_pause", "schedule_delete", "task_create",
        "task_list")


async def _call(bot, ws, tool, **arguments) -> dict:
    return await bot.call("call_tool", workspace=ws, tool=tool, arguments=arguments)


async def _setup(server, *tools):
    ws, keys = _team(server)
    alice = await server.person("alice")
    for t in tools:
        await alice.call("attach_tool", agent="researcher", tool=t)
    return ws, alice, await server.client(api_key=keys["researcher"]), keys


async def test_an_agent_manages_its_own_routines_with_its_owners_standing_permission(backend, database):
    """Seed 003 §35: "A routine runs either at a fixed interval or on a cron-style schedule, and an agent can hold up
    to ten routines at once"; issue 23: routines "created and managed by the agent's owner and by the agent itself
    (with the owner's standing permission)"."""
    async with serving(backend, database, clock=Clock(1_800_000_000 * 10**6)) as server:
        ws, alice, bot, _ = await _setup(server, *WORK)
        got = await _call(bot, ws, "routine_create", text="Refresh the report", every=3600)
        assert not got["ok"] and got["error"].startswith("permission_denied")
        await alice.call("allow_routines", agent="researcher")
        made = []
        for i in range(10):
            got = await _call(bot, ws, "routine_create", text=f"Check queue {i}", name=f"q{i}",
                              **({"every": 3600} if i % 2 else {"cron": "0 8 * * 1-5", "tz": "Europe/Paris"}))
            assert got["ok"], got
            made.append(got["result"]["id"])
        eleventh = await _call(bot, ws, "routine_create", text="One too many", every=3600)
        assert not eleventh["ok"] and eleventh["error"].startswith("routine_limit")
        bad = await _call(bot, ws, "routine_create", text="x", cron="not a cron")
        assert not bad["ok"] and bad["error"].startswith("bad_schedule")

        listed = (await _call(bot, ws, "schedules_list"))["result"]
        assert sorted(s["id"] for s in listed["schedules"]) == sorted(made) and listed["max_routines"] == 10
        paused = await _call(bot, ws, "schedule_pause", id=made[0])
        assert paused["ok"] and paused["result"]["paused"] is True
        assert (await _call(bot, ws, "schedule_pause", id=made[0], paused=False))["result"]["paused"] is False
        assert (await _call(bot, ws, "schedule_delete", id=made[1]))["ok"]
        # its owner sees and manages what it made, from the same list the TUI shows
        mine = (await alice.call("list_schedules", workspace=ws))["schedules"]
        assert len(mine) == 9 and all(s["may_manage"] and s["created_by"] == s["agent"] for s in mine)
        # the owner takes the permission back: the agent no longer manages its routines
        await alice.call("allow_routines", agent="researcher", allow=False)
        got = await _call(bot, ws, "schedule_delete", id=made[2])
        assert not got["ok"] and "not found" in got["error"]


async def test_an_agent_sets_a_reminder_for_its_owner_and_opens_a_task_through_the_send_path(backend, database):
    """Seed 003 §41: "An agent can set a reminder just as a person can"; §42: "A reminder always shows up in a direct
    message with its owner"; issue 23: tasks "created and listed" by the agent, each a request topic sent as any
    message."""
    async with serving(backend, database, clock=Clock(1_800_000_000 * 10**6)) as server:
        ws, alice, bot, keys = await _setup(server, *WORK)
        got = await _call(bot, ws, "reminder_create", text="Renew the certificate", in_minutes=90)
        assert got["ok"] and got["result"]["kind"] == "reminder"
        both = await _call(bot, ws, "reminder_create", text="x", in_minutes=5, at="2027-01-01T09:00:00Z")
        assert not both["ok"] and "one of at" in both["error"]
        at = await _call(bot, ws, "reminder_create", text="Standup", at="2027-02-01T09:00:00+01:00")
        assert at["ok"], at
        assert at["result"]["next_at"] == "2027-02-01T08:00:00+00:00"
        reminders = [s for s in (await alice.call("list_schedules", workspace=ws))["schedules"]
                     if s["kind"] == "reminder"]
        assert [s["owner_name"] for s in reminders] == ["@alice", "@alice"], "delivered to its owner"

        task = await _call(bot, ws, "task_create", to="reviewer", title="Review the draft", text="Please review it.")
        assert task["ok"], task
        t = task["result"]
        assert t["to"] == "reviewer" and t["cost"] >= 0
        reviewer = await server.client(api_key=keys["reviewer"])
        seen = (await reviewer.call("topic", workspace=ws, topic=t["task"]))["topic"]
        assert seen["title"] == "Review the draft" and seen["status"] == "open"
        assert (await reviewer.call("whoami"))["id"] in seen["members"], "the request reached it as any request"
        listed = (await _call(bot, ws, "task_list"))["result"]
        assert [x["task"] for x in listed] == [t["task"]] and listed[0]["opened_by_me"]
        assert listed[0]["title"] == "Review the draft"
        for to in ("nobody", "researcher"):
            got = await _call(bot, ws, "task_create", to=to, text="x")
            assert not got["ok"] and got["error"].startswith("unknown_recipient")


async def test_a_registry_call_under_an_ask_rule_waits_for_a_person_and_runs_once_approved(backend, database, fake_web):
    """Seed 003 §59: "Some tool calls are covered by a standing permission, decided once and reused. Others need a
    person to approve or deny that particular call before it runs"; §61: the agent "stops mid-task to ask before
    going on"."""
    async with serving(backend, database, clock=Clock(1_800_000_000 * 10**6)) as server:
        ws, alice, bot, _ = await _setup(server, "fetch_page")
        fake_web.pages["https://docs.test/a"] = httpx.Response(200, text="<p>hello</p>",
                                                              headers={"content-type": "text/html"})
        use_web(server.gw, fake_web.web())
        # no rule: a tool that needs no approval runs
        assert (await _call(bot, ws, "fetch_page", url="https://docs.test/a"))["ok"]
        await alice.call("set_tool_rule", workspace=ws, agent="researcher", rule="fetch_page", effect="ask")
        await alice.call("set_tool_rule", workspace=ws, agent="researcher", rule="fetch_page(https://evil.test/*)",
                         effect="deny")
        denied = await _call(bot, ws, "fetch_page", url="https://evil.test/x")
        assert not denied["ok"] and "standing rule denies it" in denied["error"] and len(fake_web.seen) == 1

        held = await _call(bot, ws, "fetch_page", url="https://docs.test/a")
        assert held["pending"] and not held["ok"] and len(fake_web.seen) == 1, "not run before a person decides"
        aid = held["approval"]["id"]
        card = await _event(alice, "approval")
        assert card["approval"]["id"] == aid and card["approval"]["arg"] == "https://docs.test/a"
        early = await bot.call("call_tool", workspace=ws, tool="fetch_page", arguments={"url": "https://docs.test/a"},
                               approval=aid)
        assert early["pending"] and len(fake_web.seen) == 1, "still pending: still not run"
        with pytest.raises(Refused) as e:  # an approval is for its one call
            await bot.call("call_tool", workspace=ws, tool="fetch_page", arguments={"url": "https://docs.test/b"},
                           approval=aid)
        assert e.value.reason == "bad_approval"
        await alice.call("decide_approval", workspace=ws, id=aid, answer="approve")
        ran = await bot.call("call_tool", workspace=ws, tool="fetch_page", arguments={"url": "https://docs.test/a"},
                             approval=aid)
        assert ran["ok"] and "hello" in str(ran["result"]) and len(fake_web.seen) == 2
        with pytest.raises(Refused) as e:
            await bot.call("call_tool", workspace=ws, tool="fetch_page", arguments={"url": "https://docs.test/a"},
                           approval=aid)
        assert e.value.reason == "approval_used", "one yes runs one call"

        # denied, and expired: answered so, never run
        aid = (await _call(bot, ws, "fetch_page", url="https://docs.test/a"))["approval"]["id"]
        await alice.call("decide_approval", workspace=ws, id=aid, answer="deny")
        no = await bot.call("call_tool", workspace=ws, tool="fetch_page", arguments={"url": "https://docs.test/a"},
                            approval=aid)
        assert not no["ok"] and "a person denied it" in no["error"]
        aid = (await _call(bot, ws, "fetch_page", url="https://docs.test/a"))["approval"]["id"]
        server.gw.clock.now += core_approvals.EXPIRES_AFTER + 1
        late = await bot.call("call_tool", workspace=ws, tool="fetch_page", arguments={"url": "https://docs.test/a"},
                              approval=aid)
        assert not late["ok"] and late["decision"] == "expired" and len(fake_web.seen) == 2
        # an allow rule: decided once and reused
        await alice.call("set_tool_rule", workspace=ws, agent="researcher", rule="fetch_page(https://docs.test/*)",
                         effect="allow")
        held = await _call(bot, ws, "fetch_page", url="https://docs.test/a")
        assert held.get("pending"), "ask is judged before allow"
        await alice.call("set_tool_rule", workspace=ws, agent="researcher", rule="fetch_page", effect=None)
        assert (await _call(bot, ws, "fetch_page", url="https://docs.test/a"))["ok"]


async def test_an_api_connection_that_writes_is_asked_first(backend, database, fake_web):
    """Seed 003 §59: a person approves "especially riskier ones": an owner's API connection that writes (POST) is
    held for approval unless a standing rule allows it; a GET one runs."""
    async with serving(backend, database, clock=Clock(1_800_000_000 * 10**6)) as server:
        ws, alice, bot, _ = await _setup(server)
        fake_web.pages["https://crm.test/v1/notes"] = httpx.Response(201, json={"id": 7})
        use_web(server.gw, fake_web.web())
        await alice.call("add_connection", name="crm", url="https://crm.test/v1/notes", method="POST")
        await alice.call("attach_tool", agent="researcher", tool="api_crm")
        held = await _call(bot, ws, "api_crm", body={"text": "hi"})
        assert held["pending"] and fake_web.seen == []
        await alice.call("set_tool_rule", workspace=ws, agent="researcher", rule="api_crm", effect="allow")
        ran = await _call(bot, ws, "api_crm", body={"text": "hi"})
        assert ran["ok"] and ran["result"]["json"] == {"id": 7} and len(fake_web.seen) == 1
        await asyncio.sleep(0)
