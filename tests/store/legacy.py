"""Databases as the main branch (76d0378, before the one schema) made them: its two migration lists, frozen
here whole, and its two migrate functions, so a test can make a database at any version an earlier Ygg
wrote (SQLite: PRAGMA user_version 1-11; PostgreSQL: meta's `schema` row 1-9). Never edit the lists.
"""

from __future__ import annotations

import sqlite3

from ygg_server.store import sqlite as sqlite_store

SQLITE: list[str] = [
    # 1: everything
    """
    CREATE TABLE people (
        id TEXT PRIMARY KEY, handle TEXT NOT NULL UNIQUE, password_hash TEXT, created_at INTEGER NOT NULL
    );
    CREATE TABLE orgs (
        id TEXT PRIMARY KEY, name TEXT NOT NULL, plan TEXT NOT NULL, owner TEXT NOT NULL, created_at INTEGER NOT NULL
    );
    CREATE TABLE org_members (
        org TEXT NOT NULL, person TEXT NOT NULL, role TEXT NOT NULL, PRIMARY KEY (org, person)
    );
    CREATE TABLE workspaces (
        id TEXT PRIMARY KEY, org TEXT NOT NULL, name TEXT NOT NULL, restricted INTEGER NOT NULL DEFAULT 0,
        personal_of TEXT, settings TEXT NOT NULL DEFAULT '{}', created_at INTEGER NOT NULL
    );
    CREATE UNIQUE INDEX workspaces_personal ON workspaces (personal_of) WHERE personal_of IS NOT NULL;
    CREATE TABLE agents (
        id TEXT PRIMARY KEY, owner TEXT NOT NULL, name TEXT NOT NULL, key_id TEXT UNIQUE, key_hash TEXT,
        revoked INTEGER NOT NULL DEFAULT 0, pinned TEXT, profile TEXT NOT NULL DEFAULT '{}',
        created_at INTEGER NOT NULL, UNIQUE (owner, name)
    );
    CREATE TABLE memberships (
        workspace TEXT NOT NULL, participant TEXT NOT NULL, role TEXT NOT NULL,
        send INTEGER NOT NULL DEFAULT 1, receive INTEGER NOT NULL DEFAULT 1,
        can_message TEXT, takes_from TEXT, monitor INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL, PRIMARY KEY (workspace, participant)
    );
    CREATE INDEX memberships_participant ON memberships (participant);
    CREATE TABLE groups (
        workspace TEXT NOT NULL, name TEXT NOT NULL, members TEXT NOT NULL, PRIMARY KEY (workspace, name)
    );
    CREATE TABLE conversations (
        id TEXT PRIMARY KEY, workspace TEXT NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL,
        members TEXT NOT NULL, created_at INTEGER NOT NULL
    );
    CREATE INDEX conversations_workspace ON conversations (workspace);
    CREATE TABLE topics (
        id TEXT PRIMARY KEY, workspace TEXT NOT NULL, conversation TEXT NOT NULL, opener TEXT NOT NULL,
        status TEXT NOT NULL, next_due INTEGER, state BLOB NOT NULL, created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
    );
    CREATE INDEX topics_conversation ON topics (conversation, updated_at);
    CREATE INDEX topics_opener ON topics (opener) WHERE status != 'closed';
    CREATE INDEX topics_due ON topics (next_due) WHERE next_due IS NOT NULL;
    CREATE TABLE messages (
        seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, workspace TEXT NOT NULL,
        conversation TEXT NOT NULL, topic TEXT, author TEXT NOT NULL, type TEXT NOT NULL,
        text TEXT NOT NULL, body BLOB NOT NULL, created_at INTEGER NOT NULL
    );
    CREATE INDEX messages_conversation ON messages (conversation, seq);
    CREATE INDEX messages_topic ON messages (topic, seq);
    CREATE INDEX messages_workspace ON messages (workspace, seq);
    CREATE TABLE deliveries (
        id INTEGER PRIMARY KEY AUTOINCREMENT, message TEXT NOT NULL, recipient TEXT NOT NULL,
        wake INTEGER NOT NULL, reason TEXT, acked_at INTEGER
    );
    CREATE INDEX deliveries_open ON deliveries (recipient, id) WHERE acked_at IS NULL;
    CREATE TABLE wallets (
        workspace TEXT NOT NULL, account TEXT NOT NULL, balance INTEGER NOT NULL, PRIMARY KEY (workspace, account)
    );
    CREATE TABLE ledger (
        id INTEGER PRIMARY KEY AUTOINCREMENT, workspace TEXT NOT NULL, account TEXT NOT NULL,
        delta INTEGER NOT NULL, cause TEXT NOT NULL, created_at INTEGER NOT NULL
    );
    CREATE TABLE flags (
        workspace TEXT NOT NULL, name TEXT NOT NULL, agent TEXT NOT NULL, PRIMARY KEY (workspace, name, agent)
    );
    CREATE TABLE usage (
        org TEXT NOT NULL, month TEXT NOT NULL, count INTEGER NOT NULL, PRIMARY KEY (org, month)
    );
    CREATE TABLE sessions (
        token_hash TEXT PRIMARY KEY, participant TEXT NOT NULL, expires_at INTEGER NOT NULL,
        created_at INTEGER NOT NULL
    );
    CREATE TABLE idempotency (
        participant TEXT NOT NULL, client_id TEXT NOT NULL, reply BLOB NOT NULL, created_at INTEGER NOT NULL,
        PRIMARY KEY (participant, client_id)
    );
    CREATE VIRTUAL TABLE messages_fts USING fts5 (text, content='messages', content_rowid='seq');
    CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
        INSERT INTO messages_fts (rowid, text) VALUES (new.seq, new.text);
    END;
    """,
    # 2: who a message woke, for history
    """
    CREATE INDEX deliveries_message ON deliveries (message);
    """,
    # 3: parties (docs/rules.md, "Parties"): a conversation's Lead and turn-taking counters, as JSON
    """
    ALTER TABLE conversations ADD COLUMN party TEXT NOT NULL DEFAULT '{}';
    """,
    # 4: server-issued directives (docs/agents.md): each agent's persona, every version kept, and each
    # conversation's rulebook, set by its people
    """
    CREATE TABLE personas (
        agent TEXT NOT NULL, version INTEGER NOT NULL, text TEXT NOT NULL, why TEXT NOT NULL DEFAULT '',
        author TEXT NOT NULL, created_at INTEGER NOT NULL, PRIMARY KEY (agent, version)
    );
    CREATE TABLE rulebooks (
        conversation TEXT PRIMARY KEY, workspace TEXT NOT NULL, body TEXT NOT NULL, set_by TEXT NOT NULL,
        updated_at INTEGER NOT NULL
    );
    """,
    # 5: restricted workspaces (seed 002): a membership is direct (added to the workspace) or through its
    # organization (0), which restricting the workspace takes away (ygg_server/reach.py)
    """
    ALTER TABLE memberships ADD COLUMN direct INTEGER NOT NULL DEFAULT 1;
    """,
    # 6: a Team plan's messages "as licensed" (seed 002): the organization's licensed messages a month,
    # set by the operator (`admin set-plan ORG team --licensed N`); NULL: not metered
    """
    ALTER TABLE orgs ADD COLUMN licensed INTEGER;
    """,
    # 7: the search index is fed in chunks by the writer (store/sqlite.index_messages), not row by row by a
    # trigger; meta's fts_seq is its watermark: the messages up to that seq are indexed, and search reads the
    # ones above it too (store/sqlite.search_tail). Search no longer scans a workspace's messages by seq.
    """
    DROP TRIGGER messages_fts_insert;
    CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
    INSERT INTO meta (key, value) SELECT 'fts_seq', coalesce(max(seq), 0) FROM messages;
    DROP INDEX messages_workspace;
    """,
    # 8: a delivery finds its message's row by seq too, and "who a message woke" (history) is looked up by it:
    # seq grows, so the index's new entries go at its end; on the random message id, each delivery dirtied a
    # page of its own in every commit (a quarter of what the writer wrote to the WAL)
    """
    ALTER TABLE deliveries ADD COLUMN message_seq INTEGER;
    UPDATE deliveries SET message_seq = (SELECT seq FROM messages WHERE messages.id = deliveries.message);
    DROP INDEX deliveries_message;
    CREATE INDEX deliveries_message_seq ON deliveries (message_seq);
    """,
    # 9: a funding finds the topics where agents wait for funds (core.lifecycle.unfunded) through a column the
    # writer sets with the topic's state (1, else NULL) and a partial index of those rows: it read every
    # paused or open topic's state (0.1-0.2 s in the writer's batch with 50,000 open topics). Rows stored
    # before are marked as the old scan found them (a superset; `credit_paused` still checks each state).
    """
    ALTER TABLE topics ADD COLUMN waits_funds INTEGER;
    UPDATE topics SET waits_funds = 1 WHERE status = 'paused' OR (status = 'open' AND instr(state, '"unfunded":{"') > 0);
    CREATE INDEX topics_waiting_funds ON topics (workspace) WHERE waits_funds IS NOT NULL;
    """,
    # 10: the standing a person (and each of their agents) had in a workspace they left, given back when they come
    # back by themselves or through the organization (ygg_server/reach.py: a viewer rejoined as a member, and a
    # membership's permissions taken away came back, by leaving and joining again)
    """
    CREATE TABLE departed (
        workspace TEXT NOT NULL, participant TEXT NOT NULL, role TEXT NOT NULL, send INTEGER NOT NULL,
        receive INTEGER NOT NULL, monitor INTEGER NOT NULL, can_message TEXT, takes_from TEXT,
        PRIMARY KEY (workspace, participant)
    );
    """,
    # 11: agents' pins to workspaces deleted before a deleted workspace's pins went with it (reach.unpin): taken
    # away, so an agent pinned to those alone is pinned to none ('[]'), as a delete leaves it now
    """
    UPDATE agents SET pinned = (SELECT json_group_array(p.value) FROM json_each(agents.pinned) p
                                 WHERE p.value IN (SELECT id FROM workspaces))
     WHERE pinned IS NOT NULL
       AND EXISTS (SELECT 1 FROM json_each(agents.pinned) p WHERE p.value NOT IN (SELECT id FROM workspaces));
    """,
]

