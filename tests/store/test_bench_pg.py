"""`ygg-server bench server --db …` runs end to end with tiny numbers (untimed), so the figures in
docs/performance.md can be made again: one node on PostgreSQL, and two nodes on one database."""

import json

from ygg_server import cli

from tests import backends


def test_bench_server_runs_one_and_two_nodes_on_postgresql(pg_database, capsys):
    code = cli.main(["bench", "server", "--db", backends.PG_ADMIN, "--servers", "pg,pg2", "--agents", "4",
                     "--seconds", "0.5", "--warmup", "0.1", "--rate", "100"])
    out = capsys.readouterr().out
    summary = json.loads(out.strip().splitlines()[-1])
    assert code == 0, summary  # every message woke its recipient, on one node and across two
    for server in ("pg", "pg2"):
        for phase in ("throughput", "latency"):
            r = summary[f"{server}_{phase}"]
            assert r["errors"] == {} and r["delivered"] > 0 and r["samples"] > 0, (server, phase, r)
            # each node's CPU, and what the database's backends did (sampled while the phase ran)
            assert len(r["node_cpu"]) == (1 if server == "pg" else 2), r
            waits = r["db_backends"]
            assert waits["samples"] > 0 and {"running", "lock_waits", "idle_in_transaction"} <= set(waits), waits
    assert summary["pg2_over_pg"] > 0
    assert "two nodes / one node on PostgreSQL" in out and "pg2: " in out
    assert "backends waiting for a row lock" in out and "lock waits by statement" in out
