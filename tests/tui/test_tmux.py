"""The real program in tmux against `ygg-server serve` (tmux_drive.sh); skipped without tmux."""

import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("tmux_drive.sh")


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_tmux_drive():
    out = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "hello from tmux" in out.stdout and out.stdout.strip().endswith("read back from the screen")


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_tmux_demo_at_80x24():
    """Issue 20: `./run`'s demo driven in tmux at 80x24 through its flow (tmux_demo.sh)."""
    demo = Path(__file__).with_name("tmux_demo.sh")
    out = subprocess.run(["bash", str(demo)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.strip().endswith("read back from the screen")