POSTGRES: list[str] = [
    # 1: the SQLite schema's tables (schema.py, migrations 1-3), plus leases, per-node usage, nodes, presence
    """
    CREATE TABLE people (
        id TEXT PRIMARY KEY, handle TEXT NOT NULL UNIQUE, password_hash TEXT, created_at BIGINT NOT NULL
    );
    CREATE TABLE orgs (
        id TEXT PRIMARY KEY, name TEXT NOT NULL, plan TEXT NOT NULL, owner TEXT NOT NULL, created_at BIGINT NOT NULL
    );
    CREATE TABLE org_members (
        org TEXT NOT NULL, person TEXT NOT NULL, role TEXT NOT NULL, PRIMARY KEY (org, person)
    );
    CREATE TABLE workspaces (
        id TEXT PRIMARY KEY, org TEXT NOT NULL, name TEXT NOT NULL, restricted INTEGER NOT NULL DEFAULT 0,
        personal_of TEXT, settings TEXT NOT NULL DEFAULT '{}', created_at BIGINT NOT NULL
    );
    CREATE UNIQUE INDEX workspaces_personal ON workspaces (personal_of) WHERE personal_of IS NOT NULL;
    CREATE TABLE agents (
        id TEXT PRIMARY KEY, owner TEXT NOT NULL, name TEXT NOT NULL, key_id TEXT UNIQUE, key_hash TEXT,
        revoked INTEGER NOT NULL DEFAULT 0, pinned TEXT, profile TEXT NOT NULL DEFAULT '{}',
        created_at BIGINT NOT NULL, UNIQUE (owner, name)
    );
    CREATE TABLE memberships (
        workspace TEXT NOT NULL, participant TEXT NOT NULL, role TEXT NOT NULL,
        send INTEGER NOT NULL DEFAULT 1, receive INTEGER NOT NULL DEFAULT 1,
        can_message TEXT, takes_from TEXT, monitor INTEGER NOT NULL DEFAULT 0,
        created_at BIGINT NOT NULL, PRIMARY KEY (workspace, participant)
    );
    CREATE INDEX memberships_participant ON memberships (participant);
    CREATE TABLE groups (
        workspace TEXT NOT NULL, name TEXT NOT NULL, members TEXT NOT NULL, PRIMARY KEY (workspace, name)
    );
    CREATE TABLE conversations (
        id TEXT PRIMARY KEY, workspace TEXT NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL,
        members TEXT NOT NULL, created_at BIGINT NOT NULL, party TEXT NOT NULL DEFAULT '{}'
    );
    CREATE INDEX conversations_workspace ON conversations (workspace);
    CREATE TABLE topics (
        id TEXT PRIMARY KEY, workspace TEXT NOT NULL, conversation TEXT NOT NULL, opener TEXT NOT NULL,
        status TEXT NOT NULL, next_due BIGINT, state BYTEA NOT NULL, created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL
    );
    CREATE INDEX topics_conversation ON topics (conversation, updated_at);
    CREATE INDEX topics_opener ON topics (opener) WHERE status != 'closed';
    CREATE INDEX topics_due ON topics (next_due) WHERE next_due IS NOT NULL;
    CREATE INDEX topics_paused ON topics (workspace) WHERE status = 'paused';
    CREATE TABLE messages (
        seq BIGSERIAL PRIMARY KEY, id TEXT NOT NULL UNIQUE, workspace TEXT NOT NULL,
        conversation TEXT NOT NULL, topic TEXT, author TEXT NOT NULL, type TEXT NOT NULL,
        text TEXT NOT NULL, body BYTEA NOT NULL, created_at BIGINT NOT NULL
    );
    CREATE INDEX messages_conversation ON messages (conversation, seq);
    CREATE INDEX messages_topic ON messages (topic, seq);
    CREATE INDEX messages_workspace ON messages (workspace, seq);
    CREATE INDEX messages_text ON messages USING GIN (to_tsvector('simple', text));
    CREATE TABLE deliveries (
        id BIGSERIAL PRIMARY KEY, message TEXT NOT NULL, recipient TEXT NOT NULL,
        wake INTEGER NOT NULL, reason TEXT, acked_at BIGINT,
        leased_by TEXT, lease_until BIGINT, carrier BIGINT
    );
    CREATE INDEX deliveries_open ON deliveries (recipient, id) WHERE acked_at IS NULL;
    CREATE INDEX deliveries_message ON deliveries (message);
    CREATE INDEX deliveries_leased ON deliveries (leased_by) WHERE acked_at IS NULL AND leased_by IS NOT NULL;
    CREATE TABLE wallets (
        workspace TEXT NOT NULL, account TEXT NOT NULL, balance BIGINT NOT NULL, PRIMARY KEY (workspace, account)
    );
    CREATE TABLE ledger (
        id BIGSERIAL PRIMARY KEY, workspace TEXT NOT NULL, account TEXT NOT NULL,
        delta BIGINT NOT NULL, cause TEXT NOT NULL, created_at BIGINT NOT NULL
    );
    CREATE TABLE flags (
        workspace TEXT NOT NULL, name TEXT NOT NULL, agent TEXT NOT NULL, PRIMARY KEY (workspace, name, agent)
    );
    CREATE TABLE usage (
        org TEXT NOT NULL, month TEXT NOT NULL, count INTEGER NOT NULL, PRIMARY KEY (org, month)
    );
    CREATE TABLE usage_nodes (
        org TEXT NOT NULL, month TEXT NOT NULL, node TEXT NOT NULL, count BIGINT NOT NULL,
        PRIMARY KEY (org, month, node)
    );
    CREATE TABLE sessions (
        token_hash TEXT PRIMARY KEY, participant TEXT NOT NULL, expires_at BIGINT NOT NULL,
        created_at BIGINT NOT NULL
    );
    CREATE TABLE idempotency (
        participant TEXT NOT NULL, client_id TEXT NOT NULL, reply BYTEA NOT NULL, created_at BIGINT NOT NULL,
        PRIMARY KEY (participant, client_id)
    );
    CREATE TABLE nodes (
        id TEXT PRIMARY KEY, started_at BIGINT NOT NULL, heartbeat_at BIGINT NOT NULL
    );
    CREATE TABLE presence (
        node TEXT NOT NULL, participant TEXT NOT NULL, kind TEXT NOT NULL, last_seen BIGINT NOT NULL,
        PRIMARY KEY (node, participant)
    );
    CREATE INDEX presence_participant ON presence (participant);
    INSERT INTO meta (key, value) VALUES ('config', 0);
    """,
    # 2: SQLite's migration 4 (schema.py): personas and conversations' rulebooks
    """
    CREATE TABLE personas (
        agent TEXT NOT NULL, version INTEGER NOT NULL, text TEXT NOT NULL, why TEXT NOT NULL DEFAULT '',
        author TEXT NOT NULL, created_at BIGINT NOT NULL, PRIMARY KEY (agent, version)
    );
    CREATE TABLE rulebooks (
        conversation TEXT PRIMARY KEY, workspace TEXT NOT NULL, body TEXT NOT NULL, set_by TEXT NOT NULL,
        updated_at BIGINT NOT NULL
    );
    """,
    # 3: the SQLite schema's migration 5: a membership is direct, or through the organization (0)
    """
    ALTER TABLE memberships ADD COLUMN direct INTEGER NOT NULL DEFAULT 1;
    """,
    # 4: the SQLite schema's migration 6: a Team organization's licensed messages a month (NULL: not metered)
    """
    ALTER TABLE orgs ADD COLUMN licensed BIGINT;
    """,
    # 5: the SQLite schema's migration 8: deliveries find their message by seq (an index that grows at its end)
    """
    ALTER TABLE deliveries ADD COLUMN message_seq BIGINT;
    UPDATE deliveries d SET message_seq = m.seq FROM messages m WHERE m.id = d.message;
    DROP INDEX deliveries_message;
    CREATE INDEX deliveries_message_seq ON deliveries (message_seq);
    """,
    # 6: the SQLite schema's migration 9: the topics where agents wait for funds, marked by the writer and found
    # through a partial index (a funding read every paused or open topic)
    """
    ALTER TABLE topics ADD COLUMN waits_funds SMALLINT;
    UPDATE topics SET waits_funds = 1
     WHERE status = 'paused' OR (status = 'open' AND position('"unfunded":{"'::bytea in state) > 0);
    CREATE INDEX topics_waiting_funds ON topics (workspace) WHERE waits_funds IS NOT NULL;
    DROP INDEX topics_paused;
    """,
    # 7: the SQLite schema's migration 10: the standing kept for one who left a workspace (reach.py)
    """
    CREATE TABLE departed (
        workspace TEXT NOT NULL, participant TEXT NOT NULL, role TEXT NOT NULL, send INTEGER NOT NULL,
        receive INTEGER NOT NULL, monitor INTEGER NOT NULL, can_message TEXT, takes_from TEXT,
        PRIMARY KEY (workspace, participant)
    );
    """,
    # 8: idempotency rows found oldest first by the sweep that deletes them (ygg_server/idempotency.py; SQLite
    # reads them by rowid, the order they were written in, and needs no index)
    """
    CREATE INDEX idempotency_created_at ON idempotency (created_at);
    """,
    # 9: the SQLite schema's migration 11: agents' pins to workspaces deleted before reach.unpin are taken away
    """
    UPDATE agents SET pinned = (
        SELECT coalesce(json_agg(p.id ORDER BY p.n), '[]'::json)::text
          FROM json_array_elements_text(agents.pinned::json) WITH ORDINALITY p(id, n)
         WHERE p.id IN (SELECT id FROM workspaces))
     WHERE pinned IS NOT NULL
       AND EXISTS (SELECT 1 FROM json_array_elements_text(agents.pinned::json) p(id)
                    WHERE p.id NOT IN (SELECT id FROM workspaces));
    """,
]


