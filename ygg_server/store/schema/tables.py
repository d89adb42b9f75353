"""The current schema, once: every table and index both stores have, and what only one of them has (marked
`only=`). Text ids (random UUIDs, `human.<hex>`, `agent.<hex>`), timestamps as integer microseconds UTC
(seed 003 §74), JSON in TEXT, encoded states in BLOB/BYTEA.

Columns are in the order the earlier migrations left them (a column added later comes last), so a fresh
database and a migrated one are alike column for column (tests/store/test_schema_migrations.py).
"""

from __future__ import annotations

from .ddl import POSTGRES, SQLITE, Index, Table, big, blob, integer, serial, small, text
from .goals import GOAL_INDEXES, GOAL_REPORTS, LOOPS
from .schedules import APPROVALS, ROUTINE_GRANTS, SCHEDULE_INDEXES, SCHEDULES, TOOL_RULES
from .sharing import APPROVAL_USES, MEMORY_SHARES, SHARING_INDEXES

PG = POSTGRES  # what only PostgreSQL has: several nodes' leases, per-node counts, heartbeats, presence

TABLES: tuple[Table, ...] = (
    Table("people", text("id", key=True), text("handle", unique=True), text("password_hash", null=True),
          big("created_at"),
          # migration 13 (ops/accounts.py): the handle as compared (names.handle_key; NULL: a handle older than
          # the rule that clashes with another, kept as it was) and whether an operator deactivated the person
          text("handle_key", null=True), integer("deactivated", default="0")),
    Table("orgs", text("id", key=True), text("name"), text("plan"), text("owner"), big("created_at"),
          big("licensed", null=True)),  # a Team plan's licensed messages a month; NULL: not metered
    Table("org_members", text("org"), text("person"), text("role"),
          integer("agents", default="1"),  # migration 13: 0: the person's agents stay out of its workspaces
          key=("org", "person")),
    Table("workspaces", text("id", key=True), text("org"), text("name"), integer("restricted", default="0"),
          text("personal_of", null=True), text("settings", default="'{}'"), big("created_at")),
    Table("agents", text("id", key=True), text("owner"), text("name"), text("key_id", null=True, unique=True),
          text("key_hash", null=True), integer("revoked", default="0"), text("pinned", null=True),
          text("profile", default="'{}'"), big("created_at"), unique=("owner", "name")),
    Table("memberships", text("workspace"), text("participant"), text("role"), integer("send", default="1"),
          integer("receive", default="1"), text("can_message", null=True), text("takes_from", null=True),
          integer("monitor", default="0"), big("created_at"),
          integer("direct", default="1"),  # 0: through the organization, which restricting takes away (reach.py)
          key=("workspace", "participant")),
    Table("groups", text("workspace"), text("name"), text("members"), key=("workspace", "name")),
    Table("conversations", text("id", key=True), text("workspace"), text("kind"), text("name"), text("members"),
          big("created_at"), text("party", default="'{}'")),  # the Lead and turn-taking counters (rules.md)
    Table("topics", text("id", key=True), text("workspace"), text("conversation"), text("opener"), text("status"),
          big("next_due", null=True), blob("state"), big("created_at"), big("updated_at"),
          small("waits_funds", null=True)),  # 1 while agents wait for funds there (core.lifecycle.unfunded)
    Table("messages", serial("seq"), text("id", unique=True), text("workspace"), text("conversation"),
          text("topic", null=True), text("author"), text("type"), text("text"), blob("body"), big("created_at")),
    Table("deliveries", serial("id"), text("message"), text("recipient"), integer("wake"), text("reason", null=True),
          big("acked_at", null=True),
          # a claimed delivery's lease, on the row that is locked (postgres.Claimable), and the wake carrying it
          text("leased_by", null=True, only=PG), big("lease_until", null=True, only=PG),
          big("carrier", null=True, only=PG),
          big("message_seq", null=True)),  # the message's seq: an index that grows at its end
    Table("wallets", text("workspace"), text("account"), big("balance"), key=("workspace", "account")),
    Table("ledger", serial("id"), text("workspace"), text("account"), big("delta"), text("cause"), big("created_at")),
    Table("flags", text("workspace"), text("name"), text("agent"), key=("workspace", "name", "agent")),
    Table("usage", text("org"), text("month"), integer("count"), key=("org", "month")),
    # each node counts an unmetered plan's messages on its own row (no row every node must lock)
    Table("usage_nodes", text("org"), text("month"), text("node"), big("count"), key=("org", "month", "node"),
          only=PG),
    Table("sessions", text("token_hash", key=True), text("participant"), big("expires_at"), big("created_at"),
          # migration 13: a person's session as `list_sessions` shows it (the device it named, its address, when
          # it was last used: idle expiry counts from there, up to ends_at)
          text("device", null=True), text("address", null=True), big("last_seen", null=True),
          big("ends_at", null=True)),  # its lifetime's end, which use does not move (NULL: expires_at never moves)
    Table("idempotency", text("participant"), text("client_id"), blob("reply"), big("created_at"),
          key=("participant", "client_id")),
    Table("nodes", text("id", key=True), big("started_at"), big("heartbeat_at"), only=PG),
    Table("presence", text("node"), text("participant"), text("kind"), big("last_seen"), key=("node", "participant"),
          only=PG),
    # server-issued directives (docs/agents.md): each agent's persona, every version kept; conversations' rulebooks
    Table("personas", text("agent"), integer("version"), text("text"), text("why", default="''"), text("author"),
          big("created_at"), key=("agent", "version")),
    Table("rulebooks", text("conversation", key=True), text("workspace"), text("body"), text("set_by"),
          big("updated_at")),
    # the standing one who left a workspace had there, given back when they come back (reach.py)
    Table("departed", text("workspace"), text("participant"), text("role"), integer("send"), integer("receive"),
          integer("monitor"), text("can_message", null=True), text("takes_from", null=True),
          key=("workspace", "participant")),
    # migration 13: an invitation into a workspace or an organization, waiting for its invitee's answer
    # (ops/invitations.py): `place` is the workspace's or the organization's id, `kind` says which
    Table("invitations", text("id", key=True), text("kind"), text("place"), text("invitee"), text("inviter"),
          text("role"), big("created_at"), unique=("kind", "place", "invitee")),
    # SQLite: the search index's watermark (fts_seq); PostgreSQL: the schema's version and the `config` version
    Table("meta", text("key", key=True), big("value")),
)

