"""What fanning a batch out and telling of someone who came cost, next to how many connections are open.

`python -m ygg_server.bench fanout` builds a gateway (not listening) with N connections, each following a
workspace of its own (a server of many small teams), and one follower of a busy workspace. It times the
gateway's publish of a batch of balance events in that workspace, and the presence of someone coming there,
at N = `--few` and at N = `--many`, and prints both with their ratio: the cost should follow who is reached,
not how many connections are open.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from ..compose import on_sqlite
from ..writer import Published
from ..net.conn import Conn, Limits
from ..net.gateway import Gateway
from ..store import sqlite as db


class _Socket:
    heard = 0.0  # all a Conn reads of its websocket here


def _conn(gw: Gateway, pid: str, ws: str) -> Conn:
    c = Conn(_Socket(), gw.limits, participant=pid, kind="human")
    c.workspaces = frozenset({ws})
    return c


def _measure(n: int, rounds: int) -> tuple[float, float]:
    """(µs per published batch, per presence change) with `n` other connections open."""
    with tempfile.TemporaryDirectory() as tmp:
        writer = on_sqlite(db.db_path(Path(tmp)))
        try:
            gw = Gateway(writer, Limits(outgoing=10**9))
            writer.events = True
            for i in range(n + 1):
                c = _conn(gw, f"human.{i}", "busy" if i == n else f"ws{i}")
                gw.following.set(c, set(c.workspaces), set(c.workspaces))
                gw.conns[c.participant] = [c]
            batch = Published(balances=[("busy", f"agent.{i}", i) for i in range(20)])
            follower = gw.conns[f"human.{n}"][0]
            spent = 0
            for _ in range(rounds):
                start = time.perf_counter_ns()
                gw.publish(batch)
                spent += time.perf_counter_ns() - start
                follower.queue, follower.queued_bytes = asyncio.Queue(), 0  # (what it was sent: dropped, outside the time)
            per_batch = spent / rounds / 1e3
            comer = _conn(gw, "human.new", "busy")
            start = time.process_time()
            for _ in range(rounds):
                gw.delivery.presence(comer, True)
            per_presence = (time.process_time() - start) / rounds * 1e6
        finally:
            writer.stop()
    return per_batch, per_presence


def fanout(args: argparse.Namespace) -> int:
    few = _measure(args.few, args.rounds)
    many = _measure(args.many, args.rounds)
    print(f"connections open        {args.few:>10,} {args.many:>10,}   ratio")
    for name, a, b in (("publish a batch, us", few[0], many[0]), ("someone comes, us", few[1], many[1])):
        print(f"{name:<22} {a:>10.1f} {b:>10.1f}   {b / a:5.1f}x")
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--few", type=int, default=100, help="connections open in the first measurement")
    p.add_argument("--many", type=int, default=10_000, help="connections open in the second")
    p.add_argument("--rounds", type=int, default=2_000, help="batches (and presence changes) timed at each")