statements = sqlite_store._statements  # (how main split a migration into statements: unchanged)


def sqlite_at(conn: sqlite3.Connection, version: int) -> None:
    """Migrate an empty SQLite database to `version` of main's list, as main's store/sqlite.migrate did."""
    for i, sql in enumerate(SQLITE[:version], start=1):
        for stmt in statements(sql):
            conn.execute(stmt)
        conn.execute(f"PRAGMA user_version={i}")


def sqlite_before(conn: sqlite3.Connection, marker: str) -> int:
    """`sqlite_at` the version before the first migration whose SQL holds `marker`; return that version."""
    version = next(i for i, m in enumerate(SQLITE) if marker in m)
    sqlite_at(conn, version)
    return version


async def postgres_at(conn, version: int) -> None:
    """Migrate an empty PostgreSQL schema to `version` of main's list, as main's store/postgres.migrate did."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(7947001)")
        await conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value BIGINT NOT NULL)")
        for i, sql in enumerate(POSTGRES[:version], start=1):
            await conn.execute(sql)
            await conn.execute(
                """INSERT INTO meta (key, value) VALUES ('schema', $1)
                   ON CONFLICT (key) DO UPDATE SET value = excluded.value""", i)


async def postgres_before(conn, marker: str) -> int:
    """`postgres_at` the version before the first migration whose SQL holds `marker`; return that version."""
    version = next(i for i, m in enumerate(POSTGRES) if marker in m)
    await postgres_at(conn, version)
    return version
