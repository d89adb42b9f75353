"""An agent's key and a workspace's groups over the socket (docs/protocol.md, "Management"): `revoke_agent` and
`rotate_key` by the agent's owner, `add_group` by the workspace's owners and admins, over real websockets.

Each test quotes the sentence it checks.
"""

from __future__ import annotations

import asyncio
import json
import time

import pytest
import websockets

from ygg_server.ops import admin

from ..invited import accepted

pytestmark = pytest.mark.backends("sqlite", "postgres")

WITHIN = 1.0  # seconds: a revocation holds on open connections within this


async def signed_in(url: str, key: str):
    """A raw socket signed in with an API key (the client library would reconnect on its own)."""
    ws = await websockets.connect(url)
    await ws.send(json.dumps({"op": "auth", "ref": 1, "api_key": key}))
    reply = json.loads(await ws.recv())
    assert reply["op"] == "session", reply
    return ws, reply["token"]


async def closed_within(ws, within: float = WITHIN) -> int:
    """Ping until the server closes the socket; its close code (failing after `within` seconds)."""
    started = time.monotonic()
    with pytest.raises(websockets.ConnectionClosed):
        while True:
            await ws.send(json.dumps({"op": "ping", "ref": 2}))
            await asyncio.wait_for(ws.recv(), within)
            assert time.monotonic() - started < within, "still open"
            await asyncio.sleep(0.05)
    assert time.monotonic() - started < within
    return ws.close_code


async def refused_at_auth(url: str, **creds) -> bool:
    async with websockets.connect(url) as ws:
        await ws.send(json.dumps({"op": "auth", "ref": 3, **creds}))
        return json.loads(await ws.recv())["code"] == "unauthenticated"


async def test_an_owner_revokes_their_agent_and_its_connections_close(team):
    """Seed 002: "Agents belong to a person", "one key each": its owner retires it (or a leaked key), and
    docs/protocol.md: "a revoked agent's connections close at once"; another's agent is answered as a made-up one."""
    alice, bob = await team.person("alice"), await team.person("bob")
    ws, token = await signed_in(team.url, team.keys["researcher"])
    rid = (await alice.call("list_agents", workspace=team.ws))["agents"]
    rid = next(a["id"] for a in rid if a["name"] == "researcher")
    foreign, made_up = await bob.request("revoke_agent", agent=rid), await bob.request("revoke_agent", agent="agent.0")
    assert foreign["code"] == made_up["code"] == "not_found" and foreign["detail"] == made_up["detail"]
    assert (await bob.request("revoke_agent", agent="researcher"))["code"] == "not_found", "by name: his own only"
    agent = await team.client(api_key=team.keys["reviewer"])
    assert (await agent.request("revoke_agent", agent="reviewer"))["code"] == "forbidden", "a person's, not an agent's"
    assert (await alice.request("revoke_agent"))["code"] == "bad_frame"

    out = await alice.call("revoke_agent", agent="researcher")
    assert out == {"op": "revoke_agent", "ref": out["ref"], "id": rid, "revoked": True}
    assert await closed_within(ws) == 1008
    for creds in ({"api_key": team.keys["researcher"]}, {"token": token}):
        assert await refused_at_auth(team.url, **creds), creds
    r = await alice.send(workspace=team.ws, topic="new", title="Gone", to=["researcher"], text="still there?")
    assert r["op"] == "refused" and r["reason"] == "unknown_recipient"
    assert (await alice.request("revoke_agent", agent=rid))["code"] == "not_found", "revoked: no longer there"


