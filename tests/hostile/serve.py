"""A server process with the gateway Limits a test chooses (`ygg-server serve` has no flags for them):

    python -m tests.hostile.serve --data-dir DIR --port N [--auth-timeout S] [--open-timeout S] [--max-frame B]
        [--limit FIELD=VALUE ...]  (any other field of Limits)

Prints {"listening": ..., "pid": ...} once it serves, like `ygg-server serve`; SIGTERM stops it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal

from ygg_server.compose import on_sqlite
from ygg_server.gcpolicy import calm_gc
from ygg_server.net.gateway import Gateway, Limits
from ygg_server.store import sqlite as db


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--auth-timeout", type=float, default=10.0)
    ap.add_argument("--open-timeout", type=float, default=10.0)
    ap.add_argument("--max-frame", type=int, default=1 << 20)
    ap.add_argument("--limit", action="append", default=[], metavar="FIELD=VALUE")
    ap.add_argument("--log-level", default="WARNING")
    args = ap.parse_args()
    logging.basicConfig(level=args.log_level.upper())
    more = {}
    for item in args.limit:
        name, value = item.split("=", 1)
        more[name] = type(getattr(Limits, name))(value)  # (an unknown field: AttributeError)
    limits = Limits(**{"auth_timeout": args.auth_timeout, "open_timeout": args.open_timeout,
                       "max_frame": args.max_frame, "auth_failures_per_address": 10**9, **more})
    gw = Gateway(on_sqlite(db.db_path(args.data_dir)), limits)  # its writer in its own process, as `serve`'s
    await gw.start("127.0.0.1", args.port)
    calm_gc()  # as `ygg-server serve` does
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    print(json.dumps({"listening": f"ws://127.0.0.1:{gw.port}/", "pid": os.getpid()}), flush=True)
    await stop.wait()
    await gw.close()


if __name__ == "__main__":
    asyncio.run(main())
