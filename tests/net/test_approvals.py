"""Approvals over real websockets (seed 003 §59-61; core/approvals.py decides, ops/approvals.py stores)."""

from __future__ import annotations

import asyncio

import pytest

from ygg_server.client import Refused

from ..backends import serving
from .test_schedules import Clock, _team

pytestmark = pytest.mark.backends("sqlite", "postgres")


async def _event(client, kind: str, timeout: float = 10.0) -> dict:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        e = await client.next_event(timeout=max(0.01, deadline - asyncio.get_running_loop().time()))
        if e.get("kind") == kind:
            return e


async def test_a_call_outside_the_standing_rules_waits_for_a_person_and_an_always_becomes_a_rule(backend, database):
    """Seed 003 §59: "Some tool calls are covered by a standing permission, decided once and reused. Others need a
    person to approve or deny that particular call before it runs"."""
    clock = Clock(1_800_000_000 * 10**6)
    async with serving(backend, database, clock=clock) as server:
        ws, keys = _team(server)
        alice, bob = await server.person("alice"), await server.person("bob")
        bot = await server.client(api_key=keys["researcher"])
        await alice.call("set_tool_rule", workspace=ws, agent="researcher", rule="deploy(prod*)", effect="deny")
        assert (await bot.call("request_approval", workspace=ws, tool="deploy", arg="prod-eu"))["decision"] == "deny"
        asked = await bot.call("request_approval", workspace=ws, tool="deploy", arg="staging")
        assert asked["decision"] == "pending"
        aid = asked["approval"]["id"]
        card = await _event(alice, "approval")
        assert card["approval"]["id"] == aid and card["approval"]["tool"] == "deploy"
        assert [a["id"] for a in (await alice.call("list_approvals", workspace=ws))["approvals"]] == [aid]
        assert (await bob.call("list_approvals", workspace=ws))["approvals"] == [], "bob may not decide"
        with pytest.raises(Refused):
            await bob.call("decide_approval", workspace=ws, id=aid, answer="approve")
        got = await alice.call("decide_approval", workspace=ws, id=aid, answer="always_allow")
        assert got["approval"]["status"] == "approved" and got["rule"] == "deploy(staging)"
        told = await _event(bot, "approval_decided")
        assert told["approval"]["status"] == "approved"
        again = await bot.call("request_approval", workspace=ws, tool="deploy", arg="staging")
        assert again["decision"] == "allow", "decided once and reused"
        assert (await bot.call("request_approval", workspace=ws, tool="deploy", arg="prod-us"))["decision"] == "deny", \
            "deny is judged before allow"


async def test_a_pending_approval_expires_and_is_answered_expired(backend, database):
    """Seed 003 §60: "A pending approval does not stay open forever: it has an expiry, and a background clean-up
    removes requests nobody answered, so an old prompt cannot block an agent forever, or be approved much later"."""
    clock = Clock(1_800_000_000 * 10**6)
    async with serving(backend, database, clock=clock) as server:
        ws, keys = _team(server)
        alice = await server.person("alice")
        bot = await server.client(api_key=keys["researcher"])
        aid = (await bot.call("request_approval", workspace=ws, tool="pay", arg="42 EUR"))["approval"]["id"]
        clock.now += 10 * 60 * 10**6
        assert (await bot.call("get_approval", workspace=ws, id=aid))["approval"]["status"] == "expired"
        with pytest.raises(Refused) as e:
            await alice.call("decide_approval", workspace=ws, id=aid, answer="approve")
        assert "approval_expired" in str(e.value)
        assert (await alice.call("list_approvals", workspace=ws))["approvals"] == []
