"""`ygg serve`: the same TUI in a browser (textual-serve), each visitor signing in as themselves.

    ygg serve --url ws://127.0.0.1:8765/ [--host 127.0.0.1] [--port 8000] [--public-url https://chat.example.org]

Each browser tab that opens the page gets its own `ygg --web` process (textual-serve starts one per websocket), which
shows the sign-in screen with the Ygg server's url filled in. Nothing of the person who started `ygg serve` is handed
to it: no handle, password or token on its command line, and its config and session token live in a directory of its
own, made for that process and removed when it ends (`web_config`), so one visitor never resumes another's session
nor the operator's stored one.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

from .config import DEFAULT_URL, Config


def command(url: str) -> str:
    """The shell command textual-serve runs for each visitor: this Python, the TUI in web mode, the server's url."""
    return f"{shlex.quote(sys.executable)} -m ygg_tui.cli --web --url {shlex.quote(url)}"


def web_config(url: str) -> tuple[Config, Path]:
    """A visitor's config: the server's url and the defaults, in a fresh private directory (returned, to remove)."""
    home = Path(tempfile.mkdtemp(prefix="ygg-web-"))
    return Config(url=url, config_dir=home / "config", data_dir=home / "data"), home


def run_web(url: str) -> int:
    """One visitor's TUI (`ygg --web`): the sign-in screen, then the app, with nothing kept after it ends."""
    from .cli import run_tui

    cfg, home = web_config(url)
    try:
        return run_tui(cfg.url, config=cfg)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ygg serve", description="The Ygg TUI in a browser: each visitor signs in as "
                                                             "themselves.")
    p.add_argument("--url", default=DEFAULT_URL, help=f"the Ygg server the visitors' TUIs connect to (default "
                                                      f"{DEFAULT_URL}), as seen from this machine")
    p.add_argument("--host", default="127.0.0.1", help="the address the web page is served on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="its port (default 8000)")
    p.add_argument("--public-url", default=None, help="the page's address as browsers reach it, behind a proxy "
                                                     "(default http://HOST:PORT)")
    return p


def serve(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    try:
        from textual_serve.server import Server
    except ImportError:
        print("ygg serve needs textual-serve: pip install 'ygg[web]' (or pip install textual-serve)", file=sys.stderr)
        return 2
    Server(command(args.url), host=args.host, port=args.port, title="Ygg", public_url=args.public_url).serve()
    return 0
