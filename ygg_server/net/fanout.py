"""What the gateway does with what was committed, and when another process changed the database.

After each commit: the new deliveries into the inboxes of those connected here, monitored messages and topic and
balance events to the connections following their workspaces. After another process's write (the admin CLI,
another node, the writer restarted): who may still receive, follow and monitor what, read again (`ops.access`),
and sessions that ended (by the gateway's clock) closed. A mixin of `Gateway` (its connections, inboxes, followers
and clock).
"""

from __future__ import annotations

import asyncio

from ..writer import Published
from ..ops import access, auth
from ..protocol import replies
from .inbox import Item


class Fanout:
    def publish(self, out: Published) -> None:
        self.metrics.published(len(out.messages), len(out.deliveries))
        self._party_moves(out.parties)
        by_recipient: dict[str, list[Item]] = {}
        objs: dict[int, dict] = {}  # one message object per message, however many of its recipients are here
        inboxes, leased = self.inboxes, out.leased
        for s in out.deliveries:
            if s.recipient in inboxes or self.delivery.expects(s.recipient):
                obj = objs.get(id(s.message))
                if obj is None:
                    obj = objs[id(s.message)] = replies.message_obj(s.message)
                party = out.parties.get(s.message.conversation)
                by_recipient.setdefault(s.recipient, []).append(
                    Item(s.id, s.wake, s.reason, obj, party, leased.get(s.id) if leased else None))
        for pid, items in by_recipient.items():
            inbox = inboxes.get(pid)
            if inbox is not None:
                inbox.add(items)
            else:
                self.delivery.arrived(pid, items)
        self.relay(out)
        if self.topic_watch:
            self.topic_watch.seen(out.messages)
        if self.hosted:
            self.wake_hosts(out.deliveries)
        if out.rescan:
            asyncio.ensure_future(self.rescan())

    def relay(self, out: Published) -> None:
        """Monitored messages, and topic and balance events, to the connections following their workspaces."""
        if out.messages:
            self._monitor(out)
        if out.topics or out.balances:
            self._events(out)

    def _party_moves(self, parties: dict) -> None:
        """A party can change without an op: a conversation grows to everyone addressed in it (core `_grown`).
        The writer hands over a new PartyView then; the directives' cached blocks about it are dropped.
        An unchanged party keeps the object known before, so comparing it later (a connection's roster, sent
        once per party) is `is`, not a walk over every entry."""
        changed = False
        for cid, pv in parties.items():
            prev = self._parties.get(cid)
            if prev is pv:
                continue
            if prev is not None:
                if prev == pv:
                    parties[cid] = prev
                    continue
                changed = True
            if len(self._parties) >= 100_000:
                self._parties.clear()
            self._parties[cid] = pv
        if changed:
            self.issuer.invalidate()

    def _monitor(self, out: Published) -> None:
        """Every message stored, with its deliveries (none for one absorbed by system.ygg), to monitors."""
        watched = [m for m in out.messages if self.following.monitoring(m.workspace)]
        if not watched:
            return
        reached: dict[int, list] = {}
        for x in out.deliveries:
            reached.setdefault(id(x.message), []).append(x)
        for m in watched:
            frame = replies.message_event(m, replies.deliveries_obj(reached.get(id(m), ())))
            for c in self.following.monitoring(m.workspace):
                c.push(frame)

    def _events(self, out: Published) -> None:
        if not self.following:  # nobody subscribed: build no topic or balance frames
            return
        followed = self.following.followed()
        frames: dict[str, list[tuple[dict, object]]] = {}
        for t in out.topics:
            if t.workspace in followed:
                frames.setdefault(t.workspace, []).append((replies.topic_event(t), self._readers(t, out)))
        for ws, account, bal in out.balances:
            if ws in followed:
                frames.setdefault(ws, []).append((replies.balance_event(ws, account, bal), None))
        for ws, fs in frames.items():
            for c in self.following.followers(ws):
                for f, readers in fs:
                    if readers is None or c.participant in readers or ws in c.monitors:
                        c.push(f)

    def _readers(self, t, out: Published) -> frozenset[str] | None:
        """Who may see topic `t`: everyone following its workspace (None), or, in a direct
        conversation, its members only (monitors always)."""
        conv = out.conversations.get(t.conversation)
        if conv is None:  # (the writer's memory, where it shares this process; a writer process hands it over)
            conv = getattr(self.writer, "conversations", {}).get(t.workspace, {}).get(t.conversation)
        if conv is not None and conv.kind in ("general", "group"):
            return None
        return frozenset(t.members) | (conv.members if conv is not None else frozenset())

    async def rescan(self) -> None:
        """Another process changed the database: memberships first (what each connection may still get and
        follow: a workspace left, receive or monitor taken away), then revoked sessions, then new deliveries."""
        self.delivery.rescanned()
        self.issuer.invalidate()
        if self.hosts:
            await self.rehost()
        await self._refresh_access()
        for pid in list(self.conns):
            for c in list(self.conns.get(pid, ())):
                if await self.read(auth.session_participant, c.token, self.clock()) is None:
                    await self._end(c)
            inbox = self.inboxes.get(pid)
            if inbox is not None:
                await self.delivery.offer_again(inbox)

    async def _refresh_access(self, pids: list[str] | None = None) -> None:
        """What each connected participant (or each of `pids`) may still receive, follow and monitor, read again;
        for all of them, who is in each followed workspace too."""
        gained: dict[str, frozenset[str]] = {}  # who is in more workspaces than before: announced after `members`
        for pid, mine in (await self.read(access.access, list(self.conns) if pids is None else pids)).items():
            if pid not in self.conns:
                continue
            self._receives[pid] = frozenset(ws for ws, (receive, _) in mine.items() if receive)
            if new := frozenset(mine) - self.conns[pid][0].workspaces:
                gained[pid] = new
            for c in self.conns[pid]:
                before, c.workspaces = c.workspaces, frozenset(mine)
                for ws in c.follows - c.workspaces:  # followed, and no longer theirs: deleted, left, removed
                    c.push(replies.workspace_gone(ws))
                if c.follows:  # a client that follows workspaces is told of a new one (it may follow it too)
                    for ws in c.workspaces - before:
                        c.push(replies.workspace_added(ws))
                follows = {ws for ws in c.follows if ws in self._receives[pid]}
                monitors = {ws for ws in c.monitors if ws in follows and mine[ws][1]}
                for ws in sorted((c.follows - follows) & c.workspaces):  # still theirs, no longer received
                    c.push(replies.narrowed(ws, False, "no_receive"))
                for ws in sorted((c.monitors - monitors) & follows):
                    c.push(replies.narrowed(ws, True, "no_monitor"))
                self.following.set(c, follows, monitors)
        self._events_wanted()
        if pids is None:
            await self._members_moved()
        for pid, new in gained.items():  # their followers are told it is online, as when it connects
            self.delivery.joined(pid, new)

    async def _members_moved(self) -> None:
        """Who is in each workspace followed here, read again: its followers are told who joined and who left
        since the last read (`members`): someone added or gone, an agent made or revoked, a restriction; and whose
        role or permissions changed (`changed`, when any did)."""
        followed = list(self.following.followed())
        if not followed:
            return
        for ws, (members, groups) in (await self.read(access.standings, followed)).items():
            events = []
            moved = self.following.moved(ws, members)
            if moved is not None:
                events.append(replies.members_event(ws, *moved))
            if self.following.regrouped(ws, groups):
                events.append(replies.groups_event(ws, groups))
            for c in self.following.followers(ws):
                for ev in events:
                    c.push(ev)
