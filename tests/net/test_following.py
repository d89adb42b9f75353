"""Who follows which workspace, indexed by workspace (ygg_server/net/following.py): events reach the
followers of their workspace and no one else, and a connection that goes leaves nothing behind."""

import asyncio

from ygg_server import admin
from ygg_server.net.following import Following



def _workspace_of(event: dict) -> str | None:
    return event.get("workspace") or (event.get("topic") or event.get("message") or {}).get("workspace")


class _Conn:
    def __init__(self):
        self.follows, self.monitors = set(), set()


def test_the_index_follows_each_connections_own_sets():
    f, a, b = Following(), _Conn(), _Conn()
    f.set(a, {"w1", "w2"}, {"w1"})
    f.set(b, {"w2"}, set())
    assert set(f.followers("w2")) == {a, b} and set(f.monitoring("w1")) == {a} and not f.monitoring("w2")
    assert f.reaching({"w1", "w3"}) == {a} and set(f.followed()) == {"w1", "w2"}
    f.set(a, {"w2"}, set())
    assert not f.followers("w1") and set(f.followed()) == {"w2"} and a.follows == {"w2"} and not a.monitors
    f.drop(a)
    f.drop(b)
    assert not f and not list(f.followed()) and not list(f.monitored())


async def test_events_reach_the_followers_of_their_workspace_and_a_closed_connection_leaves_nothing(team):
    lab = team.admin(admin.add_workspace, "lab", "bob")["id"]
    alice = await team.person("alice")
    bob = await team.person("bob")
    await alice.subscribe(team.ws, monitor=True)
    await bob.subscribe(lab)
    r = await alice.send(workspace=team.ws, topic="new", title="Here", type="inform", to=["researcher"], text="hi")
    assert r["op"] == "sent"
    got = await alice.next_event(timeout=5)
    assert got["kind"] in ("message", "topic", "balance")
    await asyncio.sleep(0.2)
    assert {_workspace_of(ev) for ev in bob.pending_events()} <= {lab}, "bob follows another workspace only"
    gw = team.gw
    assert set(gw.following.followed()) == {team.ws, lab} and set(gw.following.monitored()) == {team.ws}
    await alice.close()
    await bob.close()
    for _ in range(100):
        if not gw.following:
            break
        await asyncio.sleep(0.02)
    assert not gw.following and not list(gw.following.monitored()), "closed connections follow nothing"
