"""One server per data dir: `server.lock` in it, held (flock) by the process serving it, names its address.

A second `ygg --local` finds the lock held and joins the server the file names instead of starting another on
the same SQLite file; `serve` and `admin restore` refuse a data dir that is held. The lock is the kernel's
(flock on the open file), so a killed process lets go of it at once: the file it leaves behind is stale, and
whoever comes next takes it over.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path

NAME = "server.lock"


class DataDirLock:
    def __init__(self, data_dir: str | os.PathLike):
        self.path = Path(data_dir) / NAME
        self._fd: int | None = None

    def acquire(self) -> bool:
        """Take the lock (True), or find it held by a live process (False)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._fd = fd
        self._write({"pid": os.getpid(), "url": ""})  # the previous holder's address, if any, is stale
        return True

    def publish(self, url: str) -> None:
        """Say where the server listens, once it does."""
        self._write({"pid": os.getpid(), "url": url})

    def release(self) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def holder(self) -> dict | None:
        """What the live holder wrote ({"pid", "url"}: url "" while it starts), or None when nobody holds it."""
        if self._fd is not None:
            return self._read()
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return self._read() or {"pid": 0, "url": ""}
        else:
            fcntl.flock(fd, fcntl.LOCK_UN)
            return None  # nobody holds it: what the file says is stale
        finally:
            os.close(fd)

    def address(self, timeout: float = 30.0) -> str | None:
        """The live holder's address, waiting while it starts; None when nobody holds the lock (any more)."""
        deadline = time.monotonic() + timeout
        while True:
            held = self.holder()
            if held is None or held["url"] or time.monotonic() >= deadline:
                return held["url"] if held else None
            time.sleep(0.1)

    def held_by(self) -> str:
        """Who holds it, in words: "the server at URL (pid N)"."""
        held = self.holder() or {}
        return f"the server at {held.get('url') or '(starting)'} (pid {held.get('pid')})"

    def _write(self, what: dict) -> None:
        data = json.dumps(what).encode()
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, data, 0)

    def _read(self) -> dict | None:
        try:
            return json.loads(self.path.read_text() or "null")
        except (OSError, ValueError):
            return None
