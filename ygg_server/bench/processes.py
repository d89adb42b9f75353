"""The servers under test, each in its own process, and the CPU time they (and their database) use."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from pathlib import Path


class Proc:
    """A server in its own process; its CPU time is read from /proc."""

    def __init__(self, argv: list[str], log: Path):
        self.profiled = "py-spy" in Path(argv[0]).name
        self.log = log.open("wb")
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.log)
        self.url = None
        for line in iter(self.p.stdout.readline, b""):  # a profiler may print a line of its own first
            if line.startswith(b"{"):
                self.url = json.loads(line).get("listening")
                break
        if self.url is None:
            self.stop()
            raise RuntimeError(f"server did not start; see {log}")

    @property
    def pid(self) -> int:
        """The server's pid (under a profiler, the profiler's child)."""
        try:
            kids = Path(f"/proc/{self.p.pid}/task/{self.p.pid}/children").read_text().split()
        except OSError:
            kids = []
        return int(kids[0]) if self.profiled and kids else self.p.pid

    def cpu(self) -> float:
        """CPU seconds of the server and the processes it started (Ygg's writer process)."""
        return _tree_cpu(self.pid)

    def main_cpu(self) -> float:
        """CPU seconds of the server's own process (its event loop), without the processes it started."""
        return _tree_cpu(self.pid, children=False)

    def stop(self) -> None:
        if self.p.poll() is None:
            os.kill(self.pid, signal.SIGTERM)
            try:
                self.p.wait(15)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.log.close()


def _tree_cpu(pid: int, children: bool = True) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        own = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")
    if not children:
        return own
    kids = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            kids += (task / "children").read_text().split()
        except OSError:
            pass
    return own + sum(c for c in (_tree_cpu(int(k)) for k in kids) if c == c)


class Procs:
    """Several server processes (the nodes of one cluster), measured as one; and their database's CPU."""

    def __init__(self, procs: list[Proc], db_url: str | None = None):
        self.procs, self.db_url = procs, db_url
        self.url = procs[0].url
        self.db_pids: list[int] = []

    def cpu(self) -> float:
        return sum(p.cpu() for p in self.procs)

    def db_cpu(self) -> float:
        """CPU seconds of the PostgreSQL backends serving this database (same machine only; else nan)."""
        if self.db_url is None:
            return float("nan")
        if not self.db_pids:
            self.db_pids = backend_pids(self.db_url)
        total = 0.0
        for pid in self.db_pids:
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            except (OSError, IndexError, ValueError):
                pass
        return total if self.db_pids else float("nan")

    def stop(self) -> None:
        for p in self.procs:
            p.stop()


def backend_pids(url: str) -> list[int]:
    from urllib.parse import urlsplit

    import asyncpg

    from ..store import postgres as pg

    async def run():
        c = await asyncpg.connect(pg.parse_dsn(url)[0])
        try:
            return [r[0] for r in await c.fetch(
                "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid != pg_backend_pid()",
                urlsplit(url).path.lstrip("/"))]
        finally:
            await c.close()

    try:
        return asyncio.run(run()) if not _in_loop() else []
    except Exception:
        return []


def _in_loop() -> bool:
    try:
        asyncio.get_running_loop()
        return True
    except RuntimeError:
        return False
