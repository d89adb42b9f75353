"""Times on the wire: UTC with microseconds, 2026-11-29T23:16:41.123456Z (the server keeps microseconds)."""

from __future__ import annotations

import time
from datetime import datetime, timezone

_second: tuple[int, str] = (0, "1970-01-01T00:00:00")  # the last second formatted, shared by every thread


def iso(us: int) -> str:
    """A time in microseconds as the wire writes it (the date and time of day formatted once a second)."""
    s, frac = divmod(us, 1_000_000)
    last = _second
    if last[0] != s:
        last = _set_second(s)
    return f"{last[1]}.{frac:06d}Z"


def _set_second(s: int) -> tuple[int, str]:
    global _second
    _second = last = (s, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(s)))
    return last


def from_iso(s: str) -> int:
    dt = datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)
    return int(dt.timestamp()) * 1_000_000 + dt.microsecond
