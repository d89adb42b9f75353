"""`--profile DIR`: the servers under py-spy, and where their busy time went."""

from __future__ import annotations

import shutil
import sys
from collections import Counter
from pathlib import Path


_IDLE_LEAVES = ("select (selectors", "_worker (concurrent", "get (queue", "wait (threading",
                "read (ygg_server/writer/process")
_CATEGORIES = (  # the first that matches, from the innermost frame out
    ("permessage-deflate", "permessage_deflate"), ("store (SQLite, rows, shared SQL)", "ygg_server/store/"),
    ("routing core (decide)", "ygg_server/core/"), ("message objects, JSON", "ygg_server/protocol/"),
    ("asyncpg (PostgreSQL protocol)", "asyncpg/"), ("claims, news (cluster)", "net/delivery/"),
    ("writer (plan, batch, loop)", "ygg_server/writer/"), ("gateway, inbox", "gateway.py:"),
    ("gateway, inbox", "inbox.py:"), ("websockets framing", "websockets/"), ("asyncio loop, socket I/O", "asyncio/"),
)


def profile_summary(path: Path) -> list[tuple[str, str, float]]:
    """Where a server's busy time went, from py-spy's raw (collapsed) samples: (thread, category, share)."""
    counts: Counter = Counter()
    for line in path.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        frames = stack.split(";")
        if not n.isdigit() or len(frames) < 2 or any(i in frames[-1] for i in _IDLE_LEAVES):
            continue
        if "_run (ygg_server/writer/runners.py" in frames[-1]:
            continue  # the writer waiting on its queue
        head = ";".join(frames[:2])  # (with --subprocesses, the process comes first, then the thread)
        thread = "writer" if "ygg-writer" in head or any("_child (ygg_server/writer/process.py" in f for f in frames) \
            else "main" if "MainThread" in head else "other"
        cat = next((name for f in reversed(frames[1:]) for name, pat in _CATEGORIES if pat in f), "other")
        counts[(thread, cat)] += int(n)
    total = sum(counts.values()) or 1
    return [(t, c, n / total) for (t, c), n in counts.most_common()]


def profiler(kind: str, profile: str | None) -> list[str]:
    """`--profile DIR`: run the server under py-spy (collapsed stacks in DIR/KIND.txt)."""
    if not profile:
        return []
    exe = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    Path(profile).mkdir(parents=True, exist_ok=True)
    return [exe, "record", "--format", "raw", "--rate", "200", "--threads", "--subprocesses",
            "-o", str(Path(profile) / f"{kind}.txt"), "--"]
