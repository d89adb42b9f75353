"""Artifacts (issue 21; seed 003 §8-10; docs/protocol.md, "Artifacts") over real websockets, on both stores: each
version and comment is a message through the one writer, paid, scoped like its conversation."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.backends("sqlite", "postgres")

BODY = "# Plan\n\n- ship on Tuesday\n- tell support\n"


@pytest.mark.backends("sqlite", "process", "postgres")  # (the writer's commands cross a process once)
async def test_an_artifact_is_versioned_readable_diffable_and_commented(team):
    """Seed 003 §9: "Editing an artifact never overwrites: it creates a new version, so the whole history is visible
    (who changed what, and when), and old versions stay readable. Comments attach to the artifact" """
    alice = await team.person("alice")
    researcher = await team.client(api_key=team.keys["researcher"])
    made = await researcher.request("create_artifact", workspace=team.ws, conversation="general", topic="new",
                                    topic_title="Release plan", title="Release plan", kind="document", body=BODY)
    assert made["op"] == "create_artifact", made
    aid = made["artifact"]["id"]
    assert made["artifact"]["version"] == 1 and made["message"]["artifact"]["id"] == aid
    assert made["message"]["type"] == "inform" and "Release plan" in made["message"]["text"]
    assert "ship on Tuesday" not in made["message"]["text"], "the body is not a wall of text in the conversation"
    assert made["cost"] == 1
    topic = made["message"]["topic"]
    edited = await researcher.request("update_artifact", workspace=team.ws, artifact=aid, topic=topic,
                                      body=BODY.replace("Tuesday", "Wednesday"))
    assert edited["artifact"]["version"] == 2 and edited["message"]["artifact"]["action"] == "updated"
    same = await researcher.request("update_artifact", workspace=team.ws, artifact=aid, topic=topic,
                                    body=BODY.replace("Tuesday", "Wednesday"))
    assert same.get("unchanged") and same["artifact"]["version"] == 2 and same["cost"] == 0
    note = await alice.request("comment_artifact", workspace=team.ws, artifact=aid, version=1, topic=topic,
                               text="Tuesday was better")
    assert note["op"] == "comment_artifact" and note["message"]["artifact"]["action"] == "commented", note

    got = await alice.call("get_artifact", workspace=team.ws, artifact=aid)
    assert got["version"] == 2 and "Wednesday" in got["body"]
    assert [(v["version"], v["author"]) for v in got["versions"]] == [(1, researcher.me["id"]), (2, researcher.me["id"])]
    old = await alice.call("get_artifact", workspace=team.ws, artifact=aid, version=1)
    assert old["body"] == BODY and [c["text"] for c in old["comments"]] == ["Tuesday was better"]
    diff = await alice.call("artifact_diff", workspace=team.ws, artifact=aid)
    assert "-- ship on Tuesday" in diff["diff"] and "+- ship on Wednesday" in diff["diff"]
    listed = await alice.call("list_artifacts", workspace=team.ws, conversation=made["message"]["conversation"])
    assert [a["id"] for a in listed["artifacts"]] == [aid]


async def test_an_artifact_is_scoped_like_its_conversation(team):
    """Seed 003 §10: "An artifact is scoped to the conversation it was made in, like a message, and inherits that
    conversation's membership and visibility" """
    alice, bob = await team.person("alice"), await team.person("bob")
    made = await alice.request("create_artifact", workspace=team.ws, conversation="dm:researcher", topic="new",
                               topic_title="Private", title="Secret plan", kind="code", language="python",
                               body="print('hi')\n")
    assert made["op"] == "create_artifact", made
    aid = made["artifact"]["id"]
    for op, extra in (("get_artifact", {}), ("artifact_diff", {})):
        r = await bob.request(op, workspace=team.ws, artifact=aid, **extra)
        assert r["op"] == "error" and r["code"] == "not_found", r
    assert (await bob.call("list_artifacts", workspace=team.ws))["artifacts"] == []
    r = await bob.request("update_artifact", workspace=team.ws, artifact=aid, topic="new", topic_title="x", body="x")
    assert r["op"] == "refused" and r["reason"] == "unknown_artifact", "answered as one that does not exist"
    r = await bob.request("comment_artifact", workspace=team.ws, artifact="nope", topic="new", text="x")
    assert r["op"] == "refused" and r["reason"] == "unknown_artifact", r
    bad = await alice.request("create_artifact", workspace=team.ws, topic="new", topic_title="t", title="T",
                              kind="spreadsheet", body="x")
    assert bad["op"] == "refused" and bad["reason"] == "bad_artifact", bad


async def test_an_agents_artifact_is_paid_by_its_size(team):
    """Seed 000, as the message that posts it: "Every message an agent sends costs credits": the body's characters
    count like text (1 credit per started 1,000)."""
    researcher = await team.client(api_key=team.keys["researcher"])
    made = await researcher.request("create_artifact", workspace=team.ws, topic="new", topic_title="Big",
                                    title="Big", body="x" * 2500)
    assert made["cost"] == 3, made
