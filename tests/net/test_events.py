"""Live events, management ops and history marks (docs/protocol.md)."""

import asyncio

import pytest

from ygg_server.ops import admin, permissions

from ..invited import accepted

pytestmark = pytest.mark.backends("sqlite", "process", "postgres")


async def _event(client, kind, timeout=5):
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while True:
        ev = await client.next_event(timeout=max(0.01, end - loop.time()))
        if ev.get("kind") == kind:
            return ev


async def test_presence_events_reach_followers(team):
    alice = await team.person("alice")
    await alice.subscribe(team.ws)
    agent = await team.client(api_key=team.keys["reviewer"])
    ev = await _event(alice, "presence")
    assert ev["participant"] == agent.me["id"] and ev["online"] is True
    await agent.close()
    ev = await _event(alice, "presence")
    assert ev["participant"] == agent.me["id"] and ev["online"] is False


async def test_someone_who_joins_a_workspace_while_connected_is_announced_online_there(team):
    """docs/protocol.md, `presence`: followers of a workspace are told who in it comes online and goes. Carol,
    connected, added to lab, was told to lab's followers as a member who joined (`members`) but never as online,
    though going (a leave, her last connection closing) was told: she looked offline there until she
    reconnected. Her agent, brought into lab with her, is announced too."""
    team.admin(admin.add_person, "carol", "pw-" + "x" * 8)
    scout = team.admin(admin.add_agent, "scout", "carol")
    lab = team.admin(admin.add_workspace, "lab", "alice", True)["id"]  # (restricted: open to no one else)
    carol = await team.person("carol")
    agent = await team.client(api_key=scout["api_key"])
    alice = await team.person("alice")
    await alice.subscribe(lab)
    team.admin(admin.add_member, lab, "carol")
    ev = await _event(alice, "members")
    assert sorted(ev["joined"]) == sorted([carol.me["id"], agent.me["id"]]), ev
    told = {(await _event(alice, "presence"))["participant"] for _ in range(2)}
    assert told == {carol.me["id"], agent.me["id"]}
    assert (await alice.call("presence", workspace=lab))["online"][carol.me["id"]] is True
    await carol.close()
    ev = await _event(alice, "presence")
    assert (ev["workspace"], ev["participant"], ev["online"]) == (lab, carol.me["id"], False)


async def test_topic_events_of_a_direct_conversation_stay_private(team):
    """A direct conversation is between its members: others following the workspace learn nothing of it."""
    team.admin(admin.add_person, "carol", "pw-" + "x" * 8)
    team.admin(admin.add_member, team.ws, "carol")
    bob, carol = await team.person("bob"), await team.person("carol")
    await bob.subscribe(team.ws)
    sent = await carol.send(workspace=team.ws, conversation="dm:reviewer", topic="new", title="secret",
                            to=["reviewer"], text="between us")
    assert sent["op"] == "sent", sent
    sent2 = await carol.send(workspace=team.ws, conversation="general", topic="new", title="public",
                             to=["reviewer"], text="for all")
    ev = await _event(bob, "topic")
    assert ev["topic"]["title"] == "public", "the direct conversation's topic must not reach bob"
    assert sent2["message"]["topic"] == ev["topic"]["id"]


async def test_history_says_who_each_message_woke(team):
    alice = await team.person("alice")
    sent = await alice.send(workspace=team.ws, topic="new", title="Q", to=["researcher"], text="wake up")
    await alice.send(workspace=team.ws, topic=sent["message"]["topic"], type="inform", to=["researcher"], text="fyi")
    page = await alice.call("history", workspace=team.ws, conversation="general")
    woke = {m["text"]: m["woke"] for m in page["messages"]}
    researcher = sent["deliveries"][0]["to"]
    assert woke == {"wake up": [researcher], "fyi": []}


async def test_people_manage_over_the_socket_as_their_role_allows(team):
    """Seed 003 §66: "The owner keeps only three things: changing roles, deleting the workspace, and its own permanence"."""
    team.admin(admin.add_person, "carol", "pw-" + "x" * 8)
    alice, bob = await team.person("alice"), await team.person("bob")
    made = await alice.call("create_workspace", name="lab")
    added = await alice.call("add_member", workspace=made["id"], handle="bob", role="admin")
    assert added["role"] == "admin"
    await accepted(team, "bob", made["id"])
    ok = await bob.request("add_member", workspace=made["id"], handle="carol", role="member")
    assert ok["op"] == "add_member"
    no = await bob.request("add_member", workspace=made["id"], handle="carol", role="admin")
    assert no["op"] == "error" and no["code"] == "forbidden"
    agent = await bob.call("add_agent", name="helper", workspace=made["id"])
    assert agent["api_key"].startswith("yggk_")
    helper = await team.client(api_key=agent["api_key"])
    denied = await helper.request("create_workspace", name="mine")
    assert denied["op"] == "error" and denied["code"] == "forbidden"


