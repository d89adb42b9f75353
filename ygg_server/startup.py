"""Start-up errors in one line, each saying what to do (issue 19): a busy port, a data dir this user cannot use,
a database newer than the code, an optional dependency not installed. `reporting` turns them into that line on
stderr and exit status 2, instead of a traceback."""

from __future__ import annotations

import errno
import getpass
import os
import sys
from pathlib import Path
from typing import Callable

from .store.schema import NewerSchema


class StartupError(Exception):
    """Why the program cannot start, and what to do, in one line."""


# an optional dependency: module -> (the extra that brings it, what needs it)
EXTRAS = {"asyncpg": ("postgres", "PostgreSQL (--db postgresql://…)"),
          "prometheus_client": ("metrics", "the /metrics endpoint (--metrics)")}


def need(module: str):
    """Import an optional dependency, or say which extra installs it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as e:
        extra, what = EXTRAS[module]
        raise StartupError(f"{what} needs the {module} package, which is not installed: "
                           f"pip install 'ygg[{extra}]'") from e


def usable_data_dir(path: str | os.PathLike, choose: str = "--data-dir") -> Path:
    """The data dir, made if missing (0700); an error naming it when this user cannot read and write it
    (`choose`: how another is chosen)."""
    d = Path(path).expanduser()
    fix = f"fix its owner or permissions, or choose another with {choose}"
    try:
        d.mkdir(parents=True, exist_ok=True, mode=0o700)
    except FileExistsError:
        raise StartupError(f"the data dir {d} is not a directory: {fix}") from None
    except OSError as e:
        raise StartupError(f"the data dir {d} cannot be made ({e.strerror}): {fix}") from None
    if not d.is_dir():
        raise StartupError(f"the data dir {d} is not a directory: {fix}")
    if not os.access(d, os.R_OK | os.W_OK | os.X_OK):
        raise StartupError(f"the data dir {d} is not readable and writable by {_user()}: {fix}")
    return d


def bind_error(host: str, port: int, e: OSError) -> StartupError:
    """What a failed listen means to the operator."""
    if e.errno == errno.EADDRINUSE:
        return StartupError(f"port {port} on {host} is in use (another ygg-server?): stop that one, or choose "
                            "another with --port")
    if e.errno == errno.EACCES:
        return StartupError(f"port {port} on {host} needs privileges this user lacks: choose one above 1023 with "
                            "--port (and put a proxy in front: docs/deploy.md)")
    if e.errno == errno.EADDRNOTAVAIL:
        return StartupError(f"{host} is not an address of this machine: choose another with --host")
    return StartupError(f"cannot listen on {host}:{port} ({e.strerror or e}): check --host and --port")


def newer_schema(e: NewerSchema, where: str) -> StartupError:
    return StartupError(f"the database {where} has schema version {e.found}, newer than this Ygg ({about_version()}, "
                        f"schema {e.known}) understands: upgrade Ygg (pip install -U ygg), or restore a backup made "
                        "by this version (ygg-server admin restore)")


def about_version() -> str:
    from .about import version

    return version()


def reporting(prog: str, fn: Callable[[], int]) -> int:
    """Run `fn`; a StartupError (or a newer database met on the way) becomes one line on stderr and status 2."""
    try:
        return fn()
    except NewerSchema as e:
        err: Exception = newer_schema(e, e.where or "")
    except StartupError as e:
        err = e
    except KeyboardInterrupt:
        return 130
    print(f"{prog}: error: {err}", file=sys.stderr, flush=True)
    return 2


def _user() -> str:
    try:
        return f"user {getpass.getuser()}"
    except Exception:
        return f"uid {os.getuid()}"
