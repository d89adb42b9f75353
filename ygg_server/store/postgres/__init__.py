"""PostgreSQL, the store for more than one server node (asyncpg).

The tables both stores have, described once in `store/schema/` and rendered for PostgreSQL:
text ids (random UUIDs, `human.<hex>`, `agent.<hex>`), timestamps as integer microseconds UTC
(BIGINT), JSON in TEXT, encoded states in BYTEA. What PostgreSQL adds for several nodes
(`only=POSTGRES` there):

- `deliveries.leased_by` / `lease_until` / `carrier`: a claimed delivery's lease, as columns on
  the row that is locked (see `Claimable`), and the wake that carries a context delivery;
- `usage_nodes`: each node counts an unlimited plan's messages on its own row there (no row every
  node must lock); a limited plan's count is kept in `usage`, under that row's lock; a month's
  usage is the sum of both;
- `nodes` (heartbeats) and `presence` (who is connected where);
- `meta`: the schema version and the `config` version, bumped by every write that is not a
  decision (the admin commands, the socket's management ops), so nodes drop what they cache.

Connections: `connect()` (async, for the writer, claims and listeners) and `SyncConnection`
(a blocking adapter with the sqlite3 surface, so `admin.py`, `queries.py` and `auth.py` run
unchanged on PostgreSQL). Prepared statements can be switched off for transaction poolers
(pgbouncer in transaction mode): `prepared=false` in the URL, or `--no-prepared`; asyncpg then
runs with `statement_cache_size=0` (unnamed statements only).
"""

from __future__ import annotations

import asyncio
import re
import threading
from dataclasses import dataclass
from typing import Any, Iterable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import asyncpg
import msgspec

from .. import schema
from ..schema.tables import UNCACHED

CHANNEL = "ygg"  # LISTEN/NOTIFY channel every node listens on
NOTIFY_MAX = 7000  # bytes per NOTIFY payload (PostgreSQL's limit is 8000)

# --- URLs ---

_FALSE = {"0", "false", "off", "no"}


def is_url(db: str | None) -> bool:
    return isinstance(db, str) and db.startswith(("postgres://", "postgresql://"))


def parse_dsn(url: str, prepared: bool | None = None) -> tuple[str, bool]:
    """(dsn for asyncpg, prepared statements on?) from `postgresql://…[?prepared=false]`.

    `prepared` given here (the `--no-prepared` flag) wins over the URL. Other query
    parameters are passed on: asyncpg sends unknown ones as server settings
    (`?search_path=…`, `?application_name=…`).
    """
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    found = None
    rest = []
    for k, v in query:
        if k == "prepared":
            found = v.lower() not in _FALSE
        else:
            rest.append((k, v))
    dsn = urlunsplit(parts._replace(query=urlencode(rest)))
    if prepared is None:
        prepared = True if found is None else found
    return dsn, prepared


async def connect(dsn: str, prepared: bool = True, **kw) -> asyncpg.Connection:
    if not prepared:
        kw["statement_cache_size"] = 0
    return await asyncpg.connect(dsn, **kw)


async def _reset(conn: asyncpg.Connection) -> None:
    """On release to the pool: only end a transaction left open (asyncpg's default reset costs a round trip)."""
    if conn.is_in_transaction():
        await conn.execute("ROLLBACK")


async def create_pool(dsn: str, prepared: bool = True, size: int = 4, soft: bool = False) -> asyncpg.Pool:
    """`soft`: the pool writes only what may be lost with the database server's crash (leases, presence,
    heartbeats), so its commits do not wait for the WAL flush (`synchronous_commit = off` for its sessions;
    not through a transaction pooler, `prepared` False, where a session setting is not the pool's to make)."""
    kw = {} if prepared else {"statement_cache_size": 0}
    if soft and prepared:
        kw["server_settings"] = {"synchronous_commit": "off"}
    return await asyncpg.create_pool(dsn, min_size=1, max_size=size, reset=_reset, **kw)


