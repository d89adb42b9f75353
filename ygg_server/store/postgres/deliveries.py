"""What a node on PostgreSQL asks the database about deliveries and presence: the SQL of `net.delivery.cluster`.

Claims and their leases (seed 003 §27: `CLAIM_WAKES`, `CLAIM_CONTEXT`, `RELEASE_DELIVERIES`, `RENEW_DELIVERIES`),
the news another node committed (its deliveries to people connected here, its topics and monitored messages),
presence rows and the node's heartbeat (§26, §28). Each method is one transaction on the writer store's pool;
rows come back decoded (`store.rows`), never as SQL types.
"""

from __future__ import annotations

import msgspec

from ..rows import Stored, conversation, decode_message, decode_topic
from . import CHANNEL, CLAIM_CONTEXT, CLAIM_WAKES, RELEASE_DELIVERIES, RENEW_DELIVERIES, present_elsewhere


# Of agents $1, those with an unacked delivery not under a live lease at $2 (deliveries_open).
UNLEASED = """SELECT DISTINCT recipient FROM deliveries WHERE recipient = ANY($1::text[]) AND acked_at IS NULL
              AND (lease_until IS NULL OR lease_until < $2)"""


# Which of $1 have unacked deliveries under a lease that ran out by $2 (its holder vanished).
EXPIRED = """SELECT DISTINCT recipient FROM deliveries WHERE recipient = ANY($1::text[]) AND acked_at IS NULL
             AND leased_by IS NOT NULL AND lease_until < $2"""


