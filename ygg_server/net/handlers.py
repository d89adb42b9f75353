"""The ops the gateway answers itself: they need its connections, followers or presence, not only the database.

Each `_op_<op>(conn, frame) -> reply` (`send` and `ack`, pipelined, return the writer's future). Who may do what
is decided by the operations they call (`ops.access.follow`, `ops.actions.my_agents`, the queries), never here.
A mixin of `Gateway`.
"""

from __future__ import annotations

import asyncio
import time

from ..core import Kind
from ..ops import access, actions, queries
from ..ops.refusals import Forbidden, NotFound
from .. import protocol
from ..protocol import ErrorCode as E, frames, replies
from .accounts import AccountHandlers
from .connected import ConnectedAccounts
from .tool_calls import ToolCalls


class Handlers(AccountHandlers, ToolCalls, ConnectedAccounts):
    async def _op_auth(self, conn, frame: frames.Auth) -> None:
        await self._session(conn, frame)  # a renewal (its answers pushed there)

    async def _op_ping(self, conn, frame: frames.Ping) -> dict:
        return replies.pong(frame.ref)

    async def _op_whoami(self, conn, frame: frames.Whoami) -> dict:
        return replies.whoami(frame.ref, conn.participant, conn.handle, conn.kind)

    def _send(self, conn, frame: frames.Send) -> asyncio.Future | dict:
        return self.submit_send(conn.participant, frame)

    def submit_send(self, participant: str, frame: frames.Send) -> asyncio.Future | dict:
        """A send of `participant`'s, as from the socket (net/mcp.py's calls too): the writer's future, or the
        error when it comes faster than Limits.send_rate (not stored)."""
        wait = self.send_rate.take(participant, self.send_rate.cost(frame.text), time.monotonic())
        if wait:
            return rate_limited(frame.ref, "sending too fast; try again later", wait)
        return self.writer.submit("send", participant, frame)

    def _ack(self, conn, frame: frames.Ack) -> asyncio.Future:
        inbox = self.inboxes.get(conn.participant)
        retired = inbox.ack(frame.ids) if inbox else []
        done = set(retired)
        extra = [i for i in frame.ids if i not in done]  # unknown here: still let the store check them
        wait = conn.ops.take(time.monotonic(), conn.participant, conn.address) if extra else 0
        if wait:  # made-up ids faster than Limits.op_rate: what this node sent is acked, the rest not looked at
            if retired:
                self.writer.submit("ack", conn.participant, retired, frame.ref).add_done_callback(_retrieved)
            return rate_limited(frame.ref, "too many acks of deliveries this connection was not sent", wait)
        return self.writer.submit("ack", conn.participant, retired + extra, frame.ref)

    async def _op_subscribe(self, conn, frame: frames.Subscribe) -> dict | None:
        ws, monitor = frame.workspace, frame.monitor
        members = await self.read(access.follow, conn.participant, ws, monitor)  # who may: the operation says
        if conn not in self.conns.get(conn.participant, ()):  # (it closed while this was read: nothing to follow)
            return None
        self.following.set(conn, conn.follows | {ws}, conn.monitors | ({ws} if monitor else set()))
        # what `members` and `groups` events tell against
        self.following.know(ws, members, (await self.read(access.groups, {ws: members}))[ws])
        # a change committed since the checks above may have been rescanned before this connection followed (that
        # rescan passed it by): its access is read again now that it follows, as a rescan reads it (a narrowing is
        # told as one), and it is answered as it now follows
        await self._refresh_access([conn.participant])
        if ws not in conn.follows:
            raise NotFound if ws not in conn.workspaces else Forbidden
        if not self.writer.events:  # the first follower: every batch after this answer carries the events
            self.writer.events = True
            self._events_on = self.writer.submit("sync")
        if self._events_on is not None and not self._events_on.done():  # (a follower after it waits for it too)
            await asyncio.shield(self._events_on)
        return replies.subscribed(frame.ref, ws, ws in conn.monitors)

    async def _op_unsubscribe(self, conn, frame: frames.Unsubscribe) -> dict:
        ws = frame.workspace
        self.following.set(conn, conn.follows - {ws}, conn.monitors - {ws})
        self._events_wanted()
        return replies.unsubscribed(frame.ref, ws)

    def _events_wanted(self) -> None:
        """Topic and balance events cost the writer process to hand over: only while someone follows."""
        if self.writer.events and not self.following:
            self.writer.events = False

    async def _op_my_agents(self, conn, frame: frames.MyAgents) -> dict:
        """A person's own agents, each with whether it is online."""
        agents = await self.read(actions.my_agents, conn.participant, frame)
        return replies.reply(frame, {"agents": [{**a, "online": self.online(a["id"])} for a in agents]})

    async def _op_explain_assignment(self, conn, frame: frames.ExplainAssignment) -> dict:
        present = await self._present(conn, frame)
        return replies.reply(frame, await self.read(queries.explain_assignment, conn.participant, frame, present))

    async def _op_presence(self, conn, frame: frames.Presence) -> dict:
        ids = [m["id"] for m in await self.read(queries.members, conn.participant, frame.workspace)]
        elsewhere = await self.delivery.elsewhere([i for i in ids if not self.online(i)])
        return replies.presence(frame.ref, {i: self.online(i) or i in elsewhere for i in ids})

    async def _present(self, conn, frame) -> frozenset[str]:
        """Who is online now, as the writer scores a send to `frame.workspace` (seed 003 §14's online part): the
        connections here, and the workspace's agents online through another node."""
        here = frozenset(p for p in self.conns if self.online(p))
        members = await self.read(queries.members, conn.participant, frame.workspace)
        ids = [m["id"] for m in members if m["kind"] == "agent" and m["id"] not in here]
        return here | await self.delivery.elsewhere(ids) if ids else here

    def online(self, pid: str) -> bool:
        """Seed 003 §26: an agent counts as offline when nothing was heard from it for a few minutes.

        Heard: any frame, or the pong to the keepalive ping sent every `ping_interval`, so a connected agent
        with nothing to say stays online; a socket that stops answering is closed after `ping_timeout`."""
        horizon = time.monotonic() - self.limits.presence_timeout
        return any(c.kind != Kind.AGENT or c.last_seen >= horizon for c in self.conns.get(pid, ()))


def rate_limited(ref, why: str, wait: int) -> dict:
    """The answer to a frame refused for its rate (net/rates.py): `rate_limited`, why, and `retry_after` seconds."""
    return {**protocol.error(ref, E.RATE_LIMITED, why), "retry_after": wait}


def _retrieved(done: asyncio.Future) -> None:
    if not done.cancelled():
        done.exception()  # (an ack no one waits for: its failure is not "never retrieved")