# --- schema (store/schema: the tables described once, one version number for both stores) ---

async def migrate(conn: asyncpg.Connection) -> int:
    """Bring the database to the latest schema version, once, whichever node starts first; return its version."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(7947001)")  # one migrator at a time
        made = await conn.fetchval("SELECT to_regclass('meta') IS NOT NULL")
        version = (await conn.fetchval("SELECT value FROM meta WHERE key = 'schema'") or 0) if made else 0
        schema.refuse_newer(version, "on PostgreSQL")
        for version, statements in schema.pending(schema.POSTGRES, version):
            for sql in statements:
                await conn.execute(sql)
            await conn.execute(
                """INSERT INTO meta (key, value) VALUES ('schema', $1)
                   ON CONFLICT (key) DO UPDATE SET value = excluded.value""", version)
        return version


# --- one claim pattern (seed 003 §27) ---

@dataclass(frozen=True)
class Claimable:
    """A table whose rows are work that one holder at a time may take.

    Seed 003 §27: "Three kinds of work (tasks, messages, and permission requests) are all
    claimed with the same locking pattern, SELECT ... FOR UPDATE SKIP LOCKED." This is that
    pattern, written once: rows of `owner` that are `ready` and not under a live lease are
    locked (skipping rows another transaction holds), oldest first, and leased to a holder
    until a time. The lease predicate is on the row that is locked, so PostgreSQL re-checks
    it on the row's newest version after the lock is taken (no join decides who may claim).
    A lease is renewed while its holder lives and returned when it goes; a holder that
    vanishes (a killed node) lets its leases run out, and the rows are claimable again.
    """

    table: str
    owner: str  # the column saying whose work a row is
    ready: str  # SQL over alias `t`: the row is still work to do
    key: str = "id"
    order: str = "id"
    holder: str = "leased_by"
    until: str = "lease_until"

    def _free(self, now: str) -> str:
        """The row (alias `t`) is not under a live lease at `now`."""
        return f"(t.{self.until} IS NULL OR t.{self.until} < {now})"

    def ready_rows(self, owner: str, now: str, limit: str | None = None, extra: str = "", lock: bool = True,
                   cols: str = "") -> str:
        """A locking sub-select of the claimable rows of `owner` (SQL expressions for owner, now, limit); not
        `lock`: a look only (what is taken of them is locked and checked again, `lease`). `cols`: more columns."""
        return (
            f"SELECT t.{self.key}{f', {cols}' if cols else ''} FROM {self.table} t "
            f"WHERE t.{self.owner} = {owner} AND {self.ready}"
            + (f" AND {extra}" if extra else "")
            + f" AND {self._free(now)} ORDER BY t.{self.order}"
            + (f" LIMIT {limit}" if limit else "")
            + (" FOR UPDATE OF t SKIP LOCKED" if lock else "")
        )

    def claim(self, ready_extra: str = "", returning: str = "*", also: str = "", want: str = "want") -> str:
        """Lease up to n rows to each (owner, holder, n) of relation `want` ($1/$2/$3 in WANT);
        $4 is now, $5 the lease's end. `also`: more assignments ("col = expr, ").

        An owner appears once per statement: rows a transaction claimed itself are not
        skipped by its own locks.
        """
        return f"""UPDATE {self.table} d SET {also}{self.holder} = p.holder, {self.until} = $5
        FROM (SELECT t.{self.key} AS key, {want}.holder FROM {want} CROSS JOIN LATERAL
              ({self.ready_rows(f"{want}.owner", "$4", f"{want}.n", ready_extra)}) t) p
        WHERE d.{self.key} = p.key RETURNING {returning}"""

    def lease(self, rows: str, ready_extra: str = "", returning: str = "*", also: str = "") -> str:
        """Lease the rows relation `rows` names (key, holder, …) to their holders, those still claimable: checked
        on each row's newest version once locked, and rows another transaction holds are skipped, as `claim`
        does. $4 is now, $5 the lease's end; `also`: more assignments, over `p` (the columns of `rows`)."""
        return f"""UPDATE {self.table} d SET {also}{self.holder} = p.holder, {self.until} = $5
        FROM (SELECT {rows}.* FROM {self.table} t JOIN {rows} ON t.{self.key} = {rows}.key
              WHERE {self.ready}{f" AND {ready_extra}" if ready_extra else ""} AND {self._free("$4")}
              ORDER BY t.{self.order} FOR UPDATE OF t SKIP LOCKED) p
        WHERE d.{self.key} = p.key RETURNING {returning}"""

    # Every statement here that waits for row locks takes them in key order (`_in_order`), as acks do
    # (ACK_DELIVERIES): two of them over the same rows (a heartbeat's renewal, a connection's release, an
    # ack) then queue behind each other instead of deadlocking. Claims skip locked rows and never wait.

    def _in_order(self, where: str) -> str:
        """The keys of the rows matching `where` (SQL over alias `t`), locked in key order."""
        return (f"SELECT t.{self.key} AS key FROM {self.table} t WHERE {where} "
                f"ORDER BY t.{self.key} FOR UPDATE OF t")

    def release(self, reset: str = "") -> str:
        """Return every lease of holder $1 (a connection that closed); RETURNING the owners."""
        extra = f", {reset}" if reset else ""
        return (f"UPDATE {self.table} u SET {self.holder} = NULL, {self.until} = NULL{extra} "
                f"FROM ({self._in_order(f't.{self.holder} = $1 AND {self.ready}')}) s "
                f"WHERE u.{self.key} = s.key RETURNING u.{self.owner}")

    def renew(self) -> str:
        """Extend to $2 the leases of the live holders $1."""
        return (f"UPDATE {self.table} u SET {self.until} = $2 "
                f"FROM ({self._in_order(f't.{self.holder} = ANY($1::text[]) AND {self.ready}')}) s "
                f"WHERE u.{self.key} = s.key")


