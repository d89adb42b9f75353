"""Editing and deleting one's own messages (issue 20; docs/protocol.md, `edit_message`, `delete_message`,
`message_versions`), through the one writer, over real websockets, on every backend."""

from __future__ import annotations

import json

import pytest

from ygg_server.ops import admin

from .conftest import acked_until, drain_acked

pytestmark = pytest.mark.backends("sqlite", "process", "postgres")


async def test_an_author_edits_and_the_older_text_stays_readable(team):
    """Seed 003 §9 says it of artifacts, and issue 20 asks it of messages: "Editing [...] never overwrites: it
    creates a new version, so the whole history is visible (who changed what, and when), and old versions stay
    readable." Those the message reached get the correction as an update (context, never a wake)."""
    alice, bob = await team.person("alice"), await team.person("bob")
    researcher = await team.client(api_key=team.keys["researcher"])
    sent = await alice.send(workspace=team.ws, topic="new", title="Plan", to=["researcher", "@bob"],
                            text="deploy on Tuesday")
    assert sent["op"] == "sent", sent
    mid = sent["message"]["id"]
    first = await acked_until(researcher, lambda d: d["message"]["id"] == mid)
    assert first["wake"] is True
    await acked_until(bob, lambda d: d["message"]["id"] == mid)

    r = await alice.request("edit_message", workspace=team.ws, message=mid, text="deploy on Wednesday")
    assert r["op"] == "edit_message", r
    assert r["message"]["text"] == "deploy on Wednesday" and r["message"]["version"] == 1 and r["message"]["edited_at"]
    assert sorted(x["to"] for x in r["deliveries"]) == sorted([bob.me["id"], researcher.me["id"]])
    assert all(x["wake"] is False and x["reason"] == "message_edited" for x in r["deliveries"])

    d = await acked_until(bob, lambda d: d["message"]["id"] == mid)
    assert d["wake"] is False and d["reason"] == "message_edited", d
    assert d["message"]["text"] == "deploy on Wednesday" and d["message"]["version"] == 1
    assert await drain_acked(researcher) == [], "an agent is not disturbed by an edit"
    nxt = await alice.send(workspace=team.ws, topic=sent["message"]["topic"], to=["researcher"], text="and?")
    woke = await acked_until(researcher, lambda d: d["message"]["id"] == nxt["message"]["id"])
    seen = [(c["id"], c["text"], c.get("version")) for c in woke["context"]]
    assert (mid, "deploy on Wednesday", 1) in seen, "the correction is in the context of its next wake"
    assert "edited by its author, version 1" in json.dumps(woke.get("directive")), "and its directive says so"

    r = await alice.call("edit_message", workspace=team.ws, message=mid, text="deploy on Thursday")
    assert r["message"]["version"] == 2
    again = await alice.call("edit_message", workspace=team.ws, message=mid, text="deploy on Thursday")
    assert again["message"]["version"] == 2 and again["deliveries"] == [], "the same edit again changes nothing"
    page = await bob.call("history", workspace=team.ws, conversation="general", topic=sent["message"]["topic"])
    shown = next(m for m in page["messages"] if m["id"] == mid)
    assert shown["text"] == "deploy on Thursday" and shown["version"] == 2

    versions = (await bob.call("message_versions", workspace=team.ws, message=mid))["versions"]
    assert [(v["version"], v["text"]) for v in versions] == [
        (0, "deploy on Tuesday"), (1, "deploy on Wednesday"), (2, "deploy on Thursday")]
    assert all(v["at"] for v in versions)


