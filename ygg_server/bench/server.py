"""The server benchmark: `python -m ygg_server.bench server` (or `ygg-server bench server`).

It starts a real Ygg server (`ygg-server serve`, its own process, a fresh temporary
data dir, SQLite) and N agent connections on loopback, and measures routed and
persisted messages per second and end-to-end latency (send -> deliver at the
recipient). In the same run, the same load generator drives a raw relay: a tiny
`websockets` server (`python -m ygg_server.bench.server relay`, also its own
process) that speaks the same minimal frames (auth -> session, send -> sent plus a
deliver to the addressed connection, ack -> acked) with no routing and no
persistence. The relay is the floor that Python, `websockets` and the JSON codec
set on this machine; the ratios say what routing and persistence cost on top.

The load follows Ygg's rules, so every message wakes its recipient:
  - each agent opens one topic (in General, with a title) and reuses it;
  - it sends `request`s to its next 4 agents round-robin, with at most one
    request outstanding per peer (a peer is never asked again in that topic while
    its wake there is unanswered: no `wake_coalesced`), texts all unique (no
    `loop_suspected`), and no pair exchanges 8 messages in a row in a topic;
  - a peer answers each wake with a `response` (`in_reply_to` the request), which
    wakes the requester; every delivery is acked at once;
  - every agent is funded with 10^9 credits.
Requests and responses both count as routed messages.

Phases, per server: closed loop (each agent keeps `--window` requests outstanding)
for `--seconds`, for throughput; then open loop at `--rate` messages/s offered in
total (`--rate`/2 requests/s, each answered), for latency. Each phase starts with
`--warmup` seconds that are not measured.

Here the driver: the command line, the servers started, the phases run. Its parts: the relays
(relay.py), the load generator (loadgen.py), the server processes and their CPU (processes.py),
the figures and the report (report.py), py-spy (profiling.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from ..gcpolicy import calm_thresholds
from .loadgen import Driver, PhaseResult, Target
from .pg_waits import WaitSampler
from .processes import Proc, Procs, backend_pids
from .profiling import profile_summary, profiler
from .relay import relay_main
from .report import Measured, report


def _names(n: int) -> list[str]:
    return [f"bench{i:03d}" for i in range(n)]


PERSON = ("bench", "bench-password")  # setup_ygg's person


# --unbounded: the workload the benchmark ran before issue 17 (the party safeguards out of reach, agents alone), to
# compare the hot path with trees measured that way
UNBOUNDED = {"party.maxHops": 10**9, "party.throttleDirect": 10**9, "party.throttleGroup": 10**9}


def setup_ygg(data_dir: Path | str, agents: int,
              unbounded: bool = False) -> tuple[str, list[tuple[str, str]], dict[str, str]]:
    """A person, a workspace, `agents` agents in it, each funded with 10^9 credits (a data dir, or a PostgreSQL URL)."""
    from ..clock import now_us
    from ..ops import admin
    from ..store import sqlite as db

    if isinstance(data_dir, str):
        from ..store import postgres as pg

        conn = pg.connect_sync(data_dir)
    else:
        conn = db.connect(db.db_path(data_dir))
    try:
        admin.add_person(conn, *PERSON, now=now_us())
        ws = admin.add_workspace(conn, "bench", "bench", now=now_us())["id"]
        if unbounded:
            conn.execute("UPDATE workspaces SET settings = ? WHERE id = ?", (json.dumps(UNBOUNDED), ws))
        # the default limits (party.maxHops, the throttle): the person opens each agent's topic and writes there
        # again as real work has it (loadgen.Person), so its agents' exchanges stay within what it buys
        keys, names = [], {}
        for name in _names(agents):
            out = admin.add_agent(conn, name, "bench", ws, now=now_us())
            admin.fund(conn, out["id"], 1_000_000_000, ws_ref=ws, now=now_us())
            keys.append((name, out["api_key"]))
            names[out["id"]] = name
    finally:
        conn.close()
    return ws, keys, names


def _persisted(where: Path | str) -> int:
    """Messages stored: in Ygg's data dir, the durable relay's file (`*.db`), or a PostgreSQL database (URL)."""
    from ..store import sqlite as db

    if isinstance(where, str):
        from ..store import postgres as pg

        conn = pg.connect_sync(where)
    else:
        conn = sqlite3.connect(where) if where.suffix == ".db" else db.connect(db.db_path(where))
    try:
        return conn.execute("SELECT count(*) FROM messages").fetchone()[0]
    finally:
        conn.close()


def start_server(kind: str, workdir: Path, agents: int, profile: str | None = None,
                 db: str | None = None, unbounded: bool = False) -> tuple[Proc, Target]:
    workdir.mkdir(parents=True, exist_ok=True)
    person = None if unbounded else PERSON
    py = [*profiler(kind, profile), sys.executable]
    if kind in ("pg", "pg2"):  # one node, or two, on a fresh PostgreSQL database (`db` is a scratch URL)
        ws, keys, names = setup_ygg(db, agents, unbounded)
        nodes = [Proc([*(profiler(f"{kind}-{i}", profile) or []), sys.executable, "-m", "ygg_server.cli",
                       "serve", "--db", db, "--port", "0", "--node-id", f"bench{i}"],
                      workdir / f"{kind}-node{i}.log") for i in range(1 if kind == "pg" else 2)]
        procs = Procs(nodes, db)
        return procs, Target(nodes[0].url, ws, keys, names, [n.url for n in nodes], person=person)
    if kind == "ygg":
        data = workdir / "ygg-data"
        ws, keys, names = setup_ygg(data, agents, unbounded)
        proc = Proc([*py, "-m", "ygg_server.cli", "serve", "--data-dir", str(data), "--port", "0"],
                    workdir / "ygg-server.log")
        return proc, Target(proc.url, ws, keys, names, person=person)
    keys = [(n, f"relaykey_{n}") for n in _names(agents)]
    kf = workdir / "relay-keys.json"
    kf.write_text(json.dumps({k: n for n, k in keys}))
    durable = ["--persist", str(workdir / "durable.db")] if kind == "durable" else []
    proc = Proc([*py, "-m", "ygg_server.bench.server", "relay", "--port", "0", "--keys", str(kf), *durable],
                workdir / f"{kind}.log")
    return proc, Target(proc.url, "relay", keys, {n: n for n, _ in keys})


async def run_target(kind: str, args, workdir: Path) -> list[Measured]:
    db_url = None
    if kind in ("pg", "pg2"):
        from ..store import postgres as pg

        db_url = await pg.create_database(args.db, prefix="ygg_bench")
    try:
        proc, target = await asyncio.to_thread(start_server, kind, workdir, args.agents, args.profile, db_url,
                                                  args.unbounded)
        target.directives = args.directives
    except BaseException:
        if db_url:
            await pg.drop_database(db_url)
        raise
    if isinstance(proc, Procs):
        proc.db_pids = await asyncio.to_thread(backend_pids, db_url)
    driver = None
    try:
        peers = min(args.peers, args.agents - 1)
        driver = Driver(target, args.procs, peers, None if args.no_compression else "deflate")
        await driver.call("connect")
        await driver.call("setup")
        out = []
        ns = 1_000_000_000

        async def phase(name: str, *call, **kw) -> None:
            t0, cpu0 = time.monotonic(), proc.cpu()
            db0 = proc.db_cpu() if isinstance(proc, Procs) else float("nan")
            nodes0 = [p.cpu() for p in proc.procs] if isinstance(proc, Procs) else []
            main0 = proc.main_cpu() if isinstance(proc, Proc) else float("nan")
            sampler = WaitSampler(db_url).start() if db_url else None
            try:
                parts = await driver.call(*call, **kw)
            finally:
                if sampler is not None:
                    await asyncio.to_thread(sampler.stop)
            r = PhaseResult()
            for x in parts:
                r.merge(x)
            m = Measured(kind, name, args.seconds, time.monotonic() - t0, r, proc.cpu() - cpu0)
            if isinstance(proc, Proc):
                m.main_cpu = proc.main_cpu() - main0
            if isinstance(proc, Procs):
                m.db_cpu = proc.db_cpu() - db0
                m.node_cpu = tuple(p.cpu() - c0 for p, c0 in zip(proc.procs, nodes0))
                m.waits = sampler.summary()
            out.append(m)

        # throughput: closed loop, `--window` requests outstanding per agent
        begin = time.monotonic_ns() + ns // 5
        start, end = begin + int(args.warmup * ns), begin + int((args.warmup + args.seconds) * ns)
        await phase("throughput", "closed", args.window, start, end)
        # latency: open loop at --rate messages/s (half of them requests, each answered)
        begin = time.monotonic_ns() + ns // 5
        start, end = begin + int(args.warmup * ns), begin + int((args.warmup + args.seconds) * ns)
        per = args.rate / 2 / driver.procs
        await phase("latency", "open", per_proc=lambda i: (per, begin, start, end, i / driver.procs))
        return out
    finally:
        if driver is not None:
            try:
                await asyncio.wait_for(driver.stop(), 20)
            except Exception:
                pass
        proc.stop()
        if kind in ("ygg", "durable") and not args.quiet:
            n = _persisted(workdir / ("ygg-data" if kind == "ygg" else "durable.db"))
            print(f"  {kind}: {n:,} messages persisted", flush=True)
        if db_url:
            if not args.quiet:
                n = await asyncio.to_thread(_persisted, db_url)
                print(f"  {kind}: {n:,} messages persisted", flush=True)
            if not args.keep:
                await pg.drop_database(db_url)
            elif not args.quiet:
                print(f"  kept database {db_url}")
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


def server(args: argparse.Namespace) -> int:
    """The `server` subcommand: Ygg next to a raw relay, the same load for both."""
    if args.agents < 3 or args.peers < 2:
        # with one peer, an agent's topic would hold only one pair: 8 in a row is a suspected loop
        print("--agents must be at least 3 and --peers at least 2", file=sys.stderr)
        return 2
    if args.servers is None:
        args.servers = "ygg,pg,pg2" if args.db else "relay,durable,ygg"
    if not set(args.servers.split(",")) <= {"relay", "durable", "ygg", "pg", "pg2"}:
        print("--servers: a comma-separated list of relay, durable, ygg, pg and pg2", file=sys.stderr)
        return 2
    if {"pg", "pg2"} & set(args.servers.split(",")) and not args.db:
        print("pg and pg2 need --db postgresql://… (a server where the benchmark may create a database)",
              file=sys.stderr)
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="ygg-bench-server-"))
    runs: list[dict[str, Measured]] = []
    try:
        for i in range(args.repeat):
            for kind in args.servers.split(","):
                with calm_thresholds():  # the load generator: the servers' collector policy
                    ms = asyncio.run(run_target(kind, args, workdir / f"{kind}-{i + 1}"))
                runs.append({m.phase: m for m in ms})
                if not args.quiet and args.repeat > 1:
                    t, l = runs[-1]["throughput"], runs[-1]["latency"]
                    print(f"  run {i + 1} {kind}: {t.rate:,.0f} msgs/s closed loop; "
                          f"p50/p99 {l.pct(.5):.2f}/{l.pct(.99):.2f} ms at {l.rate:,.0f} msgs/s", flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        elif not args.quiet:
            print(f"  kept {workdir}")
    summary = report(args, runs)
    if args.profile and not args.quiet:
        for kind in args.servers.split(","):
            for f in [Path(args.profile) / f"{kind}.txt", *sorted(Path(args.profile).glob(f"{kind}-[0-9]*.txt"))]:
                if not f.exists():
                    continue
                print(f"where {f.stem}'s busy time went (py-spy, {f}):")
                for thread, cat, share in profile_summary(f):
                    if share >= 0.005:
                        print(f"  {share:6.1%}  {thread:6}  {cat}")
    print(json.dumps(summary))
    return 1 if any(m.result.errors for r in runs for m in r.values()) else 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--agents", type=int, default=100, help="agent connections (default 100)")
    p.add_argument("--seconds", type=float, default=5.0, help="measured seconds per phase (default 5)")
    p.add_argument("--warmup", type=float, default=1.0, help="unmeasured seconds before each phase (default 1)")
    p.add_argument("--rate", type=float, default=2000.0, help="open loop: messages/s offered in total (default 2000)")
    p.add_argument("--window", type=int, default=2, help="closed loop: requests outstanding per agent (default 2)")
    p.add_argument("--peers", type=int, default=4, help="peers each agent asks, round-robin (default 4)")
    p.add_argument("--procs", type=int, default=1, help="load generator processes (default 1)")
    p.add_argument("--repeat", type=int, default=1, help="run the servers this many times, alternating; report medians")
    p.add_argument("--servers", default=None,
                   help="which servers, in order: relay, durable (the relay committing to SQLite first), "
                        "ygg (one node, SQLite), pg (one node, PostgreSQL), pg2 (two nodes, PostgreSQL) "
                        "(default relay,durable,ygg; with --db: ygg,pg,pg2)")
    p.add_argument("--db", default=None, metavar="URL",
                   help="postgresql://… where pg/pg2 make a fresh database per run (dropped after)")
    p.add_argument("--no-compression", action="store_true", help="clients do not offer permessage-deflate")
    p.add_argument("--directives", action="store_true",
                   help="the agents take the server's directive with each wake (default: bare agents, "
                        "\"directives\": false at auth, as the relay sends none)")
    p.add_argument("--unbounded", action="store_true",
                   help="the party safeguards out of reach and no person: agents alone, as the benchmark ran before "
                        "issue 17 (to compare the hot path with trees measured so)")
    p.add_argument("--profile", metavar="DIR", help="sample the servers with py-spy into DIR/<server>.txt")
    p.add_argument("--keep", action="store_true", help="keep the temporary data dir and server logs")
    p.add_argument("--quiet", action="store_true", help="print only the JSON summary")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ygg_server.bench.server")
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("relay", help="run the raw relay (the benchmark starts it itself)")
    r.add_argument("--host", default="127.0.0.1")
    r.add_argument("--port", type=int, default=0)
    r.add_argument("--keys", required=True, help="a JSON file mapping api key -> agent name")
    r.add_argument("--persist", metavar="FILE", help="commit messages, deliveries and acks to this SQLite file first")
    s = sub.add_parser("server", help="the server benchmark (same as `python -m ygg_server.bench server`)")
    add_arguments(s)
    args = ap.parse_args(argv)
    if args.command == "relay":
        return asyncio.run(relay_main(args.host, args.port, args.keys, args.persist))
    return server(args)


if __name__ == "__main__":
    sys.exit(main())