async def test_topic_budget_bounds_an_agents_spend(team):
    """Seed 000: "`credits_exhausted` The agent (or the topic's budget) is out of credits"."""
    alice = await team.person("alice")
    researcher = await team.client(api_key=team.keys["researcher"])
    sent = await alice.send(workspace=team.ws, topic="new", title="Budgeted", to=["researcher"], text="go")
    topic = sent["message"]["topic"]
    assert (await alice.call("set_budget", workspace=team.ws, topic=topic, budget=2))["budget"] == 2
    d = await researcher.next_delivery(timeout=5)
    r1 = await researcher.send(workspace=team.ws, topic=topic, type="inform", to=["@alice"], text="one")
    r2 = await researcher.send(workspace=team.ws, topic=topic, type="inform", to=["@alice"], text="two")
    r3 = await researcher.send(workspace=team.ws, topic=topic, type="inform", to=["@alice"], text="three")
    assert [r1["op"], r2["op"], r3["op"]] == ["sent", "sent", "refused"]
    assert r3["reason"] == "credits_exhausted" and "budget" in r3["detail"]
    assert d["wake"]


async def test_funding_an_agent_in_one_workspace_resumes_nothing_in_another(team):
    """Seed 000: "a workspace is a team's space: its people, its agents, its conversations and its credits.
    Workspaces are isolated from each other": an agent in two workspaces has a wallet in each (issue 17: one
    wallet spanned them, and funding it in one resumed its topics in the other). Funding it in the other
    workspace leaves its topic here paused and tells this workspace's followers nothing; funding it here
    resumes it, and the topic's event reaches them."""
    lab = team.admin(admin.add_workspace, "lab", "alice")["id"]
    team.admin(admin.add_member, lab, "bob")
    key = team.admin(admin.add_agent, "worker", "alice")["api_key"]  # no credits; in both workspaces
    alice, bob = await team.person("alice"), await team.person("bob")
    worker = await team.client(api_key=key)
    await bob.subscribe(lab)
    asked = await alice.send(workspace=lab, topic="new", title="Job", to=["worker"], text="do it")
    topic = asked["message"]["topic"]
    await worker.ack([(await worker.next_delivery(timeout=5))["id"]])
    r = await worker.send(workspace=lab, topic=topic, type="response", in_reply_to=asked["message"]["id"], text="done")
    assert r["op"] == "refused" and r["reason"] == "credits_exhausted", r
    assert (await alice.call("topic", workspace=lab, topic=topic))["topic"]["status"] == "paused"
    while (await _event(bob, "topic"))["topic"]["status"] != "paused":  # what bob saw so far
        pass
    funded = await alice.call("fund", workspace=team.ws, agent="worker", amount=50)  # in the other workspace
    assert funded["balance"] == 50
    with pytest.raises(asyncio.TimeoutError):
        while True:  # nothing of the other workspace's funding reaches lab's followers
            ev = await _event(bob, "topic", timeout=0.5)
            assert ev["topic"]["id"] != topic, ev
    assert (await alice.call("topic", workspace=lab, topic=topic))["topic"]["status"] == "paused"
    again = await worker.send(workspace=lab, topic=topic, type="response", in_reply_to=asked["message"]["id"],
                              text="done")
    assert again["op"] == "refused" and again["reason"] == "credits_exhausted", again  # its wallet here is empty
    funded = await alice.call("fund", workspace=lab, agent="worker", amount=5)
    assert funded["balance"] == 5
    loop = asyncio.get_running_loop()
    end = loop.time() + 10
    while True:
        ev = await _event(bob, "topic", timeout=max(0.01, end - loop.time()))
        if ev["topic"]["id"] == topic and ev["topic"]["status"] == "open":
            break
    after = await alice.send(workspace=lab, topic=topic, type="inform", to=["worker"], text="still here")
    assert after["op"] == "sent", after