# a message's older texts, each kept as its author edited it (core/revise.py): version n is the text it had before its
# n+1-th edit, written at `created_at`; a deleted message's go with its text (migration 13)
MESSAGE_VERSIONS = Table("message_versions", text("message"), integer("version"), text("text"), big("created_at"),
                         key=("message", "version"))
TABLES += (MESSAGE_VERSIONS,)

# artifacts (core/artifacts.py, migration 17): the artifact as its latest version left it, every version (an edit
# never overwrites), and comments on a version
ARTIFACTS = (
    Table("artifacts", text("id", key=True), text("workspace"), text("conversation"), text("title"), text("kind"),
          text("language", null=True), integer("version"), text("author"), big("created_at"), big("updated_at")),
    Table("artifact_versions", text("artifact"), integer("version"), text("title"), text("body"), text("author"),
          text("message"), big("created_at"), key=("artifact", "version")),
    Table("artifact_comments", serial("id"), text("artifact"), integer("version"), text("author"), text("text"),
          text("message"), big("created_at")),
)
ARTIFACT_INDEXES = (
    Index("artifacts_conversation", "artifacts", "conversation, updated_at"),
    Index("artifact_comments_version", "artifact_comments", "artifact, version, id"),
)
TABLES += ARTIFACTS
# migration 19 (issue 23): what agents can do and remember (ygg_server/tools/, ops/toolkit.py, ops/skills.py,
# ops/memory.py). The tools an owner attached to an agent (a JSON list; no row: the registry's defaults); owners'
# API connections, their auth header sealed with a key kept outside the database (tools/vault.py); skills in
# their layers (owner '' and agent '': the platform's; agent '': all of the owner's agents; else one agent's);
# agents' long-term memories, per workspace, searched on the store (SQLite FTS5 below, PostgreSQL's full text).
AGENT_TOOLS = Table("agent_tools", text("agent", key=True), text("tools"), text("set_by"), big("updated_at"))
CONNECTIONS = Table("connections", text("id", key=True), text("owner"), text("name"), text("url"), text("method"),
                    text("header_name", default="''"), text("header_sealed", default="''"),
                    text("description", default="''"), big("created_at"), unique=("owner", "name"))
