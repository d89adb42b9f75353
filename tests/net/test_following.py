"""Who follows which workspace, indexed by workspace (ygg_server/net/following.py): events reach the
followers of their workspace and no one else, and a connection that goes leaves nothing behind."""

import asyncio

import pytest

from ygg_server.ops import admin
from ygg_server.net.following import Following
from ygg_server.ops.queries import standing_of

pytestmark = pytest.mark.backends("sqlite", "postgres")


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


def test_who_is_in_a_followed_workspace_is_kept_until_its_last_follower_goes():
    """`members` events tell each change once, against what was last read; a workspace nobody follows any more
    is forgotten, so following it again starts from what is read then."""
    f, a, b = Following(), _Conn(), _Conn()
    m = lambda *ids, **standing: {i: standing.get(i, "member") for i in ids}  # noqa: E731
    assert f.moved("w1", m("x")) is None, "not followed: nothing kept"
    f.set(a, {"w1"}, set())
    f.know("w1", m("x", "y"), [])
    f.set(b, {"w1"}, set())
    f.know("w1", m("x"), [])  # (read before a change the next rescan tells: the first read stays)
    assert f.moved("w1", m("x", "y")) is None, "the same: nothing to tell"
    assert f.moved("w1", m("x", "z")) == (["z"], ["y"], [])
    assert f.moved("w1", m("x", "z")) is None, "told once"
    assert f.moved("w1", m("x", "z", "q", x="admin")) == (["q"], [], ["x"]), "a role or permission changed"
    assert f.moved("w1", m("z", "q", x="admin", q="viewer")) == ([], ["x"], ["q"])
    f.set(a, set(), set())
    assert f.moved("w1", m("q", q="viewer")) == ([], ["z"], []), "kept while b follows"
    f.drop(b)
    f.set(a, {"w1"}, set())
    assert f.moved("w1", m("q")) is None, "forgotten with the last follower: a new first read"


def test_a_followed_workspace_s_groups_are_told_once_each_change():
    """`groups` events tell each change of a followed workspace's groups once, against what was last read
    (known as the first connection followed it), and are forgotten with the workspace's last follower."""
    f, a = Following(), _Conn()
    crew = [{"name": "crew", "members": ["x"]}]
    assert f.regrouped("w1", crew) is False, "not followed: nothing kept"
    f.set(a, {"w1"}, set())
    f.know("w1", {}, [])
    assert f.regrouped("w1", []) is False
    assert f.regrouped("w1", crew) is True
    assert f.regrouped("w1", crew) is False, "told once"
    assert f.regrouped("w1", [{"name": "crew", "members": ["x", "y"]}]) is True, "a member added"
    f.drop(a)
    f.set(a, {"w1"}, set())
    assert f.regrouped("w1", []) is False, "forgotten with the last follower: a new first read"


def test_a_members_standing_compares_a_listed_row_with_a_read_one():
    """`standing_of` takes `list_members`'s row (read as a connection subscribes) and the gateway's own read
    (`queries.standing` of the columns) alike, so the first comparison tells no change that did not happen."""
    from ygg_server.ops.queries import standing

    row = {"id": "agent.x", "kind": "agent", "name": "x", **standing("member", 1, 1, 0, '["human.a"]', None)}
    assert standing_of(row) == standing_of(standing("member", True, 1, False, '["human.a"]', ""))
    assert standing_of(row) != standing_of(standing("member", 1, 1, 0, None, None))


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
