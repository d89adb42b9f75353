import asyncio
import pytest
from ygg_server import admin
from tests.net.test_events import _event

@pytest.fixture
def store() -> str:
    return "postgres"

async def test_probe(team):
    other = await team.node()
    url_b = f"ws://127.0.0.1:{other.port}/"
    alice_b = await team.person("alice", url=url_b)
    bob_a = await team.person("bob")
    bob_b = await team.person("bob", url=url_b)
    await alice_b.subscribe(team.ws)
    await bob_b.subscribe(team.ws)
    org = (await alice_b.call("list_orgs"))["orgs"][0]["id"]
    await alice_b.call("add_org_member", org=org, handle="bob")
    await bob_a.call("leave_workspace", workspace=team.ws)
    print("gone", await _event(bob_b, "workspace_gone", timeout=3))
    print("members2", await _event(alice_b, "members", timeout=3))
    await bob_b.subscribe((await bob_b.call("list_workspaces"))["workspaces"][0]["id"])
    print("joinable", await bob_a.call("list_joinable"))
    await bob_a.call("join_workspace", workspace=team.ws)
    print("added", await _event(bob_b, "workspace_added", timeout=3))
    print("members3", await _event(alice_b, "members", timeout=3))
    pres = await alice_b.call("presence", workspace=team.ws)
    print("presence", pres)
