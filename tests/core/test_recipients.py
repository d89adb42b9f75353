"""Who a message can name: ids, @handles, agent names, `name@owner`, groups, conversations."""

import uuid

import pytest

from ygg_server.core import (
    ConversationKind, RefusalReason as R, derived_id, direct_id, general_id, group_id,
)
from ygg_server.core.directory import _DM_NAMESPACE

from .harness import World, assert_refused, assert_woken


@pytest.mark.parametrize("ref", ["nobody", "@nobody", "human.nobody", "group:nope", "Reviewer", ""])
def test_unknown_recipient(ref):
    """Seed 000: "`unknown_recipient`	Nobody by that id or @handle in the workspace." """
    w = World()
    d = w.send("researcher", to=["reviewer", ref])
    assert_refused(d, R.UNKNOWN_RECIPIENT)
    assert d.routed == () and d.topics == ()


@pytest.mark.parametrize("ref, pid", [("human.alice", "human.alice"), ("@alice", "human.alice"),
                                      ("reviewer", "reviewer"), ("reviewer@alice", "reviewer")])
def test_recipients_by_id_handle_or_name(ref, pid):
    """Seed 000: "Participants are humans (ids like human.389836..., shown by @handle) and agents (ids like researcher)." """
    w = World()
    d = w.send("researcher", to=[ref])
    assert d.message.to == (pid,)


def test_unknown_waiting_for():
    """Seed 000: "`unknown_recipient`	Nobody by that id or @handle in the workspace." — `waiting_for` too."""
    w = World()
    assert_refused(w.send("researcher", to=["reviewer"], state="waiting", waiting_for=["ghost"]), R.UNKNOWN_RECIPIENT)


def test_an_agent_outside_the_workspace_is_unknown():
    """Seed 000: "Workspaces are isolated from each other at the transport level." """
    w = World()
    w._memberships.pop("writer")
    w._rebuild()
    assert_refused(w.send("researcher", to=["writer"]), R.UNKNOWN_RECIPIENT)


def test_same_named_agents_are_told_apart_by_their_owners_handle():
    """Seed 002: "Two people may both have an agent called builder; agents tell them apart by the owner's handle, the person field in list_agents."

    Core decision (docs/rules.md): a bare ambiguous name is unknown_recipient, with the
    `name@ownerhandle` choices in the detail.
    """
    w = World(people=("alice", "bob"))
    a = w.add_agent("builder", "alice", pid="agent.builder.a")
    b = w.add_agent("builder", "bob", pid="agent.builder.b")
    d = w.send("researcher", to=["builder"])
    assert_refused(d, R.UNKNOWN_RECIPIENT)
    assert "builder@alice" in d.refusal.detail and "builder@bob" in d.refusal.detail
    assert w.send("researcher", to=["builder@alice"]).message.to == (a,)
    assert w.send("researcher", to=["builder@bob"]).message.to == (b,)
    assert w.send("researcher", to=[b]).message.to == (b,)


def test_a_group_addresses_its_agents():
    """Seed 000: "Agents can be gathered in groups (group:<name>) to address several at once." """
    w = World()
    w.set_group("reviewers", {"reviewer", "writer"})
    d = w.send("researcher", to=["group:reviewers"])
    assert d.message.to == ("reviewer", "writer")
    assert_woken(d, "reviewer")
    assert_woken(d, "writer")
    assert d.message.cost == 2


def test_repeats_are_dropped_in_order():
    """Core decision (docs/rules.md): recipients resolve in order, without repeats, never the author."""
    w = World()
    w.set_group("all", {"researcher", "reviewer", "writer"})
    d = w.send("researcher", to=["writer", "group:all", "@alice", "writer"])
    assert d.message.to == ("writer", "reviewer", "human.alice")


def test_direct_conversations_are_made_on_first_use_with_a_derived_id():
    """Seed 000: "A conversation is a place where participants talk: a direct exchange, a group's conversation, or General, which everyone in the workspace sees."

    Core decision (docs/rules.md): direct, General and group conversation ids are uuid5 of what
    they are, so two nodes making one at once agree.
    """
    w = World()
    d = w.send("researcher", to=["reviewer"], conversation="dm:reviewer")
    conv = d.conversation
    assert conv.kind == ConversationKind.DIRECT and conv.members == {"researcher", "reviewer"}
    assert conv.id == direct_id(w.ws, "reviewer", "researcher") == direct_id(w.ws, "researcher", "reviewer")
    assert d.message.conversation == conv.id
    # the second message finds it
    d2 = w.send("reviewer", topic=d.topics[0].id, type="inform", conversation="dm:researcher")
    assert d2.refusal is None and d2.message.conversation == conv.id
    assert d2.conversation is None or d2.conversation.members == conv.members  # (party counters may move)


