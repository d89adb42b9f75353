"""The Delivery port on one node of several, on one PostgreSQL database.

- **Claims** (seed 003 §2, §27): an agent's deliveries are claimed from the database under a lease
  (`claims.ClaimInbox`, one `claims.Claimer` per node), instead of handed out by an in-memory `Inbox`.
- **Announcements** (§28): what a node commits is published to its own connections at once and NOTIFYed to
  the others (the writer's WRITE statement); a node that hears that an agent connected to it has work claims
  it, a person's new deliveries are read and pushed, topic and balance events and monitored messages go to
  the followers connected here, a hosted agent's wake goes to its host's connection here (`news`).
- **Presence** (§26): each node keeps a row per participant it serves and a heartbeat; "online" is a
  connection here, or a row on a node whose heartbeat is fresh. Presence events are sent when a participant's
  first connection anywhere opens and its last one closes.

Every question to the database is a method of `db` (`store.postgres.deliveries.PgDeliveries`): no SQL here.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from ... import protocol
from ...core import party as core_party
from ...store import loaders
from ...writer import Published
from ..inbox import Item
from .claims import ClaimInbox, Claimer

log = logging.getLogger("ygg.cluster")


class ClusterDelivery:
    def __init__(self, db):
        self.db = db
        self.gw = None
        self.claimer: Claimer | None = None
        self._views: dict[str, tuple[tuple, Any]] = {}  # conversation -> ((members, lead), PartyView)
        self._dirs: dict[str, Any] = {}  # workspace -> Directory, for party views; dropped by every rescan
        self.beat = min(max(db.lease / 3, 0.2), 5.0)  # heartbeat, lease renewal, expired-lease sweep
        self.node_timeout = 4 * self.beat  # a node silent this long is gone
        self._tasks: set[asyncio.Task] = set()
        self._heart: asyncio.Task | None = None

    def bind(self, gateway) -> None:
        self.gw = gateway
        self.claimer = Claimer(self.db, gateway.clock, self._party_views)
        self.db.timeouts(self.node_timeout, gateway.limits.presence_timeout)
        self.db.listen(self.news)
        self.db.lease_with(self.lease)

    # --- lifecycle ---

    async def start(self) -> None:
        self.claimer.start()
        self._heart = asyncio.ensure_future(self._heartbeat())

    async def close(self) -> None:
        """Return this node's leases and sign it off (its connections detached already)."""
        if self._heart is not None:
            self._heart.cancel()
        await self.claimer.stop()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=5)
        try:
            await self.db.sign_off()
        except Exception:
            log.exception("could not sign this node off")

    def _spawn(self, coro) -> None:
        t = asyncio.ensure_future(coro)
        self._tasks.add(t)
        t.add_done_callback(self._done)

    def _done(self, t: asyncio.Task) -> None:
        self._tasks.discard(t)
        if not t.cancelled() and t.exception() is not None:
            log.error("%s failed", t.get_coro().__qualname__, exc_info=t.exception())

    def _now(self) -> int:
        return self.gw.clock()

    # --- inboxes ---

    async def agent_inbox(self, pid: str) -> ClaimInbox:
        inbox = self.gw.inboxes.get(pid)
        if not isinstance(inbox, ClaimInbox):
            inbox = self.gw.inboxes[pid] = ClaimInbox(pid, self.claimer, self.gw.allower(pid))
        return inbox

    def expects(self, pid: str) -> bool:
        return False  # (an agent's ClaimInbox is made at once; a person's Feed reads what it missed)

    def arrived(self, pid: str, items: list[Item]) -> None:
        pass

    def lease(self, recipients) -> dict[str, str]:
        """Agents connected here whose work is all held here (`ClaimInbox.drained`): what the writer writes for
        them now is leased to one of their connections here as it is written, and not claimed back."""
        out = {}
        inboxes = self.gw.inboxes
        for pid in recipients:
            ib = inboxes.get(pid)
            if isinstance(ib, ClaimInbox) and (holder := ib.taker()) is not None:
                out[pid] = holder
        return out

    async def offer_again(self, inbox) -> None:
        """An agent claims again, and its claims check its memberships and key in the database
        (`store.postgres.RECEIVABLE`), so a revocation holds for what it claims next; a person's unacked
        deliveries are read again."""
        if isinstance(inbox, ClaimInbox):
            inbox.offer()
        else:
            await inbox.rescan()

    def rescanned(self) -> None:
        self._views.clear()
        self._dirs.clear()  # a membership or a profile may have changed: the rosters with it

    async def _party_views(self, rows) -> dict:
        """The party of each conversation claimed rows are in, as its agents are shown it (the roster; who is
        still there), as `loaders.party_views` makes it: kept until its members or Lead change, or a rescan.

        The claim reads the conversation's row as committed, by whichever node changed it, so a party that
        moved (an op, or a conversation grown to everyone addressed in it) shows here before the wake goes
        out: the directives' cached blocks are dropped then (as `Fanout._party_moves` does on one node), not
        when their ttl runs out."""
        out: dict = {}
        moved = False
        for *_, ws, conv in rows:
            if conv is None or conv.id in out:
                continue
            key = (conv.members, conv.lead)
            hit = self._views.get(conv.id)
            if hit is None or hit[0] != key:
                d = self._dirs.get(ws)
                if d is None:
                    d = self._dirs[ws] = await self.gw.read(loaders.load_directory, ws)
                moved = moved or hit is not None
                hit = self._views[conv.id] = (key, core_party.party_view(d, conv))
            out[conv.id] = hit[1]
        if moved:
            self.gw.issuer.invalidate()
        return out

    # --- news from the other nodes ---

    def news(self, msg: dict) -> None:
        """A NOTIFY of another node: who has new deliveries, presence, topics, balances, messages; or a rescan."""
        gw = self.gw
        if msg.get("x") == "rescan":
            self._spawn(gw.rescan())
            return
        if "e" in msg:  # an event for a participant's connections (`tell`)
            pid, event = msg["e"]
            for c in gw.conns.get(pid, ()):
                c.push(event)
        if "p" in msg:
            pid, online, workspaces = msg["p"]
            if pid not in gw.conns:
                gw.tell_presence(pid, frozenset(workspaces), online)
        people: dict[str, int] = {}
        for pid, first in (msg.get("d") or {}).items():
            inbox = gw.inboxes.get(pid)
            if isinstance(inbox, ClaimInbox):
                inbox.offer()
            elif inbox is not None and inbox.announced(first):  # (else its devices' page reads reach them)
                people[pid] = first
        if people:
            self._spawn(self._people(people))
        if gw.hosted and (hosted := {pid: first for pid, first in (msg.get("d") or {}).items()
                                     if pid in gw.hosted and pid not in gw.conns}):
            self._spawn(self._hosted(hosted))
        topics = balances = messages = ()
        if msg.get("t") or msg.get("b"):  # (the workspaces followed here, once per news, not once per item)
            followed = gw.following.followed()
            if followed:
                topics = [x for x in msg.get("t") or () if x[0] in followed]
                balances = [tuple(x) for x in msg.get("b") or () if x[0] in followed]
        if msg.get("m"):
            monitored = gw.following.monitored()
            if monitored:
                messages = [x for x in msg["m"] if x[0] in monitored]
        if topics or balances or messages:
            self._spawn(self._relay(list(topics), list(balances), list(messages)))

    async def _people(self, first: dict[str, int]) -> None:
        """People connected here with new deliveries from another node: read them, push them."""
        got: dict[str, list[Item]] = {}
        objs: dict[int, dict] = {}
        for did, who, wake, reason, m in await self.db.unacked_since(first):
            obj = objs.get(id(m))
            if obj is None:
                obj = objs[id(m)] = protocol.message_obj(m)
            got.setdefault(who, []).append(Item(did, wake, reason, obj))
        for pid, items in got.items():
            if pid in self.gw.inboxes:
                self.gw.inboxes[pid].add(items)

    async def _hosted(self, first: dict[str, int]) -> None:
        """Hosted agents whose host is connected here, with a wake stored by another node and no connection
        anywhere: their host is told (seed 003 §29), as the storing node tells a host connected to it."""
        self.gw.tell_hosts(await self.db.hosted_wakes(first, self._now(), self.node_timeout,
                                                      self.gw.limits.presence_timeout))

    async def _relay(self, topics: list, balances: list, messages: list) -> None:
        """Topic and balance events, and monitored messages, committed by another node."""
        gw = self.gw
        out = Published(balances=balances)
        if topics:
            out.topics = await self.db.topics([t for _, t in topics])
            # who may see each (Fanout._readers): its conversation, read here when this node has not seen it
            seen = gw.writer.conversations
            followed = gw.following.followed()
            unseen = sorted({t.conversation for t in out.topics if t.workspace in followed
                             and t.conversation not in seen.get(t.workspace, {})})
            if unseen:
                out.conversations = await self.db.conversations(unseen)
        if messages:
            out.messages, out.deliveries = await self.db.messages([m for _, m in messages])
        gw.relay(out)

    # --- presence across nodes ---

    def silences(self) -> None:
        """(Scoring reads presence rows, with the silence rule: postgres.present_elsewhere.)"""

    def presence(self, conn, online: bool) -> None:
        # who follows now is who is told (as one node alone does at this moment)
        targets = self.gw.following.reaching(conn.workspaces)
        self._spawn(self._presence(conn.participant, conn.kind, conn.workspaces, online, targets))

    async def _presence(self, pid: str, kind: str, workspaces: frozenset[str], online: bool, targets) -> None:
        """Record this node's part; tell everyone only on the first connection anywhere / the last one."""
        try:
            elsewhere = await self.db.present(pid, kind, online, self._now(), self.node_timeout,
                                              self.gw.limits.presence_timeout)
            if (pid in self.gw.conns) != online or elsewhere:
                return  # it came back (or went) meanwhile, or it is still connected to another node
            await self.db.tell_presence(pid, online, workspaces)
        except Exception:
            log.exception("presence of %s not recorded", pid)
            return
        self.gw.tell_presence(pid, workspaces, online, targets)

    def tell(self, pid: str, event: dict) -> None:
        self._spawn(self._tell(pid, event))

    async def _tell(self, pid: str, event: dict) -> None:
        try:
            await self.db.tell(pid, event)
        except Exception:
            log.exception("an event for %s not told to the other nodes", pid)

    def joined(self, pid: str, workspaces: frozenset[str]) -> None:
        """Told here, and the other nodes' followers told too, as of a first connection."""
        self.gw.tell_presence(pid, workspaces, True)
        self._spawn(self._announce_joined(pid, workspaces))

    async def _announce_joined(self, pid: str, workspaces: frozenset[str]) -> None:
        try:
            await self.db.tell_presence(pid, True, workspaces)
        except Exception:
            log.exception("presence of %s in a joined workspace not told to the other nodes", pid)

    async def elsewhere(self, ids: list[str]) -> set[str]:
        return await self.db.elsewhere(ids, self._now(), self.node_timeout, self.gw.limits.presence_timeout)

    # --- the heartbeat: this node lives, its leases hold, expired leases are claimed again ---

    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(self.beat)
            try:
                await self._beat()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("heartbeat failed")

    async def _beat(self) -> None:
        now, mono = self._now(), time.monotonic()
        holders, seen = [], {}
        for pid, conns in self.gw.conns.items():
            for c in conns:
                h = getattr(c, "holder", None)
                if h is not None:
                    holders.append(h)
                seen[pid] = max(seen.get(pid, 0), now - int((mono - c.last_seen) * 1e6))
        agents = [pid for pid, ib in self.gw.inboxes.items() if isinstance(ib, ClaimInbox)]
        for pid in await self.db.beat(now, holders, seen, self.node_timeout, agents):
            inbox = self.gw.inboxes.get(pid)
            if isinstance(inbox, ClaimInbox):
                inbox.offer()  # leases of a vanished holder ran out: claim them
        if await self.db.relisten():
            await self.gw.rescan()  # announcements may have been missed while the listener was down