WANT = "want AS (SELECT * FROM unnest($1::text[], $2::text[], $3::int[]) AS w(owner, holder, n))"
DELIVERIES = Claimable("deliveries", owner="recipient", ready="t.acked_at IS NULL")
# A delivery goes out only while its recipient may receive it: a member, with receive, of the message's
# workspace, and not a revoked agent. Checked in the claim itself, against the committed rows, so a
# revocation written through any node (or the admin CLI) holds for every claim that starts after it;
# what it holds back stays unacked, as on SQLite.
RECEIVABLE = ("EXISTS (SELECT 1 FROM messages m JOIN memberships ms ON ms.workspace = m.workspace "
              "WHERE m.id = t.message AND ms.participant = t.recipient AND ms.receive <> 0) "
              "AND NOT EXISTS (SELECT 1 FROM agents a WHERE a.id = t.recipient AND a.revoked <> 0)")

# An agent's claim is two statements in one transaction (`cluster.Claimer._claim`). CLAIM_WAKES leases its
# oldest unleased wakes (up to the room its connection has) and looks, without locking them, at the context
# deliveries that piled up before them and that no live wake carries yet (`carrier`): the oldest, $6 a wake
# at most (`inbox.PAGE`), their ids and characters, on the row of the agent's newest wake claimed; not those
# after $7 bytes of text a wake, which no wake could carry (`length` reads a long text whole to count its
# characters, `octet_length` only its header). The node picks what each wake carries (`inbox.fit`: as on
# SQLite, at most PAGE deliveries and MAX_CONTEXT characters) and CLAIM_CONTEXT ($1 ids, $2 holders,
# $3 carrier wakes) leases only those; the rest stay unleased, for the agent's next wakes. Both return the
# claimed rows with their message and conversation.
_D_COLS = "d.id, d.message, d.recipient, d.wake, d.reason, d.leased_by, d.carrier"
_SHOWN = """x.id, x.recipient, x.wake, x.reason, x.leased_by, x.carrier, x.message, m.body,
       m.workspace, c.id, c.kind, c.name, c.members, c.party{}
FROM {} x JOIN messages m ON m.id = x.message LEFT JOIN conversations c ON c.id = m.conversation"""
_WAITING = DELIVERIES.ready_rows("tops.recipient", "$4", "tops.n * $6",
                                 f"t.wake = 0 AND t.id < tops.top AND {RECEIVABLE}", lock=False, cols="t.message")