async def test_a_new_key_is_shown_once_and_the_old_one_stops_at_once(team):
    """PROTOCOL.md: "The API key is accepted only by `auth`": after `rotate_key` only the new one is; the
    connections the old key opened close and sign in again with the new key."""
    alice, bob = await team.person("alice"), await team.person("bob")
    ws, token = await signed_in(team.url, team.keys["reviewer"])
    assert (await bob.request("rotate_key", agent="reviewer"))["code"] == "not_found"
    out = await alice.call("rotate_key", agent="reviewer")
    assert out["name"] == "reviewer" and out["api_key"].startswith("yggk_") and out["api_key"] != team.keys["reviewer"]
    assert await closed_within(ws) == 1008
    for creds in ({"api_key": team.keys["reviewer"]}, {"token": token}):
        assert await refused_at_auth(team.url, **creds), creds
    again = await team.client(api_key=out["api_key"])
    assert again.me["id"] == out["id"]
    r = await alice.send(workspace=team.ws, topic="new", title="Still me", to=["reviewer"], text="hello again")
    assert r["op"] == "sent" and (await again.next_delivery(timeout=5))["message"]["text"] == "hello again"
    stored = team.conn.execute("SELECT key_hash FROM agents WHERE id = ?", (out["id"],)).fetchone()[0]
    assert out["api_key"] not in stored, "stored hashed"


async def test_owners_and_admins_make_groups_and_change_their_members(team):
    """Seed 000: "Agents can be gathered in groups (group:<name>) to address several at once"; seed 003 §66:
    "Admins manage everything in it". Named again, a group's members are replaced: added and removed."""
    alice, bob = await team.person("alice"), await team.person("bob")
    researcher, reviewer = await team.client(api_key=team.keys["researcher"]), await team.client(api_key=team.keys["reviewer"])
    ids = {a["name"]: a["id"] for a in (await alice.call("list_agents", workspace=team.ws))["agents"]}
    made = await alice.call("add_group", workspace=team.ws, name="pair", members=["researcher", "reviewer@alice"])
    assert made["id"] == "group:pair" and made["members"] == sorted([ids["researcher"], ids["reviewer"]])
    assert (await bob.call("list_groups", workspace=team.ws))["groups"] == [{"name": "pair", "members": made["members"]}]
    r = await alice.send(workspace=team.ws, topic="new", title="Both", to=["group:pair"], text="to both")
    assert sorted(d["to"] for d in r["deliveries"] if d["wake"]) == made["members"]
    for a in (researcher, reviewer):
        assert (await a.next_delivery(timeout=5))["message"]["text"] == "to both"

    fewer = await alice.call("add_group", workspace=team.ws, name="pair", members=["researcher", "@bob"])
    assert fewer["members"] == sorted([ids["researcher"], bob.me["id"]]), "reviewer removed, @bob added"
    r = await alice.send(workspace=team.ws, topic="new", title="One", to=["group:pair"], type="inform", text="fewer")
    assert ids["reviewer"] not in {d["to"] for d in r["deliveries"]}

    assert (await bob.request("add_group", workspace=team.ws, name="mine", members=["researcher"]))["code"] == "forbidden"
    assert (await researcher.request("add_group", workspace=team.ws, name="x", members=["reviewer"]))["code"] == "forbidden"
    nobody = await alice.request("add_group", workspace=team.ws, name="pair", members=["researcher", "ghost"])
    assert nobody["code"] == "unknown_member" and "ghost" in nobody["detail"]
    assert (await alice.request("add_group", workspace=team.ws, name="pair", members=[]))["code"] == "empty_group"
    assert (await alice.request("add_group", workspace=team.ws, name="a:b", members=["researcher"]))["code"] == "bad_name"
    assert (await bob.call("list_groups", workspace=team.ws))["groups"] == [{"name": "pair", "members": fewer["members"]}]


async def test_the_cli_rotates_a_key_as_the_socket_does(team):
    """docs/protocol.md, `rotate-key AGENT`: the operator's way to the same new key."""
    out = team.admin(admin.rotate_key, "researcher@alice")
    assert await refused_at_auth(team.url, api_key=team.keys["researcher"])
    assert (await team.client(api_key=out["api_key"])).me["id"] == out["id"]
    team.admin(admin.revoke_agent, out["id"])
    with pytest.raises(admin.AdminError) as e:
        team.admin(admin.rotate_key, out["id"])
    assert e.value.code == "unknown_agent"


