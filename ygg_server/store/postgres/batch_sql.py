"""The two statements of a batch on PostgreSQL: LOAD (every row it reads, locked in one order) and WRITE
(every row it writes, and the NOTIFYs to the other nodes, delivered at COMMIT)."""

# One statement loads a batch: the config version, then (locking, in this order) the workspaces (`FOR KEY
# SHARE`: admin.delete_workspace deletes a workspace's row first, so it waits for a batch writing there, and a
# batch finds a workspace deleted meanwhile missing), conversations (General included: its party counters
# move with agents' messages),
# topics, agent wallets, limited plans' shared usage rows; then, unlocked, pools, the other usage
# rows and the idempotency replies. UNION ALL runs its parts in order, so the lock order holds.
# Agents with no wallet row yet in a workspace are serialized by an advisory lock on (workspace, id) instead.
LOAD = """
WITH v AS (SELECT value FROM meta WHERE key = 'config'),
s AS (SELECT id FROM workspaces WHERE id = ANY($11::text[]) ORDER BY id FOR KEY SHARE),
c AS (SELECT id, workspace, kind, name, members, party FROM conversations WHERE id = ANY($1::text[])
      ORDER BY id FOR UPDATE),
g AS (SELECT id, workspace, kind, name, members, party FROM conversations WHERE id = ANY($9::text[])),
tw AS (SELECT id, state FROM topics WHERE id = ANY($10::text[]) ORDER BY id FOR UPDATE),
t AS (SELECT id, state FROM topics WHERE id = ANY($2::text[]) ORDER BY id FOR UPDATE SKIP LOCKED),
k AS (SELECT id FROM topics WHERE id = ANY($2::text[]) EXCEPT SELECT id FROM t),
w AS (SELECT workspace, account, balance FROM wallets
      WHERE (workspace, account) IN (SELECT * FROM unnest($12::text[], $3::text[]))
      ORDER BY workspace, account FOR UPDATE),
nw AS (SELECT count(pg_advisory_xact_lock(hashtextextended('wallet:' || ws || ':' || a, 0))) AS n
       FROM (SELECT ws, a FROM unnest($12::text[], $3::text[]) AS u(ws, a)
             WHERE (ws, a) NOT IN (SELECT workspace, account FROM w) ORDER BY ws, a) s),
ul AS (SELECT org, count::bigint AS count FROM usage WHERE org = ANY($7::text[]) AND month = $8 ORDER BY org FOR UPDATE),
uo AS (SELECT org, sum(count)::bigint AS count FROM usage_nodes WHERE org = ANY($7::text[]) AND month = $8
       GROUP BY org),
p AS (SELECT workspace, balance FROM wallets WHERE account = 'pool' AND workspace = ANY($4::text[])),
i AS (SELECT participant, client_id, reply FROM idempotency
      WHERE (participant, client_id) IN (SELECT * FROM unnest($5::text[], $6::text[])))
SELECT 'v', NULL, NULL, NULL, NULL, NULL, value, NULL::bytea FROM v
UNION ALL SELECT 's', id, NULL, NULL, NULL, NULL, NULL, NULL FROM s
UNION ALL SELECT 'c', id, workspace, kind, name, members, NULL, convert_to(party, 'UTF8') FROM c
UNION ALL SELECT 'c', id, workspace, kind, name, members, NULL, convert_to(party, 'UTF8') FROM g
UNION ALL SELECT 't', id, NULL, NULL, NULL, NULL, NULL, state FROM tw
UNION ALL SELECT 't', id, NULL, NULL, NULL, NULL, NULL, state FROM t
UNION ALL SELECT 'k', id, NULL, NULL, NULL, NULL, NULL, NULL FROM k
UNION ALL SELECT 'w', account, workspace, NULL, NULL, NULL, balance, NULL FROM w
UNION ALL SELECT 'x', NULL, NULL, NULL, NULL, NULL, n, NULL FROM nw
UNION ALL SELECT 'u', org, NULL, NULL, NULL, NULL, count, NULL FROM ul
UNION ALL SELECT 'u', org, NULL, NULL, NULL, NULL, count, NULL FROM uo
UNION ALL SELECT 'p', workspace, NULL, NULL, NULL, NULL, balance, NULL FROM p
UNION ALL SELECT 'i', participant, client_id, NULL, NULL, NULL, NULL, reply FROM i
"""

