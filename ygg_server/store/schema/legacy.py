"""The two old migration lists, from their second step on: what takes a database made by an earlier
version to the baseline (schema/__init__.py). SQLite's were numbered by PRAGMA user_version (1-11),
PostgreSQL's by meta's `schema` row (1-9); each list's first step made its tables, which a database at
version 1 or later already has. Kept as they ran; never edited (tests/store/legacy.py holds both whole,
as the main branch ran them, and checks these against it).
"""

from __future__ import annotations

from .ddl import POSTGRES, SQLITE

SQLITE_STEPS: dict[int, str] = {
    # 2: who a message woke, for history
    2: """
    CREATE INDEX deliveries_message ON deliveries (message);
    """,
    # 3: parties (docs/rules.md, "Parties"): a conversation's Lead and turn-taking counters, as JSON
    3: """
    ALTER TABLE conversations ADD COLUMN party TEXT NOT NULL DEFAULT '{}';
    """,
    # 4: server-issued directives (docs/agents.md): each agent's persona, every version kept, and each
    # conversation's rulebook, set by its people
    4: """
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
    5: """
    ALTER TABLE memberships ADD COLUMN direct INTEGER NOT NULL DEFAULT 1;
    """,
    # 6: a Team plan's messages "as licensed" (seed 002): the organization's licensed messages a month,
    # set by the operator (`admin set-plan ORG team --licensed N`); NULL: not metered
    6: """
    ALTER TABLE orgs ADD COLUMN licensed INTEGER;
    """,
    # 7: the search index is fed in chunks by the writer (store/sqlite.index_messages), not row by row by a
    # trigger; meta's fts_seq is its watermark: the messages up to that seq are indexed, and search reads the
    # ones above it too (store/sqlite.search_tail). Search no longer scans a workspace's messages by seq.
    7: """
    DROP TRIGGER messages_fts_insert;
    CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
    INSERT INTO meta (key, value) SELECT 'fts_seq', coalesce(max(seq), 0) FROM messages;
    DROP INDEX messages_workspace;
    """,
    # 8: a delivery finds its message's row by seq too, and "who a message woke" (history) is looked up by it:
    # seq grows, so the index's new entries go at its end; on the random message id, each delivery dirtied a
    # page of its own in every commit (a quarter of what the writer wrote to the WAL)
    8: """
    ALTER TABLE deliveries ADD COLUMN message_seq INTEGER;
    UPDATE deliveries SET message_seq = (SELECT seq FROM messages WHERE messages.id = deliveries.message);
    DROP INDEX deliveries_message;
    CREATE INDEX deliveries_message_seq ON deliveries (message_seq);
    """,
    # 9: a funding finds the topics where agents wait for funds (core.lifecycle.unfunded) through a column the
    # writer sets with the topic's state (1, else NULL) and a partial index of those rows: it read every
    # paused or open topic's state (0.1-0.2 s in the writer's batch with 50,000 open topics). Rows stored
    # before are marked as the old scan found them (a superset; `credit_paused` still checks each state).
    9: """
    ALTER TABLE topics ADD COLUMN waits_funds INTEGER;
    UPDATE topics SET waits_funds = 1 WHERE status = 'paused' OR (status = 'open' AND instr(state, '"unfunded":{"') > 0);
    CREATE INDEX topics_waiting_funds ON topics (workspace) WHERE waits_funds IS NOT NULL;
    """,
    # 10: the standing a person (and each of their agents) had in a workspace they left, given back when they come
    # back by themselves or through the organization (ygg_server/reach.py: a viewer rejoined as a member, and a
    # membership's permissions taken away came back, by leaving and joining again)
    10: """
    CREATE TABLE departed (
        workspace TEXT NOT NULL, participant TEXT NOT NULL, role TEXT NOT NULL, send INTEGER NOT NULL,
        receive INTEGER NOT NULL, monitor INTEGER NOT NULL, can_message TEXT, takes_from TEXT,
        PRIMARY KEY (workspace, participant)
    );
    """,
    # 11: agents' pins to workspaces deleted before a deleted workspace's pins went with it (reach.unpin): taken
    # away, so an agent pinned to those alone is pinned to none ('[]'), as a delete leaves it now
    11: """
    UPDATE agents SET pinned = (SELECT json_group_array(p.value) FROM json_each(agents.pinned) p
                                 WHERE p.value IN (SELECT id FROM workspaces))
     WHERE pinned IS NOT NULL
       AND EXISTS (SELECT 1 FROM json_each(agents.pinned) p WHERE p.value NOT IN (SELECT id FROM workspaces));
    """,
}

POSTGRES_STEPS: dict[int, str] = {
    # 2: SQLite's migration 4 (schema.py): personas and conversations' rulebooks
    2: """
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
    3: """
    ALTER TABLE memberships ADD COLUMN direct INTEGER NOT NULL DEFAULT 1;
    """,
    # 4: the SQLite schema's migration 6: a Team organization's licensed messages a month (NULL: not metered)
    4: """
    ALTER TABLE orgs ADD COLUMN licensed BIGINT;
    """,
    # 5: the SQLite schema's migration 8: deliveries find their message by seq (an index that grows at its end)
    5: """
    ALTER TABLE deliveries ADD COLUMN message_seq BIGINT;
    UPDATE deliveries d SET message_seq = m.seq FROM messages m WHERE m.id = d.message;
    DROP INDEX deliveries_message;
    CREATE INDEX deliveries_message_seq ON deliveries (message_seq);
    """,
    # 6: the SQLite schema's migration 9: the topics where agents wait for funds, marked by the writer and found
    # through a partial index (a funding read every paused or open topic)
    6: """
    ALTER TABLE topics ADD COLUMN waits_funds SMALLINT;
    UPDATE topics SET waits_funds = 1
     WHERE status = 'paused' OR (status = 'open' AND position('"unfunded":{"'::bytea in state) > 0);
    CREATE INDEX topics_waiting_funds ON topics (workspace) WHERE waits_funds IS NOT NULL;
    DROP INDEX topics_paused;
    """,
    # 7: the SQLite schema's migration 10: the standing kept for one who left a workspace (reach.py)
    7: """
    CREATE TABLE departed (
        workspace TEXT NOT NULL, participant TEXT NOT NULL, role TEXT NOT NULL, send INTEGER NOT NULL,
        receive INTEGER NOT NULL, monitor INTEGER NOT NULL, can_message TEXT, takes_from TEXT,
        PRIMARY KEY (workspace, participant)
    );
    """,
    # 8: idempotency rows found oldest first by the sweep that deletes them (ygg_server/idempotency.py; SQLite
    # reads them by rowid, the order they were written in, and needs no index)
    8: """
    CREATE INDEX idempotency_created_at ON idempotency (created_at);
    """,
    # 9: the SQLite schema's migration 11: agents' pins to workspaces deleted before reach.unpin are taken away
    9: """
    UPDATE agents SET pinned = (
        SELECT coalesce(json_agg(p.id ORDER BY p.n), '[]'::json)::text
          FROM json_array_elements_text(agents.pinned::json) WITH ORDINALITY p(id, n)
         WHERE p.id IN (SELECT id FROM workspaces))
     WHERE pinned IS NOT NULL
       AND EXISTS (SELECT 1 FROM json_array_elements_text(agents.pinned::json) p(id)
                    WHERE p.id NOT IN (SELECT id FROM workspaces));
    """,
}

OLD: dict[str, dict[int, str]] = {SQLITE: SQLITE_STEPS, POSTGRES: POSTGRES_STEPS}


def after(dialect: str, version: int) -> list[str]:
    """The old steps a database of `dialect` at old `version` has not run, in order."""
    steps = OLD[dialect]
    if not 1 <= version <= max(steps):
        raise ValueError(f"{dialect} schema version {version} is not one an earlier Ygg wrote")
    return [steps[n] for n in sorted(steps) if n > version]