CLAIM_WAKES = f"""
WITH {WANT},
wakes AS ({DELIVERIES.claim(f"t.wake = 1 AND {RECEIVABLE}", _D_COLS, also="carrier = NULL, ")}),
tops AS (SELECT recipient, max(id) AS top, count(*) AS n FROM wakes GROUP BY recipient),
seen AS (
  SELECT tops.top, tops.n, t.id, m.text,
         sum(octet_length(m.text)) OVER (PARTITION BY tops.top ORDER BY t.id) - octet_length(m.text) AS before
  FROM tops CROSS JOIN LATERAL ({_WAITING}) t JOIN messages m ON m.id = t.message),
waiting AS (SELECT top, array_agg(id ORDER BY id) AS ids, array_agg(length(text) ORDER BY id) AS sizes
            FROM seen WHERE before <= n * $7 GROUP BY top)
SELECT {_SHOWN.format(", w.ids, w.sizes", "wakes")}
LEFT JOIN waiting w ON w.top = x.id ORDER BY x.id
"""
CLAIM_CONTEXT = f"""
WITH picked AS (SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[]) AS p(key, holder, carrier)),
ctx AS ({DELIVERIES.lease("picked", f"t.wake = 0 AND {RECEIVABLE}", _D_COLS, also="carrier = p.carrier, ")})
SELECT {_SHOWN.format("", "ctx")} ORDER BY x.id
"""
RELEASE_DELIVERIES = DELIVERIES.release("carrier = NULL")
RENEW_DELIVERIES = DELIVERIES.renew()
# Who of $1 is connected to a live node (a heartbeat after $3) other than $2; an agent only if heard from
# after $4 (issue 3: "an agent counts as offline after a few minutes of silence", Limits.presence_timeout).
PRESENT_ELSEWHERE = """
SELECT DISTINCT p.participant FROM presence p JOIN nodes n ON n.id = p.node
WHERE p.participant = ANY($1::text[]) AND p.node != $2 AND n.heartbeat_at > $3
AND (p.kind != 'agent' OR p.last_seen >= $4)
"""


async def present_elsewhere(conn: asyncpg.Connection, ids: Iterable[str], node: str, now: int,
                            node_timeout: float, presence_timeout: float) -> set[str]:
    """Those of `ids` online through a live node other than `node` ("": any), at `now` (microseconds); the
    timeouts are in seconds: how long a node, an agent, may be silent."""
    rows = await conn.fetch(PRESENT_ELSEWHERE, list(ids), node, now - int(node_timeout * 1e6),
                            now - int(presence_timeout * 1e6))
    return {r[0] for r in rows}


# Acks ($2 ids of $3 recipients, at $1): the rows locked in id order, as renewals and releases lock them;
# RETURNING what this statement acked (not what was acked before).
ACK_DELIVERIES = """
WITH a AS (SELECT d.id FROM deliveries d JOIN unnest($2::bigint[], $3::text[]) AS x(id, who)
           ON d.id = x.id AND d.recipient = x.who WHERE d.acked_at IS NULL ORDER BY d.id FOR UPDATE OF d)
UPDATE deliveries d SET acked_at = $1 FROM a WHERE d.id = a.id RETURNING d.id, d.recipient
"""


# --- a blocking adapter with the sqlite3 surface ---

