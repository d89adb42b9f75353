"""Files (issue 21; docs/protocol.md, "Files") over real websockets, on both stores: uploaded in chunks, stored
content-addressed, sent with a message and charged by their stored size, read back by who reads the message."""

from __future__ import annotations

import base64
import hashlib

import pytest

from ygg_server.core import files as core_files
from ygg_server.ops import admin, files as ops_files

pytestmark = pytest.mark.backends("sqlite", "postgres")


async def upload(client, ws: str, data: bytes, name: str = "notes.txt", mtype: str = "text/plain",
                 chunk: int = 100_000, sha: str | None = None) -> dict:
    """Upload `data` in chunks; the last answer (a `file`, or a refusal)."""
    first = {"name": name, "type": mtype, "size": len(data), "sha256": sha or hashlib.sha256(data).hexdigest()}
    r = await client.request("upload_file", workspace=ws, data=base64.b64encode(data[:chunk]).decode(), **first)
    at = chunk
    while r["op"] == "upload_file" and "upload" in r:
        r = await client.request("upload_file", workspace=ws, upload=r["upload"],
                                 data=base64.b64encode(data[at:at + chunk]).decode())
        at += chunk
    return r


async def download(client, ws: str, fid: str) -> tuple[bytes, dict]:
    out, offset = b"", 0
    while True:
        r = await client.request("download_file", workspace=ws, file=fid, offset=offset)
        if r["op"] != "download_file":
            return out, r
        out += base64.b64decode(r["data"])
        offset = len(out)
        if r["done"]:
            return out, r


@pytest.mark.backends("sqlite", "process", "postgres")  # (a send with files crosses the writer process once)
async def test_a_file_is_stored_sent_charged_by_its_size_and_read_back(team):
    """Issue 21: "real attachments stored by the server (content-addressed, size-limited per plan), charged by size,
    downloadable by those who can read the message"; seed 000: "attached files cost by size." """
    alice = await team.person("alice")
    researcher = await team.client(api_key=team.keys["researcher"])
    data = bytes(range(256)) * 1000  # 256,000 bytes: 3 credits at 1 per started 100,000 on top of the text
    up = await upload(researcher, team.ws, data, name="table.bin", mtype="application/octet-stream")
    assert up["op"] == "upload_file" and up["file"]["size"] == len(data), up
    f = up["file"]
    assert f["sha256"] == hashlib.sha256(data).hexdigest() and f["message"] is None
    sent = await researcher.request("send", workspace=team.ws, topic="new", title="Data", to=["@alice"],
                                    text="the table", files=[f["id"]], attachment_bytes=1)
    assert sent["op"] == "sent", sent
    assert sent["cost"] == 1 + 3, "charged by the stored size, not by a declared attachment_bytes"
    assert sent["message"]["files"] == [{"id": f["id"], "name": "table.bin", "size": len(data),
                                         "type": "application/octet-stream", "sha256": f["sha256"]}]
    got, last = await download(alice, team.ws, f["id"])
    assert got == data and last["file"]["message"] == sent["message"]["id"]
    hist = await alice.call("history", workspace=team.ws, topic=sent["message"]["topic"])
    assert hist["messages"][-1]["files"][0]["id"] == f["id"]
    again = await researcher.request("send", workspace=team.ws, topic="new", title="Again", to=["@alice"],
                                     text="x", files=[f["id"]])
    assert again["op"] == "refused" and again["reason"] == "unknown_file", "one upload goes with one message"
    # content-addressed: the same bytes again are stored once in this workspace
    up2 = await upload(alice, team.ws, data, name="copy.bin")
    assert up2["file"]["sha256"] == f["sha256"] and up2["file"]["id"] != f["id"]
    assert team.conn.execute("SELECT count(*) FROM file_blobs").fetchone()[0] == 1