async def test_a_member_added_to_a_group_joins_its_conversation_when_next_addressed(team):
    """docs/rules.md: "A direct or group conversation grows to include everyone who writes in it or is addressed
    in it": a group's conversation, once written in, takes a newly added member at the next message to the group."""
    alice = await team.person("alice")
    ids = {a["name"]: a["id"] for a in (await alice.call("list_agents", workspace=team.ws))["agents"]}
    await alice.call("add_group", workspace=team.ws, name="crew", members=["researcher"])
    first = await alice.send(workspace=team.ws, conversation="group:crew", topic="new", title="Crew",
                             to=["group:crew"], text="one")
    assert first["op"] == "sent" and {d["to"] for d in first["deliveries"] if d["wake"]} == {ids["researcher"]}
    await alice.call("add_group", workspace=team.ws, name="crew", members=["researcher", "reviewer"])
    second = await alice.send(workspace=team.ws, conversation="group:crew", topic=first["message"]["topic"],
                              to=["group:crew"], text="two")
    assert second["op"] == "sent" and {d["to"] for d in second["deliveries"] if d["wake"]} == {ids["researcher"],
                                                                                              ids["reviewer"]}
    conv = next(c for c in (await alice.call("list_conversations", workspace=team.ws))["conversations"]
                if c["kind"] == "group" and c["name"] == "crew")
    assert ids["reviewer"] in conv["members"]


async def test_a_key_rotated_while_a_sign_in_with_it_is_checked_leaves_no_session(team, monkeypatch):
    """docs/protocol.md, `rotate_key`: "the old key is refused from then on and the sessions it opened end". A
    sign-in whose key was checked just before the rotation committed got its session made just after it (the
    session is made by the writer, a step later): that session outlived the rotation, its connection stayed
    open on the old key, and its token could be resumed for an hour."""
    from ygg_server.ops import auth

    real, rotated = team.gw.read, []

    async def read(fn, *args):
        out = await real(fn, *args)
        if fn is auth.credentials and not rotated and args[0].api_key == team.keys["reviewer"]:
            rotated.append(await asyncio.to_thread(team.admin, admin.rotate_key, "reviewer"))  # between check and session
        return out

    monkeypatch.setattr(team.gw, "read", read)
    ws = await websockets.connect(team.url)
    await ws.send(json.dumps({"op": "auth", "ref": 1, "api_key": team.keys["reviewer"]}))
    reply = json.loads(await ws.recv())
    assert rotated
    if reply["op"] == "session":  # (answered before the session was found gone: then it closes)
        assert await closed_within(ws) == 1008
        assert await refused_at_auth(team.url, token=reply["token"])
    else:
        assert reply["code"] == "unauthenticated"
        await ws.close()
    assert (await team.client(api_key=rotated[0]["api_key"])).me["id"] == rotated[0]["id"], "the new key works"


async def test_a_group_whose_members_are_not_names_is_a_bad_frame(team):
    """docs/protocol.md: `members` is "a list, written as in a send's `to`"; a list of numbers or objects is a
    malformed frame (`bad_frame`, nothing changed), not `empty_group` ("a group has at least one member")."""
    alice = await team.person("alice")
    for members in ([1], ["researcher", {"id": "x"}], [["researcher"]], [None]):
        r = await alice.request("add_group", workspace=team.ws, name="g", members=members)
        assert r["code"] == "bad_frame", (members, r)
    assert (await alice.call("list_groups", workspace=team.ws))["groups"] == []


