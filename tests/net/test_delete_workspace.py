"""A workspace's rows are found through its conversations, never by reading every workspace's: deleting one
(everything in it goes, nothing of another workspace does; the admin connection holds the write lock
meanwhile, so every batch of every workspace waits for it: 300,000 messages elsewhere once made that half a
second), and listing its topics (50,000 topics elsewhere once made that 0.2 s, at every sign-in)."""

from __future__ import annotations

import sqlite3

from ygg_server.clock import now_us
from ygg_server.ops import admin, queries
from ygg_server.protocol import frames
from ygg_server.store import sqlite as db

COUNTED = ("messages", "topics", "conversations", "memberships", "wallets", "ledger")


def counts(conn: sqlite3.Connection, ws: str) -> dict[str, int]:
    out = {t: conn.execute(f"SELECT count(*) FROM {t} WHERE workspace = ?", (ws,)).fetchone()[0] for t in COUNTED}
    out["deliveries"] = conn.execute("SELECT count(*) FROM deliveries d JOIN messages m ON m.seq = d.message_seq "
                                     "WHERE m.workspace = ?", (ws,)).fetchone()[0]
    return out


async def test_a_deleted_workspace_leaves_nothing_and_takes_nothing_else(team):
    """Seed 003 §66: "deleting the workspace" is its owner's. Its messages, topics, conversations (a channel, a
    direct one, a group's), deliveries, wallets and ledger go; the other workspace's stay whole."""
    alice = await team.person("alice")
    other = team.admin(admin.add_workspace, "other", "alice")["id"]
    team.admin(admin.add_group, team.ws, "crew", ["researcher"])
    for ws in (team.ws, other):
        t = await alice.send(workspace=ws, topic="new", title="T", type="request", to=["researcher"], text=f"in {ws}")
        assert t["op"] == "sent", t
        for conversation in ("dm:researcher", *(["group:crew"] if ws == team.ws else [])):
            r = await alice.send(workspace=ws, conversation=conversation, topic="new", title="D", type="request",
                                 to=["researcher"], text="aside")
            assert r["op"] == "sent", r
    agent = await team.client(api_key=team.keys["researcher"])
    d = await agent.next_delivery(timeout=5)
    r = await agent.send(workspace=d["message"]["workspace"], topic=d["message"]["topic"], type="response",
                         in_reply_to=d["message"]["id"], to=["@alice"], text="answered")
    assert r["op"] == "sent", r
    conn = db.connect(team.path)
    try:
        before = counts(conn, other)
        assert all(before[t] for t in ("messages", "topics", "conversations", "deliveries"))
        assert all(counts(conn, team.ws)[t] for t in ("messages", "topics", "conversations", "deliveries"))
        admin.delete_workspace(conn, team.ws)
        assert counts(conn, team.ws) == dict.fromkeys([*COUNTED, "deliveries"], 0)
        assert counts(conn, other) == before
        assert conn.execute("SELECT count(*) FROM deliveries WHERE message_seq NOT IN (SELECT seq FROM messages)"
                            ).fetchone() == (0,)
        conn.execute("INSERT INTO messages_fts (messages_fts) VALUES ('integrity-check')")
    finally:
        conn.close()


def _scans(conn: sqlite3.Connection, ws: str, run) -> list[tuple[str, str]]:
    """The statements `run` executes that read the whole of messages or topics (EXPLAIN QUERY PLAN)."""
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    run()
    conn.set_trace_callback(None)
    assert statements
    scans = []
    for sql in statements:
        if not sql.lstrip().upper().startswith(("DELETE", "INSERT", "SELECT", "UPDATE")):
            continue
        for row in conn.execute("EXPLAIN QUERY PLAN " + sql.replace(f"'{ws}'", "?"), *([(ws,)] if "?" in
                                sql.replace(f"'{ws}'", "?") else [])):
            if row[3].startswith(("SCAN messages", "SCAN topics", "SCAN m ", "SCAN t ")):
                scans.append((sql, row[3]))
    return scans


def test_deleting_and_listing_topics_read_only_the_workspace_s_own_rows(tmp_path):
    """docs/architecture.md: "its messages and topics found through its conversations' indexes": every statement
    of `admin.delete_workspace` and of `list_topics` (with or without a conversation or a status) finds them
    through an index, never by reading the whole table: EXPLAIN QUERY PLAN of each says so."""
    conn = db.connect(db.db_path(tmp_path))
    alice = admin.add_person(conn, "alice", "pw-" + "x" * 8, now=now_us())["id"]
    ws = admin.add_workspace(conn, "doomed", "alice", now=now_us())["id"]
    for f in ({}, {"conversation": "general"}, {"status": "open"}):
        assert _scans(conn, ws, lambda: queries.list_topics(conn, alice, frames.ListTopics(workspace=ws, **f))) == [], f
    assert _scans(conn, ws, lambda: admin.delete_workspace(conn, ws)) == []
    conn.close()


def test_a_funding_reads_only_the_topics_where_agents_wait_for_funds(tmp_path):
    """docs/rules.md, "Credits": a funding looks at the topics where agents wait for funds; they are found through
    the partial index of the rows the writer marks (topics.waits_funds), never by reading every topic's state
    (50,000 open topics once made each funding 0.1-0.2 s inside the writer's batch)."""
    conn = db.connect(db.db_path(tmp_path))
    admin.add_person(conn, "alice", "pw-" + "x" * 8, now=now_us())
    ws = admin.add_workspace(conn, "team", "alice", now=now_us())["id"]
    admin.add_agent(conn, "helper", "alice", ws, now=now_us())
    assert _scans(conn, ws, lambda: admin.fund(conn, None, 5, pool_ws=ws, now=now_us())) == []  # a workspace's: SEARCH by it
    # an agent's: its wallet is the workspace's (issue 17), so its topics there, searched the same way
    assert _scans(conn, ws, lambda: admin.fund(conn, "helper", 5, now=now_us())) == []
    conn.close()