class PgDeliveries:
    """The delivery side of one node's database: its pool, its node id, its listener (the writer store's)."""

    def __init__(self, store):
        self.store = store  # PgStore: pool, node, lease, relisten; its `on_notify` is set by the node

    @property
    def node(self) -> str:
        return self.store.node

    @property
    def lease(self) -> float:
        return self.store.lease

    def lease_with(self, lease_to) -> None:
        """`lease_to(agents) -> {agent: holder}`: asked as each batch is written (`PgStore.write`)."""
        self.store.lease_to = lease_to

    def listen(self, on_news) -> None:
        """Call `on_news(msg)` with each NOTIFY of another node (the writer store's listener hears them)."""
        self.store.on_notify = on_news

    async def relisten(self) -> bool:
        return await self.store.relisten()

    def timeouts(self, node_timeout: float, presence_timeout: float) -> None:
        """How long a silent node, a silent agent, counts as there (assignment scoring reads presence rows too)."""
        self.store.node_timeout, self.store.presence_timeout = node_timeout, presence_timeout

    # --- claims ---

    async def claim(self, agents: list[str], holders: list[str], room: list[int], now: int, until: int,
                    page: int, context_bytes: int, carried) -> tuple[list, set[str]]:
        """Lease each agent's oldest wakes to its holder, up to its room, and the context `carried` picks for them
        (`carried(wake rows, [(waiting ids, sizes)])` -> (ids, holders, carrier wakes)), in one transaction: a
        failure leases neither. Rows: (id, recipient, wake, reason, holder, carrier, message id, body, workspace,
        Conversation or None); and the agents of those that got less than their room that have nothing unacked
        left unleased (drained: what is written for them next may be leased to them as it is written)."""
        async with self.store.pool.acquire() as c, c.transaction():
            wakes = await c.fetch(CLAIM_WAKES, agents, holders, room, now, until, page, context_bytes)
            rows = [tuple(r)[:-2] for r in wakes]
            picked = carried(rows, [(r["ids"] or (), r["sizes"] or ()) for r in wakes])
            if picked[0]:
                rows += await c.fetch(CLAIM_CONTEXT, *picked, now, until)
            got: dict[str, int] = {}
            for r in wakes:
                got[r[1]] = got.get(r[1], 0) + 1
            short = [a for a, n in zip(agents, room) if got.get(a, 0) < n]
            left = {r[0] for r in await c.fetch(UNLEASED, short, now)} if short else set()
        drained = set(short) - left
        out = []
        for did, who, wake, reason, holder, carrier, mid, body, ws, cid, kind, name, members, party in rows:
            conv = conversation(cid, ws, kind, name, members, party) if cid is not None else None
            out.append((did, who, bool(wake), reason, holder, carrier, mid, body, ws, conv))
        return out, drained

    async def release(self, holder: str, participant: str) -> None:
        """A connection closed: its leases return, and whoever else serves the agent is told."""
        async with self.store.pool.acquire() as c, c.transaction():
            if await c.fetch(RELEASE_DELIVERIES, holder):
                await c.execute("SELECT pg_notify($1, $2)", CHANNEL,
                                msgspec.json.encode({"n": "", "d": {participant: 0}}).decode())

    # --- another node's news ---

    async def unacked_since(self, first: dict[str, int]) -> list[tuple]:
        """People's deliveries from id `first[pid]` on, unacked: (id, recipient, wake, reason, Message)."""
        pids = sorted(first)
        async with self.store.pool.acquire() as c:
            rows = await c.fetch(
                """SELECT d.id, d.recipient, d.wake, d.reason, m.body
                   FROM unnest($1::text[], $2::bigint[]) AS r(who, since)
                   JOIN deliveries d ON d.recipient = r.who AND d.id >= r.since AND d.acked_at IS NULL
                   JOIN messages m ON m.id = d.message ORDER BY d.id""", pids, [first[p] for p in pids])
        msgs: dict[bytes, object] = {}
        out = []
        for did, who, wake, reason, body in rows:
            m = msgs.get(body)
            if m is None:
                m = msgs[body] = decode_message(body)
            out.append((did, who, bool(wake), reason, m))
        return out

    async def topics(self, ids: list[str]) -> list:
        async with self.store.pool.acquire() as c:
            rows = await c.fetch("SELECT state FROM topics WHERE id = ANY($1::text[])", ids)
        return [decode_topic(r[0]) for r in rows]

    async def conversations(self, ids: list[str]) -> dict:
        async with self.store.pool.acquire() as c:
            rows = await c.fetch(
                "SELECT id, workspace, kind, name, members, party FROM conversations WHERE id = ANY($1::text[])", ids)
        return {r[0]: conversation(*r) for r in rows}

    async def messages(self, ids: list[str]) -> tuple[list, list[Stored]]:
        """The messages `ids` (in their order), and their deliveries."""
        async with self.store.pool.acquire() as c:
            rows = await c.fetch("SELECT id, body, seq FROM messages WHERE id = ANY($1::text[]) ORDER BY seq", ids)
            msgs = {mid: decode_message(body) for mid, body, _ in rows}
            dl = await c.fetch("SELECT id, message, recipient, wake, reason FROM deliveries "
                               "WHERE message_seq = ANY($1::bigint[]) ORDER BY id", [seq for *_, seq in rows])
        stored = [Stored(did, who, bool(wake), reason, msgs[mid]) for did, mid, who, wake, reason in dl if mid in msgs]
        return [msgs[m] for m in ids if m in msgs], stored

    async def hosted_wakes(self, first: dict[str, int], now: int, node_timeout: float,
                           presence_timeout: float) -> set[str]:
        """Of the agents `first` names (another node's news: their deliveries from that id on), those with an
        unacked wake under no live lease and online through no other node: a host's agents to start (seed 003
        §29; the node that stored the wake does not serve their host's connection)."""
        pids = sorted(first)
        async with self.store.pool.acquire() as c:
            rows = await c.fetch(
                """SELECT DISTINCT d.recipient FROM unnest($1::text[], $2::bigint[]) AS r(who, since)
                   JOIN deliveries d ON d.recipient = r.who AND d.id >= r.since AND d.acked_at IS NULL
                   AND d.wake = 1 AND (d.lease_until IS NULL OR d.lease_until < $3)""",
                pids, [first[p] for p in pids], now)
            waiting = {r[0] for r in rows}
            if not waiting:
                return set()
            return waiting - await present_elsewhere(c, waiting, self.node, now, node_timeout, presence_timeout)

    # --- presence and the heartbeat ---

    async def present(self, pid: str, kind: str, online: bool, now: int, node_timeout: float,
                      presence_timeout: float) -> bool:
        """Record this node's part of `pid`'s presence; True if `pid` is online through another node too."""
        async with self.store.pool.acquire() as c:
            if online:
                await c.execute(
                    """INSERT INTO presence (node, participant, kind, last_seen) VALUES ($1, $2, $3, $4)
                       ON CONFLICT (node, participant) DO UPDATE SET last_seen = excluded.last_seen""",
                    self.node, pid, kind, now)
            else:
                await c.execute("DELETE FROM presence WHERE node = $1 AND participant = $2", self.node, pid)
            return bool(await present_elsewhere(c, [pid], self.node, now, node_timeout, presence_timeout))

    async def tell_presence(self, pid: str, online: bool, workspaces: frozenset[str]) -> None:
        """Tell the other nodes that `pid` came or went in `workspaces`."""
        async with self.store.pool.acquire() as c:
            await c.execute("SELECT pg_notify($1, $2)", CHANNEL, msgspec.json.encode(
                {"n": self.node, "p": [pid, online, sorted(workspaces)]}).decode())

    async def tell(self, pid: str, event: dict) -> None:
        """Tell the other nodes an event for `pid`'s connections there (an invitation that arrived: a few hundred
        bytes, far under NOTIFY's 8,000)."""
        async with self.store.pool.acquire() as c:
            await c.execute("SELECT pg_notify($1, $2)", CHANNEL, msgspec.json.encode(
                {"n": self.node, "e": [pid, event]}).decode())

    async def elsewhere(self, ids: list[str], now: int, node_timeout: float, presence_timeout: float) -> set[str]:
        """Those of `ids` online through another live node (an agent silent there for presence_timeout is not)."""
        async with self.store.pool.acquire() as c:
            return await present_elsewhere(c, ids, self.node, now, node_timeout, presence_timeout)

    async def beat(self, now: int, holders: list[str], seen: dict[str, int], node_timeout: float,
                   agents: list[str]) -> set[str]:
        """This node lives, its holders' leases hold, its participants were last heard at `seen`; the rows of
        nodes silent for `node_timeout` go. Returns those of `agents` (served here) with unacked work whose lease
        ran out: a vanished holder's, to be claimed again."""
        async with self.store.pool.acquire() as c:
            await c.execute("UPDATE nodes SET heartbeat_at = $2 WHERE id = $1", self.node, now)
            if holders:
                await c.execute(RENEW_DELIVERIES, holders, now + int(self.lease * 1e6))
            if seen:
                ps = sorted(seen)
                await c.execute(
                    """UPDATE presence p SET last_seen = s.at FROM unnest($2::text[], $3::bigint[]) AS s(who, at)
                       WHERE p.node = $1 AND p.participant = s.who""", self.node, ps, [seen[p] for p in ps])
            gone = now - int(node_timeout * 1e6)
            await c.execute("DELETE FROM presence WHERE node IN (SELECT id FROM nodes WHERE heartbeat_at < $1)", gone)
            await c.execute("DELETE FROM nodes WHERE heartbeat_at < $1", now - 86_400_000_000)
            if not agents:
                return set()
            rows = await c.fetch(EXPIRED, agents, now)
        return {r[0] for r in rows}

    async def sign_off(self) -> None:
        """This node stops: its presence rows and its row go."""
        if self.store.pool is None:
            return
        async with self.store.pool.acquire() as c:
            await c.execute("DELETE FROM presence WHERE node = $1", self.node)
            await c.execute("DELETE FROM nodes WHERE id = $1", self.node)
