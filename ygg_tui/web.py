"""`ygg serve`: the same TUI in a browser (textual-serve), each visitor signing in as themselves.

    ygg serve --url ws://127.0.0.1:8765/ [--host 127.0.0.1] [--port 8000] [--public-url https://chat.example.org]

Each browser tab that opens the page gets its own `ygg --web` process (textual-serve starts one per websocket), which
shows the sign-in screen with the Ygg server's url filled in. Nothing of the person who started `ygg serve` is handed
to it: no handle, password or token on its command line, and its config and session token live in a directory of its
own, made for that process and removed when it ends (`web_config`), so one visitor never resumes another's session
nor the operator's stored one.

The page is Ygg's copy of textual-serve's (`web_page/`, through textual-serve's `templates_path`): it loads nothing
from outside (its font comes from textual-serve's own static files, not Google's) and says so to the browser (a
Content-Security-Policy). The websocket that starts a visitor's process accepts a browser only from the page's own
origin (`--public-url`, else http://HOST:PORT) or one named with `--allow-origin`: another site's page cannot open
it in a visitor's browser (cross-site WebSocket hijacking). Both are a subclass of textual-serve's `Server`.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

from .config import DEFAULT_URL, Config

PAGE = Path(__file__).parent / "web_page"


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


def origin_of(url: str) -> str:
    """scheme://host[:port] as a browser sends it in `Origin` (lower case, no path, no default port)."""
    from urllib.parse import urlsplit

    u = urlsplit(url.strip())
    scheme, host = u.scheme.lower(), (u.hostname or "").lower()
    host = f"[{host}]" if ":" in host else host
    port = f":{u.port}" if u.port and u.port != {"http": 80, "https": 443}.get(scheme) else ""
    return f"{scheme}://{host}{port}"


def web_server(url: str, host: str, port: int, public_url: str | None = None, allow_origins: tuple[str, ...] = ()):
    """textual-serve's Server with Ygg's page and an Origin check on its websocket."""
    from aiohttp import web
    from textual_serve.server import Server, log

    class YggWebServer(Server):
        def __init__(self) -> None:
            super().__init__(command(url), host=host, port=port, title="Ygg", public_url=public_url,
                             templates_path=PAGE)
            self.origins = {origin_of(self.public_url), *(origin_of(o) for o in allow_origins)}

        async def handle_websocket(self, request: web.Request) -> web.StreamResponse:
            """A browser says which page opened the socket (`Origin`); one from another site is refused before any
            process starts. (A client that is no browser sends none: it could send any.)"""
            origin = request.headers.get("Origin")
            if origin is not None and origin_of(origin) not in self.origins:
                log.warning("refused a websocket from the page of %s (allowed: %s; add one with --allow-origin)",
                            origin, ", ".join(sorted(self.origins)))
                raise web.HTTPForbidden(text="This page may not open Ygg's terminal.")
            return await super().handle_websocket(request)

    return YggWebServer()


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ygg serve", description="The Ygg TUI in a browser: each visitor signs in as "
                                                             "themselves.")
    p.add_argument("--url", default=DEFAULT_URL, help=f"the Ygg server the visitors' TUIs connect to (default "
                                                      f"{DEFAULT_URL}), as seen from this machine")
    p.add_argument("--host", default="127.0.0.1", help="the address the web page is served on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="its port (default 8000)")
    p.add_argument("--public-url", default=None, help="the page's address as browsers reach it, behind a proxy "
                                                     "(default http://HOST:PORT)")
    p.add_argument("--allow-origin", action="append", default=[], metavar="URL",
                   help="another page address whose browsers may connect (the public url's is always allowed), "
                        "e.g. http://localhost:8000 when the page is served on 127.0.0.1; repeatable")
    return p


def serve(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    try:
        import textual_serve.server  # noqa: F401
    except ImportError:
        print("ygg serve needs textual-serve: pip install 'ygg[web]' (or pip install textual-serve)", file=sys.stderr)
        return 2
    web_server(args.url, args.host, args.port, args.public_url, tuple(args.allow_origin)).serve()
    return 0
