"""`ygg`: the terminal client.

    ygg --url ws://host:8765/ --handle alice --password …     sign in to a running server
    ygg                                                       the url/handle in the config, or a sign-in screen
    ygg --local                                               an embedded server + the demo agents, signed in
    ygg --local --headless 60                                 the same without a screen: print until a topic closes

`run_tui(...)` is what a launcher calls (e.g. with the token of an embedded server's owner).
"""

from __future__ import annotations

import argparse
import os
import sys

from ygg_server.about import version_line

from .app import make_app
from .config import Config


def run_tui(url: str | None = None, token: str | None = None, handle: str | None = None,
            password: str | None = None, workspace: str | None = None, config: Config | None = None) -> int:
    app = make_app(url=url, token=token, handle=handle, password=password, workspace=workspace, config=config)
    app.run()
    return app.return_code or 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ygg", description="Ygg: people and agents, side by side, in the terminal.")
    p.add_argument("--version", action="version", version=version_line("ygg"))
    p.add_argument("--url", help="the server, ws://HOST:PORT/ (default: from the config)")
    p.add_argument("--handle", help="your handle")
    p.add_argument("--password", help="your password (or YGG_PASSWORD; without it a stored session is used)")
    p.add_argument("--token", help="a session token (instead of a password)")
    p.add_argument("--workspace", help="open this workspace (name or id) first")
    p.add_argument("--local", action="store_true",
                   help="run an embedded server (SQLite in your data dir) with the offline demo agents, signed in")
    p.add_argument("--no-demo", action="store_true", help="with --local: no demo agents")
    p.add_argument("--headless", type=float, metavar="SECONDS",
                   help="with --local: no TUI; print the workspace's topics until one closes or SECONDS pass")
    return p


def run_local(args) -> int:
    import asyncio
    import json

    from ygg_server.local import LocalStack, watch

    stack = LocalStack().start(demo=not args.no_demo)
    try:
        if args.headless is not None:
            print(json.dumps({"url": stack.url, "workspace": stack.workspace, "owner": stack.handle}), flush=True)
            result = asyncio.run(watch(stack.url, stack.token, stack.workspace, args.headless))
            print(json.dumps(result), flush=True)
            return 0 if result["closed"] else 1
        return run_tui(stack.url, token=stack.token, handle=stack.handle, workspace=stack.workspace)
    finally:
        stack.stop()


def main(argv: list[str] | None = None) -> int:
    from ygg_server.startup import reporting

    args = parser().parse_args(argv)
    return reporting("ygg", lambda: _main(args))


def _main(args) -> int:
    if args.local:
        return run_local(args)
    password = args.password or os.environ.get("YGG_PASSWORD")
    cfg = Config.load()
    if args.url:
        cfg.url = args.url
    if args.handle:
        cfg.handle = args.handle
    return run_tui(cfg.url, token=args.token, handle=cfg.handle or None, password=password,
                   workspace=args.workspace, config=cfg)


if __name__ == "__main__":
    sys.exit(main())