# One statement writes a transaction: conversations, topics, messages and their deliveries
# (only for messages not stored before), wallets and the ledger, usage, flags, idempotency
# replies, the config version; and NOTIFYs the other nodes (delivered at COMMIT): who has new
# deliveries (made here, from the rows inserted, 60 recipients a payload; not those leased as
# they are written, $58 holders until $59, to a connection of this node), and $52, the
# payloads made in Python (topics, balances, messages).
WRITE = """
WITH
cg AS (UPDATE conversations c SET party = (c.party::jsonb || jsonb_build_object(
         'run', coalesce((c.party::jsonb ->> 'run')::bigint, 0) + x.run,
         'hops', coalesce((c.party::jsonb ->> 'hops')::bigint, 0) + x.hops))::text
       FROM unnest($54::text[], $55::bigint[], $56::bigint[]) AS x(id, run, hops) WHERE c.id = x.id
       RETURNING c.id, c.party),
cv AS (INSERT INTO conversations (id, workspace, kind, name, members, party, created_at)
       SELECT x.*, $1 FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $53::text[]) AS x
       ON CONFLICT (id) DO UPDATE SET members = excluded.members, party = excluded.party),
tp AS (INSERT INTO topics (id, workspace, conversation, opener, status, next_due, state, created_at, waits_funds,
                           updated_at)
       SELECT x.*, $1 FROM unnest($7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::bigint[],
                                  $13::bytea[], $14::bigint[], $57::smallint[]) AS x
       ON CONFLICT (id) DO UPDATE SET status = excluded.status, next_due = excluded.next_due,
       state = excluded.state, updated_at = excluded.updated_at, waits_funds = excluded.waits_funds),
m AS (INSERT INTO messages (id, workspace, conversation, topic, author, type, text, body, created_at)
      SELECT * FROM unnest($15::text[], $16::text[], $17::text[], $18::text[], $19::text[], $20::text[], $21::text[],
                           $22::bytea[], $23::bigint[])
      ON CONFLICT (id) DO NOTHING RETURNING id, seq),
d AS (INSERT INTO deliveries (message, message_seq, recipient, wake, reason, leased_by, lease_until)
      SELECT x.message, m.seq, x.recipient, x.wake, x.reason, nullif(x.holder, ''),
             CASE WHEN x.holder <> '' THEN $59::bigint END
      FROM unnest($24::text[], $25::text[], $26::int[], $27::text[], $28::int[], $58::text[])
        AS x(message, recipient, wake, reason, ord, holder)
      JOIN m ON m.id = x.message ORDER BY x.ord
      RETURNING id, message, recipient, leased_by),
wl AS (INSERT INTO wallets (workspace, account, balance) SELECT * FROM unnest($29::text[], $30::text[], $31::bigint[])
       ON CONFLICT (workspace, account) DO UPDATE SET balance = wallets.balance + excluded.balance),
lg AS (INSERT INTO ledger (workspace, account, delta, cause, created_at)
       SELECT x.*, $1 FROM unnest($32::text[], $33::text[], $34::bigint[], $35::text[]) AS x),
us AS (INSERT INTO usage (org, month, count)
       SELECT x.org, x.month, x.count FROM unnest($36::text[], $37::text[], $38::text[], $39::bigint[])
         AS x(org, month, node, count) WHERE x.node = ''
       ON CONFLICT (org, month) DO UPDATE SET count = usage.count + excluded.count),
un AS (INSERT INTO usage_nodes (org, month, node, count)
       SELECT * FROM unnest($36::text[], $37::text[], $38::text[], $39::bigint[]) AS x(org, month, node, count)
       WHERE x.node != ''
       ON CONFLICT (org, month, node) DO UPDATE SET count = usage_nodes.count + excluded.count),
fon AS (INSERT INTO flags (name, agent, workspace) SELECT * FROM unnest($40::text[], $41::text[], $42::text[])
        ON CONFLICT DO NOTHING),
foff AS (DELETE FROM flags f USING unnest($43::text[], $44::text[], $45::text[]) AS x(n, a, w)
         WHERE f.name = x.n AND f.agent = x.a AND f.workspace = x.w),
idm AS (INSERT INTO idempotency (participant, client_id, reply, created_at)
        SELECT x.*, $1 FROM unnest($46::text[], $47::text[], $48::bytea[]) AS x),
cfg AS (UPDATE meta SET value = value + 1 WHERE key = 'config' AND $49::int > 0),
nd AS (SELECT pg_notify($51, json_build_object('n', $50::text, 'd', json_object_agg(recipient, first))::text) AS x
       FROM (SELECT recipient, min(id) AS first, (row_number() OVER (ORDER BY recipient) - 1) / 60 AS chunk
             FROM d WHERE leased_by IS NULL GROUP BY recipient) s GROUP BY chunk),
np AS (SELECT pg_notify($51, p) AS x FROM unnest($52::text[]) AS p)
SELECT 'd', id, message, recipient FROM d
UNION ALL SELECT 'm', NULL, id, NULL FROM m
UNION ALL SELECT 'g', NULL, id, party FROM cg
UNION ALL SELECT 'n', count(*), NULL, NULL FROM (SELECT x FROM nd UNION ALL SELECT x FROM np) z
"""
