"""Roles (seed 000), permissions and plans (seed 002): refusals before anything is charged."""

import pytest

from ygg_server.core import RefusalReason as R, Role

from .harness import World, assert_refused, assert_woken


def test_a_viewer_cannot_send():
    """Seed 000: "People have a role: owner, admin, member or viewer."

    Core decision (docs/rules.md): a viewer reads only: every send is permission_denied.
    """
    w = World(viewers=("victor",))
    for mtype in ("request", "inform"):
        assert_refused(w.send("human.victor", type=mtype, to=["researcher"]), R.PERMISSION_DENIED)


@pytest.mark.parametrize("role", [Role.OWNER, Role.ADMIN, Role.MEMBER])
def test_owner_admin_and_member_may_send(role):
    """Seed 003 (66): "Membership has three role labels (owner, admin, member) but only two functional levels." """
    w = World(people=("alice", "bob"))
    w.member("human.bob", role=role)
    assert_woken(w.send("human.bob", to=["researcher"]), "researcher")


def test_a_stranger_cannot_send():
    """Seed 000: "Workspaces are isolated from each other at the transport level." """
    w = World()
    w._memberships.pop("writer")
    w._rebuild()
    assert_refused(w.send("writer", to=["researcher"]), R.PERMISSION_DENIED)
    assert_refused(w.send("ghost", to=["researcher"]), R.PERMISSION_DENIED)


@pytest.mark.parametrize(
    "who, change, to",
    [
        ("researcher", dict(send=False), "reviewer"),  # no send permission
        ("reviewer", dict(receive=False), "reviewer"),  # the recipient does not receive
        ("researcher", dict(can_message=frozenset({"writer"})), "reviewer"),  # may message writer only
        ("reviewer", dict(takes_from=frozenset({"writer"})), "reviewer"),  # takes from writer only
    ],
)
def test_seed_002_permissions(who, change, to):
    """Seed 002: "Each membership of an agent in a workspace has:" send and receive, "Can message: the agents it may send to. Empty means anyone in the workspace." and "Takes messages from: the agents that may send to it (ADR 0028). Empty means anyone."

    Refused permission_denied, with nothing charged.
    """
    w = World()
    w.member(who, **change)
    d = w.send("researcher", to=[to])
    assert_refused(d, R.PERMISSION_DENIED)
    assert d.ledger == () and d.routed == () and d.topics == () and w.wallets["researcher"] == 1000


def test_permissions_allow_what_they_list():
    """Seed 002: "Can message: the agents it may send to. Empty means anyone in the workspace." """
    w = World()
    w.member("researcher", can_message=frozenset({"reviewer"}))
    w.member("reviewer", takes_from=frozenset({"researcher"}))
    assert_woken(w.send("researcher", to=["reviewer"]), "reviewer")
    assert_refused(w.send("writer", to=["reviewer"]), R.PERMISSION_DENIED)
    assert_refused(w.send("researcher", to=["writer"]), R.PERMISSION_DENIED)


def test_people_who_do_not_receive_are_not_observers():
    """Seed 002: "Each membership of an agent in a workspace has:" ... "Send and receive:" — no receive, no copy."""
    w = World(people=("alice", "bob"))
    w.member("human.bob", receive=False)
    d = w.send("researcher", to=["reviewer"])
    assert "human.bob" not in {x.recipient for x in d.routed[0].deliveries}


@pytest.mark.parametrize("left, to, refused", [(0, ["reviewer"], True), (1, ["reviewer"], False),
                                               (1, ["reviewer", "writer"], True), (2, ["reviewer", "writer"], False)])
def test_plan_limit(left, to, refused):
    """Seed 002: "A message to several agents counts once per recipient."

    Core decision (docs/rules.md): a send beyond the organization's monthly messages is refused plan_limit.
    """
    w = World()
    w.plan_left = left
    d = w.send("researcher", to=to)
    if refused:
        assert_refused(d, R.PLAN_LIMIT)
        assert d.routed == ()
    else:
        assert d.refusal is None and d.usage == len(to)


def test_plan_usage_counts_people_and_absorbed_replies():
    """Seed 002: "An organization's plan sets how many messages it can send a month" — once per recipient, at least 1.

    Core decision (docs/rules.md): a person's message counts too; the free answer to a closure poll does not,
    any other message to system.ygg does.
    """
    w = World()
    assert w.send("human.alice", to=["researcher", "reviewer"]).usage == 2
    assert w.send("researcher", title="Alone").usage == 1
    tid = w.open("researcher", to=["reviewer"])
    assert w.send("reviewer", topic=tid, type="response", to=["system.ygg"]).usage == 1
    poll = w.send("researcher", topic=tid, type="inform", state="done", to=["reviewer"]).routed[1].message
    assert w.send("reviewer", topic=tid, type="response", in_reply_to=poll.id, to=["system.ygg"]).usage == 0


def test_a_participant_who_left_is_not_a_default_recipient():
    """Core decision (docs/rules.md): default recipients are the topic's others still in the workspace."""
    w = World()
    tid = w.open("researcher", to=["reviewer", "writer"])
    w._memberships.pop("writer")
    w._rebuild()
    d = w.send("reviewer", topic=tid, type="inform")
    assert d.refusal is None and d.message.to == ("researcher",)
