"""One client connection: its socket, its session, and its outgoing queue (`Limits`: the bounds it lives by).

Each connection has its own queue and writer task, so one slow client never holds up the rest; one that lets
`outgoing` frames pile up is dropped (1013), and gets its unacked deliveries again when it reconnects.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Awaitable, Callable

from websockets.asyncio.server import ServerConnection

from .. import protocol
from .issuer import elide
from .transport import send_texts

log = logging.getLogger("ygg.net")
DROP_GRACE = 2.0  # seconds a dropped slow connection has to take its close frame


@dataclass
class Limits:
    max_frame: int = protocol.MAX_FRAME
    auth_timeout: float = 10.0  # seconds to authenticate after the upgrade
    open_timeout: float = 10.0  # seconds for the opening handshake
    idle_timeout: float = 600.0  # seconds without a frame before we close
    presence_timeout: float = protocol.PRESENCE_TIMEOUT  # an agent silent this long (no frame, no pong): offline
    ping_interval: float = 20.0  # keepalive: a ping every this many seconds; its pong counts as being heard from
    ping_timeout: float = 20.0  # a ping unanswered this long closes the connection (1011): a dead socket goes offline
    close_timeout: float = 10.0  # a closing handshake the other end does not finish is cut off after this
    session_sweep: float = 60.0  # expired sessions are deleted this often
    outgoing: int = 10_000  # frames queued for one slow connection before we drop it
    prefetch: int = 16  # wakes one agent connection may hold at once
    origins: tuple[str, ...] = ()  # browser Origins allowed, besides none at all
    # failed sign-ins allowed per auth_window from one remote address, and for one credential (an API key's
    # id, a handle); past that, `auth` is answered `unauthenticated` with `retry_after` and not checked
    auth_failures_per_address: int = 30
    auth_failures_per_key: int = 10
    auth_window: float = 60.0
    # a person's session: ends this long after it was made, or sooner when unused this long (issue 18)
    person_session: float = 30 * 24 * 3600.0
    person_idle: float = 14 * 24 * 3600.0

    @property
    def person_session_us(self) -> int:
        return int(self.person_session * 1_000_000)

    @property
    def person_idle_us(self) -> int:
        return int(self.person_idle * 1_000_000)


@dataclass(eq=False)
class Conn:
    ws: ServerConnection
    limits: Limits
    participant: str = ""
    kind: str = ""
    handle: str = ""
    token: str = ""
    expires_at: int = 0
    prefetch: int = 16
    leased: set[int] = field(default_factory=set)
    workspaces: frozenset[str] = frozenset()  # where this participant is a member (for presence events)
    monitors: set[str] = field(default_factory=set)  # workspaces followed whole
    follows: set[str] = field(default_factory=set)  # workspaces whose topic/balance events it gets
    waiting_since: float | None = None  # monotonic time the handler began waiting for the next frame
    queue: asyncio.Queue = field(default_factory=asyncio.Queue)
    ending: bool = False  # its session is gone: told why once, then closed (Gateway._end)
    dropped: bool = False  # too slow: closing (which may take the close timeout); later frames are not queued
    backlog: int = 0  # frames of the backlog (pages of it: net/feed.py) still queued: they are not slowness
    drained: Callable[[], None] | None = None  # told when the queue runs low (a person's next page: net/feed.py)
    dress: Callable[[str, dict], Awaitable[dict]] | None = None  # an agent's wakes get their directive (issuer.py)
    stable_sent: OrderedDict = field(default_factory=OrderedDict)  # directive versions sent here (issuer.elide)
    rosters: dict = field(default_factory=dict)  # conversation -> the PartyView its roster was last sent for here
    inflight: deque = field(default_factory=deque)  # pipelined frames (send, ack) not yet answered, in order
    settled: list = field(default_factory=list)  # futures waiting for an answer to go out (see Gateway._in_order)

    @property
    def last_seen(self) -> float:
        """Monotonic time anything was last heard on this connection: a frame, or a pong to our ping."""
        return getattr(self.ws, "heard", 0.0)

    def push(self, frame: dict) -> None:
        if self.dropped:
            return
        if self.queue.qsize() >= self.limits.outgoing + self.backlog:
            log.warning("dropping slow connection of %s", self.participant)
            self.dropped = True
            asyncio.ensure_future(self._drop())
            return
        self.queue.put_nowait(frame)

    async def _drop(self) -> None:
        """Close 1013; a reader too slow to take even the close frame is cut off (else only keepalive would)."""
        try:
            await asyncio.wait_for(self.ws.close(1013, "too slow"), DROP_GRACE)
        except TimeoutError:
            self.ws.transport.abort()

    async def writer(self) -> None:
        while True:
            frame = await self.queue.get()
            batch = [frame]
            while not self.queue.empty() and len(batch) < 256:
                batch.append(self.queue.get_nowait())
            texts = []
            for f in batch:
                if self.dress is not None and f.get("op") == "deliver" and f.get("wake"):
                    f = await self.dress(self.participant, f)
                    if "directive" in f:
                        f["directive"] = elide(self.stable_sent, f["directive"])
                texts.append(protocol.encode_utf8(f))
            await send_texts(self.ws, texts)
            for _ in batch:
                self.queue.task_done()
            self.backlog = max(0, self.backlog - len(batch))
            if self.drained is not None:
                self.drained()