_OVERRIDES_RAW = {
    # loaders.credit_paused: the paused topics a funding may un-pause are locked, in id order
    # (the writer's lock order: topics, then wallets)
    "SELECT state FROM topics WHERE waits_funds IS NOT NULL AND workspace = ?":
        "SELECT state FROM topics WHERE waits_funds IS NOT NULL AND workspace = $1 ORDER BY id FOR UPDATE",
    "SELECT state FROM topics WHERE waits_funds IS NOT NULL":
        "SELECT state FROM topics WHERE waits_funds IS NOT NULL ORDER BY id FOR UPDATE",
    # loaders.usage: a month's messages of an organization are its shared row plus every node's row
    # (`usage_nodes`, where each node counts an unmetered plan's), as the writer's limit check adds them
    """SELECT count FROM usage WHERE org = ? AND month = ?""":
        """SELECT coalesce((SELECT count FROM usage WHERE org = $1 AND month = $2), 0)::bigint
           + (SELECT coalesce(sum(count), 0)::bigint FROM usage_nodes WHERE org = $1 AND month = $2)""",
    # ops/search.search_messages: FTS5 -> PostgreSQL full text search (index messages_text), its tsquery
    """SELECT m.body FROM messages_fts f CROSS JOIN messages m ON m.seq = f.rowid
           WHERE messages_fts MATCH ? AND m.workspace = ? AND m.created_at >= ?
           AND (? OR m.conversation IN (SELECT c.id FROM conversations c WHERE c.workspace = ?
                AND (c.kind IN ('general', 'group') OR c.members LIKE ?)))
           ORDER BY f.rowid DESC LIMIT ?""":
        """SELECT m.body FROM messages m
           WHERE to_tsvector('simple', m.text) @@ to_tsquery('simple', $1)
           AND m.workspace = $2 AND m.created_at >= $3
           AND ($4::boolean OR m.conversation IN (SELECT c.id FROM conversations c WHERE c.workspace = $5
                AND (c.kind IN ('general', 'group') OR c.members LIKE $6)))
           ORDER BY m.seq DESC LIMIT $7""",
}


def _norm(sql: str) -> str:
    return " ".join(sql.split())


OVERRIDES = {_norm(k): v for k, v in _OVERRIDES_RAW.items()}
_SERIAL = {"deliveries": "id", "ledger": "id", "messages": "seq"}
_INCREMENT = re.compile(r"SET (\w+) = \1 \+ excluded\.\1")
# SQLite's 0/1 flag columns used as truth values ("m.monitor OR …"): PostgreSQL wants a boolean
_FLAGS = r"(?:\w+\.)?(?:monitor|receive|send|revoked|wake|restricted)"
_FLAG_OR = re.compile(rf"\b({_FLAGS})\s+(OR|AND)\b(?!\s*\()")
_OR_FLAG = re.compile(rf"\b(OR|AND)\s+({_FLAGS})\b(?!\s*(?:=|<|>|!|IS\b|IN\b))")
_WRITE = ("INSERT", "UPDATE", "DELETE")
_TARGET = re.compile(r"\s*(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+(\w+)", re.I)
_uncached: dict[str, bool] = {}


def uncached(sql: str) -> bool:
    """A write to a table no cache holds (schema.UNCACHED): no node needs to rescan for it."""
    hit = _uncached.get(sql)
    if hit is None:
        m = _TARGET.match(sql)
        hit = _uncached[sql] = bool(m) and m.group(1).lower() in UNCACHED
    return hit


_translated: dict[str, tuple[str, bool, str | None]] = {}


