"""One local server per data dir (issue 19): `./run` / `ygg --local` started again while one runs joins it (the
lock file in the data dir holds its address); a stale lock left by a killed process is taken over; `serve` on
a data dir a server already uses says so in one line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from ygg_server.client import Client
from ygg_server.local import LocalStack
from ygg_server.lockfile import DataDirLock


def test_a_second_local_start_joins_the_running_server(tmp_path):
    first = LocalStack(tmp_path).start(demo=False)
    try:
        second = LocalStack(tmp_path).start(demo=False)
        try:
            assert second.joined and not first.joined
            assert second.url == first.url
            assert json.loads((tmp_path / "server.lock").read_text())["url"] == first.url

            async def both_see_one_message():
                async with Client(second.url, token=second.token) as me:
                    sent = await me.send(workspace=second.workspace, conversation="general", topic="new",
                                         title="one server", type="info", text="written through the second")
                    assert sent.get("op") == "sent", sent
                async with Client(first.url, token=first.token) as me:
                    page = await me.call("history", workspace=first.workspace, conversation="general")
                    return [m["text"] for m in page["messages"]]

            assert "written through the second" in first.run(both_see_one_message(), timeout=30)
        finally:
            second.stop()
        assert first.run(_alive(first.url), timeout=10)  # the joiner's leaving stops nothing
    finally:
        first.stop()
    assert DataDirLock(tmp_path).holder() is None  # released on stop


async def _alive(url: str) -> bool:
    import websockets

    async with websockets.connect(url):
        return True


HOLDER = """
import sys, time
from ygg_server.lockfile import DataDirLock
lock = DataDirLock(sys.argv[1])
assert lock.acquire()
lock.publish("ws://127.0.0.1:9/")
print("held", flush=True)
time.sleep(600)
"""


def test_a_stale_lock_of_a_killed_process_is_taken_over(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    assert DataDirLock(tmp_path).holder()["pid"] == holder.pid
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(10)
    assert (tmp_path / "server.lock").exists()  # left behind, naming a dead process
    stack = LocalStack(tmp_path).start(demo=False)
    try:
        assert not stack.joined and stack.url != "ws://127.0.0.1:9/"
        assert DataDirLock(tmp_path).holder() == {"pid": os.getpid(), "url": stack.url}
    finally:
        stack.stop()


def test_serve_on_a_data_dir_in_use_is_refused_in_one_line(tmp_path):
    stack = LocalStack(tmp_path).start(demo=False)
    try:
        out = subprocess.run([sys.executable, "-m", "ygg_server.cli", "serve", "--data-dir", str(tmp_path),
                              "--port", "0", "--writer", "thread"], capture_output=True, text=True, timeout=60)
        assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
        assert stack.url in out.stderr and "data dir" in out.stderr
    finally:
        stack.stop()


def test_ygg_local_started_twice_prints_one_address(tmp_path):
    env = {**os.environ, "YGG_DATA_DIR": str(tmp_path), "YGG_WRITER": "thread"}
    cmd = [sys.executable, "-m", "ygg_tui.cli", "--local", "--no-demo", "--headless"]
    first = subprocess.Popen([*cmd, "30"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        url = json.loads(first.stdout.readline())["url"]
        t0 = time.monotonic()
        second = subprocess.run([*cmd, "0.5"], capture_output=True, text=True, env=env, timeout=60)
        assert json.loads(second.stdout.splitlines()[0])["url"] == url, second.stderr
        assert time.monotonic() - t0 < 30
        assert first.poll() is None  # still serving
    finally:
        first.send_signal(signal.SIGINT)
        try:
            first.wait(20)
        except subprocess.TimeoutExpired:
            first.kill()


def test_ygg_local_on_an_unusable_data_dir_says_so_in_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    out = subprocess.run([sys.executable, "-m", "ygg_tui.cli", "--local", "--no-demo", "--headless", "1"],
                         capture_output=True, text=True, timeout=60, env={**os.environ, "YGG_DATA_DIR": str(blocker)})
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "YGG_DATA_DIR" in out.stderr and str(blocker) in out.stderr
