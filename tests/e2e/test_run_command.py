"""The README's run command, headless: the demo agents take a topic to closed on a fresh data dir."""

import json
import os
import pathlib
import subprocess

ROOT = pathlib.Path(__file__).parents[2]


def test_run_command_headless_demo_closes_a_topic(tmp_path):
    env = {**os.environ, "YGG_DATA_DIR": str(tmp_path)}
    out = subprocess.run([str(ROOT / "run"), "--headless", "60"], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=240)
    lines = [l for l in out.stdout.splitlines() if l.startswith("{")]
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    result = json.loads(lines[-1])
    assert result["closed"], result
    assert "paused" in out.stdout, "the reviewer's needs_human prompt shows as a paused topic"
    assert (tmp_path / "local" / "ygg.sqlite3").exists()
