"""The search index is fed in chunks (store/sqlite/writer_store.py, index_messages), and search still finds
every stored message: those above the index's watermark are matched too (store/sqlite.search_tail).

SQLite only: PostgreSQL indexes every row as it is written (a GIN index).
"""

from __future__ import annotations

import asyncio
import sqlite3

from ygg_server.ops import admin
from ygg_server.store.sqlite import writer_store as engine_module
from ygg_server.compose import on_sqlite
from ygg_server.clock import now_us
from ygg_server.protocol import frames
from ygg_server.protocol.results import Sent
from ygg_server.store import sqlite as db

from .conftest import migrated_before

DAY = 86_400_000_000


def watermark(path) -> tuple[int, int]:
    """(the search index's watermark, the newest message's seq)."""
    c = sqlite3.connect(path)
    try:
        return (c.execute("SELECT value FROM meta WHERE key = 'fts_seq'").fetchone()[0],
                c.execute("SELECT coalesce(max(seq), 0) FROM messages").fetchone()[0])
    finally:
        c.close()


async def wait_indexed(path, timeout: float = 5.0) -> None:
    async def indexed():
        while (w := watermark(path))[0] != w[1]:
            await asyncio.sleep(0.02)
    await asyncio.wait_for(indexed(), timeout)


async def test_a_message_is_found_once_sent_whether_indexed_yet_or_not(team, monkeypatch):
    """Seed 002: "A message belongs to one workspace, and stays searchable for as long as the organization's plan keeps history";
    docs/architecture.md: "so a message is found as soon as `sent` is answered".

    Messages not indexed yet are matched as the index matches them (same tokenizer: case, diacritics, phrases),
    newest first before the indexed ones, within the plan's window, and a page spans both."""
    monkeypatch.setattr(engine_module, "INDEX_ROWS", 10**9)
    monkeypatch.setattr(engine_module, "INDEX_WAIT_NS", 10**15)
    alice = await team.person("alice")
    await wait_indexed(team.path)  # what the start left, indexed at the first flush
    writer = team.gw.writer
    writer.clock = lambda: now_us() - 8 * DAY  # written 8 days ago
    try:
        old = await alice.send(workspace=team.ws, topic="new", title="Old", type="inform", to=["researcher"],
                               text="Crème brûlée, the old recipe")
    finally:
        writer.clock = now_us
    topic = (await alice.send(workspace=team.ws, topic="new", title="T", type="inform", to=["researcher"],
                              text="the first CREME BRULEE"))["message"]
    ids = [topic["id"]]
    for i in range(3):
        ids.append((await alice.send(workspace=team.ws, topic=topic["topic"], type="inform", to=["researcher"],
                                     text=f"crème brûlée number {i}"))["message"]["id"])
    indexed, top = watermark(team.path)
    assert indexed < top, "the new messages are not indexed yet"

    async def found(query, limit=50):
        return [m["id"] for m in (await alice.call("search_messages", workspace=team.ws, query=query,
                                                   limit=limit))["messages"]]

    newest_first = [*reversed(ids), old["message"]["id"]]
    assert await found("creme brulee") == newest_first
    assert await found('"brûlée number"') == newest_first[:3] and await found('"number brûlée"') == []
    assert await found("number brûlée") == newest_first[:3], "bare words: each anywhere"
    # index some: a page runs from the messages above the watermark into the index
    monkeypatch.setattr(engine_module, "INDEX_ROWS", 1)
    ids.append((await alice.send(workspace=team.ws, topic=topic["topic"], type="inform", to=["researcher"],
                                 text="crème brûlée, indexed at once"))["message"]["id"])
    assert watermark(team.path)[0] == watermark(team.path)[1]
    monkeypatch.setattr(engine_module, "INDEX_ROWS", 10**9)
    newer = [(await alice.send(workspace=team.ws, topic=topic["topic"], type="inform", to=["researcher"],
                               text=f"crème brûlée, later {i}"))["message"]["id"] for i in range(2)]
    assert watermark(team.path)[0] < watermark(team.path)[1]
    everything = [*reversed(newer), *reversed(ids), old["message"]["id"]]
    assert await found("creme brulee") == everything
    assert await found("creme brulee", limit=4) == everything[:4]
    assert await found("creme brulee", limit=1) == everything[:1]
    team.admin(admin.set_plan, "alice", "free")  # 7 days of history: the old message is past it
    assert await found("creme brulee") == everything[:-1]
    assert await found("old recipe") == []


