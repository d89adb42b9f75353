"""What a database's schema is, read back from each store's catalog, and a few rows of every table to see
them through a migration (tests/store/test_schema_migrations.py)."""

from __future__ import annotations

import sqlite3

from ygg_server.core import ConversationKind, Message, MessageType, Topic, TopicStatus
from ygg_server.store import rows as codec


def _norm(sql: str | None) -> str | None:
    return None if sql is None else " ".join(sql.replace(";", " ").split())


def sqlite_shape(conn: sqlite3.Connection) -> dict:
    """Every table (its columns: name, type, NOT NULL, default, key position, hidden), index (its SQL, columns,
    unique and partial), trigger and view in sqlite_master, and the schema version."""
    out: dict = {"version": conn.execute("PRAGMA user_version").fetchone()[0]}
    for kind, name, table, sql in conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall():
        if kind == "table":
            cols = [tuple(r[1:]) for r in conn.execute(f"PRAGMA table_xinfo('{name}')")]
            out[name] = (kind, cols, _norm(sql) if sql.startswith("CREATE VIRTUAL") else None)
        elif kind == "index":
            listed = {r[1]: tuple(r[2:]) for r in conn.execute(f"PRAGMA index_list('{table}')")}
            cols = [tuple(r[1:]) for r in conn.execute(f"PRAGMA index_xinfo('{name}')")]
            out[name] = (kind, table, _norm(sql), cols, listed[name])
        else:
            out[name] = (kind, table, _norm(sql))
    return out


def sqlite_columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f"PRAGMA table_info('{table}')")]


async def postgres_shape(conn) -> dict:
    """Every column (in order: type, NULL, default), index (its definition), constraint and sequence of the
    connection's schema, and the schema version in meta."""
    here = await conn.fetchval("SELECT current_schema()")
    cols = await conn.fetch("""SELECT table_name, ordinal_position, column_name, data_type, is_nullable, column_default
                               FROM information_schema.columns WHERE table_schema = $1 ORDER BY 1, 2""", here)
    indexes = await conn.fetch("SELECT indexname, tablename, indexdef FROM pg_indexes WHERE schemaname = $1", here)
    cons = await conn.fetch("""SELECT conname, conrelid::regclass::text, contype, pg_get_constraintdef(oid)
                               FROM pg_constraint WHERE connamespace = $1::regnamespace""", here)
    seqs = await conn.fetch("""SELECT sequence_name, data_type, start_value, increment FROM information_schema.sequences
                               WHERE sequence_schema = $1""", here)
    return {
        "version": await conn.fetchval("SELECT value FROM meta WHERE key = 'schema'"),
        "meta": sorted(r[0] for r in await conn.fetch("SELECT key FROM meta")),
        "columns": [tuple(r) for r in cols],
        "indexes": {r[0]: (r[1], r[2].replace(f"{here}.", "")) for r in indexes},
        "constraints": {r[0]: tuple(r[1:]) for r in cons},
        "sequences": sorted(tuple(r) for r in seqs),
    }


async def postgres_columns(conn, table: str) -> list[str]:
    return [r[0] for r in await conn.fetch(
        """SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema()
           AND table_name = $1 ORDER BY ordinal_position""", table)]


# --- rows of every table, as any earlier version could hold them ---

def _topic(tid: str, **kw) -> Topic:
    return Topic(tid, "ws.1", "c.1", "human.a", 10, title=tid, **kw)


TOPICS = {
    "t.paused": _topic("t.paused", status=TopicStatus.PAUSED, paused_by="agent.r", unfunded={"agent.r": "wallet"}),
    "t.open": _topic("t.open", unfunded={"agent.r": "budget"}),  # open again, an agent still waiting for funds
    "t.closed": _topic("t.closed", status=TopicStatus.CLOSED, closed_at=20),
}
MESSAGES = {
    "m.1": Message("m.1", "ws.1", "c.1", "t.open", "human.a", MessageType.REQUEST, "hello world", 30, to=("agent.r",)),
    "m.2": Message("m.2", "ws.1", "c.1", "t.open", "agent.r", MessageType.RESPONSE, "second words", 40),
}
SEQ = {"m.1": 5, "m.2": 9}  # (not consecutive: a delivery's message_seq must be its message's)


