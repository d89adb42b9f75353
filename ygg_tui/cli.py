"""`ygg`: the terminal client.

    ygg --url ws://host:8765/ --handle alice --password …     sign in to a running server
    ygg                                                       the url/handle in the config, or a sign-in screen
    ygg --local                                               an embedded server + the demo agents, signed in
    ygg --local --headless 60                                 the same without a screen: print until a topic closes
    ygg serve --url ws://host:8765/ [--port 8000]             the same app in a browser, each visitor signing in
    ygg export WORKSPACE [CONVERSATION] [-o FILE]             what you read, as FILE.md and FILE.jsonl

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
    p.add_argument("--web", action="store_true", help=argparse.SUPPRESS)  # one visitor of `ygg serve` (web.py)
    return p


def run_local(args) -> int:
    import asyncio
    import json

    from ygg_server.local import LocalStack, watch

    stack = LocalStack().start(demo=not args.no_demo)
    try:
        if args.headless is not None:
            print(json.dumps({"url": stack.url, "workspace": stack.workspace, "owner": stack.handle,
                              "mcp": stack.mcp_url}), flush=True)
            result = asyncio.run(watch(stack.url, stack.token, stack.workspace, args.headless))
            print(json.dumps(result), flush=True)
            return 0 if result["closed"] else 1
        return run_tui(stack.url, token=stack.token, handle=stack.handle, workspace=stack.workspace)
    finally:
        stack.stop()


def export_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ygg export", description="Export a conversation or a workspace you read, as "
                                "Markdown (FILE.md) and JSON lines (FILE.jsonl).")
    p.add_argument("workspace", help="its name or id")
    p.add_argument("conversation", nargs="?", help="general, dm:<participant>, group:<name> or an id (default: all)")
    p.add_argument("-o", "--output", help="the files' path without suffix (default: named after what is exported)")
    for flag in ("--url", "--handle", "--password", "--token"):
        p.add_argument(flag)
    return p


def run_export(args) -> int:
    import asyncio
    import json
    from pathlib import Path

    from ygg_server.client import Client
    from ygg_server.export import gather, stem_for, write

    cfg = Config.load()
    url, handle = args.url or cfg.url, args.handle or cfg.handle
    password = args.password or os.environ.get("YGG_PASSWORD")
    token = args.token or (None if password else cfg.token_for(url, handle))

    async def go():
        async with Client(url, handle=handle, password=password, token=token) as me:
            return await gather(me.call, args.workspace, args.conversation)

    from ygg_server.client import Refused
    from ygg_server.startup import StartupError

    try:
        g = asyncio.run(go())
    except (Refused, LookupError) as e:
        raise StartupError(f"nothing exported: {e}") from None
    except OSError as e:
        raise StartupError(f"nothing exported: cannot reach {url} ({e}): check --url") from None
    paths = write(g, Path(args.output) if args.output else Path.cwd() / stem_for(g))
    print(json.dumps({"exported": [str(p) for p in paths],
                      "messages": sum(len(c["messages"]) for c in g["conversations"])}))
    return 0


def main(argv: list[str] | None = None) -> int:
    from ygg_server.startup import reporting

    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["serve"]:
        from .web import serve

        return serve(argv[1:])
    if argv[:1] == ["export"]:
        args = export_parser().parse_args(argv[1:])
        return reporting("ygg export", lambda: run_export(args))
    args = parser().parse_args(argv)
    return reporting("ygg", lambda: _main(args))


def _main(args) -> int:
    if args.web:
        from .web import run_web

        return run_web(args.url or Config().url)
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
