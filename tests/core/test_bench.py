"""The core micro-benchmark runs (untimed here), so it cannot rot."""

from collections import Counter

from ygg_server.bench import core as bench
from ygg_server.core import decide


def test_bench_core_runs(capsys):
    assert bench.main(["core", "--steps", "300", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "decisions/s" in out and "mix of 300 sends" in out


def test_bench_mix_is_realistic_and_replay_is_pure():
    inputs, outcomes = bench.record(2000, seed=3)
    assert len(inputs) == 2000
    kinds = Counter(k.split()[0] for k in outcomes.elements())
    assert {"request", "response", "inform", "refused"} <= set(kinds)
    assert kinds["refused"] < 0.3 * len(inputs)
    for v, p, now in inputs[:300]:
        assert decide(v, p, now) == decide(v, p, now)


def test_bench_has_room_for_more_subcommands():
    assert "core" in bench.COMMANDS and callable(bench.COMMANDS["core"])
