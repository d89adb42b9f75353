"""The public agent directory (seed 003 §67), over the socket; and a person moving their agent to a host."""

from __future__ import annotations

from ygg_server.client import Refused
from ygg_server.ops import admin
from ygg_server.ops.configure import set_pins_admin

from .conftest import PW


def personal_workspace(server, handle: str) -> str:
    return server.conn.execute("SELECT w.id FROM workspaces w JOIN people p ON p.id = w.personal_of "
                               "WHERE p.handle = ?", (handle,)).fetchone()[0]


async def call_error(client, op: str, **kw) -> str:
    try:
        await client.call(op, **kw)
    except Refused as e:
        return str(e).split(":", 1)[0]
    return ""


async def test_publish_copy_and_the_shared_workspace_rule(server):
    """Seed 003 §67: "an agent pinned to a shared workspace cannot be published to the public agent directory,
    because a public listing can be copied by anyone"."""
    alice = await server.person("alice")
    server.agent("scout", fund=0)
    await alice.call("set_profile", workspace=server.ws, agent="scout", title="Scout", description="Finds things")
    await alice.call("set_persona", agent="scout", text="Curious and brief.")
    # pinned to alice's personal workspace only: published
    server.admin(set_pins_admin, "scout", [personal_workspace(server, "alice")])
    out = await alice.call("publish_agent", agent="scout")
    assert out["name"] == "scout"
    listed = (await alice.call("list_directory"))["listings"]
    assert [(x["name"], x["publisher"], x["title"], x["persona"]) for x in listed] == [("scout", "alice", "Scout", True)]
    # another person copies it into a new agent of their own, with its profile and persona
    server.admin(admin.add_person, "bob", PW)
    bob = await server.person("bob")
    copy = await bob.call("copy_agent", listing=out["listing"], name="bobs-scout")
    assert copy["api_key"].startswith("yggk_") and copy["id"] != out["listing"]
    row = server.conn.execute("SELECT owner, profile FROM agents WHERE id = ?", (copy["id"],)).fetchone()
    assert row[0] == bob.me["id"] and '"Scout"' in row[1]
    assert (await bob.call("get_persona", agent="bobs-scout"))["text"] == "Curious and brief."
    # pinned to the shared team workspace: neither published, nor listed or copied any more
    server.admin(set_pins_admin, "scout", [server.ws])
    assert await call_error(alice, "publish_agent", agent="scout") == "pinned_to_shared_workspace"
    assert (await bob.call("list_directory"))["listings"] == []
    assert await call_error(bob, "copy_agent", listing=out["listing"]) == "not_found"
    # only its owner publishes it
    assert await call_error(bob, "publish_agent", agent=out["listing"]) == "not_found"


async def test_a_person_moves_their_agent_to_a_host_and_back(server):
    """Seed 003 §24: "Switching an agent's runtime from hosted back to local clears its host assignment
    completely"; the owner does it over the socket (`add_host`, `set_runtime`, `list_hosts`)."""
    alice = await server.person("alice")
    rid = server.agent("scout", fund=0)
    made = await alice.call("add_host", name="vm-1")
    assert made["host_key"].startswith("yggh_")
    assert (await alice.call("set_runtime", agent="scout", runtime="hosted", host="vm-1"))["host"] == made["id"]
    hosts = (await alice.call("list_hosts"))["hosts"]
    assert hosts == [{"id": made["id"], "name": "vm-1", "agents": [{"id": rid, "name": "scout"}]}]
    back = await alice.call("set_runtime", agent="scout", runtime="local")
    assert (back["agent"], back["runtime"], back["host"]) == (rid, "local", None)
    assert (await alice.call("list_hosts"))["hosts"][0]["agents"] == []
    assert await call_error(alice, "set_runtime", agent="scout", runtime="hosted", host="nowhere") == "unknown_host"