async def test_a_file_is_read_only_by_those_who_read_its_message(team):
    """Issue 21: files are "downloadable by those who can read the message"; seed 003 §10: scoped like a message.
    An unknown id and a forbidden one are answered alike (no tenant learns about another)."""
    alice, bob = await team.person("alice"), await team.person("bob")
    up = await upload(alice, team.ws, b"secret plan\n")
    fid = up["file"]["id"]
    early, r = await download(bob, team.ws, fid)
    assert r["op"] == "error" and r["code"] == "not_found", "an upload not sent is its uploader's alone"
    sent = await alice.request("send", workspace=team.ws, conversation="dm:researcher", topic="new", title="Private",
                               to=["researcher"], text="see file", files=[fid])
    assert sent["op"] == "sent", sent
    _, forbidden = await download(bob, team.ws, fid)
    _, unknown = await download(bob, team.ws, "no-such-file")
    assert forbidden == {**unknown, "ref": forbidden["ref"]} and forbidden["code"] == "not_found"
    researcher = await team.client(api_key=team.keys["researcher"])
    got, _ = await download(researcher, team.ws, fid)
    assert got == b"secret plan\n"
    # another tenant: carol in her own workspace knows nothing of it, even by its id
    team.admin(admin.add_person, "carol", "pw-" + "x" * 8)
    other = team.admin(admin.add_workspace, "elsewhere", "carol")["id"]
    carol = await team.person("carol")
    for ws in (team.ws, other):
        _, r = await download(carol, ws, fid)
        assert r["op"] == "error" and r["code"] == "not_found", r
    stolen = await carol.request("send", workspace=other, topic="new", title="t", text="x", files=[fid])
    assert stolen["op"] == "refused" and stolen["reason"] == "unknown_file", stolen
    bob_sends = await bob.request("send", workspace=team.ws, topic="new", title="t", text="x", files=[fid])
    assert bob_sends["op"] == "refused" and bob_sends["reason"] == "unknown_file", "only the uploader sends it"


async def test_hostile_uploads_are_refused_with_a_reason(team):
    """Issue 21: "size-limited per plan": an oversize file is refused with a clear reason; a wrong hash, bad ids
    and bad chunks are refused, nothing stored, the connection kept."""
    alice = await team.person("alice")
    team.admin(admin.set_plan, "alice", "free")
    big = core_files.MAX_FILE_BYTES["free"] + 1
    r = await alice.request("upload_file", workspace=team.ws, name="big.bin", size=big, data="")
    assert r["op"] == "refused" and r["reason"] == "bad_file" and "plan" in r["detail"], r
    team.admin(admin.set_plan, "alice", "team")
    r = await upload(alice, team.ws, b"hello", sha="0" * 64)
    assert r["op"] == "refused" and r["reason"] == "bad_file" and "sha256" in r["detail"], r
    for bad in ({"name": "../etc/passwd", "size": 1, "data": "eA=="}, {"name": "a", "size": -1, "data": ""},
                {"name": "a", "size": 1, "data": "!!notbase64"}, {"name": "a", "size": 1, "data": "eHh4"},
                {"name": "a", "size": 1, "type": "not a type", "data": "eA=="},
                {"name": "a\u202etxt", "size": 1, "data": "eA=="}, {"name": "a", "size": "1", "data": "eA=="}):
        r = await alice.request("upload_file", workspace=team.ws, **bad)
        assert r["op"] == "refused" and r["reason"] == "bad_file", (bad, r)
    r = await alice.request("upload_file", workspace=team.ws, upload="not-mine", data="eA==")
    assert r["op"] == "refused" and r["reason"] == "unknown_file", r
    r = await alice.request("upload_file", workspace="no-such-workspace", name="a", size=1, data="eA==")
    assert r["op"] == "error" and r["code"] == "not_found", r
    for files in (["nope"], "x", [1], ["a"] * 11):
        r = await alice.request("send", workspace=team.ws, topic="new", title="t", text="x", files=files)
        assert r["op"] in ("refused", "error"), (files, r)
        assert r.get("reason") in ("unknown_file", "bad_file") or r.get("code") == "bad_frame", r
    r = await alice.request("download_file", workspace=team.ws, file="x", offset=-1)
    assert r["op"] == "error" and r["code"] == "not_found", r
    assert team.conn.execute("SELECT count(*) FROM files").fetchone()[0] == 0
    assert (await alice.call("ping"))["op"] == "pong"


async def test_an_upload_never_sent_is_swept(team):
    """Issue 21: "an unreferenced upload is swept after a while"; a sent one stays."""
    alice = await team.person("alice")
    kept = (await upload(alice, team.ws, b"kept"))["file"]["id"]
    lost = (await upload(alice, team.ws, b"lost"))["file"]["id"]
    sent = await alice.request("send", workspace=team.ws, topic="new", title="t", text="x", files=[kept])
    assert sent["op"] == "sent", sent
    later = team.gw.clock() + core_files.UNSENT_TTL_US + 1
    assert team.admin(ops_files.sweep, later) == 1
    ids = {r[0] for r in team.conn.execute("SELECT id FROM files").fetchall()}
    assert ids == {kept} and lost not in ids
    assert team.conn.execute("SELECT count(*) FROM file_blobs").fetchone()[0] == 1


