"""Failed sign-ins, counted: a guessed password or key is tried a few times a minute at most; password checks
queued, boundedly (docs/security.md)."""

from __future__ import annotations

import asyncio
import ipaddress
import time
from collections import Counter, OrderedDict, deque
from typing import Callable, TypeVar

from msgspec import UNSET

from ..ops import auth
from ..protocol import frames, names


class AuthLimiter:
    """Failed sign-ins in a sliding window, per key (("addr", ip) or ("key", credential id)).

    Memory is bounded: each key keeps at most its limit of timestamps, and at most `max_keys` keys are
    remembered (the least recently failed forgotten first), however many made-up key ids are tried."""

    def __init__(self, per_address: int, per_key: int, window: float, max_keys: int = 100_000):
        self.limit = {"addr": max(1, per_address), "key": max(1, per_key)}
        self.window, self.max_keys = window, max_keys
        self.failures: OrderedDict[tuple[str, str], deque] = OrderedDict()

    def retry_after(self, keys: list[tuple[str, str]], now: float) -> float:
        """Seconds until every one of `keys` may try again (0: now)."""
        wait = 0.0
        for k in keys:
            q = self.failures.get(k)
            if q is None:
                continue
            while q and q[0] <= now - self.window:
                q.popleft()
            if len(q) >= self.limit[k[0]]:
                wait = max(wait, q[0] + self.window - now)
        return wait

    def failed(self, keys: list[tuple[str, str]], now: float) -> None:
        for k in keys:
            q = self.failures.get(k)
            if q is None:
                q = self.failures[k] = deque(maxlen=self.limit[k[0]])
                if len(self.failures) > self.max_keys:
                    self.failures.popitem(last=False)
            else:
                self.failures.move_to_end(k)
            q.append(now)


def sign_in_keys(peer, frame: frames.Auth) -> list[tuple[str, str]]:
    """What a sign-in is counted against: the remote address (`peer`), and the API key's id or the handle.

    Nothing for a session token: 256 random bits are not guessed, and an expired token is the common honest
    failure (a host whose agents all started together would otherwise lock itself out an hour later)."""
    if frame.api_key is UNSET and frame.handle is UNSET:
        return []
    keys = [("addr", bucket(peer))]
    key, handle = frame.api_key, frame.handle
    if isinstance(key, str) and key.startswith(auth.KEY_PREFIX + "_"):
        keys.append(("key", "k:" + key.split("_", 2)[1][:64]))
    elif isinstance(handle, str):  # (as handles are compared: `Alice` and `alice` are one person's guesses)
        keys.append(handle_keys(handle))
    return keys


def handle_keys(handle: str) -> tuple[str, str]:
    """The limiter's key of the guesses at a handle's password, as handles are compared (names.handle_key)."""
    return "key", "h:" + names.handle_key(handle[:auth.HANDLE_TYPED])


def bucket(peer) -> str:
    """Who a remote address counts as: an IPv4 address, or an IPv6 address's /64 (one host is given a /64, and
    would otherwise have 2**64 addresses to spread its guesses or its sockets over)."""
    if not peer:
        return "?"
    try:
        ip = ipaddress.ip_address(str(peer[0]).split("%", 1)[0])
    except ValueError:
        return str(peer[0])
    if ip.version == 6:
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network((ip, 64), strict=False))
    return str(ip)


T = TypeVar("T")


class Full(Exception):
    """No room in the password-check queue: try again after `retry_after` seconds."""

    def __init__(self, retry_after: int):
        super().__init__(f"retry after {retry_after} s")
        self.retry_after = retry_after


class HashQueue:
    """argon2 checks, one at a time (each takes ~64 MiB), off the reader connection. At most `per_address` of
    them wait or run for one remote address (`bucket`) and `size` in all: past that a sign-in is answered at
    once (`Full`), so guesses sprayed from a few addresses keep a right password waiting a few checks at most,
    not all of theirs. The one way in, for a sign-in's check and for what a signed-in person asks for alike (a
    password change, a rehash): a session does not buy a place past the bound."""

    def __init__(self, size: int, per_address: int):
        self.size, self.per_address = max(1, size), max(1, per_address)
        self.waiting: Counter[str] = Counter()
        self.slot = asyncio.Semaphore(1)
        self.took = 0.2  # seconds the last check took (what retry_after estimates from)

    async def run(self, address: str, check: Callable[[], T]) -> T:
        if self.waiting[address] >= self.per_address or sum(self.waiting.values()) >= self.size:
            raise Full(max(1, round(self.took * (sum(self.waiting.values()) + 1) + 0.5)))
        self.waiting[address] += 1
        try:
            async with self.slot:
                started = time.monotonic()
                try:
                    return await asyncio.to_thread(check)
                finally:
                    self.took = time.monotonic() - started
        finally:
            self.waiting[address] -= 1
            if not self.waiting[address]:
                del self.waiting[address]
