"""The raw relay and the durable relay: the server benchmark's floors (`bench/server.py`).

The relay is a tiny `websockets` server (`python -m ygg_server.bench.server relay`, its own
process) that speaks the same minimal frames as Ygg (auth -> session, send -> sent plus a
deliver to the addressed connection, ack -> acked) with no routing and no persistence: the
floor that Python, `websockets` and the JSON codec set on this machine. The durable relay
(`relay --persist FILE`) commits each message, its deliveries and each ack to SQLite first.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import signal
import sqlite3
import time
import uuid
from collections import deque
from pathlib import Path

import websockets
from websockets.asyncio.server import serve

from ..gcpolicy import calm_gc
from ..store.sqlite import Checkpointer
from .wire import decode, dumps


class Relay:
    """auth -> session; send -> sent, and deliver to the addressed connection(s); ack -> acked."""

    def __init__(self, keys: dict[str, str]):
        self.keys = keys  # api key -> name
        self.conns: dict[str, asyncio.Queue] = {}
        self.authors: dict[str, str] = {}  # message id -> author, for responses without `to`
        self.order: deque[str] = deque()
        self.ids = itertools.count(1)

    async def handler(self, ws) -> None:
        out: asyncio.Queue = asyncio.Queue()
        writer = asyncio.ensure_future(self._writer(ws, out))
        me = None
        try:
            async for raw in ws:
                f = decode(raw)
                op, ref = f.get("op"), f.get("ref")
                if me is None:
                    name = self.keys.get(f.get("api_key")) if op == "auth" else None
                    if name is None:
                        out.put_nowait({"op": "error", "ref": ref, "code": "unauthenticated"})
                        continue
                    me = name
                    self.conns[me] = out
                    out.put_nowait({"op": "session", "ref": ref, "token": "relay", "expires_at": "",
                                    "me": {"id": me, "handle": me, "kind": "agent"}})
                elif op == "send":
                    self._send(me, f, out)
                elif op == "ack":
                    self._ack(me, f, out)
                else:
                    out.put_nowait({"op": "error", "ref": ref, "code": "bad_frame", "detail": "relay"})
        except websockets.ConnectionClosed:
            pass
        finally:
            if me is not None and self.conns.get(me) is out:
                del self.conns[me]
            writer.cancel()

    def _ack(self, me: str, f: dict, out: asyncio.Queue) -> None:
        out.put_nowait({"op": "acked", "ref": f.get("ref"), "ids": f.get("ids", [])})

    def _send(self, me: str, f: dict, out: asyncio.Queue) -> None:
        msg, to = self._message(me, f)
        self._answer(f, msg, to, [next(self.ids) for _ in to], out)

    def _message(self, me: str, f: dict) -> tuple[dict, list]:
        mid = str(uuid.uuid4())
        to = f.get("to") or []
        if not to and f.get("in_reply_to") in self.authors:
            to = [self.authors[f["in_reply_to"]]]
        self.authors[mid] = me
        self.order.append(mid)
        if len(self.order) > 100_000:
            self.authors.pop(self.order.popleft(), None)
        topic = f.get("topic")
        msg = {
            "id": mid, "workspace": f.get("workspace"), "conversation": f.get("conversation", "general"),
            "topic": mid if topic == "new" else topic, "author": me, "type": f.get("type", "request"),
            "to": to, "state": f.get("state") or "working", "waiting_for": [], "in_reply_to": f.get("in_reply_to"),
            "text": f.get("text", ""), "created_at": _iso_now(), "cost": len(to), "title": f.get("title"),
        }
        return msg, to

    def _answer(self, f: dict, msg: dict, to: list, ids: list[int], out: asyncio.Queue) -> None:
        out.put_nowait({"op": "sent", "ref": f.get("ref"), "message": msg,
                        "deliveries": [{"to": r, "wake": True, "reason": None} for r in to], "cost": len(to)})
        for r, did in zip(to, ids):
            q = self.conns.get(r)
            if q is not None:
                q.put_nowait({"op": "deliver", "id": did, "message": msg, "wake": True, "reason": None,
                              "context": [], "context_ids": []})

    @staticmethod
    async def _writer(ws, out: asyncio.Queue) -> None:
        # the same shape as the gateway's per-connection writer
        while True:
            frame = await out.get()
            batch = [frame]
            while not out.empty() and len(batch) < 256:
                batch.append(out.get_nowait())
            for x in batch:
                await ws.send(dumps(x))


class DurableRelay(Relay):
    """The relay with the least a durable server must do (`--servers durable`): each message and its deliveries
    committed to SQLite before `sent` and the deliver go out, each ack committed before `acked`, many per
    transaction (one per turn of the event loop), on the event loop itself, with Ygg's store settings (WAL,
    `synchronous=NORMAL`, the page cache, checkpoints on a thread). No routing, no topics, no credits: a floor
    for a persisted server, next to the relay's floor for none."""

    def __init__(self, keys: dict[str, str], path: str):
        super().__init__(keys)
        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA cache_size=-32768")
        self.db.executescript("""
            CREATE TABLE IF NOT EXISTS messages (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, author TEXT,
                topic TEXT, type TEXT, body TEXT, created_at TEXT);
            CREATE TABLE IF NOT EXISTS deliveries (id INTEGER PRIMARY KEY, message_seq INTEGER NOT NULL,
                recipient TEXT NOT NULL, acked_at INTEGER);
            CREATE INDEX IF NOT EXISTS deliveries_open ON deliveries (recipient) WHERE acked_at IS NULL;""")
        self.seq = itertools.count(1 + self.db.execute("SELECT coalesce(max(seq), 0) FROM messages").fetchone()[0])
        self.ids = itertools.count(1 + self.db.execute("SELECT coalesce(max(id), 0) FROM deliveries").fetchone()[0])
        self.sends: list = []
        self.acks: list = []
        self.checkpoints = Checkpointer(path, self.db)  # as Ygg's writer: WAL checkpoints on a thread, never in the COMMIT

    def _later(self) -> None:
        if not self.sends and not self.acks:
            asyncio.get_running_loop().call_soon(self._commit)

    def _send(self, me: str, f: dict, out: asyncio.Queue) -> None:
        self._later()
        msg, to = self._message(me, f)
        self.sends.append((f, msg, to, [next(self.ids) for _ in to], out))

    def _ack(self, me: str, f: dict, out: asyncio.Queue) -> None:
        self._later()
        self.acks.append((me, f, out))

    def _commit(self) -> None:
        sends, acks, self.sends, self.acks = self.sends, self.acks, [], []
        self.db.execute("BEGIN IMMEDIATE")
        rows = [(next(self.seq), s) for s in sends]
        self.db.executemany("INSERT INTO messages VALUES (?,?,?,?,?,?,?)", [
            (seq, m["id"], m["author"], m["topic"], m["type"], dumps(m), m["created_at"]) for seq, (_, m, *_x) in rows])
        self.db.executemany("INSERT INTO deliveries (id, message_seq, recipient) VALUES (?,?,?)", [
            (did, seq, r) for seq, (_, _m, to, ids, _o) in rows for r, did in zip(to, ids)])
        now = time.time_ns()
        self.db.executemany("UPDATE deliveries SET acked_at = ? WHERE id = ? AND recipient = ? AND acked_at IS NULL",
                            [(now, i, me) for me, f, _ in acks for i in f.get("ids", [])])
        self.db.execute("COMMIT")
        for f, msg, to, ids, out in sends:
            self._answer(f, msg, to, ids, out)
        for me, f, out in acks:
            super()._ack(me, f, out)


def _iso_now() -> str:
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1e6):06d}Z"


async def relay_main(host: str, port: int, keys_file: str, persist: str | None = None) -> int:
    keys = json.loads(Path(keys_file).read_text())
    relay = DurableRelay(keys, persist) if persist else Relay(keys)
    server = await serve(relay.handler, host, port, max_size=1 << 20, ping_interval=20, ping_timeout=20)
    calm_gc()  # the same collector policy as Ygg's processes
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    print(json.dumps({"listening": f"ws://{host}:{server.sockets[0].getsockname()[1]}/"}), flush=True)
    await stop.wait()
    server.close()
    await server.wait_closed()
    return 0