def translate(sql: str) -> tuple[str, bool, str | None]:
    """SQLite SQL as the store modules write it -> (PostgreSQL SQL, returns rows?, serial column)."""
    hit = _translated.get(sql)
    if hit is not None:
        return hit
    norm = _norm(sql)
    serial = None
    if norm in OVERRIDES:
        out = OVERRIDES[norm]
    else:
        out, n, quoted = [], 0, False
        for ch in sql:  # ? -> $n, outside string literals
            if ch == "'":
                quoted = not quoted
            if ch == "?" and not quoted:
                n += 1
                out.append(f"${n}")
            else:
                out.append(ch)
        out = "".join(out)
        if not out.lstrip().upper().startswith(("INSERT", "UPDATE")):
            out = _FLAG_OR.sub(lambda x: f"({x[1]} <> 0) {x[2]}", out)
            out = _OR_FLAG.sub(lambda x: f"{x[1]} ({x[2]} <> 0)", out)
        if "INSERT OR IGNORE INTO" in out:
            out = out.replace("INSERT OR IGNORE INTO", "INSERT INTO") + " ON CONFLICT DO NOTHING"
        m = re.match(r"\s*INSERT INTO (\w+)", out)
        if m:
            out = _INCREMENT.sub(lambda x: f"SET {x[1]} = {m[1]}.{x[1]} + excluded.{x[1]}", out)
            if m[1] in _SERIAL and "RETURNING" not in out.upper():
                serial = _SERIAL[m[1]]
                out += f" RETURNING {serial}"
    head = out.lstrip()[:6].upper()
    rows = head.startswith(("SELECT", "WITH")) or " RETURNING " in out.upper() or serial is not None
    _translated[sql] = hit = (out, rows, serial)
    return hit


class Cursor:
    def __init__(self, rows: list[tuple] | None = None, rowcount: int = -1, lastrowid: int | None = None):
        self._rows = rows or []
        self.rowcount = rowcount if rowcount >= 0 else len(self._rows)
        self.lastrowid = lastrowid

    def fetchone(self):
        return self._rows[0] if self._rows else None

    def fetchall(self) -> list[tuple]:
        return list(self._rows)

    def __iter__(self):
        return iter(self._rows)


