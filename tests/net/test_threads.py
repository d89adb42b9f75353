"""Side threads (issue 21; seed 003 §5-7; docs/protocol.md, "Side threads") over real websockets, on both stores:
a message's `<dm>` parts go through the one writer into side threads, paid, and are settled with `settle_thread`."""

from __future__ import annotations

import pytest

from .conftest import acked_until

pytestmark = pytest.mark.backends("sqlite", "postgres")


async def test_a_dm_part_opens_a_thread_that_wakes_its_target_and_is_linked_to_its_message(team):
    """Seed 003 §5: "The backend extracts it, opens (or reuses) a dedicated thread for just those agents, and links
    it to the message it came from" """
    alice = await team.person("alice")
    researcher = await team.client(api_key=team.keys["researcher"])
    reviewer = await team.client(api_key=team.keys["reviewer"])
    ask = await alice.send(workspace=team.ws, topic="new", title="Report", to=["researcher"], text="write it")
    await acked_until(researcher, lambda d: d["message"]["id"] == ask["message"]["id"])
    before = (await alice.call("balances", workspace=team.ws))
    sent = await researcher.send(workspace=team.ws, topic=ask["message"]["topic"], type="response",
                                 in_reply_to=ask["message"]["id"], text=(
                                     'Draft is coming.\n<dm target="reviewer">check the totals in table 2</dm>'))
    assert sent["op"] == "sent", sent
    msg = sent["message"]
    assert msg["text"] == "Draft is coming." and len(msg["threads"]) == 1
    thread = msg["threads"][0]
    assert sent["cost"] == 2, "the message and its part are each paid (1 credit each, one recipient each)"
    woke = await acked_until(reviewer, lambda d: d["message"]["conversation"] == thread)
    assert woke["wake"] is True and woke["message"]["text"] == "check the totals in table 2"
    assert woke["message"]["author"] == researcher.me["id"] and woke["message"]["type"] == "request"
    convs = (await alice.call("list_conversations", workspace=team.ws))["conversations"]
    t = next(c for c in convs if c["id"] == thread)
    assert t["kind"] == "side" and t["thread"] == "ongoing" and t["origin_message"] == msg["id"]
    agents = {m for m in t["members"] if m.startswith("agent.")}
    assert agents == {researcher.me["id"], reviewer.me["id"]}, "exactly those agents"
    assert alice.me["id"] in t["members"] and len(t["members"]) == 4, "and General's people, who see its origin"
    page = await alice.call("history", workspace=team.ws, conversation=thread)
    assert [m["text"] for m in page["messages"]] == ["check the totals in table 2"]
    # a second part to the same participants reuses the thread
    again = await researcher.send(workspace=team.ws, topic=ask["message"]["topic"], type="inform",
                                  text='<dm target="reviewer">and table 3</dm>')
    assert again["message"]["threads"] == [thread]
    assert before  # (balances answered)


async def test_an_unknown_target_refuses_the_whole_message(team):
    """Seed 000's unknown_recipient, for a `<dm target>` naming nobody here: nothing stored, nothing charged."""
    researcher = await team.client(api_key=team.keys["researcher"])
    r = await researcher.send(workspace=team.ws, topic="new", title="T", to=["reviewer"],
                              text='hi <dm target="nobody-here">psst</dm>')
    assert r["op"] == "refused" and r["reason"] == "unknown_recipient", r
    bob = await team.person("bob")
    bad = await bob.send(workspace=team.ws, topic="new", title="T", to=["reviewer"], text='<dm target="x">no')
    assert bad["op"] == "sent" and bad["message"]["text"] == '<dm target="x">no' and "threads" not in bad["message"]


@pytest.mark.backends("sqlite", "process", "postgres")  # (the writer's commands cross a process once)
async def test_a_member_settles_the_thread_and_the_origin_gets_no_message(team):
    """Seed 003 §7: "post a summary back and mark the thread resolved. The marker in the original conversation
    changes from "ongoing" to "resolved" (or "abandoned" if it got stuck) instead of adding a new message." """
    alice, bob = await team.person("alice"), await team.person("bob")
    sent = await alice.send(workspace=team.ws, conversation="dm:researcher", topic="new", title="Plan",
                            to=["researcher"], text='go <dm target="reviewer">review the plan</dm>')
    thread = sent["message"]["threads"][0]
    reviewer = await team.client(api_key=team.keys["reviewer"])
    await acked_until(reviewer, lambda d: d["message"]["conversation"] == thread)
    origin = sent["message"]["conversation"]
    before = (await alice.call("history", workspace=team.ws, conversation=origin))["messages"]
    r = await reviewer.call("settle_thread", workspace=team.ws, thread=thread, state="resolved",
                            summary="The plan holds.")
    assert r == {**r, "op": "settle_thread", "thread": thread, "state": "resolved", "summary": "The plan holds."}
    note = await acked_until(alice, lambda d: d["message"]["conversation"] == thread and d["message"].get("notice"))
    assert note["message"]["notice"] == "thread_settled" and note["wake"] is False
    assert (await alice.call("history", workspace=team.ws, conversation=origin))["messages"] == before
    convs = (await alice.call("list_conversations", workspace=team.ws))["conversations"]
    t = next(c for c in convs if c["id"] == thread)
    assert t["thread"] == "resolved" and t["summary"] == "The plan holds."
    # bob is not in the thread (nor in its origin): answered as a thread that does not exist
    no = await bob.request("settle_thread", workspace=team.ws, thread=thread, state="abandoned")
    assert no["op"] == "refused" and no["reason"] == "unknown_conversation", no
    bad = await alice.request("settle_thread", workspace=team.ws, thread=thread, state="finished")
    assert bad["op"] == "refused" and bad["reason"] == "bad_thread_state", bad
