"""Failed sign-ins, counted: a guessed password or key is tried a few times a minute at most (docs/security.md)."""

from __future__ import annotations

from collections import OrderedDict, deque

from msgspec import UNSET

from ..ops import auth
from ..protocol import frames


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
    keys = [("addr", str(peer[0]) if peer else "?")]
    key, handle = frame.api_key, frame.handle
    if isinstance(key, str) and key.startswith(auth.KEY_PREFIX + "_"):
        keys.append(("key", "k:" + key.split("_", 2)[1][:64]))
    elif isinstance(handle, str):
        keys.append(("key", "h:" + handle[:64]))
    return keys