async def test_a_groups_members_are_listed_as_a_send_to_it_reaches_them(team):
    """docs/protocol.md, `revoke_agent`: a revoked agent "leaves every workspace"; `leave_workspace`: the person's
    membership goes. `list_groups` listed every id the group was made with, a revoked agent and someone who left
    among them (a send to the group reaches neither), so the TUI showed them as the group's members."""
    alice, bob = await team.person("alice"), await team.person("bob")
    org = (await alice.call("list_orgs"))["orgs"][0]["id"]
    await alice.call("add_org_member", org=org, handle="bob")
    await accepted(team, "bob", org)
    ids = {a["name"]: a["id"] for a in (await alice.call("list_agents", workspace=team.ws))["agents"]}
    made = await alice.call("add_group", workspace=team.ws, name="crew", members=["researcher", "reviewer", "@bob"])
    assert made["members"] == sorted([ids["researcher"], ids["reviewer"], bob.me["id"]])
    await alice.call("revoke_agent", agent="researcher")
    await bob.call("leave_workspace", workspace=team.ws)
    groups = (await alice.call("list_groups", workspace=team.ws))["groups"]
    assert groups == [{"name": "crew", "members": [ids["reviewer"]]}], groups
    r = await alice.send(workspace=team.ws, topic="new", title="Crew", to=["group:crew"], text="who is here?")
    assert [d["to"] for d in r["deliveries"] if d["wake"]] == groups[0]["members"], "what a send reaches"
    await bob.call("join_workspace", workspace=team.ws)  # back in the workspace: in the group again
    groups = (await alice.call("list_groups", workspace=team.ws))["groups"]
    assert groups[0]["members"] == sorted([ids["reviewer"], bob.me["id"]])


async def test_owners_and_admins_remove_a_group_and_its_name_is_then_unknown(team):
    """docs/protocol.md, `remove_group`: "`group:<name>` is then answered as a group never made" (in a send's `to`
    and as a conversation); "its conversation, once written in, stays with its members, reached by its id"; a
    group that does not exist is `not_found`, exactly as one in a workspace one is not in."""
    alice, bob = await team.person("alice"), await team.person("bob")
    researcher = await team.client(api_key=team.keys["researcher"])
    ids = {a["name"]: a["id"] for a in (await alice.call("list_agents", workspace=team.ws))["agents"]}
    await alice.call("add_group", workspace=team.ws, name="crew", members=["researcher"])
    first = await alice.send(workspace=team.ws, conversation="group:crew", topic="new", title="Crew",
                             to=["group:crew"], text="one")
    assert first["op"] == "sent"
    cid = first["message"]["conversation"]

    assert (await bob.request("remove_group", workspace=team.ws, name="crew"))["code"] == "forbidden"
    assert (await researcher.request("remove_group", workspace=team.ws, name="crew"))["code"] == "forbidden"
    assert (await alice.request("remove_group", workspace=team.ws))["code"] == "bad_frame"
    made_up = await alice.request("remove_group", workspace=team.ws, name="never")
    bobs = (await bob.call("list_workspaces"))["workspaces"]
    foreign = await alice.request("remove_group", workspace=next(w["id"] for w in bobs if w["name"] != "team"),
                                  name="crew")
    assert made_up["code"] == foreign["code"] == "not_found" and made_up["detail"] == foreign["detail"]

    out = await alice.call("remove_group", workspace=team.ws, name="crew")
    assert out == {"op": "remove_group", "ref": out["ref"], "id": "group:crew", "workspace": team.ws, "name": "crew",
                   "removed": True}
    assert (await bob.call("list_groups", workspace=team.ws))["groups"] == []
    for name in ("crew", "never"):  # removed, or never made: the same answers
        r = await alice.send(workspace=team.ws, topic="new", title="T", to=[f"group:{name}"], text="x")
        assert (r["op"], r["reason"], r["detail"].replace(name, "N")) == \
            ("refused", "unknown_recipient", "no group 'N' in this workspace"), r
        r = await alice.send(workspace=team.ws, conversation=f"group:{name}", topic="new", title="T",
                             to=["researcher"], text="x")
        assert (r["op"], r["reason"]) == ("refused", "unknown_conversation"), r
    again = await alice.send(workspace=team.ws, conversation=cid, topic=first["message"]["topic"],
                             to=["researcher"], text="still here")
    assert again["op"] == "sent" and again["message"]["conversation"] == cid
    conv = next(c for c in (await alice.call("list_conversations", workspace=team.ws))["conversations"] if c["id"] == cid)
    assert set(conv["members"]) == {team.alice, ids["researcher"]}
    assert (await alice.request("remove_group", workspace=team.ws, name="crew"))["code"] == "not_found", "gone already"
