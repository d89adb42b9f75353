"""An agent's pins (seed 003 §19: "You can restrict it by pinning it to chosen workspaces") go with a workspace
that is deleted (docs/protocol.md, `delete_workspace`), over real websockets, by the socket's op and the admin
function the CLI runs alike."""

from __future__ import annotations

import sqlite3

import pytest

from ygg_server.ops import admin
from ygg_server.store import sqlite as db

from .conftest import migrated_before

pytestmark = pytest.mark.backends("sqlite", "postgres")


async def test_a_deleted_workspace_leaves_no_pin_and_does_not_widen_where_an_agent_goes(team):
    """Seed 003 §19: "An agent is shared everywhere by default [...] You can restrict it by pinning it". A
    workspace deleted disappears from everything that pointed to it, as a deleted channel does in Slack or
    Zulip: `my_agents` no longer lists it. An agent pinned there alone is pinned to no workspace (`[]`), not
    unpinned: it was restricted, and deleting a workspace must not send it into every other one its owner
    reaches, then or later."""
    alice = await team.person("alice")
    lab = (await alice.call("create_workspace", name="lab"))["id"]
    probe = (await alice.call("add_agent", name="probe", workspace=lab))["id"]
    side = team.admin(admin.add_workspace, "side", "alice")["id"]
    scout = team.admin(admin.add_agent, "scout", "alice", side)["id"]
    mine = {a["name"]: a["pinned"] for a in (await alice.call("my_agents"))["agents"]}
    assert mine["probe"] == [{"id": lab, "name": "lab"}] and mine["scout"] == [{"id": side, "name": "side"}]

    assert (await alice.call("delete_workspace", workspace=lab))["deleted"] is True
    team.admin(admin.delete_workspace, side)  # the admin CLI's `delete-workspace`
    mine = {a["name"]: a for a in (await alice.call("my_agents"))["agents"]}
    assert mine["probe"]["pinned"] == [] and mine["scout"]["pinned"] == [], "the pins went with the workspaces"
    assert mine["researcher"]["pinned"] is None, "an agent never pinned still goes everywhere"
    researcher = mine["researcher"]["id"]

    later = (await alice.call("create_workspace", name="later"))["id"]
    for ws in (team.ws, later):
        here = {a["id"] for a in (await alice.call("list_agents", workspace=ws))["agents"]}
        assert probe not in here and scout not in here, f"pinned to nothing, not brought into {ws}"
        assert researcher in here
    assert (await alice.call("revoke_agent", agent="probe"))["revoked"] is True, "still its owner's to revoke"


async def test_an_agent_pinned_to_several_workspaces_keeps_the_others(team):
    """Seed 003 §22: "An agent can be pinned to three of your workspaces": deleting one takes that pin only, and
    the agent stays where its other pins put it."""
    alice = await team.person("alice")
    one, two = (team.admin(admin.add_workspace, n, "alice")["id"] for n in ("one", "two"))
    trio = team.admin(admin.add_agent, "trio", "alice", one)["id"]
    # add_agent pins to one workspace; the column holds a list, as seed 003 §22 has it
    team.conn.execute("UPDATE agents SET pinned = ? WHERE id = ?", (f'["{one}", "{two}"]', trio))
    team.admin(admin.add_member, two, "alice", "owner")  # brings trio along now that it is pinned there too
    assert trio in {a["id"] for a in (await alice.call("list_agents", workspace=two))["agents"]}

    assert (await alice.call("delete_workspace", workspace=one))["deleted"] is True
    mine = {a["name"]: a["pinned"] for a in (await alice.call("my_agents"))["agents"]}
    assert mine["trio"] == [{"id": two, "name": "two"}], "the other pin stays"
    assert trio in {a["id"] for a in (await alice.call("list_agents", workspace=two))["agents"]}


def test_pins_to_workspaces_deleted_before_the_upgrade_are_taken_away(tmp_path):
    """Migration 11: a pin to a workspace deleted while pins stayed behind goes as a delete takes it now; the
    other pins stay, in their order, an agent left with none is pinned to none, one never pinned stays so."""
    path = db.db_path(tmp_path)
    c = migrated_before(path, "json_group_array")
    c.execute("INSERT INTO workspaces (id, org, name, created_at) VALUES ('two', 'o', 'two', 0), ('one', 'o', 'one', 0)")
    for aid, pinned in (("a.both", '["gone","two","one"]'), ("a.gone", '["gone"]'), ("a.kept", '["one"]'),
                        ("a.free", None)):
        c.execute("INSERT INTO agents (id, owner, name, key_id, key_hash, pinned, created_at) "
                  "VALUES (?, 'h', ?, ?, 'x', ?, 0)", (aid, aid, aid, pinned))
    c.close()
    db.connect(path).close()
    c = sqlite3.connect(path)
    try:
        assert dict(c.execute("SELECT id, pinned FROM agents")) == {
            "a.both": '["two","one"]', "a.gone": "[]", "a.kept": '["one"]', "a.free": None}
    finally:
        c.close()