async def test_a_follower_is_told_when_a_workspace_is_no_longer_theirs(team):
    """docs/protocol.md: `workspace_gone` tells a subscriber the workspace is no longer theirs (deleted, an
    organization left, their membership removed), within a second; nothing more of it follows."""
    bob = await team.person("bob")
    await bob.subscribe(team.ws)
    team.admin(admin.delete_workspace, team.ws)  # by the operator, as `ygg-server admin delete-workspace` does
    ev = await _event(bob, "workspace_gone", timeout=3)
    assert ev["workspace"] == team.ws
    assert team.ws not in bob._subscriptions, "not renewed after a reconnect"


async def _away(client, while_away) -> None:
    """`client` loses its connection, `while_away()` runs, then it reconnects (renewing its subscriptions)."""
    url, before = client.url, client.reconnects
    client.url = "ws://127.0.0.1:1/"  # nothing listens there: it keeps trying
    await client._ws.close()
    while_away()
    client.url = url
    for _ in range(200):
        if client.connected.is_set() and client.reconnects > before:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("did not reconnect")


async def test_a_subscription_whose_workspace_went_while_away_is_dropped_not_renewed(team, caplog):
    """docs/protocol.md: "The client library renews its subscriptions after a reconnect." One whose workspace
    went while the client was away is answered not_found: dropped then, not asked again (and logged as a
    server error) at every reconnect after. One whose monitor was taken away meanwhile follows on without it."""
    lab = team.admin(admin.add_workspace, "lab", "alice")["id"]
    team.admin(admin.add_member, lab, "bob")
    bob = await team.person("bob")
    await bob.subscribe(team.ws)
    await bob.subscribe(lab)
    await _away(bob, lambda: team.admin(admin.delete_workspace, team.ws))
    for _ in range(100):
        if team.ws not in bob._subscriptions:
            break
        await asyncio.sleep(0.05)
    assert bob._subscriptions == {lab: False}
    caplog.clear()
    await _away(bob, lambda: None)
    assert (await bob.call("unsubscribe", workspace=lab))["op"] == "unsubscribed"  # (the renewal was answered)
    assert "server error" not in caplog.text and "not renewed" not in caplog.text, caplog.text


async def test_a_monitor_subscription_whose_monitor_went_while_away_follows_on_without_it(team):
    """docs/protocol.md: "The client library renews its subscriptions after a reconnect." An agent that
    monitored a workspace and lost the monitor permission while away is refused `forbidden` for a monitor
    subscription: the library follows the workspace on without monitor (topic events still come)."""
    alice = await team.person("alice")
    await alice.call("set_permissions", workspace=team.ws, agent="researcher", monitor=True)
    researcher = await team.client(api_key=team.keys["researcher"])
    assert (await researcher.subscribe(team.ws, monitor=True))["monitor"] is True
    await _away(researcher, lambda: team.admin(permissions.set_permissions, team.ws, "researcher", {"monitor": False}))
    for _ in range(100):
        if researcher._subscriptions == {team.ws: False}:
            break
        await asyncio.sleep(0.05)
    assert researcher._subscriptions == {team.ws: False}
    sent = await alice.send(workspace=team.ws, topic="new", title="Still followed", to=["reviewer"], text="hi")
    assert sent["op"] == "sent", sent
    ev = await _event(researcher, "topic")
    assert ev["topic"]["title"] == "Still followed"


async def test_a_follower_whose_monitor_or_receive_is_taken_away_is_told(team):
    """docs/protocol.md: `{"op":"event","kind":"subscription","workspace":…,"following":…,"monitor":…,"reason":…}`
    tells a subscriber that its following of a workspace it is still in narrowed: monitor taken away
    (`no_monitor`: topic events still come, messages no more) or receive (`no_receive`: nothing more of it
    follows). Seed 002: "receive lets it call check_inbox, subscribe and search_messages"; "Monitor: set by a
    workspace admin, lets the agent search and follow every message in the workspace"."""
    alice = await team.person("alice")
    await alice.call("set_permissions", workspace=team.ws, agent="researcher", monitor=True)
    researcher = await team.client(api_key=team.keys["researcher"])
    assert (await researcher.subscribe(team.ws, monitor=True))["monitor"] is True
    await alice.call("set_permissions", workspace=team.ws, agent="researcher", monitor=False)
    ev = await _event(researcher, "subscription", timeout=3)
    assert ev == {"op": "event", "kind": "subscription", "workspace": team.ws, "following": True, "monitor": False,
                  "reason": "no_monitor"}, ev
    assert researcher._subscriptions == {team.ws: False}, "renewed without monitor after a reconnect"
    await alice.call("set_permissions", workspace=team.ws, agent="researcher", receive=False)
    ev = await _event(researcher, "subscription", timeout=3)
    assert (ev["following"], ev["monitor"], ev["reason"]) == (False, False, "no_receive"), ev
    assert researcher._subscriptions == {}, "not renewed after a reconnect"


