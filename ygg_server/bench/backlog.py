"""A person back after a long time away: how soon the first of their waiting deliveries comes, how soon the last,
and how much the server grows meanwhile.

`python -m ygg_server.bench.backlog --n 20000` starts `ygg-server serve` (embedded SQLite, its writer process) on a
fresh data dir, has @bob send @alice `n` messages while she is away, then signs alice in and takes every delivery,
acking them as they come (a batch at a time, as the TUI does). It prints the seconds to the first delivery and to
the last, and the server's resident memory growth (its peak while alice catches up, less what it was before she
connected: the server process' VmRSS, read every 20 ms). Not a timed test: a measurement (docs/performance.md).
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..clock import now_us
from ..ops import admin
from ..client import Client
from ..store import sqlite as db

PW = "pw-" + "x" * 8


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rss_kib(pid: int) -> int:
    """The resident memory of process `pid` and its children (the writer process), in KiB."""
    total = 0
    for p in [pid, *_children(pid)]:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except FileNotFoundError:
            pass
    return total


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except FileNotFoundError:
        return []


async def _up(url: str, deadline: float) -> str:
    """Wait for the server; return a session token of alice's (she signs in with it later: a password check
    is an argon2 hash of 64 MiB, which would show in the memory measured)."""
    while True:
        try:
            c = Client(url, handle="alice", password=PW, reconnect=False, timeout=2)
            await c.connect()
            await c.close()
            return c.token
        except (OSError, asyncio.TimeoutError, ConnectionError):
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


async def _seed(url: str, ws: str, n: int) -> None:
    """@bob sends @alice `n` messages (informs: each a delivery to her), 500 in flight at a time."""
    bob = Client(url, handle="bob", password=PW)
    await bob.connect()
    first = await bob.send(workspace=ws, topic="new", title="While you were away", type="inform", to=["@alice"],
                           text="0")
    topic = first["message"]["topic"]
    for lo in range(1, n, 500):
        replies = await asyncio.gather(*(bob.send(workspace=ws, topic=topic, type="inform", to=["@alice"],
                                                  text=f"message {i} " + "x" * 80) for i in range(lo, min(n, lo + 500))))
        assert all(r["op"] == "sent" for r in replies), replies[0]
    await bob.close()


async def _catch_up(url: str, token: str, n: int, pid: int) -> dict:
    """Alice signs in and takes all `n` deliveries, acking each batch as it is taken; the server's memory is
    read meanwhile."""
    base = _rss_kib(pid)
    peak = base
    done = asyncio.Event()

    async def watch():
        nonlocal peak
        while not done.is_set():
            peak = max(peak, _rss_kib(pid))
            await asyncio.sleep(0.02)

    watcher = asyncio.ensure_future(watch())
    t0 = time.monotonic()
    alice = Client(url, token=token, timeout=120)
    await alice.connect()
    seen: set[int] = set()
    acks: list[asyncio.Future] = []
    first = last = None
    order_ok, prev = True, 0
    while len(seen) < n:
        batch = [await alice.next_delivery(timeout=60)]
        while alice.pending_deliveries() and len(batch) < 200:
            batch.append(await alice.next_delivery())
        if first is None:
            first = time.monotonic() - t0
        for d in batch:
            order_ok &= d["id"] > prev
            prev = d["id"]
            seen.add(d["id"])
        acks.append(asyncio.ensure_future(alice.ack([d["id"] for d in batch])))
    last = time.monotonic() - t0
    await asyncio.gather(*acks)
    done.set()
    await watcher
    await alice.close()
    return {"first_s": round(first, 2), "last_s": round(last, 2), "growth_mb": round((peak - base) / 1024, 1),
            "in_id_order": order_ok, "received": len(seen)}


async def run(n: int, writer: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        conn = db.connect(db.db_path(Path(tmp)))
        admin.add_person(conn, "alice", PW, now=now_us())
        admin.add_person(conn, "bob", PW, now=now_us())
        ws = admin.add_workspace(conn, "team", "alice", now=now_us())["id"]
        admin.add_member(conn, ws, "bob", now=now_us())
        conn.close()
        port = _free_port()
        here = Path(__file__).resolve().parent.parent  # this tree's server, wherever the package is installed from
        server = subprocess.Popen([sys.executable, "-m", "ygg_server.cli", "serve", "--data-dir", tmp, "--port",
                                   str(port), "--writer", writer], cwd=here, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        url = f"ws://127.0.0.1:{port}/"
        try:
            token = await _up(url, time.monotonic() + 30)
            t = time.monotonic()
            await _seed(url, ws, n)
            seeded = time.monotonic() - t
            await asyncio.sleep(1.0)  # the writer settles
            out = await _catch_up(url, token, n, server.pid)
            return {"n": n, "seeded_s": round(seeded, 1), **out}
        finally:
            server.terminate()
            server.wait(10)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, action="append", help="deliveries waiting (repeatable; default 20000)")
    p.add_argument("--writer", choices=("process", "thread"), default="process")
    a = p.parse_args()
    for n in a.n or [20000]:
        print(asyncio.run(run(n, a.writer)), flush=True)


if __name__ == "__main__":
    main()