async def test_an_engine_indexes_at_start_what_a_stopped_one_left_unindexed(tmp_path, monkeypatch):
    """docs/architecture.md: "and once at start, it indexes all messages above the index's watermark" ... "so the
    index and its watermark commit together and a crash loses neither": what a stopped (or killed) writer left
    unindexed is searchable meanwhile and indexed by the next writer's first flush."""
    path = db.db_path(tmp_path)
    conn = db.connect(path)
    admin.add_person(conn, "alice", "pw-" + "x" * 8, now=now_us())
    ws = admin.add_workspace(conn, "team", "alice", now=now_us())["id"]
    admin.add_agent(conn, "researcher", "alice", ws, now=now_us())
    alice = conn.execute("SELECT id FROM people").fetchone()[0]
    monkeypatch.setattr(engine_module, "INDEX_ROWS", 10**9)
    monkeypatch.setattr(engine_module, "INDEX_WAIT_NS", 10**15)
    e = on_sqlite(path)
    e.start(asyncio.get_running_loop(), lambda out: None)
    try:
        await asyncio.wait_for(e.submit("sync"), 5)  # the first flush: nothing left to index
        for i in range(3):
            r = await asyncio.wait_for(e.submit("send", alice, frames.Send(workspace=ws, topic="new",
                                                                title=f"T{i}", type="inform",
                                                                to=["researcher"], text=f"kept {i}")), 5)
            assert type(r) is Sent, r
    finally:
        await asyncio.to_thread(e.stop)
    indexed, top = watermark(path)
    assert indexed < top
    from ygg_server.ops import queries
    assert len(queries.search_messages(conn, alice, frames.SearchMessages(workspace=ws, query="kept"), now_us())["messages"]) == 3
    e = on_sqlite(path)
    e.start(asyncio.get_running_loop(), lambda out: None)
    try:
        await asyncio.wait_for(e.submit("sync"), 5)
    finally:
        await asyncio.to_thread(e.stop)
    assert watermark(path)[0] == watermark(path)[1] == top
    assert [r[0] for r in conn.execute("SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'kept' ORDER BY rowid")] \
        == [r[0] for r in conn.execute("SELECT seq FROM messages WHERE text LIKE 'kept %' ORDER BY seq")]
    assert len(queries.search_messages(conn, alice, frames.SearchMessages(workspace=ws, query="kept"), now_us())["messages"]) == 3
    conn.close()


def test_a_database_indexed_by_the_old_trigger_keeps_its_index(tmp_path):
    """docs/architecture.md: "The writer does not index each message as it is stored": the migration that drops
    the per-row trigger makes the messages it indexed the index's watermark."""
    path = db.db_path(tmp_path)
    c = migrated_before(path, "DROP TRIGGER messages_fts_insert")
    for i in range(3):
        c.execute("""INSERT INTO messages (id, workspace, conversation, topic, author, type, text, body, created_at)
                     VALUES (?, 'ws', 'c', NULL, 'a', 'inform', ?, x'', 0)""", (f"m{i}", f"old words {i}"))
    c.close()
    conn = db.connect(path)
    assert watermark(path) == (3, 3)
    assert conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'messages'").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'words'").fetchone()[0] == 3
    conn.close()


def test_search_walks_the_index_newest_first():
    """docs/architecture.md: "A search walks the matches newest first and stops at a full page": it never scans a
    workspace's messages looking for matches (a rare phrase once took seconds that way on 200,000 messages)."""
    import inspect
    from ygg_server.ops import queries
    source = inspect.getsource(queries.search_messages)
    sql = source[source.index('"""SELECT') + 3:source.index('"""', source.index('"""SELECT') + 3)]
    c = db.connect(":memory:")
    c.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.messages_tail USING fts5 (text)")
    for q in (sql, sql.replace("messages_fts", "messages_tail")):
        plan = [r[3] for r in c.execute("EXPLAIN QUERY PLAN " + q, ('"x"', "ws", 0, 0, "ws", "%a%", 5))]
        assert plan[0].startswith("SCAN f VIRTUAL TABLE"), plan
        assert not any("TEMP B-TREE" in p for p in plan), plan
    c.close()


async def test_deleting_a_workspace_takes_out_of_the_index_only_what_it_holds(team, monkeypatch):
    """docs/architecture.md: "Search reads the messages above the watermark too": a workspace deleted while some of
    its messages are not indexed yet leaves the index whole (removing a row the index never held corrupts it)."""
    alice = await team.person("alice")
    await wait_indexed(team.path)
    other = team.admin(admin.add_workspace, "other", "alice")["id"]
    kept = await alice.send(workspace=other, topic="new", title="K", type="inform", text="kept words")
    assert kept["op"] == "sent", kept
    sent = await alice.send(workspace=team.ws, topic="new", title="A", type="inform", to=["researcher"], text="gone one")
    await wait_indexed(team.path)
    monkeypatch.setattr(engine_module, "INDEX_ROWS", 10**9)
    monkeypatch.setattr(engine_module, "INDEX_WAIT_NS", 10**15)
    await alice.send(workspace=team.ws, topic=sent["message"]["topic"], type="inform", to=["researcher"],
                     text="gone quokka xylophone")
    assert watermark(team.path)[0] < watermark(team.path)[1]
    assert (await alice.call("delete_workspace", workspace=team.ws))["deleted"] is True
    monkeypatch.setattr(engine_module, "INDEX_ROWS", 1)
    again = await alice.send(workspace=other, topic=kept["message"]["topic"], type="inform", text="kept again")
    assert again["op"] == "sent", again
    c = db.connect(team.path)
    try:
        c.execute("INSERT INTO messages_fts (messages_fts) VALUES ('integrity-check')")
        assert c.execute("SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'gone'").fetchone() == (0,)
    finally:
        c.close()
    found = (await alice.call("search_messages", workspace=other, query="kept"))["messages"]
    assert [m["text"] for m in found] == ["kept again", "kept words"]
