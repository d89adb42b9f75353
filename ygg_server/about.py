"""What this Ygg is: its version, as the installed package says (`--version` on each command)."""

from __future__ import annotations

from importlib import metadata


def version() -> str:
    try:
        return metadata.version("ygg")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def version_line(prog: str) -> str:
    return f"{prog} {version()}"
