"""The garbage collector's policy for a server process (`ygg-server serve` and its writer process)."""

from __future__ import annotations

import gc
from contextlib import contextmanager

THRESHOLDS = (20_000, 20, 20)


def calm_gc() -> None:
    """Keep the collector's passes out of message latency: call once startup is done.

    Everything made so far (modules, classes, caches) is frozen out of every later pass, and passes run
    less often: the young generation after 20,000 new container objects instead of 700, the oldest after
    20 passes of the middle one. Measured under the server bench: full passes of 15-23 ms of CPU each and
    about 4% of the CPU went to the collector before; after, passes of at most 2.5 ms and 0.2%
    (docs/performance.md). Reference cycles are still collected, only later.
    """
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)


@contextmanager
def calm_thresholds():
    """The same thresholds for a while, without freezing (the benchmark's load generator, which may run
    inside another program such as the test suite)."""
    old = gc.get_threshold()
    gc.set_threshold(*THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*old)
