"""The Delivery port on one node alone (SQLite): agents' inboxes in memory, presence this node's connections."""

from __future__ import annotations

import asyncio
import time

from ...core import Kind
from ..inbox import Inbox, Item


class LocalDelivery:
    def __init__(self):
        self.gw = None
        self._loading: dict[str, asyncio.Future] = {}
        self._arrived: dict[str, list[Item]] = {}  # published while that inbox was loading

    def bind(self, gateway) -> None:
        self.gw = gateway

    async def start(self) -> None:
        pass

    async def close(self) -> None:
        pass

    async def agent_inbox(self, pid: str) -> Inbox:
        """Its first page read from the store; connections attaching meanwhile share the one load."""
        if pid in self._loading:
            try:
                return await asyncio.shield(self._loading[pid])
            except _LoadFailed:  # the load it waited for failed or was cancelled: load again
                return await self.agent_inbox(pid)
        fut = asyncio.get_running_loop().create_future()
        self._loading[pid] = fut
        self._arrived[pid] = []
        try:
            inbox = Inbox(pid, allow=self.gw.allower(pid), read=self.gw.unacked_of(pid))
            await inbox.fill()  # its first page
            inbox.add(self._arrived.pop(pid))
            self.gw.inboxes[pid] = inbox
            fut.set_result(inbox)
            return inbox
        except BaseException:
            fut.set_exception(_LoadFailed())  # those waiting on this load are not left waiting for good
            fut.exception()
            raise
        finally:
            self._loading.pop(pid, None)
            self._arrived.pop(pid, None)

    def expects(self, pid: str) -> bool:
        return pid in self._arrived

    def arrived(self, pid: str, items: list[Item]) -> None:
        self._arrived[pid] += items

    def lease(self, recipients) -> dict[str, str]:
        return {}

    async def offer_again(self, inbox) -> None:
        await inbox.rescan()  # what is owed, read again from its first page

    def presence(self, conn, online: bool) -> None:
        self.gw.writer.seen(conn.participant, online)  # (the writer scores who is online)
        self.gw.tell_presence(conn.participant, conn.workspaces, online)

    def tell(self, pid: str, event: dict) -> None:
        """(One node: its connections were told.)"""

    def joined(self, pid: str, workspaces: frozenset[str]) -> None:
        self.gw.tell_presence(pid, workspaces, True)

    async def elsewhere(self, ids: list[str]) -> set[str]:
        return set()

    def silences(self) -> None:
        """Seed 003 §26: an agent "counts as offline when nothing has been heard from it" for presence_timeout,
        connected or not: the writer scores it so (as `presence` answers), and online again once heard from."""
        horizon = time.monotonic() - self.gw.limits.presence_timeout
        for pid, conns in self.gw.conns.items():
            if conns and conns[0].kind == Kind.AGENT:
                self.gw.writer.seen(pid, any(c.last_seen >= horizon for c in conns))

    def rescanned(self) -> None:
        pass


class _LoadFailed(Exception):
    """A participant's inbox load that another connection waited on did not finish."""