def test_derived_ids_are_uuid5():
    """Core decision (docs/rules.md): derived ids are uuid5 in one namespace, of parts joined by U+001F."""
    def u(*parts):
        return str(uuid.uuid5(_DM_NAMESPACE, "\x1f".join(parts)))

    assert general_id("ws1") == u("general", "ws1")
    assert direct_id("ws1", "b", "a") == u("direct", "ws1", "a", "b")
    assert group_id("ws1", "team") == u("group", "ws1", "team")
    assert derived_id("closure_poll", "m1:5", "agent") == u("derived", "closure_poll", "m1:5", "agent")
    assert derived_id("é", "ü" * 40) == u("derived", "é", "ü" * 40)


def test_notice_ids_are_deterministic():
    """Core decision (docs/rules.md): a notice's id derives from its cause, so deciding it twice is one row."""
    a, b = World(), World()
    for w in (a, b):
        tid = w.open("researcher", to=["reviewer"])
        d = w.send("researcher", topic=tid, type="inform", state="done")
    ids = lambda w: [m.id for m in w.messages if m.notice]  # noqa: E731
    assert ids(a) == ids(b) and len(ids(a)) == 1


@pytest.mark.parametrize("conversation", ["dm:researcher", "dm:nobody", "dm:system.ygg", "group:nope", "no-such-id"])
def test_unknown_conversation(conversation):
    """Core decision (docs/rules.md): a conversation that does not exist, or a direct one with oneself: unknown_conversation."""
    w = World()
    assert_refused(w.send("researcher", to=["reviewer"], conversation=conversation), R.UNKNOWN_CONVERSATION)


def test_a_group_conversation_is_its_agents_and_people():
    """Seed 000: "a direct exchange, a group's conversation, or General, which everyone in the workspace sees."

    Core decision (docs/rules.md): a group's agents and any person may write in its conversation;
    another agent may not (unknown_conversation); a direct conversation is its two members'.
    """
    w = World(agents=("researcher", "reviewer", "writer", "outsider"))
    w.set_group("pair", {"researcher", "reviewer"})
    d = w.send("researcher", to=["reviewer"], conversation="group:pair")
    assert d.refusal is None and d.conversation.id == group_id(w.ws, "pair")
    assert w.send("human.alice", to=["reviewer"], conversation="group:pair").refusal is None
    assert_refused(w.send("outsider", to=["reviewer"], conversation="group:pair"), R.UNKNOWN_CONVERSATION)
    dm = w.send("researcher", to=["reviewer"], conversation="dm:reviewer").conversation
    assert_refused(w.send("writer", to=["reviewer"], conversation=dm.id), R.UNKNOWN_CONVERSATION)


def test_a_topic_belongs_to_its_conversation():
    """Core decision (docs/rules.md): a topic id used in another conversation is unknown_topic."""
    w = World()
    tid = w.open("researcher", to=["reviewer"])
    assert_refused(w.send("researcher", topic=tid, to=["reviewer"], conversation="dm:reviewer"), R.UNKNOWN_TOPIC)


def test_a_group_member_who_left_is_skipped():
    """Core decision (docs/rules.md): a group member no longer in the workspace is skipped; an empty group is unknown."""
    w = World()
    w.set_group("mixed", {"reviewer", "ghost"})
    w.set_group("ghosts", {"ghost"})
    assert w.send("researcher", to=["group:mixed"]).message.to == ("reviewer",)
    assert_refused(w.send("researcher", to=["group:ghosts"]), R.UNKNOWN_RECIPIENT)


def test_a_persons_bare_handle_is_their_person_agent_unless_an_agent_shares_the_name():
    """Seed 002: "Every person also has a person agent, named after their handle and in every workspace they can reach. It has no token: it is how the person writes to agents from a workspace's Messages tab, and agents answer it like any other agent".

    Core decision (docs/rules.md): a bare name is the one member that answers to it, an agent's name or a
    person's handle; when an agent shares a person's handle, the bare name is ambiguous (unknown_recipient,
    the detail names `@handle` and `name@owner`), and `@handle` always means the person.
    """
    w = World(people=("alice", "bob"))
    d = w.send("researcher", to=["alice"])
    assert d.refusal is None and d.message.to == ("human.alice",)
    twin = w.add_agent("alice", "bob", pid="agent.alice.of.bob")
    d = w.send("researcher", to=["alice"])
    assert_refused(d, R.UNKNOWN_RECIPIENT)
    assert "@alice" in d.refusal.detail and "alice@bob" in d.refusal.detail
    assert w.send("researcher", to=["@alice"]).message.to == ("human.alice",)
    assert w.send("researcher", to=["alice@bob"]).message.to == (twin,)