async def test_a_follower_is_told_of_a_workspace_it_now_reaches(team):
    """docs/protocol.md: `workspace_added` tells a connection that follows a workspace that it reaches a new one."""
    bob = await team.person("bob")
    await bob.subscribe(team.ws)
    lab = team.admin(admin.add_workspace, "lab", "alice")["id"]
    team.admin(admin.add_member, lab, "bob")
    ev = await _event(bob, "workspace_added", timeout=3)
    assert ev["workspace"] == lab
    assert (await bob.subscribe(lab))["op"] == "subscribed"


async def _quiet(client, kind) -> None:
    """Nothing of `kind` came to `client`: a round trip first, so what was pushed before it has arrived."""
    await client.call("ping")
    assert [ev for ev in client.pending_events() if ev.get("kind") == kind] == []


async def test_followers_are_told_who_joins_and_who_leaves_a_workspace(team):
    """docs/protocol.md: `members` tells the connections following a workspace who joined it and who left it (a
    person leaving or added, an agent made or revoked); not a member who does not follow it, nor a follower of
    another workspace."""
    pw = "pw-" + "x" * 8
    for handle in ("carol", "dave"):
        team.admin(admin.add_person, handle, pw)
    team.admin(admin.add_member, team.ws, "dave")  # in the workspace, not following it
    lab = team.admin(admin.add_workspace, "lab", "carol")["id"]
    alice, bob, carol, dave = [await team.person(h) for h in ("alice", "bob", "carol", "dave")]
    await alice.subscribe(team.ws)
    await carol.subscribe(lab)  # follows another workspace
    bob_id = bob.me["id"]

    await bob.call("leave_workspace", workspace=team.ws)
    ev = await _event(alice, "members", timeout=3)
    assert ev == {"op": "event", "kind": "members", "workspace": team.ws, "joined": [], "left": [bob_id]}

    nova = await alice.call("add_agent", name="nova")  # in every workspace of alice's: team among them
    ev = await _event(alice, "members", timeout=3)
    assert (ev["workspace"], ev["joined"], ev["left"]) == (team.ws, [nova["id"]], [])

    await alice.call("add_member", workspace=team.ws, handle="bob")
    await accepted(team, "bob", team.ws)
    ev = await _event(alice, "members", timeout=3)
    assert (ev["joined"], ev["left"]) == ([bob_id], [])

    team.admin(admin.revoke_agent, nova["id"])  # by the operator: a revoked agent is no longer listed
    ev = await _event(alice, "members", timeout=3)
    assert (ev["joined"], ev["left"]) == ([], [nova["id"]])
    ids = {m["id"] for m in (await alice.call("list_members", workspace=team.ws))["members"]}
    assert bob_id in ids and nova["id"] not in ids, "the event says what list_members lists"

    for other in (carol, dave):
        await _quiet(other, "members")
    await _quiet(alice, "members")  # once each: nothing more for changes already told


async def test_followers_are_told_of_whom_the_organization_brings_and_a_restriction_shuts_out(team):
    """docs/protocol.md's `members`: someone invited into the organization reaches its open workspaces (joined);
    restricting one leaves out the people not added to it directly (left)."""
    team.admin(admin.add_person, "erin", "pw-" + "x" * 8)
    alice = await team.person("alice")
    org = next(w["org"] for w in (await alice.call("list_workspaces"))["workspaces"] if w["id"] == team.ws)
    await alice.subscribe(team.ws)
    await alice.call("add_org_member", org=org, handle="erin")
    await accepted(team, "erin", org)
    erin = team.conn.execute("SELECT id FROM people WHERE handle = 'erin'").fetchone()[0]
    ev = await _event(alice, "members", timeout=3)
    assert (ev["workspace"], ev["joined"], ev["left"]) == (team.ws, [erin], [])
    await alice.call("set_restricted", workspace=team.ws, restricted=True)
    ev = await _event(alice, "members", timeout=3)
    assert (ev["workspace"], ev["joined"], ev["left"]) == (team.ws, [], [erin])