SKILLS = Table("skills", text("owner"), text("agent"), text("name"), text("description"), text("body"),
               text("files", default="'{}'"), text("tools", default="'[]'"), text("source", default="''"),
               big("created_at"), key=("owner", "agent", "name"))
MEMORIES = Table("memories", serial("seq"), text("id", unique=True), text("workspace"), text("agent"),
                 text("text"), text("source", default="''"), big("created_at"), big("used_at"),
                 integer("uses", default="0"))
TABLES += (AGENT_TOOLS, CONNECTIONS, SKILLS, MEMORIES)
# tables no cache holds (each turn reads them afresh, and they grant no access): on PostgreSQL a write to one tells
# no node to rescan (store/postgres `uncached`); SQLite's writer cannot tell them apart (`data_version`)
UNCACHED = frozenset({"agent_tools", "connections", "skills", "memories", "memory_shares", "approval_uses", "files",
                      "file_blobs"})
# migration 20 (issue 24): hosts that run agents' bridges under a supervisor (ops/hosting.py), the host each hosted
# agent runs on (no row: it runs locally), the narrow tokens a host hands its bridges (good only for `auth`), and
# the public agent directory's listings (ops/listings.py)
HOSTING = (
    Table("hosts", text("id", key=True), text("owner"), text("name"), text("key_id", unique=True), text("key_hash"),
          big("created_at"), unique=("owner", "name")),
    Table("agent_hosts", text("agent", key=True), text("host"), big("assigned_at")),
    Table("host_tokens", text("id", key=True), text("host"), text("agent"), text("token_hash"), big("created_at")),
    Table("listings", text("agent", key=True), text("publisher"), text("name"), text("profile"),
          text("persona", null=True), big("published_at")),
)
TABLES += HOSTING
# files (issue 21, core/files.py, ops/files.py): each upload (its name, type, stored size and hash, the message it was
# sent with: NULL until then), and the bytes once per workspace and sha256 (content-addressed; kept in the database so
# that every node of several reads them, deleted with the last upload naming them)
FILES = (
    Table("files", text("id", key=True), text("workspace"), text("uploader"), text("name"), text("type"), big("size"),
          text("sha256"), text("message", null=True), big("created_at")),
    Table("file_blobs", text("workspace"), text("sha256"), big("size"), blob("data"), key=("workspace", "sha256")),
)
FILE_INDEXES = (Index("files_message", "files", "message", where="message IS NOT NULL"),
                Index("files_unsent", "files", "created_at", where="message IS NULL"),
                Index("files_blob", "files", "workspace, sha256"))
TABLES += FILES