def rows() -> dict[str, list[dict]]:
    """Rows for each table, with every column a table ever had; a table at an older version takes those it has
    (the columns the migrations fill in, message_seq and waits_funds, hold what they fill in)."""
    t = lambda tid: {"id": tid, "workspace": "ws.1", "conversation": "c.1", "opener": "human.a",  # noqa: E731
                     "status": str(TOPICS[tid].status), "next_due": None, "state": codec.encode_topic(TOPICS[tid]),
                     "created_at": 10, "updated_at": 11, "waits_funds": codec.waits_funds(TOPICS[tid])}
    m = lambda mid: {"seq": SEQ[mid], "id": mid, "workspace": "ws.1", "conversation": "c.1",  # noqa: E731
                     "topic": MESSAGES[mid].topic, "author": MESSAGES[mid].author, "type": str(MESSAGES[mid].type),
                     "text": MESSAGES[mid].text, "body": codec.encode_message(MESSAGES[mid]),
                     "created_at": MESSAGES[mid].created_at}
    d = lambda mid, who, wake, reason, acked=None: {  # noqa: E731
        "message": mid, "recipient": who, "wake": wake, "reason": reason, "acked_at": acked, "message_seq": SEQ[mid]}
    return {
        "people": [{"id": "human.a", "handle": "alice", "password_hash": "h", "created_at": 1},
                   {"id": "human.b", "handle": "bob", "password_hash": None, "created_at": 1}],
        "orgs": [{"id": "org.1", "name": "Alice", "plan": "team", "owner": "human.a", "created_at": 1,
                  "licensed": 500}],
        "org_members": [{"org": "org.1", "person": "human.a", "role": "owner"}],
        "workspaces": [{"id": "ws.1", "org": "org.1", "name": "team", "restricted": 0, "personal_of": None,
                        "settings": '{"party.maxHops": 4}', "created_at": 1},
                       {"id": "ws.2", "org": "org.1", "name": "mine", "restricted": 1, "personal_of": "human.a",
                        "settings": "{}", "created_at": 1}],
        "agents": [{"id": "agent.r", "owner": "human.a", "name": "researcher", "key_id": "k1", "key_hash": "kh",
                    "revoked": 0, "pinned": '["ws.1"]', "profile": '{"title": "Researcher", "cost": 2}',
                    "created_at": 2}],
        "memberships": [
            {"workspace": "ws.1", "participant": "human.a", "role": "owner", "send": 1, "receive": 1,
             "can_message": None, "takes_from": None, "monitor": 1, "created_at": 2, "direct": 1},
            {"workspace": "ws.1", "participant": "agent.r", "role": "member", "send": 1, "receive": 1,
             "can_message": '["human.a"]', "takes_from": None, "monitor": 0, "created_at": 2, "direct": 1},
            {"workspace": "ws.2", "participant": "agent.r", "role": "member", "send": 1, "receive": 1,
             "can_message": None, "takes_from": None, "monitor": 0, "created_at": 3, "direct": 1}],
        "groups": [{"workspace": "ws.1", "name": "devs", "members": '["human.a", "agent.r"]'}],
        "conversations": [{"id": "c.1", "workspace": "ws.1", "kind": str(ConversationKind.GENERAL),
                           "name": "general", "members": "[]", "created_at": 1, "party": '{"hops": 2}'}],
        "topics": [t("t.paused"), t("t.open"), t("t.closed")],
        "messages": [m("m.1"), m("m.2")],
        "deliveries": [d("m.2", "agent.r", 1, "to"), d("m.1", "agent.r", 0, None, 35), d("m.2", "human.a", 0, None)],
        "wallets": [{"workspace": "*", "account": "agent.r", "balance": 100},
                    {"workspace": "ws.1", "account": "pool", "balance": 50}],
        "ledger": [{"workspace": "*", "account": "agent.r", "delta": 100, "cause": "fund", "created_at": 3}],
        "flags": [{"workspace": "*", "name": "broke", "agent": "agent.r"}],
        "usage": [{"org": "org.1", "month": "2025-01", "count": 3}],
        "usage_nodes": [{"org": "org.1", "month": "2025-01", "node": "n1", "count": 2}],
        "sessions": [{"token_hash": "tok", "participant": "human.a", "expires_at": 99, "created_at": 1}],
        "idempotency": [{"participant": "human.a", "client_id": "c1", "reply": b'{"op":"sent"}', "created_at": 1}],
        "nodes": [{"id": "n1", "started_at": 1, "heartbeat_at": 2}],
        "presence": [{"node": "n1", "participant": "human.a", "kind": "human", "last_seen": 2}],
        "personas": [{"agent": "agent.r", "version": 1, "text": "Be brief.", "why": "", "author": "human.a",
                      "created_at": 4}],
        "rulebooks": [{"conversation": "c.1", "workspace": "ws.1", "body": '{"rules": []}', "set_by": "human.a",
                       "updated_at": 4}],
        "departed": [{"workspace": "ws.2", "participant": "human.b", "role": "member", "send": 1, "receive": 1,
                      "monitor": 0, "can_message": None, "takes_from": None}],
    }


def insert(table: str, row: dict, columns: list[str], mark) -> tuple[str, tuple]:
    """The INSERT of `row`'s values for the `columns` the table has; `mark(i)` writes the i-th placeholder."""
    names = [c for c in row if c in columns]
    sql = f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join(mark(i + 1) for i in range(len(names)))})"
    return sql, tuple(row[c] for c in names)
