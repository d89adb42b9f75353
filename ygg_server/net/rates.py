"""A participant's send rate: a token bucket per participant (all its connections together), in memory; and
every other op's, a token bucket per connection (`OpRate`).

A send costs one token, and one more per 16,384 characters of text (so the longest messages cost 13); the bucket
holds `burst` tokens and refills `rate` a second. A send with too few tokens is answered `rate_limited` with
`retry_after` (seconds) and not stored (docs/security.md)."""

from __future__ import annotations

import math

from .. import audit

PER_TOKEN = 16_384  # characters of text that cost one token more


class SendRate:
    def __init__(self, rate: float, burst: float, max_keys: int = 100_000):
        self.rate, self.burst, self.max_keys = max(rate, 1e-6), max(burst, 1.0), max_keys
        self.buckets: dict[str, tuple[float, float, bool]] = {}  # participant -> (tokens, at, limited)

    @staticmethod
    def cost(text: object) -> float:
        return 1 + (len(text) // PER_TOKEN if isinstance(text, str) else 0)

    def take(self, participant: str, cost: float, now: float) -> int:
        """0: the send may go (its tokens taken); else the seconds to wait before it could."""
        tokens, at, limited = self.buckets.get(participant, (self.burst, now, False))
        tokens = min(self.burst, tokens + (now - at) * self.rate)
        cost = min(cost, self.burst)  # (one send never waits for more than a full bucket)
        if tokens >= cost:
            self._put(participant, (tokens - cost, now, False))
            return 0
        if not limited:  # audited as it starts, not for every refusal after
            audit.record("send_rate", outcome="limited", participant=participant)
        self._put(participant, (tokens, now, True))
        return max(1, math.ceil((cost - tokens) / self.rate))

    def _put(self, participant: str, value: tuple[float, float, bool]) -> None:
        if participant not in self.buckets and len(self.buckets) >= self.max_keys:
            self.buckets.pop(next(iter(self.buckets)))  # (the oldest: a full bucket again at worst)
        self.buckets[participant] = value


class OpRate:
    """A connection's ops other than `send` (which `SendRate` bounds): each costs a token, of `burst` refilled `rate`
    a second; past that an op is answered `rate_limited` with `retry_after` and not run. An `ack` costs one only when
    it names deliveries this node did not send the connection (what an honest client acks is bounded by what it was
    sent; made-up ids would each cost the writer)."""

    def __init__(self, rate: float, burst: float):
        self.rate, self.burst = max(rate, 1e-6), max(burst, 1.0)
        self.tokens, self.at, self.limited = self.burst, None, False

    def take(self, now: float, who: str = "", address: str | None = None) -> int:
        """0: the op may run (its token taken); else the seconds to wait before it could."""
        if self.at is not None:
            self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens >= 1:
            self.tokens -= 1
            self.limited = False
            return 0
        if not self.limited:  # audited as it starts, not for every refusal after
            audit.record("op_rate", outcome="limited", participant=who, address=address)
            self.limited = True
        return max(1, math.ceil((1 - self.tokens) / self.rate))