class SyncConnection:
    """A PostgreSQL connection with the part of sqlite3's surface the store modules use.

    `execute(sql, params)` takes SQLite's SQL (`?` marks, `INSERT OR IGNORE`, `BEGIN
    IMMEDIATE`) and runs it on asyncpg, on an event loop of its own in a thread, so the
    callers stay synchronous (the admin CLI, `queries`, `auth`, the gateway's reader).
    A transaction (or a statement outside one) that wrote something also bumps the config
    version and tells every node to rescan, as SQLite's `data_version` does for one node;
    not a quiet one (`quiet`).
    """

    dialect = "postgres"

    def __init__(self, url: str, prepared: bool | None = None, notify: bool = True):
        self.dsn, self.prepared = parse_dsn(url, prepared)
        self.notify = notify
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="ygg-pg-sync", daemon=True)
        self._thread.start()
        self._lock = threading.RLock()
        self._in_tx = False
        self._dirty = False
        # a quiet write (`transactions.Tx(conn, quiet=True)`): one no other node must hear of (a person's session
        # opened or marked used), so it neither bumps the config version nor tells the nodes to rescan
        self.quiet = False
        try:
            self._conn: asyncpg.Connection = self._run(connect(self.dsn, self.prepared))
            self._run(migrate(self._conn))
        except BaseException:
            self._stop_loop()
            raise

    def _run(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def execute(self, sql: str, params: Iterable[Any] = ()) -> Cursor:
        with self._lock:
            return self._run(self._execute(sql, tuple(params)))

    async def _execute(self, sql: str, params: tuple) -> Cursor:
        word = sql.lstrip()[:10].upper()
        if self._conn.is_closed() and not self._in_tx:  # lost (a restart of the server): connect again
            self._conn = await connect(self.dsn, self.prepared)
        c = self._conn
        if word.startswith("PRAGMA"):
            return Cursor()
        if word.startswith("BEGIN"):
            await c.execute("BEGIN")
            self._in_tx, self._dirty = True, False
            return Cursor()
        if word.startswith("COMMIT") or word.startswith("END"):
            if self._dirty:
                await self._changed()
            await c.execute("COMMIT")
            self._in_tx = self._dirty = False
            return Cursor()
        if word.startswith("ROLLBACK") and "TO" not in sql.upper():
            await c.execute("ROLLBACK")
            self._in_tx = self._dirty = False
            return Cursor()
        out, rows, serial = translate(sql)
        write = word.startswith(_WRITE) and not self.quiet and not uncached(sql)
        if write and not self._in_tx:
            async with c.transaction():
                cur = await self._statement(out, rows, serial, params)
                await self._changed()
            return cur
        if write:
            self._dirty = True
        return await self._statement(out, rows, serial, params)

    async def _statement(self, sql: str, rows: bool, serial: str | None, params: tuple) -> Cursor:
        if rows:
            got = [tuple(r) for r in await self._conn.fetch(sql, *params)]
            if serial is not None:
                return Cursor([], len(got), got[-1][0] if got else None)
            return Cursor(got)
        status = await self._conn.execute(sql, *params)
        tail = status.rsplit(" ", 1)[-1]
        return Cursor([], int(tail) if tail.isdigit() else -1)

    async def _changed(self) -> None:
        if not self.notify:
            return
        await self._conn.execute("UPDATE meta SET value = value + 1 WHERE key = 'config'")
        await self._conn.execute("SELECT pg_notify($1, $2)", CHANNEL, '{"x":"rescan"}')

    def close(self) -> None:
        try:
            self._run(self._conn.close(timeout=5))
        except Exception:
            pass
        self._stop_loop()

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        if not self._loop.is_running():
            self._loop.close()


class Capture:
    """Records what a store function would execute, to replay it with `run_captured` on asyncpg."""

    dialect = "postgres"

    def __init__(self):
        self.calls: list[tuple[str, tuple]] = []

    def execute(self, sql: str, params: Iterable[Any] = ()) -> Cursor:
        self.calls.append((sql, tuple(params)))
        return Cursor()


async def run_captured(conn: asyncpg.Connection, cap: Capture) -> None:
    for sql, params in cap.calls:
        out, rows, _ = translate(sql)
        if rows:
            await conn.fetch(out, *params)
        else:
            await conn.execute(out, *params)


def connect_sync(url: str, prepared: bool | None = None) -> SyncConnection:
    return SyncConnection(url, prepared)


# --- notifications ---

def payloads(node: str, parts: dict[str, Any]) -> list[str]:
    """Split an announcement into NOTIFY payloads under the size limit.

    `parts` maps a short key to a dict (split by key) or a list (split by item); every
    payload carries the node id `n` so a node ignores its own.
    """
    enc = msgspec.json.encode
    whole = {"n": node, **{k: v for k, v in parts.items() if v}}
    raw = enc(whole)
    if len(raw) <= NOTIFY_MAX:
        return [raw.decode()] if len(whole) > 1 else []
    out: list[str] = []
    cur: dict[str, Any] = {"n": node}
    size = 16 + len(node)
    for k, v in parts.items():
        items = list(v.items()) if isinstance(v, dict) else list(v)
        for item in items:
            n = len(enc(item)) + 4
            if size + n > NOTIFY_MAX and len(cur) > 1:
                out.append(enc(cur).decode())
                cur, size = {"n": node}, 16 + len(node)
            if isinstance(v, dict):
                cur.setdefault(k, {})[item[0]] = item[1]
            else:
                cur.setdefault(k, []).append(item)
            size += n + len(k)
    if len(cur) > 1:
        out.append(enc(cur).decode())
    return out


# --- scratch databases (tests, the benchmark) ---

def _with_db(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path="/" + name))


async def create_database(url: str, prefix: str = "ygg_test") -> str:
    """CREATE DATABASE <prefix>_<random> on the server of `url`; return its URL (same parameters)."""
    import secrets

    name = f"{prefix}_{secrets.token_hex(6)}"
    dsn, _ = parse_dsn(url)
    conn = await asyncpg.connect(dsn, timeout=10)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    return _with_db(url, name)


async def drop_database(url: str) -> None:
    """DROP DATABASE of `url` (from the server's `postgres` database), whoever is still connected."""
    name = urlsplit(url).path.lstrip("/")
    dsn, _ = parse_dsn(_with_db(url, "postgres"))
    conn = await asyncpg.connect(dsn, timeout=10)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()
