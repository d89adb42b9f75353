"""The one tool registry on the server (issue 23; seed 003 §51-52), over loopback on both stores."""

from __future__ import annotations

import httpx
import pytest

from ygg_server.client import Client, Refused

from tests.tools.conftest import use_web

pytestmark = pytest.mark.backends("sqlite", "postgres")


async def _agent(server, name="researcher") -> Client:
    return await server.client(api_key=server.keys[name])


async def test_a_call_is_validated_against_the_registry_and_routed_to_its_handler(team, fake_web):
    """§51: "A directive or tool call is validated against this registry, which also routes the call to the right
    handler." §52: "An agent sees only the tools attached to it"."""
    fake_web.pages["https://search.test/search"] = httpx.Response(200, json={"results": [
        {"title": "Ygg", "url": "https://ygg.test/", "content": "a chat"}]})
    use_web(team.gw, fake_web.web(search_url="https://search.test/search"))
    alice, agent = await team.person("alice"), await _agent(team)
    mine = await agent.call("list_tools")
    assert "web_search" not in [t["name"] for t in mine["tools"]] and mine["configured"] is False
    assert "catalog" not in mine  # the catalog is its owner's to see
    with pytest.raises(Refused) as e:
        await agent.call("call_tool", workspace=team.ws, tool="web_search", arguments={"query": "ygg"})
    assert e.value.reason == "tool_not_attached" and fake_web.seen == []

    out = await alice.call("attach_tool", agent="researcher", tool="web_search")
    assert "web_search" in out["tools"]
    assert "web_search" in [t["name"] for t in (await agent.call("list_tools"))["tools"]]
    for bad, why in (({"query": 3}, "query must be a string"), ({}, "lacks query"),
                     ({"query": "x", "limit": 99}, "limit must be from 1 to 10"), ({"query": "x", "q": 1}, "has no q")):
        with pytest.raises(Refused) as e:
            await agent.call("call_tool", workspace=team.ws, tool="web_search", arguments=bad)
        assert e.value.reason == "bad_arguments" and why in e.value.frame["detail"]
    assert fake_web.seen == []  # nothing invalid reached the handler
    got = await agent.call("call_tool", workspace=team.ws, tool="web_search", arguments={"query": "ygg"})
    assert got["ok"] and got["result"] == [{"title": "Ygg", "url": "https://ygg.test/", "snippet": "a chat"}]
    assert fake_web.seen[0].url.params["q"] == "ygg"

    await alice.call("detach_tool", agent="researcher", tool="web_search")
    with pytest.raises(Refused) as e:
        await agent.call("call_tool", workspace=team.ws, tool="web_search", arguments={"query": "ygg"})
    assert e.value.reason == "tool_not_attached"


async def test_only_the_owner_attaches_and_no_one_else_learns_of_the_agent(team):
    """Attach/detach by the owner: the agent itself is refused, another person is answered as for no agent."""
    agent, bob = await _agent(team), await team.person("bob")
    with pytest.raises(Refused) as e:
        await agent.call("attach_tool", agent=(await agent.call("whoami"))["id"], tool="web_search")
    assert e.value.reason == "permission_denied"
    for ref in ("researcher", "nobody"):
        with pytest.raises(Refused) as e:
            await bob.call("attach_tool", agent=ref, tool="web_search")
        assert e.value.reason == "not_found"
    alice = await team.person("alice")
    with pytest.raises(Refused) as e:
        await alice.call("attach_tool", agent="researcher", tool="teleport")
    assert e.value.reason == "unknown_tool"
    with pytest.raises(Refused) as e:  # a bridge tool is not called on the server
        await agent.call("call_tool", workspace=team.ws, tool="send_message", arguments={"text": "hi"})
    assert e.value.reason == "tool_not_attached"


async def test_an_owners_api_connection_keeps_its_header_encrypted_and_sends_it_only_there(team, fake_web):
    """Issue 23: "custom HTTP API connections an owner sets up (URL, method, auth header kept encrypted)"."""
    fake_web.pages["https://crm.test/v1/people"] = httpx.Response(200, json={"people": ["ann"]})
    use_web(team.gw, fake_web.web())
    alice, agent = await team.person("alice"), await _agent(team)
    with pytest.raises(Refused) as e:
        await alice.call("add_connection", name="crm", url="ftp://crm.test/", header_name="X", header_value="y")
    assert e.value.reason == "bad_connection"
    out = await alice.call("add_connection", name="crm", url="https://crm.test/v1", method="get",
                           header_name="Authorization", header_value="Bearer s3cret", description="Our CRM")
    assert out["tool"] == "api_crm"
    stored = team.conn.execute("SELECT header_sealed, url FROM connections WHERE name = 'crm'").fetchone()
    assert "s3cret" not in stored[0] and stored[0]
    listed = (await alice.call("list_connections"))["connections"]
    assert listed == [{"name": "crm", "tool": "api_crm", "url": "https://crm.test/v1", "method": "GET",
                       "header_name": "Authorization", "has_secret": True, "description": "Our CRM"}]
    await alice.call("attach_tool", agent="researcher", tool="api_crm")
    tools = {t["name"]: t for t in (await agent.call("list_tools"))["tools"]}
    assert "s3cret" not in str(tools["api_crm"])
    got = await agent.call("call_tool", workspace=team.ws, tool="api_crm", arguments={"path": "people"})
    assert got["result"] == {"status": 200, "json": {"people": ["ann"]}}
    assert fake_web.seen[-1].headers["authorization"] == "Bearer s3cret"
    assert "s3cret" not in str(got)
    with pytest.raises(Refused):  # bob has no such connection, and cannot remove alice's
        await (await team.person("bob")).call("remove_connection", name="crm")
    await alice.call("remove_connection", name="crm")
    with pytest.raises(Refused) as e:
        await agent.call("call_tool", workspace=team.ws, tool="api_crm", arguments={})
    assert e.value.reason == "tool_not_attached"
