"""The operator's commands, run as processes, with and without a server on the data dir (PROTOCOL.md, docs/protocol.md).

Each test quotes the sentence it checks.
"""

from __future__ import annotations

import asyncio
import json
import sys

import pytest

from ygg_server.client import Client
from ygg_server.net.gateway import Limits
from ygg_server.store import sqlite as db

from tests.backends import serving, start_server, stop_server
from .test_crash import free_port, start

PW = "pw-" + "x" * 8


async def cli(data_dir, *args, ok: bool = True) -> dict:
    """Run `ygg-server admin --data-dir D ARGS`; return the JSON on its last line of stdout."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "ygg_server.cli", "admin", "--data-dir", str(data_dir), *map(str, args),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    lines = out.decode().strip().splitlines()
    assert lines, (args, err.decode())
    result = json.loads(lines[-1])
    assert (proc.returncode == 0) == ok, (args, proc.returncode, result, err.decode())
    return result


@pytest.fixture
async def served(tmp_path):
    """A server on tmp_path, started before any admin command ran there."""
    s = await start_server("sqlite", db.db_path(tmp_path), Limits(auth_timeout=5.0))
    s.dir = tmp_path
    yield s
    await stop_server(s)


async def test_every_command_prints_json_on_its_last_line_without_a_server(tmp_path):
    """PROTOCOL.md: "each prints its result as JSON on the last line of stdout (`{"id":…}`, and `{"api_key":…}` for an agent)"."""
    d = tmp_path
    alice = await cli(d, "add-person", "alice", "--password", PW)
    bob = await cli(d, "add-person", "bob", "--password", PW, "--plan", "free")
    assert alice["id"].startswith("human.") and bob["id"] != alice["id"]
    ws = await cli(d, "add-workspace", "team", "--owner", "alice")
    assert ws["id"] and ws["name"] == "team"
    m = await cli(d, "add-member", "team", "bob", "--role", "admin")  # WORKSPACE by name
    assert m["id"] == bob["id"] and m["role"] == "admin"
    assert (await cli(d, "add-member", ws["id"], "bob"))["role"] == "member"  # or by id
    agent = await cli(d, "add-agent", "researcher", "--owner", "alice")
    assert agent["id"].startswith("agent.") and agent["api_key"].startswith("yggk_")
    pinned = await cli(d, "add-agent", "homebody", "--owner", "alice", "--workspace", "team")
    assert pinned["api_key"] != agent["api_key"]
    funded = await cli(d, "fund", "researcher", 100)
    assert funded["id"] == agent["id"] and funded["balance"] == 100
    assert (await cli(d, "fund", "researcher@alice", 5))["balance"] == 105
    pool = await cli(d, "fund", "--pool", "team", 40)
    assert pool["id"] == "pool" and pool["balance"] == 40 and pool["workspace"] == ws["id"]
    assert (await cli(d, "set-plan", "bob", "team"))["plan"] == "team"
    licensed = await cli(d, "set-plan", "bob", "team", "--licensed", "6000")
    assert (licensed["licensed"], licensed["messages_per_month"], licensed["agents"]) == (6000, 6000, 60)
    rotated = await cli(d, "rotate-key", "homebody")
    assert rotated["id"] == pinned["id"] and rotated["api_key"].startswith("yggk_") and rotated["api_key"] != pinned["api_key"]
    assert (await cli(d, "revoke-agent", "homebody"))["id"] == pinned["id"]
    assert (await cli(d, "rotate-key", "homebody", ok=False))["error"] == "unknown_agent", "revoked: make a new agent"
    carol = await cli(d, "add-person", "carol", "--password", PW)
    joined = await cli(d, "add-org-member", "alice", "carol", "--role", "admin")  # ORG by its owner's handle
    assert joined["id"] == carol["id"] and joined["role"] == "admin" and joined["org"] == ws["org"]
    acme = await cli(d, "add-org", "Acme", "--owner", "carol", "--plan", "free")
    assert acme["plan"] == "free" and acme["name"] == "Acme"
    assert (await cli(d, "add-workspace", "ops", "--owner", "carol", "--org", acme["id"]))["org"] == acme["id"]
    assert (await cli(d, "set-plan", acme["id"], "team"))["id"] == acme["id"]
    assert (await cli(d, "add-org", "Beta", "--owner", "carol", "--plan", "free"))["plan"] == "free"  # her one Free
    secret = await cli(d, "add-workspace", "secret", "--owner", "alice", "--restricted")
    assert secret["restricted"] is True
    assert (await cli(d, "set-restricted", "secret", "off"))["restricted"] is False
    perms = await cli(d, "set-permissions", "team", "researcher", "--receive", "off", "--can-message", "@bob,@alice")
    assert perms["agent"] == agent["id"] and perms["receive"] is False and perms["can_message"] == sorted(
        [alice["id"], bob["id"]])
    perms = await cli(d, "set-permissions", "team", "researcher", "--receive", "on", "--can-message", "")
    assert perms["receive"] is True and perms["can_message"] == []
    doomed = await cli(d, "add-workspace", "doomed", "--owner", "alice")
    assert (await cli(d, "delete-workspace", "doomed"))["id"] == doomed["id"]
    assert set((await cli(d, "leave-org", "alice", "carol"))["left"]) == {ws["id"], secret["id"]}  # her org admin rows
    assert (await cli(d, "leave-workspace", "team", "bob"))["left"] == [ws["id"]]  # added directly: leaves all the same

    # errors: JSON too, exit code 1
    for args, code in (
        (("add-person", "alice", "--password", PW), "handle_taken"),
        (("add-person", "human." + alice["id"][6:9], "--password", PW), "bad_handle"),  # spells ids: never a handle
        (("add-person", "agent.x", "--password", PW), "bad_handle"),
        (("add-agent", "agent.x", "--owner", "alice"), "bad_name"),
        (("add-agent", "researcher", "--owner", "alice"), "name_taken"),
        (("add-agent", "x", "--owner", "nobody"), "unknown_person"),
        (("add-member", "no-such-ws", "bob"), "unknown_workspace"),
        (("fund", "ghost", 5), "unknown_agent"),
        (("fund", "researcher", 0), "bad_amount"),
        (("fund", 5), "bad_args"),
        (("set-plan", "alice", "platinum"), "bad_plan"),
        (("set-permissions", "team", "ghost", "--send", "off"), "unknown_member"),
        (("set-restricted", "alice (personal)", "off"), "personal_workspace"),
        (("add-org-member", "alice", "alice"), "bad_role"),
        (("leave-org", "alice", "alice"), "last_owner"),
        (("leave-org", "alice", "carol"), "unknown_org"),
        (("delete-workspace", "alice (personal)"), "personal_workspace"),
        (("leave-workspace", "alice (personal)", "alice"), "personal_workspace"),
        (("leave-workspace", "team", "alice"), "last_owner"),
        (("leave-workspace", "team", "bob"), "unknown_workspace"),
        (("delete-workspace", "doomed"), "unknown_workspace"),
        (("add-org", "Gamma", "--owner", "carol", "--plan", "free"), "free_org_limit"),
        (("add-workspace", "theirs", "--owner", "bob", "--org", "alice"), "forbidden"),
    ):
        err = await cli(d, *args, ok=False)
        assert err["error"] == code and err["detail"], (args, err)

    # a server started afterwards sees all of it
    async with serving("sqlite", db.db_path(d), Limits()) as s:
        async with Client(s.url, api_key=agent["api_key"]) as c:
            b = await c.call("balances", workspace=ws["id"])
            assert b["agents"][agent["id"]] == 105 and b["pool"] == 40
        with pytest.raises(Exception):
            async with Client(s.url, api_key=pinned["api_key"], reconnect=False, timeout=5):
                pass


async def test_join_workspace_and_remove_group_from_the_cli(tmp_path):
    """docs/protocol.md, "Operator commands": `join-workspace WORKSPACE HANDLE` (a person into a workspace their
    organization opens to them, as `join_workspace`) and `remove-group WORKSPACE NAME`."""
    d = tmp_path
    await cli(d, "add-person", "alice", "--password", PW)
    bob = await cli(d, "add-person", "bob", "--password", PW)
    ws = await cli(d, "add-workspace", "team", "--owner", "alice")
    await cli(d, "add-agent", "researcher", "--owner", "alice")
    await cli(d, "add-org-member", "alice", "bob")
    assert (await cli(d, "leave-workspace", "team", "bob"))["left"] == [ws["id"]]
    joined = await cli(d, "join-workspace", "team", "bob")
    assert {k: joined[k] for k in ("id", "workspace", "role", "joined")} == \
        {"id": bob["id"], "workspace": ws["id"], "role": "member", "joined": True}
    assert (await cli(d, "join-workspace", ws["id"], "bob"))["joined"] is False, "already in: answered as it is"
    for args in (("alice (personal)", "bob"), ("no-such-ws", "bob")):
        assert (await cli(d, "join-workspace", *args, ok=False))["error"] == "unknown_workspace"
    assert (await cli(d, "join-workspace", "team", "nobody", ok=False))["error"] == "unknown_person"

    made = await cli(d, "add-group", "team", "crew", "researcher", "@bob")
    assert made["id"] == "group:crew" and len(made["members"]) == 2
    assert await cli(d, "remove-group", "team", "crew") == {"id": "group:crew", "workspace": ws["id"], "name": "crew",
                                                              "removed": True}
    for args in (("team", "crew"), ("no-such-ws", "crew")):
        err = await cli(d, "remove-group", *args, ok=False)
        assert err["error"] == ("unknown_group" if args[0] == "team" else "unknown_workspace") and err["detail"]


async def test_the_cli_refuses_names_that_are_unbounded_unprintable_or_taken(tmp_path):
    """docs/protocol.md, "Names and titles": the operator's commands check names as the socket's ops do, and
    say which rule a name broke (a name with an escape sequence was stored, and printed by every client)."""
    d = tmp_path
    err = await cli(d, "add-person", "p" * 41, "--password", PW, ok=False)
    assert err == {"error": "bad_handle", "detail": "a handle is at most 40 characters (this one has 41)"}
    await cli(d, "add-person", "alice", "--password", PW)
    err = await cli(d, "add-workspace", "team\x1b]0;owned\x07", "--owner", "alice", ok=False)
    assert err["error"] == "bad_name" and "U+001B at character 5" in err["detail"]
    err = await cli(d, "add-org", "o" * 81, "--owner", "alice", ok=False)
    assert err["error"] == "bad_name" and "an organization's name is at most 80 characters" in err["detail"]
    await cli(d, "add-workspace", "team", "--owner", "alice")
    err = await cli(d, "add-workspace", "Team ", "--owner", "alice", ok=False)
    assert err == {"error": "name_taken", "detail": "this organization has a workspace called 'Team' already; "
                                                     "pick another name"}
    err = await cli(d, "add-agent", "r\nm -rf", "--owner", "alice", ok=False)
    assert err["error"] == "bad_name" and "U+000A" in err["detail"]


async def test_commands_take_effect_at_once_on_a_running_server(served):
    """PROTOCOL.md: "The admin commands work whether or not a server is serving that data dir at the time, and a running server sees their effect at once"."""
    d = served.dir
    await cli(d, "add-person", "alice", "--password", PW)
    ws = (await cli(d, "add-workspace", "team", "--owner", "alice"))["id"]
    alice = await served.person("alice", PW)
    agent = await cli(d, "add-agent", "researcher", "--owner", "alice")
    researcher = await served.client(api_key=agent["api_key"])  # authenticates at once
    assert researcher.me["id"] == agent["id"]
    sent = await alice.send(workspace=ws, topic="new", title="Hi", to=["researcher"], text="are you there?")
    assert sent["op"] == "sent" and sent["deliveries"][0]["wake"], sent
    assert (await researcher.next_delivery(timeout=5))["message"]["text"] == "are you there?"

    await cli(d, "add-person", "bob", "--password", PW)
    bob = await served.person("bob", PW)
    r = await bob.send(workspace=ws, topic="new", title="Me?", type="inform", to=["@alice"], text="hello")
    assert r["op"] == "refused" and r["reason"] == "unknown_workspace"
    await cli(d, "add-member", "team", "bob")
    r = await bob.send(workspace=ws, topic="new", title="Me?", type="inform", to=["@alice"], text="hello")
    assert r["op"] == "sent", r

    await cli(d, "set-plan", "alice", "free")
    served.conn.execute("INSERT INTO usage (org, month, count) SELECT org, strftime('%Y-%m', 'now'), 300 "
                        "FROM workspaces WHERE id = ? ON CONFLICT (org, month) DO UPDATE SET count = 300", (ws,))
    r = await alice.send(workspace=ws, topic="new", title="Plan", type="inform", to=["@bob"], text="over")
    assert r["op"] == "refused" and r["reason"] == "plan_limit", r
    await cli(d, "set-plan", "alice", "team")
    r = await alice.send(workspace=ws, topic="new", title="Plan", type="inform", to=["@bob"], text="licensed")
    assert r["op"] == "sent", r

    assert (await cli(d, "fund", "--pool", "team", 7))["balance"] == 7
    assert (await alice.call("balances", workspace=ws))["pool"] == 7

    await cli(d, "revoke-agent", "researcher")
    for _ in range(50):
        if not researcher.connected.is_set() or agent["id"] not in served.gw.conns:
            break
        await asyncio.sleep(0.1)
    assert agent["id"] not in served.gw.conns, "a revoked agent's connections close at once"
    r = await alice.send(workspace=ws, topic="new", title="Gone", to=["researcher"], text="still there?")
    assert r["op"] == "refused" and r["reason"] == "unknown_recipient"


async def test_fund_from_the_cli_wakes_a_paused_agent(served):
    """docs/protocol.md: "the server notices another writer through SQLite's `PRAGMA data_version`, reloads its live state before its next decision, and offers any deliveries the command created"."""
    d = served.dir
    await cli(d, "add-person", "alice", "--password", PW)
    ws = (await cli(d, "add-workspace", "team", "--owner", "alice"))["id"]
    agent = await cli(d, "add-agent", "worker", "--owner", "alice")  # no credits, no pool
    alice = await served.person("alice", PW)
    worker = await served.client(api_key=agent["api_key"])
    asked = await alice.send(workspace=ws, topic="new", title="Job", to=["worker"], text="do it")
    wake = await worker.next_delivery(timeout=5)
    await worker.ack([wake["id"]])
    topic = asked["message"]["topic"]
    answer = dict(workspace=ws, topic=topic, type="response", in_reply_to=asked["message"]["id"], text="done it")
    r = await worker.send(**answer)
    assert r["op"] == "refused" and r["reason"] == "credits_exhausted", r
    t = (await alice.call("topic", workspace=ws, topic=topic))["topic"]
    assert t["status"] == "paused" and t["pause"] == "credits"
    ask = await alice.next_delivery(timeout=5)
    while ask["message"].get("notice") != "funding_request":
        ask = await alice.next_delivery(timeout=5)

    funded = await cli(d, "fund", "worker", 50)
    assert funded["balance"] == 50
    d2 = await worker.next_delivery(timeout=10)
    assert d2["wake"] and d2["message"]["notice"] == "credits_refilled" and d2["message"]["topic"] == topic
    await worker.ack([d2["id"]])
    r = await worker.send(**answer)
    assert r["op"] == "sent" and r["cost"] == 1, r
    assert (await alice.call("topic", workspace=ws, topic=topic))["topic"]["status"] == "open"
    assert (await alice.call("balances", workspace=ws))["agents"][agent["id"]] == 49


async def test_cli_beside_a_served_process(tmp_path):
    """PROTOCOL.md: "Tests and operators set a server up without a TUI. These commands and flags are fixed"."""
    await cli(tmp_path, "add-person", "alice", "--password", PW)
    ws = (await cli(tmp_path, "add-workspace", "team", "--owner", "alice"))["id"]
    port = free_port()
    proc = await start(tmp_path, port)
    try:
        url = f"ws://127.0.0.1:{port}/"
        async with Client(url, handle="alice", password=PW) as alice:
            key = (await cli(tmp_path, "add-agent", "helper", "--owner", "alice"))["api_key"]
            async with Client(url, api_key=key) as helper:
                r = await alice.send(workspace=ws, topic="new", title="Hi", to=["helper"], text="welcome")
                assert r["op"] == "sent"
                assert (await helper.next_delivery(timeout=5))["message"]["text"] == "welcome"
    finally:
        proc.terminate()
        proc.wait()


async def test_a_workspace_is_named_within_its_organization_as_org_slash_workspace(tmp_path):
    """docs/protocol.md, "Names and titles": "Another organization's workspaces may use the name", so a bare name
    may name several workspaces; `ORG/WORKSPACE` (the organization's name or id, or its owner's handle, then the
    workspace's name) names one, wherever a command takes a WORKSPACE. PROTOCOL.md: "`WORKSPACE` is the id or the
    name" still holds for a name only one workspace has."""
    d = tmp_path
    for who in ("alice", "bob", "carol"):
        await cli(d, "add-person", who, "--password", PW)
    acme = await cli(d, "add-org", "Acme", "--owner", "alice")
    globex = await cli(d, "add-org", "Globex", "--owner", "bob")
    await cli(d, "add-org", "Acme", "--owner", "bob")  # another owner's organization of the same name, without a lab
    lab_a = await cli(d, "add-workspace", "lab", "--owner", "alice", "--org", acme["id"])
    lab_g = await cli(d, "add-workspace", "lab", "--owner", "bob", "--org", globex["id"])

    err = await cli(d, "add-member", "lab", "carol", ok=False)
    assert err["error"] == "unknown_workspace" and "'lab' names several workspaces" in err["detail"]
    assert "ORG/WORKSPACE" in err["detail"] and "the id" in err["detail"], err
    assert (await cli(d, "add-member", "Acme/lab", "carol"))["workspace"] == lab_a["id"]
    assert (await cli(d, "add-member", f"{globex['id']}/lab", "carol"))["workspace"] == lab_g["id"]
    lab_c = await cli(d, "add-workspace", "lab", "--owner", "carol")  # in carol's own organization
    assert (await cli(d, "set-restricted", "carol/lab", "on"))["id"] == lab_c["id"], "its owner's handle: their own"
    await cli(d, "delete-workspace", lab_c["id"])
    scout = await cli(d, "add-agent", "scout", "--owner", "carol", "--workspace", "Globex/lab")
    pinned = db.connect(db.db_path(d)).execute("SELECT pinned FROM agents WHERE id = ?", (scout["id"],)).fetchone()[0]
    assert json.loads(pinned) == [lab_g["id"]]
    assert (await cli(d, "fund", "--pool", "Acme/lab", 10))["workspace"] == lab_a["id"]
    assert (await cli(d, "add-group", "Globex/lab", "crew", "scout"))["workspace"] == lab_g["id"]
    for ref in ("Nobody/lab", "Acme/kitchen", "Acme/"):
        err = await cli(d, "add-member", ref, "carol", ok=False)
        assert err == {"error": "unknown_workspace", "detail": f"no workspace {ref!r}"}, err

    slash = await cli(d, "add-workspace", "r/d", "--owner", "alice", "--org", acme["id"])
    assert (await cli(d, "add-member", "r/d", "carol"))["workspace"] == slash["id"], "a name with a slash, whole"
    assert (await cli(d, "delete-workspace", "Acme/lab"))["id"] == lab_a["id"]
    assert (await cli(d, "add-member", "lab", "alice"))["workspace"] == lab_g["id"], "one lab left: its bare name"


async def test_the_admin_help_says_how_to_name_a_workspace(tmp_path):
    """docs/protocol.md: "A `WORKSPACE` is its id, a name only one workspace has, or `ORG/WORKSPACE`": the CLI's
    help says so too."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "ygg_server.cli", "admin", "--data-dir", str(tmp_path), "add-member", "--help",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, _ = await proc.communicate()
    assert proc.returncode == 0 and "ORG/WORKSPACE" in out.decode()