async def test_only_the_author_edits_or_deletes(team):
    """Issue 20: "only the author may edit/delete (a named refusal otherwise)"; another workspace's message is
    answered as one that does not exist (no tenant learns of another's ids)."""
    alice, bob = await team.person("alice"), await team.person("bob")
    researcher = await team.client(api_key=team.keys["researcher"])
    mid = (await alice.send(workspace=team.ws, topic="new", title="Mine", to=["researcher"], text="mine"))["message"]["id"]
    for who in (bob, researcher):
        for op, extra in (("edit_message", {"text": "theirs"}), ("delete_message", {})):
            r = await who.request(op, workspace=team.ws, message=mid, **extra)
            assert r["op"] == "refused" and r["reason"] == "not_author", r
    r = await alice.request("edit_message", workspace=team.ws, message="no-such-id", text="x")
    assert r["op"] == "refused" and r["reason"] == "unknown_message", r

    private = (await alice.send(workspace=team.ws, conversation="dm:researcher", topic="new", title="DM",
                                to=["researcher"], text="between us"))["message"]["id"]
    r = await bob.request("delete_message", workspace=team.ws, message=private)
    assert r["op"] == "refused" and r["reason"] == "unknown_message", "a message one may not read: as no message"
    for mid_ in (private, "no-such-id"):
        r = await bob.request("message_versions", workspace=team.ws, message=mid_)
        assert r["op"] == "error" and r["code"] == "not_found", r

    other = team.admin(admin.add_workspace, "other", "alice")["id"]
    r = await alice.request("delete_message", workspace=other, message=mid)
    assert r["op"] == "refused" and r["reason"] == "unknown_message", "asked in another workspace: not found there"
    r = await bob.request("edit_message", workspace=other, message=mid, text="x")
    assert r["op"] == "refused" and r["reason"] == "unknown_workspace", r
    r = await alice.request("edit_message", workspace=team.ws, message=mid)
    assert r["op"] == "error" and r["code"] == "bad_frame" and "text" in r["detail"], r
    r = await alice.request("edit_message", workspace=team.ws, message=mid, text="x" * 200_001)
    assert r["op"] == "error" and r["code"] == "bad_frame", r
    page = await alice.call("history", workspace=team.ws, conversation="general")
    assert next(m for m in page["messages"] if m["id"] == mid)["text"] == "mine", "nothing refused changed it"


async def test_a_deleted_message_shows_deleted_to_everyone_and_leaves_search(team):
    """Issue 20: "a deleted message shows as deleted to everyone, its text gone from search"."""
    alice, bob = await team.person("alice"), await team.person("bob")
    sent = await alice.send(workspace=team.ws, topic="new", title="Oops", to=["researcher", "@bob"],
                            text="the password is hunter2")
    mid = sent["message"]["id"]
    await alice.call("edit_message", workspace=team.ws, message=mid, text="the password is hunter3")
    assert len((await bob.call("search_messages", workspace=team.ws, query="hunter3"))["messages"]) == 1
    await drain_acked(bob)

    r = await alice.call("delete_message", workspace=team.ws, message=mid)
    assert r["message"]["deleted"] is True and r["message"]["text"] == ""
    d = await acked_until(bob, lambda d: d["message"]["id"] == mid)
    assert d["reason"] == "message_deleted" and d["wake"] is False and d["message"]["deleted"] is True

    for q in ("hunter2", "hunter3", "password"):
        assert (await bob.call("search_messages", workspace=team.ws, query=q))["messages"] == [], q
    page = await bob.call("history", workspace=team.ws, conversation="general", topic=sent["message"]["topic"])
    shown = next(m for m in page["messages"] if m["id"] == mid)
    assert shown["deleted"] is True and shown["text"] == ""
    versions = (await bob.call("message_versions", workspace=team.ws, message=mid))["versions"]
    assert [v["text"] for v in versions] == [""], "the older texts went with it"

    for op, extra in (("edit_message", {"text": "again"}), ("delete_message", {})):
        r = await alice.request(op, workspace=team.ws, message=mid, **extra)
        assert r["op"] == "refused" and r["reason"] == "message_deleted", r


