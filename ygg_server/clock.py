"""The one wall clock: the time now, in integer microseconds since the epoch (UTC).

The server reads the time of day here and nowhere else (`tests/test_layers.py`). The composition root
(`compose.py`) hands `now_us` to the writer and its store as their `clock`; the gateway takes its clock from
the writer it is given (`Gateway.clock`), and the operations of `ops` that need the time take it as `now`
from their caller (the gateway, the admin CLI, `ygg --local`). A test gives the writer another clock
(`compose.on_sqlite(path, clock=...)`), and the gateway over it follows. Timeouts and intervals are
measured with `time.monotonic()`, which is not this clock.
"""

from __future__ import annotations

import time


def now_us() -> int:
    """The wall clock now, in microseconds (UTC)."""
    return time.time_ns() // 1000