async def test_followers_are_told_of_a_workspace_s_groups_as_they_change(team):
    """docs/protocol.md's `groups`: a group made, changed or removed (by an owner on the socket, or by the operator
    from the command line) reaches the workspace's followers with its groups as `list_groups` lists them; a
    member who leaves is no longer in the groups told. Not a follower of another workspace."""
    team.admin(admin.add_person, "carol", "pw-" + "x" * 8)
    lab = team.admin(admin.add_workspace, "lab", "carol")["id"]
    alice, bob, carol = [await team.person(h) for h in ("alice", "bob", "carol")]
    await alice.subscribe(team.ws)
    await bob.subscribe(team.ws)
    await carol.subscribe(lab)
    researcher = next(m["id"] for m in (await alice.call("list_members", workspace=team.ws))["members"]
                      if m["name"] == "researcher")

    assert (await alice.call("add_group", workspace=team.ws, name="crew", members=["researcher", "@bob"]))["op"] \
        == "add_group"
    for c in (alice, bob):
        ev = await _event(c, "groups", timeout=3)
        assert ev == {"op": "event", "kind": "groups", "workspace": team.ws,
                      "groups": (await c.call("list_groups", workspace=team.ws))["groups"]}
        assert [(g["name"], sorted(g["members"])) for g in ev["groups"]] == [("crew", sorted([researcher, bob.me["id"]]))]
    await bob.call("leave_workspace", workspace=team.ws)
    ev = await _event(alice, "groups", timeout=3)
    assert ev["groups"] == [{"name": "crew", "members": [researcher]}]
    team.admin(admin.remove_group, team.ws, "crew")  # the operator, from another connection to the database
    ev = await _event(alice, "groups", timeout=3)
    assert ev["groups"] == []
    await _quiet(alice, "groups")  # once each
    await _quiet(carol, "groups")


async def test_monitor_taken_away_while_a_subscribe_is_checked_is_not_kept(team, monkeypatch):
    """docs/protocol.md: monitor taken away stops that workspace's messages on open connections within a second.
    A subscribe checks the permissions, then follows; a change committed between the two was rescanned before the
    connection followed (so its rescan passed it by), and the connection went on getting every message of the
    workspace, the monitor it no longer had, until some later change was rescanned."""
    from ygg_server.ops import access

    alice = await team.person("alice")
    await alice.call("set_permissions", workspace=team.ws, agent="researcher", monitor=True)
    researcher = await team.client(api_key=team.keys["researcher"])
    real, taken = team.gw.read, []

    async def read(fn, *args):
        out = await real(fn, *args)
        if fn is access.follow and not taken:  # checked: now taken away, and rescanned, before it follows
            taken.append(await asyncio.to_thread(team.admin, permissions.set_permissions, team.ws, "researcher",
                                                 {"monitor": False}))
            await asyncio.sleep(1.0)
        return out

    monkeypatch.setattr(team.gw, "read", read)
    answer = await researcher.request("subscribe", workspace=team.ws, monitor=True)
    monkeypatch.setattr(team.gw, "read", real)
    assert taken and answer.get("monitor") is not True, answer
    sent = await alice.send(workspace=team.ws, topic="new", title="Private", to=["reviewer"], text="not for monitors")
    assert sent["op"] == "sent"
    await researcher.call("ping")
    await asyncio.sleep(0.3)
    assert [ev for ev in researcher.pending_events() if ev.get("kind") == "message"] == []


async def test_unsubscribe_needs_a_workspace_id(team):
    """docs/protocol.md: a frame of wrong field types is a `bad_frame` saying what it needs (an object or a list as
    `workspace` was answered with Python's "unhashable type: 'list'"); nothing followed is dropped."""
    bob = await team.person("bob")
    await bob.subscribe(team.ws)
    for bad in ([team.ws], {"id": team.ws}, None, 5):
        r = await bob.request("unsubscribe", workspace=bad)
        assert r["code"] == "bad_frame" and "workspace" in r["detail"], (bad, r)
    assert team.gw.following.followers(team.ws), "still followed"