async def test_an_edit_never_wakes_and_an_agents_edit_stays_within_what_it_paid(team):
    """Seed 000: "Everything else reaches the agent as context: it sees it next time it is woken, without being
    disturbed", and "Every message an agent sends costs credits [...] 1 credit per started 1,000 characters": an
    agent's edit may not carry more text than it paid for, and a message is edited a bounded number of times."""
    alice = await team.person("alice")
    researcher = await team.client(api_key=team.keys["researcher"])
    reviewer = await team.client(api_key=team.keys["reviewer"])
    sent = await alice.send(workspace=team.ws, topic="new", title="Q", to=["researcher"], text="a question")
    await acked_until(researcher, lambda d: d["message"]["id"] == sent["message"]["id"])
    reply = await researcher.send(workspace=team.ws, topic=sent["message"]["topic"], type="request", to=["reviewer"],
                                  text="please check this")
    assert reply["op"] == "sent", reply
    got = await acked_until(reviewer, lambda d: d["message"]["id"] == reply["message"]["id"])
    assert got["wake"] is True

    rid = reply["message"]["id"]
    edited = await researcher.call("edit_message", workspace=team.ws, message=rid, text="please check this twice")
    assert edited["message"]["cost"] == reply["message"]["cost"], "an edit is not charged again"
    assert await drain_acked(reviewer) == [], "not woken by the edit"
    r = await researcher.request("edit_message", workspace=team.ws, message=rid, text="x" * 1500)
    assert r["op"] == "refused" and r["reason"] == "edit_limit", r

    mine = (await alice.send(workspace=team.ws, topic="new", title="Many", type="inform", to=["researcher"],
                             text="v0"))["message"]["id"]
    from ygg_server.core.revise import MAX_EDITS
    for i in range(MAX_EDITS):
        assert (await alice.request("edit_message", workspace=team.ws, message=mine, text=f"v{i + 1}"))["op"] == \
            "edit_message"
    r = await alice.request("edit_message", workspace=team.ws, message=mine, text="one too many")
    assert r["op"] == "refused" and r["reason"] == "edit_limit", r


async def test_an_edit_is_found_by_its_new_text_only(team):
    """Search finds the text as it is now: the older text of an edited message is no longer a hit."""
    alice = await team.person("alice")
    mid = (await alice.send(workspace=team.ws, topic="new", title="Typo", type="inform", to=["researcher"],
                            text="the quick brwn fox"))["message"]["id"]
    if team.backend != "postgres":
        from .test_search_index import wait_indexed

        await wait_indexed(team.path)  # indexed: the edit takes the old text out of the index itself
    await alice.call("edit_message", workspace=team.ws, message=mid, text="the quick brown fox")
    assert (await alice.call("search_messages", workspace=team.ws, query="brwn"))["messages"] == []
    assert [m["id"] for m in (await alice.call("search_messages", workspace=team.ws, query="brown"))["messages"]] == [mid]


@pytest.mark.backends("postgres")
async def test_an_edit_on_one_node_reaches_people_on_another(team):
    """Several nodes on one database (docs/architecture.md): an edit decided on node A is announced to node B like
    a send (NOTIFY at COMMIT), and bob, connected there, gets the correction; an edit of the same message on B
    then starts from A's version (the message's row is locked while an edit is decided)."""
    other = await team.node()
    alice = await team.person("alice")
    bob = await team.person("bob", url=f"ws://127.0.0.1:{other.port}/")
    alice_b = await team.person("alice", url=f"ws://127.0.0.1:{other.port}/")
    mid = (await alice.send(workspace=team.ws, topic="new", title="Nodes", to=["@bob"], text="from A"))["message"]["id"]
    await acked_until(bob, lambda d: d["message"]["id"] == mid)
    await alice.call("edit_message", workspace=team.ws, message=mid, text="from A, edited")
    d = await acked_until(bob, lambda d: d["message"]["id"] == mid)
    assert d["reason"] == "message_edited" and d["message"]["text"] == "from A, edited"
    r = await alice_b.call("edit_message", workspace=team.ws, message=mid, text="from B, edited")
    assert r["message"]["version"] == 2
    versions = (await bob.call("message_versions", workspace=team.ws, message=mid))["versions"]
    assert [v["text"] for v in versions] == ["from A", "from A, edited", "from B, edited"]
