"""`ygg-server bench server` runs end to end with tiny numbers (untimed here), so it cannot rot."""

import json

from ygg_server import cli


def test_bench_server_runs_every_server_and_every_message_wakes(capsys):
    code = cli.main(["bench", "server", "--agents", "4", "--seconds", "0.5", "--warmup", "0.1", "--rate", "100"])
    out = capsys.readouterr().out
    summary = json.loads(out.strip().splitlines()[-1])
    assert code == 0, summary  # nothing refused, no delivery downgraded to context: the load follows the rules
    for server in ("relay", "durable", "ygg"):
        for phase in ("throughput", "latency"):
            r = summary[f"{server}_{phase}"]
            assert r["errors"] == {} and r["delivered"] > 0 and r["samples"] > 0, (server, phase, r)
            assert r["p99_ms"] >= r["p50_ms"] > 0
    assert summary["throughput_ratio"] > 0 and summary["p99_ratio"] > 0 and summary["durable_p99_ratio"] > 0
    assert "throughput ygg/relay" in out and "the durable relay" in out
    persisted = dict(line.split(": ")[:2] for line in out.splitlines() if line.endswith("messages persisted"))
    for server in ("  durable", "  ygg"):  # every message routed was stored
        assert int(persisted[server].split()[0].replace(",", "")) >= summary[server.strip() + "_throughput"]["delivered"]


def test_bench_fanout_runs_with_few_and_many_connections(capsys):
    from ygg_server.bench import core as bench

    assert bench.main(["fanout", "--few", "3", "--many", "30", "--rounds", "5"]) == 0
    out = capsys.readouterr().out
    assert "publish a batch" in out and "someone comes" in out and "30" in out


def test_bench_frames_times_decoding_a_send_and_an_ack(capsys):
    from ygg_server.bench import core as bench

    assert bench.main(["frames", "--number", "50", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "decode send" in out and "to_post" in out and "decode ack" in out and "µs per frame" in out
    assert "render sent" in out, "the writer's result as its reply, at the edge"
