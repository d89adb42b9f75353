"""An agent's memory shared by its owner into another workspace (issue 23), over loopback on both stores."""

from __future__ import annotations

import pytest

from ygg_server.client import Refused
from ygg_server.ops import admin, memory
from ygg_server.ops.membership import remove_member

pytestmark = pytest.mark.backends("sqlite", "postgres")


async def _recall(bot, ws: str, query: str) -> list[dict]:
    """What a turn's recall (list_memories, any word) and the memory_search tool bring, in `ws`."""
    recalled = (await bot.call("list_memories", workspace=ws, query=query, any=True))["memories"]
    searched = await bot.call("call_tool", workspace=ws, tool="memory_search", arguments={"query": query})
    assert [m["id"] for m in searched["result"]] == [m["id"] for m in recalled]
    return recalled


async def test_memory_stays_in_its_workspace_until_its_owner_shares_it_and_never_reaches_another_tenant(team):
    """Issue 23: "memory is per workspace unless its owner shares it, and never crosses a workspace's isolation"."""
    s = team
    lab = s.admin(admin.add_workspace, "lab", "alice")["id"]
    bot = await s.client(api_key=s.keys["researcher"])
    alice, bob = await s.person("alice"), await s.person("bob")
    helper_key = s.admin(admin.add_agent, "helper", "bob")["api_key"]
    helper = await s.client(api_key=helper_key)
    kept = await bot.call("call_tool", workspace=lab, tool="remember",
                          arguments={"note": "The launch code word is tangerine"})
    assert kept["ok"]
    assert await _recall(bot, s.ws, "tangerine") == [], "per workspace: not in team"

    for who, agent in ((bob, "researcher"), (bot, "researcher"), (alice, "nobody")):
        with pytest.raises(Refused) as e:  # nobody but its owner shares it, and others learn nothing of it
            await who.call("share_memory", workspace=lab, agent=agent, into=s.ws)
        assert e.value.reason == "not_found"
    with pytest.raises(Refused) as e:  # bob is not in lab: he cannot pull lab's memory either
        await bob.call("share_memory", workspace=lab, agent="helper", into=s.ws)
    assert e.value.reason == "not_found"
    with pytest.raises(Refused) as e:
        await alice.call("share_memory", workspace=s.ws, agent="researcher", into=s.ws)
    assert e.value.reason == "bad_share"

    got = await alice.call("share_memory", workspace=lab, agent="researcher", into=s.ws)
    assert got["shared"] is True
    found = await _recall(bot, s.ws, "tangerine")
    assert [(m["text"], m["shared_from"]) for m in found] == [("The launch code word is tangerine", lab)]
    listed = (await alice.call("list_memories", workspace=s.ws, agent="researcher"))["memories"]
    assert [m["shared_from"] for m in listed] == [lab], "its owner sees where a memory came from"
    shares = (await alice.call("list_memory_shares", agent="researcher"))["shares"]
    assert [{k: v for k, v in x.items() if k != "at"} for x in shares] == [
        {"agent": got["agent"], "workspace": lab, "workspace_name": "lab", "into": s.ws, "into_name": "team"}]
    assert (await bob.call("list_memory_shares"))["shares"] == []

    # other tenants never see it: bob (a member of team) may not list it; his agent's recall has none of it
    with pytest.raises(Refused):
        await bob.call("list_memories", workspace=s.ws, agent="researcher")
    assert (await helper.call("list_memories", workspace=s.ws, query="tangerine", any=True))["memories"] == []
    # shared, not moved: it cannot be forgotten from team, and stays in lab
    with pytest.raises(Refused):
        await alice.call("forget", workspace=s.ws, agent="researcher", id=found[0]["id"])

    await alice.call("share_memory", workspace=lab, agent="researcher", into=s.ws, share=False)
    assert await _recall(bot, s.ws, "tangerine") == [], "revoked"
    assert len(await _recall(bot, lab, "tangerine")) == 1


async def test_a_share_ends_when_its_owner_leaves_a_workspace(team):
    """Issue 23: memory "never crosses a workspace's isolation": a share counts only while its owner is a member of
    both workspaces."""
    s = team
    bobs = s.admin(admin.add_workspace, "bobs", "bob")["id"]
    s.admin(admin.add_member, bobs, "alice")
    bot = await s.client(api_key=s.keys["researcher"])
    alice = await s.person("alice")
    await bot.call("call_tool", workspace=s.ws, tool="remember", arguments={"note": "alice prefers short answers"})
    await alice.call("share_memory", workspace=s.ws, agent="researcher", into=bobs)
    aid = (await bot.call("whoami"))["id"]
    assert s.admin(memory.readable, aid, bobs) == [bobs, s.ws]
    assert len(await _recall(bot, bobs, "short answers")) == 1
    s.admin(remove_member, bobs, "alice")
    assert s.admin(memory.readable, aid, bobs) == [bobs], "alice is no longer in bob's workspace"