INDEXES: tuple[Index, ...] = (
    Index("workspaces_personal", "workspaces", "personal_of", where="personal_of IS NOT NULL", unique=True),
    Index("memberships_participant", "memberships", "participant"),
    Index("conversations_workspace", "conversations", "workspace"),
    Index("topics_conversation", "topics", "conversation, updated_at"),
    Index("topics_opener", "topics", "opener", where="status != 'closed'"),
    Index("topics_due", "topics", "next_due", where="next_due IS NOT NULL"),
    Index("topics_waiting_funds", "topics", "workspace", where="waits_funds IS NOT NULL"),
    Index("messages_conversation", "messages", "conversation, seq"),
    Index("messages_topic", "messages", "topic, seq"),
    # search: PostgreSQL filters a workspace's messages by these two; SQLite matches its FTS5 index (below)
    Index("messages_workspace", "messages", "workspace, seq", only=PG),
    Index("messages_text", "messages", "to_tsvector('simple', text)", using="GIN", only=PG),
    Index("deliveries_open", "deliveries", "recipient, id", where="acked_at IS NULL"),
    Index("deliveries_message_seq", "deliveries", "message_seq"),
    Index("deliveries_leased", "deliveries", "leased_by", where="acked_at IS NULL AND leased_by IS NOT NULL",
          only=PG),
    Index("people_handle_folded", "people", "handle_key", where="handle_key IS NOT NULL", unique=True),
    Index("invitations_invitee", "invitations", "invitee"),
    Index("presence_participant", "presence", "participant", only=PG),
    # the sweep deletes the oldest first (idempotency.py); SQLite reads them by rowid and needs no index
    Index("idempotency_created_at", "idempotency", "created_at", only=PG),
)
MEMORY_INDEXES = (Index("memories_owner", "memories", "workspace, agent, seq"),
                  Index("memories_text", "memories", "to_tsvector('simple', text)", using="GIN", only=PG))
INDEXES += MEMORY_INDEXES
# SQLite's full-text index of memories.text, kept by triggers (a memory is written and forgotten, never edited)
MEMORY_FTS = (
    "CREATE VIRTUAL TABLE memories_fts USING fts5 (text, content='memories', content_rowid='seq')",
    "CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN "
    "INSERT INTO memories_fts (rowid, text) VALUES (new.seq, new.text); END",
    "CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN "
    "INSERT INTO memories_fts (memories_fts, rowid, text) VALUES ('delete', old.seq, old.text); END",
)

INDEXES += ARTIFACT_INDEXES
INDEXES += FILE_INDEXES
# migration 18 (issue 22): reminders and routines, approvals
TABLES += (SCHEDULES, ROUTINE_GRANTS, APPROVALS, TOOL_RULES)
INDEXES += SCHEDULE_INDEXES
# migration 21 (issue 23): memory an owner shares into another workspace, approvals a server tool call spent
TABLES += (MEMORY_SHARES, APPROVAL_USES)
INDEXES += SHARING_INDEXES
# migration 22 (issue 22): loops and the reports of loop iterations and pulses
TABLES += (LOOPS, GOAL_REPORTS)
INDEXES += GOAL_INDEXES

# connected accounts (issue 24; seed 003 §62-64, ops/connected.py): a GitHub or Google account connected through
# OAuth, owned by a person (`owner` their id) or a workspace (its id); its tokens sealed (tools/vault.py). A flow
# under way is kept by its `state`'s digest, its PKCE verifier sealed, until its code comes back or it expires
CONNECTED = (
    Table("connected_accounts", text("id", key=True), text("provider"), text("owner"), text("owner_kind"),
          text("added_by"), text("login"), text("scope"), text("access_sealed"), text("refresh_sealed"),
          big("expires_at", null=True), big("created_at"), big("updated_at"), unique=("provider", "owner")),
    Table("oauth_flows", text("state_hash", key=True), text("person"), text("provider"), text("owner"),
          text("owner_kind"), text("redirect_uri"), text("verifier_sealed"), big("expires_at")),
)
TABLES += CONNECTED

# SQLite's full-text index of messages.text, fed in chunks up to meta's fts_seq (store/sqlite.index_messages)
OTHERS: dict[str, tuple[str, ...]] = {
    SQLITE: ("CREATE VIRTUAL TABLE messages_fts USING fts5 (text, content='messages', content_rowid='seq')",
             *MEMORY_FTS),
    POSTGRES: (),
}

# the rows a new database starts with (PostgreSQL's `schema` row is written by its migrate)
SEEDS: dict[str, tuple[str, ...]] = {
    SQLITE: ("INSERT INTO meta (key, value) VALUES ('fts_seq', 0)",),
    POSTGRES: ("INSERT INTO meta (key, value) VALUES ('config', 0)",),
}
