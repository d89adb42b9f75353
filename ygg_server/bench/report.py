"""What one phase of the server benchmark measured, and the report: the median of each figure over the repeats."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from .loadgen import PhaseResult


@dataclass
class Measured:
    kind: str
    phase: str
    seconds: float  # the measured window
    wall: float  # the whole phase: warm-up, window, drain
    result: PhaseResult
    server_cpu: float  # CPU seconds the server used over `wall` (all its nodes)
    db_cpu: float = float("nan")  # CPU seconds of its PostgreSQL backends (pg, pg2)
    node_cpu: tuple[float, ...] = ()  # CPU seconds of each node (pg, pg2)
    main_cpu: float = float("nan")  # CPU seconds of the server's main process (ygg: its writer process is apart)
    waits: dict | None = None  # what the database's backends were doing (pg_waits.WaitSampler.summary)

    @property
    def rate(self) -> float:
        return self.result.delivered / self.seconds

    def pct(self, q: float) -> float:
        xs = sorted(self.result.latencies)
        if not xs:
            return float("nan")
        return xs[min(len(xs) - 1, int(q * len(xs)))] / 1e6

    @property
    def server_us(self) -> float:
        """Server CPU per routed message (us): contention on the machine moves it far less than msgs/s."""
        return self.server_cpu / max(1, self.result.total) * 1e6

    @property
    def loadgen_us(self) -> float:
        return self.result.cpu / max(1, self.result.total) * 1e6

    def summary(self) -> dict:
        r = self.result
        return {
            "msgs_per_s": round(self.rate, 1), "p50_ms": round(self.pct(0.50), 3), "p99_ms": round(self.pct(0.99), 3),
            "samples": len(r.latencies), "delivered": r.total, "sent": r.sent, "skipped": r.skipped,
            "late_ms": round(r.late_ms, 2), "errors": dict(r.errors),
            "server_cpu": round(self.server_cpu / self.wall, 3), "loadgen_cpu": round(r.cpu / self.wall, 3),
            "server_us_per_msg": round(self.server_us, 1), "loadgen_us_per_msg": round(self.loadgen_us, 1),
            **({} if self.db_cpu != self.db_cpu else {
                "db_cpu": round(self.db_cpu / self.wall, 3),
                "db_us_per_msg": round(self.db_cpu / max(1, r.total) * 1e6, 1)}),
            **({"node_cpu": [round(c / self.wall, 3) for c in self.node_cpu]} if self.node_cpu else {}),
            **({} if self.main_cpu != self.main_cpu else {"main_process_cpu": round(self.main_cpu / self.wall, 3)}),
            **({"db_backends": self.waits} if self.waits else {}),
        }


def _median(xs: list[float]) -> float:
    xs = sorted(x for x in xs if x == x)
    if not xs:
        return float("nan")
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def report(args, runs: list[dict[str, Measured]]) -> dict:
    """Per server and phase, the median over the repeats of each figure."""
    kinds = list(dict.fromkeys(r["throughput"].kind for r in runs))
    by = {k: [r for r in runs if r["throughput"].kind == k] for k in kinds}

    def med(k: str, phase: str, fn) -> float:
        return _median([fn(r[phase]) for r in by[k]])

    peers = min(args.peers, args.agents - 1)
    summary: dict[str, Any] = {"agents": args.agents, "peers": peers, "window": args.window, "seconds": args.seconds,
                               "rate": args.rate, "procs": args.procs, "repeat": args.repeat,
                               "compression": not args.no_compression, "directives": args.directives}
    for k in kinds:
        for phase in ("throughput", "latency"):
            if len(by[k]) == 1:
                summary[f"{k}_{phase}"] = by[k][0][phase].summary()
            else:
                each = [r[phase].summary() for r in by[k]]
                summary[f"{k}_{phase}"] = {
                    key: (_median([e[key] for e in each]) if isinstance(each[0][key], (int, float)) else
                          [e[key] for e in each]) for key in each[0]}
    fig = {k: {"tput": med(k, "throughput", lambda m: m.rate), "p50": med(k, "latency", lambda m: m.pct(.5)),
               "p99": med(k, "latency", lambda m: m.pct(.99))} for k in kinds}
    if "ygg" in fig and "relay" in fig:
        y, r = fig["ygg"], fig["relay"]
        summary["throughput_ratio"] = round(y["tput"] / r["tput"], 3) if r["tput"] else None
        summary["p99_ratio"] = round(y["p99"] / r["p99"], 3) if r["p99"] == r["p99"] and r["p99"] > 0 else None
        # what the throughput ratio would be if each server had the same CPU to itself: robust to a busy machine
        yu, ru = med("ygg", "throughput", lambda m: m.server_us), med("relay", "throughput", lambda m: m.server_us)
        summary["cpu_ratio"] = round(ru / yu, 3) if yu else None
    if "durable" in fig and "relay" in fig:  # what persisting alone costs, at the least
        d, r = fig["durable"], fig["relay"]
        summary["durable_throughput_ratio"] = round(d["tput"] / r["tput"], 3) if r["tput"] else None
        summary["durable_p99_ratio"] = round(d["p99"] / r["p99"], 3) if r["p99"] == r["p99"] and r["p99"] > 0 else None
    if "pg" in fig and "pg2" in fig:  # issue 7: two nodes on one database, next to one
        summary["pg2_over_pg"] = round(fig["pg2"]["tput"] / fig["pg"]["tput"], 3) if fig["pg"]["tput"] else None
    if args.quiet:
        return summary
    print(f"\nygg bench server: {args.agents} agents, {peers} peers each, window {args.window}, "
          f"{args.seconds:g} s per phase after {args.warmup:g} s warm-up, load generator in {args.procs} process(es), "
          f"compression {'off' if args.no_compression else 'deflate'}"
          + (f", median of {args.repeat} runs" if args.repeat > 1 else ""))
    print(f"{'':38}" + "".join(f"{k:>16}" for k in kinds))

    def row(label, fn):
        print(f"{label:38}" + "".join(f"{fn(k):>16}" for k in kinds))

    row("closed loop: msgs/s", lambda k: f"{med(k, 'throughput', lambda m: m.rate):,.0f}")
    row("closed loop: p50 / p99 ms", lambda k: f"{med(k, 'throughput', lambda m: m.pct(.5)):.1f} / "
                                               f"{med(k, 'throughput', lambda m: m.pct(.99)):.1f}")
    row("closed loop: CPU server / loadgen", lambda k: f"{med(k, 'throughput', lambda m: m.server_cpu / m.wall):.0%} / "
                                                       f"{med(k, 'throughput', lambda m: m.result.cpu / m.wall):.0%}")
    row("closed loop: CPU us/msg server / lg", lambda k: f"{med(k, 'throughput', lambda m: m.server_us):.0f} / "
                                                         f"{med(k, 'throughput', lambda m: m.loadgen_us):.0f}")
    if "ygg" in kinds:
        row("closed loop: CPU main / writer process", lambda k: "" if k != "ygg" else
            f"{med(k, 'throughput', lambda m: m.main_cpu / m.wall):.0%} / "
            f"{med(k, 'throughput', lambda m: (m.server_cpu - m.main_cpu) / m.wall):.0%}")
    if {"pg", "pg2"} & set(kinds):
        row("closed loop: PostgreSQL CPU, us/msg", lambda k: "" if k not in ("pg", "pg2") else
            f"{med(k, 'throughput', lambda m: m.db_cpu / m.wall):.0%}, "
            f"{med(k, 'throughput', lambda m: m.db_cpu / max(1, m.result.total) * 1e6):.0f}")
        row("closed loop: CPU of each node", lambda k: "" if k not in ("pg", "pg2") else " / ".join(
            f"{_median([r['throughput'].node_cpu[i] / r['throughput'].wall for r in by[k]]):.0%}"
            for i in range(len(by[k][0]["throughput"].node_cpu))))
        for key, what in (("running", "running"), ("lock_waits", "waiting for a row lock"),
                          ("idle_in_transaction", "idle in a transaction")):
            row(f"closed loop: backends {what}", lambda k: "" if k not in ("pg", "pg2") else
                f"{med(k, 'throughput', lambda m: m.waits[key]):.2f}")
    row(f"open loop {args.rate:g}/s: achieved msgs/s", lambda k: f"{med(k, 'latency', lambda m: m.rate):,.0f}")
    row(f"open loop {args.rate:g}/s: p50 ms", lambda k: f"{fig[k]['p50']:.2f}")
    row(f"open loop {args.rate:g}/s: p99 ms", lambda k: f"{fig[k]['p99']:.2f}")
    row("open loop: CPU server / loadgen", lambda k: f"{med(k, 'latency', lambda m: m.server_cpu / m.wall):.0%} / "
                                                     f"{med(k, 'latency', lambda m: m.result.cpu / m.wall):.0%}")
    row("open loop: ticks with no free peer", lambda k: f"{med(k, 'latency', lambda m: m.result.skipped):.0f}")
    row("open loop: ticker behind (max ms)", lambda k: f"{med(k, 'latency', lambda m: m.result.late_ms):.1f}")
    for k in kinds:
        errs: Counter = Counter()
        for r in by[k]:
            for m in r.values():
                errs += m.result.errors
        if errs:
            print(f"  {k}: NOT EVERY MESSAGE WOKE ITS RECIPIENT: {dict(errs)}")
    if "throughput_ratio" in summary:
        tr, pr = summary["throughput_ratio"], summary["p99_ratio"]
        if tr is not None:
            print(f"throughput ygg/relay: {tr:.2f}  (goal >= 0.50 with 100 agents: {'met' if tr >= 0.5 else 'NOT met'})")
        if summary["cpu_ratio"] is not None:
            print(f"server CPU per message relay/ygg: {summary['cpu_ratio']:.2f}  (the throughput ratio if both were CPU-bound on equal CPU)")
        if pr is not None:
            print(f"p99 ygg/relay at {args.rate:g} msgs/s offered: {pr:.2f}  (goal <= 2.0: {'met' if pr <= 2 else 'NOT met'})")
    if summary.get("durable_p99_ratio") is not None:
        print(f"the durable relay (messages, deliveries and acks committed first; no routing) against the relay: "
              f"throughput {summary['durable_throughput_ratio']:.2f}, p99 {summary['durable_p99_ratio']:.2f}")
    if summary.get("pg2_over_pg") is not None:
        r = summary["pg2_over_pg"]
        print(f"throughput two nodes / one node on PostgreSQL: {r:.2f}  (goal >= 1.6: {'met' if r >= 1.6 else 'NOT met'})")
    for k in kinds:
        if k in ("pg", "pg2"):
            w = by[k][0]["throughput"].waits
            print(f"  {k}, closed loop (run 1): lock waits by statement {w['lock_waits_by_statement']}; "
                  f"other waits {w['other_waits']}")
    return summary
