"""Connections capped before the WebSocket upgrade, per remote address (an IPv6 /64) and in all; the accept
errors' log rate-limited; the file-descriptor soft limit raised at start (docs/security.md)."""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from collections import Counter

from .. import audit
from .proxy import trusted
from .signin import bucket

log = logging.getLogger("ygg.net")

REFUSED = (b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 10\r\nConnection: close\r\nContent-Type: text/plain\r\n"
           b"Content-Length: %d\r\n\r\n%s")


class Caps:
    """Open TCP connections counted from `connection_made` to `connection_lost`: one past `per_address` from one
    address, or past `total`, is answered 503 and closed at once, before its HTTP request is read (it holds a
    file descriptor for microseconds, not for the opening handshake's timeout). A trusted reverse proxy carries
    many clients' connections, so only the total caps it."""

    def __init__(self, per_address: int, total: int, proxies: tuple = ()):
        self.per_address, self.total, self.proxies = per_address, total, proxies
        self.open: Counter[str] = Counter()
        self.count = 0
        self._told = 0.0  # when a refusal was last audited (one entry a second at most, with how many since)
        self._since = 0

    def admit(self, peer) -> str | None:
        """Count a new connection in; or the reason it is refused (then it is not counted)."""
        key = bucket(peer)
        if self.count >= self.total:
            return self._refused(key, "too many connections to this server")
        if self.open[key] >= self.per_address and not (self.proxies and peer and trusted(str(peer[0]), self.proxies)):
            return self._refused(key, "too many connections from this address")
        self.open[key] += 1
        self.count += 1
        return None

    def release(self, peer) -> None:
        key = bucket(peer)
        self.count -= 1
        self.open[key] -= 1
        if self.open[key] <= 0:
            del self.open[key]

    def _refused(self, key: str, reason: str) -> str:
        self._since += 1
        now = time.monotonic()
        if now - self._told >= 1.0:
            audit.record("connection_refused", outcome="limited", address=key, reason=reason, refused=self._since)
            self._told, self._since = now, 0
        return reason

    @staticmethod
    def refusal(reason: str) -> bytes:
        body = (reason + "\n").encode()
        return REFUSED % (len(body), body)


class AcceptErrors:
    """The event loop's exception handler: an accept that failed (out of file descriptors, most often) is logged
    once per `every` seconds with how many failed since, not once each (2,000 sockets logged 102,000 lines in
    20 s); anything else goes to the handler that was there."""

    def __init__(self, loop: asyncio.AbstractEventLoop, every: float = 10.0):
        self.loop, self.every = loop, every
        self.previous = loop.get_exception_handler()
        self.last, self.since = -every, 0

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict) -> None:
        if str(context.get("message", "")).startswith("socket.accept()"):
            self.since += 1
            now = time.monotonic()
            if now - self.last >= self.every:
                log.error("accepting connections failed %d time(s) in %.0f s: %s", self.since,
                          min(now - self.last, self.every), context.get("exception"))
                self.last, self.since = now, 0
            return
        if self.previous is not None:
            self.previous(loop, context)
        else:
            loop.default_exception_handler(context)


def raise_fd_limit() -> int:
    """Raise this process's soft limit on open files to its hard limit (1,024 by default: a few hundred idle
    sockets would stop the server accepting); return the limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            log.warning("the open-files limit stays at %d", soft)
    return soft