@pytest.mark.backends("postgres")
async def test_a_file_uploaded_on_one_node_is_sent_and_read_on_another(team):
    """Several nodes on one database (docs/architecture.md): the bytes are kept in the database, so an upload stored
    through node A is sent from node B (its row locked there as the message is decided) and read back on A; the same
    upload sent on both nodes at once goes with one message only."""
    other = await team.node()
    on_b = f"ws://127.0.0.1:{other.port}/"
    alice_a = await team.person("alice")
    alice_b = await team.person("alice", url=on_b)
    bob_a = await team.person("bob")
    data = b"x" * 300_000
    f = (await upload(alice_a, team.ws, data, name="big.txt"))["file"]
    sends = [c.request("send", workspace=team.ws, topic="new", title=f"t{i}", to=["@bob"], text="x", files=[f["id"]])
             for i, c in enumerate((alice_a, alice_b))]
    import asyncio
    got = await asyncio.gather(*sends)
    assert sorted(r["op"] for r in got) == ["refused", "sent"], got
    assert next(r for r in got if r["op"] == "refused")["reason"] == "unknown_file"
    back, last = await download(bob_a, team.ws, f["id"])
    assert back == data and last["file"]["message"] == next(r for r in got if r["op"] == "sent")["message"]["id"]


async def test_a_chunked_upload_is_bound_to_its_connection_and_size(team):
    """docs/protocol.md, "Files": the chunks of an upload in progress are held by its connection; more bytes than
    the declared size drop it; two at once on one connection at most."""
    alice, alice2 = await team.person("alice"), await team.person("alice")
    r = await alice.request("upload_file", workspace=team.ws, name="a.txt", size=4, data="eA==")
    uid = r["upload"]
    assert r["received"] == 1, r
    other = await alice2.request("upload_file", workspace=team.ws, upload=uid, data="eA==")
    assert other["op"] == "refused" and other["reason"] == "unknown_file", "another connection's upload is unknown"
    wrong_ws = await alice.request("upload_file", workspace="elsewhere", upload=uid, data="eA==")
    assert wrong_ws["op"] in ("refused", "error"), wrong_ws
    over = await alice.request("upload_file", workspace=team.ws, upload=uid, data=base64.b64encode(b"xxxx").decode())
    assert over["op"] == "refused" and "declared size" in over["detail"], over
    gone = await alice.request("upload_file", workspace=team.ws, upload=uid, data="eA==")
    assert gone["op"] == "refused" and gone["reason"] == "unknown_file", "dropped"
    for _ in range(2):
        assert "upload" in await alice.request("upload_file", workspace=team.ws, name="b", size=9, data="eA==")
    third = await alice.request("upload_file", workspace=team.ws, name="c", size=9, data="eA==")
    assert third["op"] == "refused" and "at once" in third["detail"], third


async def test_a_deleted_messages_files_go_with_its_text(team):
    """docs/protocol.md, "Editing and deleting": a deleted message's text is gone; so are the files sent with it
    (not shown, not downloadable, their bytes swept once no upload names them)."""
    alice, bob = await team.person("alice"), await team.person("bob")
    fid = (await upload(alice, team.ws, b"oops, the wrong file"))["file"]["id"]
    sent = await alice.request("send", workspace=team.ws, topic="new", title="t", to=["@bob"], text="x", files=[fid])
    assert (await download(bob, team.ws, fid))[0] == b"oops, the wrong file"
    gone = await alice.call("delete_message", workspace=team.ws, message=sent["message"]["id"])
    assert "files" not in gone["message"], gone
    _, r = await download(bob, team.ws, fid)
    assert r["op"] == "error" and r["code"] == "not_found", r
    team.admin(ops_files.sweep, team.gw.clock())
    assert team.conn.execute("SELECT count(*) FROM file_blobs").fetchone()[0] == 0


async def test_uploads_in_progress_are_bounded_on_a_node(team, monkeypatch):
    """docs/protocol.md, "Files": what uploads in progress hold in a node's memory is bounded: past it, `busy`
    (nothing stored, the connection kept)."""
    from ygg_server.net import uploads

    monkeypatch.setattr(uploads, "MAX_HELD", 6)
    alice, bob = await team.person("alice"), await team.person("bob")
    r = await alice.request("upload_file", workspace=team.ws, name="a", size=10,
                            data=base64.b64encode(b"12345").decode())
    assert "upload" in r, r
    r = await bob.request("upload_file", workspace=team.ws, name="b", size=10, data=base64.b64encode(b"12").decode())
    assert r["op"] == "error" and r["code"] == "busy", r
    assert (await bob.call("ping"))["op"] == "pong"
