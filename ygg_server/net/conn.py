"""One client connection: its socket, its session, and its outgoing queue (`Limits`: the bounds it lives by).

Each connection has its own queue and writer task, so one slow client never holds up the rest; one that lets
`outgoing` frames or `outgoing_bytes` bytes (its queue and its transport's write buffer) pile up is dropped
(1013), and one whose write is not taken within `send_timeout` is aborted; either gets its unacked deliveries
again when it reconnects. Frames are encoded as they are queued, so their bytes are known; an agent's wakes
are bounded by its prefetch instead (one with a directive is encoded as it is written).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Awaitable, Callable

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from .. import protocol
from .issuer import elide
from .rates import OpRate
from .transport import send_texts

log = logging.getLogger("ygg.net")
DROP_GRACE = 2.0  # seconds a dropped slow connection has to take its close frame
BATCH_BYTES = 1 << 20  # bytes the writer writes at most at once (more only for one larger frame)


async def close_within(ws: ServerConnection, code: int, reason: str, seconds: float = DROP_GRACE) -> None:
    """Close with `code`; a peer that does not take the close frame within `seconds` (its buffer full: the
    close waits on it otherwise, as websockets' keepalive ping does) is cut off."""
    try:
        await asyncio.wait_for(ws.close(code, reason), seconds)
    except TimeoutError:
        ws.transport.abort()


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
    # bytes queued for one connection plus its transport's write buffer before we drop it (1013); one frame
    # alone always goes (a frame is at most the client's limit, protocol.MAX_RESPONSE)
    outgoing_bytes: int = 16 << 20
    send_timeout: float = 30.0  # a write the reader does not take within this long aborts the connection
    prefetch: int = 16  # wakes one agent connection may hold at once
    origins: tuple[str, ...] = ()  # browser Origins allowed, besides none at all
    # failed sign-ins allowed per auth_window from one remote address, and for one credential (an API key's
    # id, a handle); past that, `auth` is answered `unauthenticated` with `retry_after` and not checked
    auth_failures_per_address: int = 30
    auth_failures_per_key: int = 10
    auth_window: float = 60.0
    # password checks (argon2, one at a time) waiting or running at most, in all and per remote address (an
    # IPv6 /64); past that, `auth` with a password is answered `busy` with `retry_after`, not checked
    hash_queue: int = 16
    # open TCP connections from one remote address (an IPv6 /64) and in all; past either, a new one is answered
    # 503 and closed as it is accepted, before its upgrade
    connections_per_address: int = 256
    # sends of one participant (all its connections): `send_rate` a second, in bursts of `send_burst`; a send
    # costs 1, and 1 more per 16,384 characters of text (net/rates.py); past that, `rate_limited` + retry_after
    send_rate: float = 100.0
    send_burst: float = 1000.0
    # every other op of one connection (net/rates.py, OpRate): `op_rate` a second, in bursts of `op_burst`; past
    # that, `rate_limited` + retry_after, the op not run
    op_rate: float = 50.0
    op_burst: float = 500.0
    connections: int = 20_000
    hash_queue_per_address: int = 2
    # whose X-Forwarded-For names the client (net/proxy.py); /metrics on (net/http.py), to loopback and these
    trusted_proxies: tuple[str, ...] = ()
    metrics: bool = False
    metrics_from: tuple[str, ...] = ()
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
    address: str = ""  # the client's (net/proxy.py: behind a trusted proxy, the one it forwards for)
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
    writing_since: float | None = None  # monotonic time the write under way began
    writing: set = field(default_factory=set)  # the gateway's connections whose write waits (it times them out)
    queue: asyncio.Queue = field(default_factory=asyncio.Queue)
    ending: bool = False  # its session is gone: told why once, then closed (Gateway._end)
    dropped: bool = False  # too slow: closing (which may take the close timeout); later frames are not queued
    queued_bytes: int = 0  # bytes of the encoded frames in `queue`
    backlog: int = 0  # frames of the backlog (pages of it: net/feed.py) still queued: they are not slowness
    drained: Callable[[], None] | None = None  # told when the queue runs low (a person's next page: net/feed.py)
    dress: Callable[[str, dict], Awaitable[dict]] | None = None  # an agent's wakes get their directive (issuer.py)
    stable_sent: OrderedDict = field(default_factory=OrderedDict)  # directive versions sent here (issuer.elide)
    rosters: dict = field(default_factory=dict)  # conversation -> the PartyView its roster was last sent for here
    inflight: deque = field(default_factory=deque)  # pipelined frames (send, ack) not yet answered, in order
    settled: list = field(default_factory=list)  # futures waiting for an answer to go out (see Gateway._in_order)
    ops: OpRate | None = None  # its ops' rate (every op but send: net/rates.py)
    uploads: dict = field(default_factory=dict)  # upload id -> net.uploads.Pending: chunks held until the last

    def __post_init__(self) -> None:
        if self.ops is None:
            self.ops = OpRate(self.limits.op_rate, self.limits.op_burst)

    @property
    def last_seen(self) -> float:
        """Monotonic time anything was last heard on this connection: a frame, or a pong to our ping."""
        return getattr(self.ws, "heard", 0.0)

    def pending_bytes(self) -> int:
        """Bytes waiting to go out: the queue's and the transport's write buffer."""
        transport = getattr(self.ws, "transport", None)
        return self.queued_bytes + (transport.get_write_buffer_size() if transport is not None else 0)

    def room(self) -> int:
        """Bytes a page of backlog may still take (half the bound: live frames keep the other half)."""
        return self.limits.outgoing_bytes // 2 - self.pending_bytes()

    def push(self, frame: dict) -> None:
        if self.dropped:
            return
        leased = frame.get("op") == "deliver" and frame.get("id") in self.leased  # a wake: at most `prefetch`
        if leased and self.dress is not None:
            data, size = frame, 0  # encoded when written, with its directive
        else:
            data = protocol.encode_utf8(frame)
            size = len(data)
        if self.queue.qsize() >= self.limits.outgoing + self.backlog:
            self._slow("frames")
            return
        pending = self.pending_bytes() if size and not leased else 0
        if pending and pending + size > self.limits.outgoing_bytes:
            self._slow("bytes")
            return
        self.queued_bytes += size
        self.queue.put_nowait(data)

    def write_overdue(self, now: float) -> float:
        """Seconds until the write under way is past `send_timeout` (inf: none under way); at 0 or less the reader
        stopped reading: the connection is aborted (no close frame would get through either; the gateway's
        `_write_watch` asks)."""
        since = self.writing_since
        if since is None:
            return float("inf")
        left = since + self.limits.send_timeout - now
        if left <= 0 and not self.ws.transport.is_closing():
            log.warning("aborting the connection of %s: a write waited %.0f s", self.participant or "?",
                        self.limits.send_timeout)
            self.dropped = True
            self.ws.transport.abort()
        return left

    def _slow(self, what: str) -> None:
        log.warning("dropping slow connection of %s (too many %s waiting)", self.participant or "?", what)
        self.dropped = True
        asyncio.ensure_future(close_within(self.ws, 1013, "too slow"))

    async def writer(self) -> None:
        while True:
            batch = [await self.queue.get()]
            size = len(batch[0]) if isinstance(batch[0], bytes) else 0
            while not self.queue.empty() and len(batch) < 256 and size < BATCH_BYTES:
                batch.append(self.queue.get_nowait())
                size += len(batch[-1]) if isinstance(batch[-1], bytes) else 0
            self.queued_bytes -= size
            texts = []
            for f in batch:
                if isinstance(f, dict):
                    if self.dress is not None:
                        f = await self.dress(self.participant, f)
                        if "directive" in f:
                            f["directive"] = elide(self.stable_sent, f["directive"])
                    f = protocol.encode_utf8(f)
                texts.append(f)
            self.writing_since = time.monotonic()
            self.writing.add(self)
            try:
                await send_texts(self.ws, texts)
            except ConnectionClosed:  # (the handler sees it too, and ends the connection)
                return
            finally:
                self.writing.discard(self)
                self.writing_since = None
            for _ in batch:
                self.queue.task_done()
            self.backlog = max(0, self.backlog - len(batch))
            if self.drained is not None:
                self.drained()
