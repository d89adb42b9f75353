"""The CI step of issue 19: the built wheel, installed in a fresh virtual environment (pip may use its cache and
PyPI, nothing else), starts each command: `ygg-server` serves, `ygg-agent` connects to it, and the TUI starts
headless with its bundled theme, all from the installed package, not from this repository."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
import venv
from pathlib import Path

import pytest

from ygg_server import about

from tests.operate.wheel import ROOT, built_wheel

TUI_PROBE = """
import asyncio, sys, ygg_tui
from pathlib import Path
from ygg_tui.app import make_app
from ygg_tui.config import Config

async def main():
    d = Path(sys.argv[1])
    app = make_app(url=sys.argv[2], config=Config(config_dir=d, data_dir=d))
    async with app.run_test(headless=True) as pilot:
        await pilot.pause()
        print(ygg_tui.__file__, app.theme, ",".join(sorted(app.available_themes)))

asyncio.run(main())
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh venv with the wheel installed in it: its bin directory."""
    tmp = tmp_path_factory.mktemp("wheel")
    wheel = built_wheel(tmp)
    env_dir = tmp / "venv"
    venv.create(env_dir, with_pip=True)
    subprocess.run([str(env_dir / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)], check=True,
                   capture_output=True, timeout=600)
    return env_dir / "bin"


def _clean_env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["YGG_WRITER"] = "thread"
    return env


def _line(proc: subprocess.Popen, stream, want: str, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        ready, _, _ = select.select([stream], [], [], 0.5)
        if ready:
            line = stream.readline()
            if not line:
                break
            seen.append(line)
            if want in line:
                return line
    proc.kill()
    raise AssertionError(f"no line with {want!r}: {''.join(seen)}")


def test_the_installed_wheel_starts_each_command(installed, tmp_path):
    env, cwd = _clean_env(), str(tmp_path)  # (run from elsewhere: nothing of the repository on the path)
    for cmd in ("ygg", "ygg-server", "ygg-agent"):
        out = subprocess.run([str(installed / cmd), "--version"], capture_output=True, text=True, env=env, cwd=cwd)
        assert out.returncode == 0 and out.stdout.strip() == f"{cmd} {about.version()}", (cmd, out)

    data = tmp_path / "data"
    admin = [str(installed / "ygg-server"), "admin", "--data-dir", str(data)]
    subprocess.run([*admin, "add-person", "alice", "--password", "a-long-password"], check=True, env=env, cwd=cwd,
                   capture_output=True)
    agent = json.loads(subprocess.run([*admin, "add-agent", "helper", "--owner", "alice"], check=True, env=env,
                                      cwd=cwd, capture_output=True, text=True).stdout.splitlines()[-1])
    server = subprocess.Popen([str(installed / "ygg-server"), "serve", "--data-dir", str(data), "--port", "0"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)
    bridge = None
    try:
        url = json.loads(_line(server, server.stdout, "listening"))["listening"]
        bridge = subprocess.Popen([str(installed / "ygg-agent"), "run", "--name", "helper", "--url", url,
                                   "--api-key-env", "HELPER_KEY", "--personality", "plain", "--data-dir", str(tmp_path / "agent")],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env={**env, "HELPER_KEY": agent["api_key"]}, cwd=cwd)
        _line(bridge, bridge.stderr, "helper connected as")

        local = subprocess.run([str(installed / "ygg"), "--local", "--no-demo", "--headless", "0.5"],
                               capture_output=True, text=True, env={**env, "YGG_DATA_DIR": str(tmp_path / "local")},
                               cwd=cwd, timeout=120)
        assert json.loads(local.stdout.splitlines()[0])["url"].startswith("ws://127.0.0.1:"), local.stderr[-2000:]

        tui = subprocess.run([str(installed / "python"), "-c", TUI_PROBE, str(tmp_path / "tui"), url],
                             capture_output=True, text=True, env=env, cwd=cwd, timeout=120)
        assert tui.returncode == 0, tui.stderr[-2000:]
        where, theme, themes = tui.stdout.split()[-3:]
        assert not where.startswith(str(ROOT)) and "site-packages" in where
        assert theme == "ygg-dark" and {"ygg-dark", "ygg-light", "ygg-mono"} <= set(themes.split(","))
    finally:
        for p in (bridge, server):
            if p is not None:
                p.terminate()
                try:
                    p.wait(20)
                except subprocess.TimeoutExpired:
                    p.kill()
