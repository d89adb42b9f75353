"""`python -m ygg_tui.bench`: how fast the TUI opens a topic of 100,000 messages, and how long a
keypress takes to reach the screen. Goals: open < 300 ms, keypress < 50 ms.

A real server (in-process, loopback, a temporary SQLite data dir) gets a workspace whose topic
holds N messages, written straight into the store in one transaction (sending 100,000 messages
through the socket would measure the server, not the TUI). Then, headless at 160x50:

- open: from asking for the topic to its first screen painted with the newest messages (the
  newest page fetched over the socket, laid out, drawn);
- all N loaded: the same message list holding every one of the N messages (as after scrolling
  all the way up): laying them out, and the first paint;
- keypress: from a key event (j/k, page up/down, end) to the next screen update that shows it,
  median and worst over many presses, with all N messages in the list.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path



def _populate(path: Path, n: int) -> dict:
    """A person, a workspace, one topic with n informs: written directly, as the store would."""
    from ygg_server.clock import now_us
    from ygg_server.ops import admin
    from ygg_server.core import Message, MessageType, Topic, general_id
    from ygg_server.store import rows as codec, sqlite as db
    from ygg_server.store.transactions import Tx

    conn = db.connect(path)
    alice = admin.add_person(conn, "alice", "bench-password", now=now_us())
    admin.add_person(conn, "bob", "bench-password", now=now_us())
    ws = admin.add_workspace(conn, "bench", "alice", now=now_us())["id"]
    bob = admin.add_member(conn, ws, "bob", now=now_us())["id"]
    conv = general_id(ws)
    tid = str(uuid.uuid4())
    now = time.time_ns() // 1000 - n * 1000
    topic = Topic(tid, ws, conv, bob, now, title="A hundred thousand messages")
    rows = []
    for i in range(n):
        mid = str(uuid.uuid4())
        text = f"message {i}: " + ("a short line" if i % 5 else "a longer line that wraps once the pane is narrow enough " * 2)
        m = Message(mid, ws, conv, tid, bob, MessageType.INFORM, text, now + i * 1000,
                    title=topic.title if i == 0 else None)
        rows.append((mid, ws, conv, tid, bob, "inform", text, codec.encode_message(m), m.created_at))
    with Tx(conn):
        conn.execute(
            """INSERT INTO topics (id, workspace, conversation, opener, status, next_due, state, created_at, updated_at)
               VALUES (?,?,?,?,?,?,?,?,?)""",
            (tid, ws, conv, bob, "open", None, codec.encode_topic(topic), now, now + n * 1000))
        conn.executemany("""INSERT INTO messages (id, workspace, conversation, topic, author, type, text, body, created_at)
                            VALUES (?,?,?,?,?,?,?,?,?)""", rows)
    conn.close()
    return {"ws": ws, "topic": tid, "conversation": conv, "alice": alice["id"]}


class _Server:
    def __init__(self, path: Path):
        from ygg_server.compose import on_sqlite
        from ygg_server.net.gateway import Gateway

        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        self.gw = Gateway(on_sqlite(path))
        asyncio.run_coroutine_threadsafe(self.gw.start("127.0.0.1", 0), self.loop).result(30)
        self.url = f"ws://127.0.0.1:{self.gw.port}/"

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.gw.close(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)


async def _measure(url: str, seeded: dict, n: int, presses: int, tmp: Path) -> dict:
    from ygg_tui.app import make_app
    from ygg_tui.config import Config

    cfg = Config(url=url, handle="alice", clock=False, config_dir=tmp / "cfg", data_dir=tmp / "data")
    app = make_app(url=url, handle="alice", password="bench-password", config=cfg, presence_every=0)
    painted: list[float] = []
    real_display = app._display

    def display(screen, update):  # every screen update that reaches the terminal (here: headless)
        painted.append(time.perf_counter())
        return real_display(screen, update)

    app._display = display
    out: dict = {}
    async with app.run_test(size=(160, 50)) as pilot:
        while not (app.ready.is_set() and app.main is not None and app.main.is_mounted):
            await pilot.pause(0.02)
        main = app.main
        ml = main.messages
        while ml.fetching:
            await pilot.pause(0.02)
        await pilot.pause(0.2)

        async def paint_after(t0: float, cond=lambda: True, timeout: float = 10.0) -> float:
            deadline = time.perf_counter() + timeout
            while time.perf_counter() < deadline:
                if cond() and painted and painted[-1] > t0:
                    first = next(t for t in painted if t > t0)  # the first update that shows it
                    return (first - t0) * 1000
                await asyncio.sleep(0.0005)
            return float("nan")

        # 1. open the topic: fetch the newest page over the socket, lay out, paint
        opens = []
        for _ in range(5):
            main.open_conversation(seeded["conversation"], None)  # away (the topic-less notices)
            await pilot.pause(0.05)
            app.store.threads.pop(seeded["topic"], None)  # forget it: a cold open each time
            t0 = time.perf_counter()
            main.open_topic(seeded["conversation"], seeded["topic"])
            opens.append(await paint_after(t0, lambda: not ml.fetching and len(ml) > 0))
            await pilot.pause(0.05)
        out["open_ms"] = opens
        out["page"] = len(ml)

        # 2. every one of the n messages in the list (as after scrolling all the way up)
        th = app.store.threads[seeded["topic"]]
        every = app.store.take_page([{"id": f"m{i}", "author": th.messages[-1]["author"], "type": "inform", "to": [],
                  "text": f"message {i}: " + ("a short line" if i % 5 else "a longer line that wraps once the pane is narrow enough " * 2),
                  "created_at": f"2026-01-01T00:00:00.{i:06d}Z", "topic": seeded["topic"]} for i in range(n)])
        t0 = time.perf_counter()
        ml.set_messages(every, key=None, more=False)  # (taken as a page comes in: the store's form)
        layout = (time.perf_counter() - t0) * 1000
        out["all_layout_ms"] = layout
        out["all_paint_ms"] = await paint_after(t0)
        out["lines"] = ml._total
        await pilot.pause(0.1)

        # 3. keypresses with n messages: j/k move the cursor, pageup/pagedown scroll, home/end jump
        ml.focus()
        await pilot.pause(0.05)
        keys = ["k", "k", "j", "pageup", "pageup", "k", "pagedown", "j", "home", "end"]
        lat = []
        gc_ms: list[float] = []  # full collections while the keys were pressed (the cause of the worst case)
        started: list[float] = []

        def collected(phase: str, info: dict) -> None:
            if info.get("generation") == 2:
                if phase == "start":
                    started[:] = [time.perf_counter()]
                elif started:
                    gc_ms.append((time.perf_counter() - started[0]) * 1000)

        gc.callbacks.append(collected)
        for i in range(presses):
            key = keys[i % len(keys)]
            await pilot.pause(0.01)
            t0 = time.perf_counter()
            await pilot.press(key)
            lat.append(await paint_after(t0))
        gc.callbacks.remove(collected)
        out["key_ms"] = lat
        out["gc_ms"] = gc_ms
        out["tracked"] = len(gc.get_objects())
        out["cursor"] = ml.cursor
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ygg_tui.bench", description=__doc__.split("\n\n")[0])
    p.add_argument("-n", type=int, default=100_000, help="messages in the topic (default 100000)")
    p.add_argument("--presses", type=int, default=60)
    args = p.parse_args(argv)

    tmp = Path(tempfile.mkdtemp(prefix="ygg-bench-"))
    from ygg_server.store import sqlite as db

    t0 = time.perf_counter()
    seeded = _populate(db.db_path(tmp / "server"), args.n)
    print(f"seeded {args.n:,} messages in one topic in {time.perf_counter() - t0:.1f} s")
    server = _Server(db.db_path(tmp / "server"))
    try:
        r = asyncio.run(_measure(server.url, seeded, args.n, args.presses, tmp))
    finally:
        server.close()
    opens, keys = r["open_ms"], [k for k in r["key_ms"] if k == k]
    print(f"open the topic (newest page of {r['page']} over the socket, laid out, painted): "
          f"median {statistics.median(opens):.0f} ms, worst {max(opens):.0f} ms   goal < 300 ms")
    print(f"all {args.n:,} messages in the list ({r['lines']:,} rows): layout {r['all_layout_ms']:.0f} ms, "
          f"first paint {r['all_paint_ms']:.0f} ms")
    print(f"keypress to screen, {len(keys)} presses with {args.n:,} messages: median {statistics.median(keys):.1f} ms, "
          f"p90 {sorted(keys)[int(len(keys) * 0.9) - 1]:.1f} ms, worst {max(keys):.1f} ms   goal < 50 ms")
    g = r["gc_ms"]
    print(f"full garbage collections while pressing: {len(g)}, longest {max(g, default=0):.0f} ms; objects the "
          f"collector tracks: {r['tracked']:,} (frozen after start-up: {gc.get_freeze_count():,})")
    ok = statistics.median(opens) < 300 and statistics.median(keys) < 50
    print("goals met" if ok else "goals NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