async def test_subscribe_takes_monitor_as_true_or_false(team):
    """docs/protocol.md: `"monitor":false` (a bool). Any other value was taken by its truth: the string "false" asked
    to monitor, and a member was refused `forbidden` for a permission they had not asked for."""
    bob = await team.person("bob")
    for bad in ("false", 0, 1, "yes", [], None):
        r = await bob.request("subscribe", workspace=team.ws, monitor=bad)
        assert r["code"] == "bad_frame" and "monitor" in r["detail"], (bad, r)
    assert not team.gw.following.followers(team.ws)
    assert (await bob.request("subscribe", workspace=team.ws))["monitor"] is False, "left out: false"


async def test_followers_are_told_whose_role_or_permissions_changed(team):
    """docs/protocol.md: `members` carries `changed`, the members still there whose role or permissions changed
    (a role given with `add_member`, through the organization, `set_permissions`), so a member list shows them as
    they are; it is left out when nobody's did, and a change that changes nothing is not told."""
    team.admin(admin.add_person, "carol", "pw-" + "x" * 8)
    alice, bob = await team.person("alice"), await team.person("bob")
    await alice.subscribe(team.ws)
    await bob.subscribe(team.ws)
    ids = {m["name"]: m["id"] for m in (await alice.call("list_members", workspace=team.ws))["members"]}

    await alice.call("add_member", workspace=team.ws, handle="bob", role="admin")
    for who in (alice, bob):
        ev = await _event(who, "members", timeout=3)
        assert ev == {"op": "event", "kind": "members", "workspace": team.ws, "joined": [], "left": [],
                      "changed": [ids["bob"]]}, ev
    roles = {m["id"]: m["role"] for m in (await alice.call("list_members", workspace=team.ws))["members"]}
    assert roles[ids["bob"]] == "admin", "the event says what list_members lists"

    await bob.call("set_permissions", workspace=team.ws, agent="researcher", monitor=True, can_message=["@bob"])
    ev = await _event(alice, "members", timeout=3)
    assert (ev["joined"], ev["left"], ev["changed"]) == ([], [], [ids["researcher"]])
    await alice.call("set_permissions", workspace=team.ws, agent="researcher", monitor=True)  # as it was
    await asyncio.sleep(0.5)
    await _quiet(alice, "members")

    team.admin(admin.add_org_member, "alice", "carol", "admin")  # through the organization: joins as admin
    ev = await _event(alice, "members", timeout=3)
    carol = ev["joined"][0]
    assert (ev["left"], "changed" in ev) == ([], False), ev
    team.admin(admin.add_org_member, "alice", "carol", "member")  # her organization role lowered: her row's too
    ev = await _event(alice, "members", timeout=3)
    assert (ev["joined"], ev["left"], ev["changed"]) == ([], [], [carol])
    team.admin(admin.revoke_agent, "reviewer")  # gone, not changed
    ev = await _event(alice, "members", timeout=3)
    assert (ev["joined"], ev["left"], "changed" in ev) == ([], [ids["reviewer"]], False)


async def test_raising_a_budget_tells_followers_of_the_workspace_its_topic_resumed(team):
    """Seed 000: "`credits_exhausted` The agent (or the topic's budget) is out of credits": raising the budget
    resumes the topic, and the event of a topic of General reaches everyone following its workspace (bob,
    who is not in it), whichever node already knew its conversation."""
    alice, bob = await team.person("alice"), await team.person("bob")
    researcher = await team.client(api_key=team.keys["researcher"])
    await bob.subscribe(team.ws)
    sent = await alice.send(workspace=team.ws, topic="new", title="Budgeted", to=["researcher"], text="go")
    topic = sent["message"]["topic"]
    assert (await alice.call("set_budget", workspace=team.ws, topic=topic, budget=1))["budget"] == 1
    await researcher.next_delivery(timeout=5)
    r1 = await researcher.send(workspace=team.ws, topic=topic, type="inform", to=["@alice"], text="one")
    r2 = await researcher.send(workspace=team.ws, topic=topic, type="inform", to=["@alice"], text="two")
    assert [r1["op"], r2["reason"]] == ["sent", "credits_exhausted"], (r1, r2)
    while (await _event(bob, "topic"))["topic"]["status"] != "paused":
        pass
    assert (await alice.call("set_budget", workspace=team.ws, topic=topic, budget=10))["budget"] == 10
    ev = await _event(bob, "topic")
    assert ev["topic"]["id"] == topic and ev["topic"]["status"] == "open", ev
