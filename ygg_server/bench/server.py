"""The server benchmark: `python -m ygg_server.bench server` (or `ygg-server bench server`).

It starts a real Ygg server (`ygg-server serve`, its own process, a fresh temporary
data dir, SQLite) and N agent connections on loopback, and measures routed and
persisted messages per second and end-to-end latency (send -> deliver at the
recipient). In the same run, the same load generator drives a raw relay: a tiny
`websockets` server (`python -m ygg_server.bench.server relay`, also its own
process) that speaks the same minimal frames (auth -> session, send -> sent plus a
deliver to the addressed connection, ack -> acked) with no routing and no
persistence. The relay is the floor that Python, `websockets` and the JSON codec
set on this machine; the ratios say what routing and persistence cost on top.

The load follows Ygg's rules, so every message wakes its recipient:
  - each agent opens one topic (in General, with a title) and reuses it;
  - it sends `request`s to its next 4 agents round-robin, with at most one
    request outstanding per peer (a peer is never asked again in that topic while
    its wake there is unanswered: no `wake_coalesced`), texts all unique (no
    `loop_suspected`), and no pair exchanges 8 messages in a row in a topic;
  - a peer answers each wake with a `response` (`in_reply_to` the request), which
    wakes the requester; every delivery is acked at once;
  - every agent is funded with 10^9 credits.
Requests and responses both count as routed messages.

Phases, per server: closed loop (each agent keeps `--window` requests outstanding)
for `--seconds`, for throughput; then open loop at `--rate` messages/s offered in
total (`--rate`/2 requests/s, each answered), for latency. Each phase starts with
`--warmup` seconds that are not measured.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import multiprocessing as mp
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import websockets
from websockets.asyncio.client import connect
from websockets.asyncio.server import serve

from ..gcpolicy import calm_gc, calm_thresholds
from .pg_waits import WaitSampler
from ..store.sqlite import Checkpointer

_enc = msgspec.json.Encoder()
_dec = msgspec.json.Decoder()


def _dumps(obj: Any) -> str:
    return _enc.encode(obj).decode()


# --------------------------------------------------------------------------------------------
# The raw relay: no routing, no persistence, the same minimal frames.
# --------------------------------------------------------------------------------------------

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
                f = _dec.decode(raw)
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
                await ws.send(_dumps(x))


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
            (seq, m["id"], m["author"], m["topic"], m["type"], _dumps(m), m["created_at"]) for seq, (_, m, *_x) in rows])
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


async def _relay_main(host: str, port: int, keys_file: str, persist: str | None = None) -> int:
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


# --------------------------------------------------------------------------------------------
# The load generator: raw `websockets`, the same for both servers.
# --------------------------------------------------------------------------------------------

@dataclass
class Target:
    url: str
    workspace: str
    agents: list[tuple[str, str]]  # (name, api key)
    names: dict[str, str]  # participant id -> name
    urls: list[str] = field(default_factory=list)  # several nodes: agent i connects to urls[i % len(urls)]
    directives: bool = False  # whether the agents take the server's directive with each wake (--directives)


@dataclass
class PhaseResult:
    delivered: int = 0  # deliveries received inside the measured window
    total: int = 0  # deliveries received in the whole phase (warm-up, window, drain)
    latencies: list[int] = field(default_factory=list)  # ns, send -> deliver, for messages sent in the window
    sent: int = 0  # `sent` answers received (all phases' windows)
    errors: Counter = field(default_factory=Counter)
    skipped: int = 0  # open loop: a tick found the agent with no free peer
    late_ms: float = 0.0  # open loop: how far the ticker fell behind its schedule, at worst
    cpu: float = 0.0  # load generator CPU seconds during the phase

    def merge(self, o: "PhaseResult") -> None:
        self.delivered += o.delivered
        self.total += o.total
        self.latencies += o.latencies
        self.sent += o.sent
        self.errors += o.errors
        self.skipped += o.skipped
        self.late_ms = max(self.late_ms, o.late_ms)
        self.cpu += o.cpu


class _Window:
    """What the agents of one process are doing now."""

    def __init__(self):
        self.running = False  # closed loop: answer a response with the next request
        self.start = 0  # ns: measuring from
        self.end = 0  # ns: measuring until
        self.result = PhaseResult()
        self.outstanding = 0


class Agent:
    def __init__(self, gen: "LoadGen", name: str, key: str, peers: list[str]):
        self.gen, self.name, self.key = gen, name, key
        self.url: str | None = None  # this agent's node, when there are several
        self.free: deque[str] = deque(peers)  # peers with no request of mine outstanding, in rotation
        self.last: str | None = None  # the peer asked last: never asked twice in a row (see `request`)
        self.seq = 0
        self.topic: str | None = None
        self.opened: asyncio.Future | None = None
        self.ws = None
        self.reader: asyncio.Task | None = None

    async def connect(self) -> None:
        self.ws = await connect(self.url or self.gen.url, max_size=1 << 20, compression=self.gen.compression,
                                ping_interval=None, open_timeout=30)
        await self.ws.send(_dumps({"op": "auth", "ref": "a", "api_key": self.key, "prefetch": 64,
                                   "directives": self.gen.directives}))
        session = _dec.decode(await self.ws.recv())
        if session.get("op") != "session":
            raise RuntimeError(f"{self.name} could not authenticate: {session}")
        self.reader = asyncio.ensure_future(self._read())

    async def open_topic(self) -> None:
        """The one topic this agent opens (and reuses): a first request, to its first peer."""
        self.opened = asyncio.get_running_loop().create_future()
        await self.request(title=f"Bench topic of {self.name}")
        self.topic = await asyncio.wait_for(self.opened, 60)

    async def request(self, title: str | None = None) -> bool:
        """Ask the next free peer, never the one asked last: else a topic could hold 8 messages in a row with
        one peer when only that peer is free at each tick, and the loop rule (seed 000) would stop it."""
        if not self.free or list(self.free) == [self.last]:
            return False
        peer = self.free.popleft()
        if peer == self.last:
            self.free.append(peer)
            peer = self.free.popleft()
        self.last = peer
        self.seq += 1
        self.gen.window.outstanding += 1
        t = time.monotonic_ns()
        await self.ws.send(_dumps({
            "op": "send", "ref": self.seq, "workspace": self.gen.workspace, "conversation": "general",
            "topic": self.topic or "new", "title": title, "type": "request", "to": [peer],
            "text": f"req {self.name}#{self.seq} for {peer} t{t}",
        }))
        return True

    async def _read(self) -> None:
        gen = self.gen
        names = gen.names
        try:
            async for raw in self.ws:
                now = time.monotonic_ns()
                f = _dec.decode(raw)
                op = f["op"]
                w = gen.window
                if op == "deliver":
                    m = f["message"]
                    if m.get("notice") or m["author"] not in names:
                        w.result.errors[f"notice:{m.get('notice')}"] += 1
                        await self.ws.send(_dumps({"op": "ack", "ids": [f["id"]]}))
                        continue
                    text = m["text"]
                    t = int(text[text.rindex(" t") + 2:])
                    w.result.total += 1
                    if w.start <= now < w.end:
                        w.result.delivered += 1
                    if w.start <= t < w.end:
                        w.result.latencies.append(now - t)
                    await self.ws.send(_dumps({"op": "ack", "ids": [f["id"]]}))
                    if not f["wake"]:
                        w.result.errors[f"context:{f['reason']}"] += 1
                    if m["type"] == "request":
                        if f["wake"]:
                            self.seq += 1
                            t = time.monotonic_ns()
                            await self.ws.send(_dumps({
                                "op": "send", "ref": self.seq, "workspace": gen.workspace, "conversation": "general",
                                "topic": m["topic"], "type": "response", "in_reply_to": m["id"],
                                "to": [names[m["author"]]], "text": f"re {self.name}#{self.seq} t{t}",
                            }))
                    elif m["type"] == "response":
                        self.free.append(names[m["author"]])
                        w.outstanding -= 1
                        if w.running:
                            await self.request()
                elif op == "sent":
                    w.result.sent += 1
                    if self.opened is not None and not self.opened.done():
                        self.opened.set_result(f["message"]["topic"])
                    for d in f["deliveries"]:
                        if d["to"] in names and not d["wake"]:
                            w.result.errors[f"sent without a wake:{d['reason']}"] += 1
                elif op in ("refused", "error"):
                    w.result.errors[f"{op}:{f.get('reason') or f.get('code')}"] += 1
                    if self.opened is not None and not self.opened.done():
                        self.opened.set_exception(RuntimeError(f"{self.name}: {f}"))
        except websockets.ConnectionClosed:
            pass


class LoadGen:
    """Some of the agents (all of them in one process, or a slice of them per process)."""

    def __init__(self, target: Target, mine: range, peers: int, compression: str | None):
        self.url, self.workspace, self.names = target.url, target.workspace, target.names
        self.compression = compression
        self.directives = target.directives
        everyone = [n for n, _ in target.agents]
        n = len(everyone)
        self.agents = [
            Agent(self, everyone[i], target.agents[i][1], [everyone[(i + k) % n] for k in range(1, peers + 1)])
            for i in mine
        ]
        for i, a in zip(mine, self.agents):
            a.url = target.urls[i % len(target.urls)] if target.urls else None
        self.window = _Window()

    async def connect(self) -> None:
        sem = asyncio.Semaphore(20)

        async def one(a: Agent):
            async with sem:
                await a.connect()

        await asyncio.gather(*(one(a) for a in self.agents))

    async def setup(self) -> None:
        await asyncio.gather(*(a.open_topic() for a in self.agents))
        await self.drain(30)

    async def drain(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.window.outstanding > 0 and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)  # the last responses' acks

    def _begin(self, start: int, end: int) -> tuple[_Window, float]:
        w = _Window()
        w.start, w.end, w.outstanding = start, end, self.window.outstanding
        self.window = w
        return w, time.process_time()

    async def closed(self, window: int, start: int, end: int) -> PhaseResult:
        """Each agent keeps `window` requests outstanding until `end` (ns, monotonic)."""
        w, cpu = self._begin(start, end)
        w.running = True
        for _ in range(window):
            for a in self.agents:
                await a.request()
        await asyncio.sleep(max(0.0, (end - time.monotonic_ns()) / 1e9))
        w.running = False
        await self.drain(10)
        w.result.cpu = time.process_time() - cpu
        return w.result

    async def open(self, rate: float, begin: int, start: int, end: int, offset: float = 0.0) -> PhaseResult:
        """`rate` requests/s from these agents in turn, on a fixed schedule from `begin` until `end`."""
        w, cpu = self._begin(start, end)
        interval = 1e9 / rate
        n = len(self.agents)
        late = 0
        for k in itertools.count():
            due = begin + int((k + offset) * interval)
            if due >= end:
                break
            now = time.monotonic_ns()
            if due > now:
                await asyncio.sleep((due - now) / 1e9)
            elif now - due > late and due >= start:
                late = now - due
            if not await self.agents[k % n].request():
                w.result.skipped += 1
        w.result.late_ms = late / 1e6
        await self.drain(10)
        w.result.cpu = time.process_time() - cpu
        return w.result

    async def close(self) -> None:
        for a in self.agents:
            await a.ws.close()
            if a.reader:
                a.reader.cancel()


# Several load processes: each runs a LoadGen over a slice of the agents, driven by commands.

def _worker(conn, target: Target, mine: range, peers: int, compression: str | None) -> None:
    async def main():
        calm_gc()  # a load process of its own
        gen = LoadGen(target, mine, peers, compression)
        while True:
            cmd, *args = await asyncio.to_thread(conn.recv)
            if cmd == "stop":
                await gen.close()
                conn.send(None)
                return
            result = await getattr(gen, cmd)(*args)
            conn.send(result)

    asyncio.run(main())


class Driver:
    """The load generator, in this process (procs=1) or spread over `procs` processes."""

    def __init__(self, target: Target, procs: int, peers: int, compression: str | None):
        n = len(target.agents)
        self.procs = max(1, min(procs, n))
        cuts = [n * i // self.procs for i in range(self.procs + 1)]
        slices = [range(cuts[i], cuts[i + 1]) for i in range(self.procs)]
        self.local: LoadGen | None = None
        self.pipes = []
        self.children = []
        if self.procs == 1:
            self.local = LoadGen(target, slices[0], peers, compression)
        else:
            ctx = mp.get_context("spawn")
            for s in slices:
                a, b = ctx.Pipe()
                p = ctx.Process(target=_worker, args=(b, target, s, peers, compression), daemon=True)
                p.start()
                self.pipes.append(a)
                self.children.append(p)

    async def call(self, cmd: str, *args, per_proc=None) -> list:
        if self.local is not None:
            a = per_proc(0) if per_proc else args
            return [await getattr(self.local, cmd)(*a)]
        for i, pipe in enumerate(self.pipes):
            pipe.send((cmd, *(per_proc(i) if per_proc else args)))
        return await asyncio.gather(*(asyncio.to_thread(p.recv) for p in self.pipes))

    async def stop(self) -> None:
        if self.local is not None:
            await self.local.close()
            return
        await self.call("stop")
        for p in self.children:
            p.join(5)


# --------------------------------------------------------------------------------------------
# Servers under test
# --------------------------------------------------------------------------------------------

class Proc:
    """A server in its own process; its CPU time is read from /proc."""

    def __init__(self, argv: list[str], log: Path):
        self.profiled = "py-spy" in Path(argv[0]).name
        self.log = log.open("wb")
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.log)
        self.url = None
        for line in iter(self.p.stdout.readline, b""):  # a profiler may print a line of its own first
            if line.startswith(b"{"):
                self.url = json.loads(line).get("listening")
                break
        if self.url is None:
            self.stop()
            raise RuntimeError(f"server did not start; see {log}")

    @property
    def pid(self) -> int:
        """The server's pid (under a profiler, the profiler's child)."""
        try:
            kids = Path(f"/proc/{self.p.pid}/task/{self.p.pid}/children").read_text().split()
        except OSError:
            kids = []
        return int(kids[0]) if self.profiled and kids else self.p.pid

    def cpu(self) -> float:
        """CPU seconds of the server and the processes it started (Ygg's writer process)."""
        return _tree_cpu(self.pid)

    def main_cpu(self) -> float:
        """CPU seconds of the server's own process (its event loop), without the processes it started."""
        return _tree_cpu(self.pid, children=False)

    def stop(self) -> None:
        if self.p.poll() is None:
            os.kill(self.pid, signal.SIGTERM)
            try:
                self.p.wait(15)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.log.close()


def _tree_cpu(pid: int, children: bool = True) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        own = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")
    if not children:
        return own
    kids = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            kids += (task / "children").read_text().split()
        except OSError:
            pass
    return own + sum(c for c in (_tree_cpu(int(k)) for k in kids) if c == c)


class Procs:
    """Several server processes (the nodes of one cluster), measured as one; and their database's CPU."""

    def __init__(self, procs: list[Proc], db_url: str | None = None):
        self.procs, self.db_url = procs, db_url
        self.url = procs[0].url
        self.db_pids: list[int] = []

    def cpu(self) -> float:
        return sum(p.cpu() for p in self.procs)

    def db_cpu(self) -> float:
        """CPU seconds of the PostgreSQL backends serving this database (same machine only; else nan)."""
        if self.db_url is None:
            return float("nan")
        if not self.db_pids:
            self.db_pids = _backend_pids(self.db_url)
        total = 0.0
        for pid in self.db_pids:
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            except (OSError, IndexError, ValueError):
                pass
        return total if self.db_pids else float("nan")

    def stop(self) -> None:
        for p in self.procs:
            p.stop()


def _backend_pids(url: str) -> list[int]:
    from urllib.parse import urlsplit

    import asyncpg

    from ..store import postgres as pg

    async def run():
        c = await asyncpg.connect(pg.parse_dsn(url)[0])
        try:
            return [r[0] for r in await c.fetch(
                "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid != pg_backend_pid()",
                urlsplit(url).path.lstrip("/"))]
        finally:
            await c.close()

    try:
        return asyncio.run(run()) if not _in_loop() else []
    except Exception:
        return []


def _in_loop() -> bool:
    try:
        asyncio.get_running_loop()
        return True
    except RuntimeError:
        return False


def _names(n: int) -> list[str]:
    return [f"bench{i:03d}" for i in range(n)]


def setup_ygg(data_dir: Path | str, agents: int) -> tuple[str, list[tuple[str, str]], dict[str, str]]:
    """A person, a workspace, `agents` agents in it, each funded with 10^9 credits (a data dir, or a PostgreSQL URL)."""
    from ..ops import admin
    from ..store import sqlite as db

    if isinstance(data_dir, str):
        from ..store import postgres as pg

        conn = pg.connect_sync(data_dir)
    else:
        conn = db.connect(db.db_path(data_dir))
    try:
        admin.add_person(conn, "bench", "bench-password")
        ws = admin.add_workspace(conn, "bench", "bench")["id"]
        # agents talk to agents with no person here: the party safeguards (hop limit, throttle) are set out of reach
        conn.execute("UPDATE workspaces SET settings = ? WHERE id = ?", (json.dumps(
            {"party.maxHops": 10**9, "party.throttleDirect": 10**9, "party.throttleGroup": 10**9}), ws))
        keys, names = [], {}
        for name in _names(agents):
            out = admin.add_agent(conn, name, "bench", ws)
            admin.fund(conn, out["id"], 1_000_000_000)
            keys.append((name, out["api_key"]))
            names[out["id"]] = name
    finally:
        conn.close()
    return ws, keys, names


def _persisted(where: Path | str) -> int:
    """Messages stored: in Ygg's data dir, the durable relay's file (`*.db`), or a PostgreSQL database (URL)."""
    from ..store import sqlite as db

    if isinstance(where, str):
        from ..store import postgres as pg

        conn = pg.connect_sync(where)
    else:
        conn = sqlite3.connect(where) if where.suffix == ".db" else db.connect(db.db_path(where))
    try:
        return conn.execute("SELECT count(*) FROM messages").fetchone()[0]
    finally:
        conn.close()


_IDLE_LEAVES = ("select (selectors", "_worker (concurrent", "get (queue", "wait (threading",
                "read (ygg_server/writer/process")
_CATEGORIES = (  # the first that matches, from the innermost frame out
    ("permessage-deflate", "permessage_deflate"), ("store (SQLite, rows, shared SQL)", "ygg_server/store/"),
    ("routing core (decide)", "ygg_server/core/"), ("message objects, JSON", "ygg_server/protocol/"),
    ("asyncpg (PostgreSQL protocol)", "asyncpg/"), ("pg engine", "pg_engine.py:"), ("claims (cluster)", "cluster.py:"),
    ("engine (incl. its SAVEPOINT/ack SQL)", "engine.py:"), ("gateway, inbox", "gateway.py:"),
    ("gateway, inbox", "inbox.py:"), ("websockets framing", "websockets/"), ("asyncio loop, socket I/O", "asyncio/"),
)


def profile_summary(path: Path) -> list[tuple[str, str, float]]:
    """Where a server's busy time went, from py-spy's raw (collapsed) samples: (thread, category, share)."""
    counts: Counter = Counter()
    for line in path.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        frames = stack.split(";")
        if not n.isdigit() or len(frames) < 2 or any(i in frames[-1] for i in _IDLE_LEAVES):
            continue
        if "Engine._run" in frames[-1] and "engine.py" in frames[-1]:
            continue  # the writer waiting on its queue
        head = ";".join(frames[:2])  # (with --subprocesses, the process comes first, then the thread)
        thread = "writer" if "ygg-writer" in head or any("_child (ygg_server/writer/process.py" in f for f in frames) \
            else "main" if "MainThread" in head else "other"
        cat = next((name for f in reversed(frames[1:]) for name, pat in _CATEGORIES if pat in f), "other")
        counts[(thread, cat)] += int(n)
    total = sum(counts.values()) or 1
    return [(t, c, n / total) for (t, c), n in counts.most_common()]


def _profiler(kind: str, profile: str | None) -> list[str]:
    """`--profile DIR`: run the server under py-spy (collapsed stacks in DIR/KIND.txt)."""
    if not profile:
        return []
    exe = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    Path(profile).mkdir(parents=True, exist_ok=True)
    return [exe, "record", "--format", "raw", "--rate", "200", "--threads", "--subprocesses",
            "-o", str(Path(profile) / f"{kind}.txt"), "--"]


def start_server(kind: str, workdir: Path, agents: int, profile: str | None = None,
                 db: str | None = None) -> tuple[Proc, Target]:
    workdir.mkdir(parents=True, exist_ok=True)
    py = [*_profiler(kind, profile), sys.executable]
    if kind in ("pg", "pg2"):  # one node, or two, on a fresh PostgreSQL database (`db` is a scratch URL)
        ws, keys, names = setup_ygg(db, agents)
        nodes = [Proc([*(_profiler(f"{kind}-{i}", profile) or []), sys.executable, "-m", "ygg_server.cli",
                       "serve", "--db", db, "--port", "0", "--node-id", f"bench{i}"],
                      workdir / f"{kind}-node{i}.log") for i in range(1 if kind == "pg" else 2)]
        procs = Procs(nodes, db)
        return procs, Target(nodes[0].url, ws, keys, names, [n.url for n in nodes])
    if kind == "ygg":
        data = workdir / "ygg-data"
        ws, keys, names = setup_ygg(data, agents)
        proc = Proc([*py, "-m", "ygg_server.cli", "serve", "--data-dir", str(data), "--port", "0"],
                    workdir / "ygg-server.log")
        return proc, Target(proc.url, ws, keys, names)
    keys = [(n, f"relaykey_{n}") for n in _names(agents)]
    kf = workdir / "relay-keys.json"
    kf.write_text(json.dumps({k: n for n, k in keys}))
    durable = ["--persist", str(workdir / "durable.db")] if kind == "durable" else []
    proc = Proc([*py, "-m", "ygg_server.bench.server", "relay", "--port", "0", "--keys", str(kf), *durable],
                workdir / f"{kind}.log")
    return proc, Target(proc.url, "relay", keys, {n: n for n, _ in keys})


async def _backend_pids_async(url: str) -> list[int]:
    return await asyncio.to_thread(_backend_pids, url)


@dataclass
class Measured:
    kind: str
    phase: str
    seconds: float  # the measured window
    wall: float  # the whole phase: warm-up, window, drain
    result: PhaseResult
    server_cpu: float  # CPU seconds the server used over `wall` (all its nodes)
    db_cpu: float = float("nan")  # CPU seconds of its PostgreSQL backends (pg, pg2)
    node_cpu: tuple[float, ...] = ()  # CPU seconds of each node (pg, pg2)
    main_cpu: float = float("nan")  # CPU seconds of the server's main process (ygg: its writer process is apart)
    waits: dict | None = None  # what the database's backends were doing (pg_waits.WaitSampler.summary)

    @property
    def rate(self) -> float:
        return self.result.delivered / self.seconds

    def pct(self, q: float) -> float:
        xs = sorted(self.result.latencies)
        if not xs:
            return float("nan")
        return xs[min(len(xs) - 1, int(q * len(xs)))] / 1e6

    @property
    def server_us(self) -> float:
        """Server CPU per routed message (us): contention on the machine moves it far less than msgs/s."""
        return self.server_cpu / max(1, self.result.total) * 1e6

    @property
    def loadgen_us(self) -> float:
        return self.result.cpu / max(1, self.result.total) * 1e6

    def summary(self) -> dict:
        r = self.result
        return {
            "msgs_per_s": round(self.rate, 1), "p50_ms": round(self.pct(0.50), 3), "p99_ms": round(self.pct(0.99), 3),
            "samples": len(r.latencies), "delivered": r.total, "sent": r.sent, "skipped": r.skipped,
            "late_ms": round(r.late_ms, 2), "errors": dict(r.errors),
            "server_cpu": round(self.server_cpu / self.wall, 3), "loadgen_cpu": round(r.cpu / self.wall, 3),
            "server_us_per_msg": round(self.server_us, 1), "loadgen_us_per_msg": round(self.loadgen_us, 1),
            **({} if self.db_cpu != self.db_cpu else {
                "db_cpu": round(self.db_cpu / self.wall, 3),
                "db_us_per_msg": round(self.db_cpu / max(1, r.total) * 1e6, 1)}),
            **({"node_cpu": [round(c / self.wall, 3) for c in self.node_cpu]} if self.node_cpu else {}),
            **({} if self.main_cpu != self.main_cpu else {"main_process_cpu": round(self.main_cpu / self.wall, 3)}),
            **({"db_backends": self.waits} if self.waits else {}),
        }


async def run_target(kind: str, args, workdir: Path) -> list[Measured]:
    db_url = None
    if kind in ("pg", "pg2"):
        from ..store import postgres as pg

        db_url = await pg.create_database(args.db, prefix="ygg_bench")
    try:
        proc, target = await asyncio.to_thread(start_server, kind, workdir, args.agents, args.profile, db_url)
        target.directives = args.directives
    except BaseException:
        if db_url:
            await pg.drop_database(db_url)
        raise
    if isinstance(proc, Procs):
        proc.db_pids = await _backend_pids_async(db_url)
    driver = None
    try:
        peers = min(args.peers, args.agents - 1)
        driver = Driver(target, args.procs, peers, None if args.no_compression else "deflate")
        await driver.call("connect")
        await driver.call("setup")
        out = []
        ns = 1_000_000_000

        async def phase(name: str, *call, **kw) -> None:
            t0, cpu0 = time.monotonic(), proc.cpu()
            db0 = proc.db_cpu() if isinstance(proc, Procs) else float("nan")
            nodes0 = [p.cpu() for p in proc.procs] if isinstance(proc, Procs) else []
            main0 = proc.main_cpu() if isinstance(proc, Proc) else float("nan")
            sampler = WaitSampler(db_url).start() if db_url else None
            try:
                parts = await driver.call(*call, **kw)
            finally:
                if sampler is not None:
                    await asyncio.to_thread(sampler.stop)
            r = PhaseResult()
            for x in parts:
                r.merge(x)
            m = Measured(kind, name, args.seconds, time.monotonic() - t0, r, proc.cpu() - cpu0)
            if isinstance(proc, Proc):
                m.main_cpu = proc.main_cpu() - main0
            if isinstance(proc, Procs):
                m.db_cpu = proc.db_cpu() - db0
                m.node_cpu = tuple(p.cpu() - c0 for p, c0 in zip(proc.procs, nodes0))
                m.waits = sampler.summary()
            out.append(m)

        # throughput: closed loop, `--window` requests outstanding per agent
        begin = time.monotonic_ns() + ns // 5
        start, end = begin + int(args.warmup * ns), begin + int((args.warmup + args.seconds) * ns)
        await phase("throughput", "closed", args.window, start, end)
        # latency: open loop at --rate messages/s (half of them requests, each answered)
        begin = time.monotonic_ns() + ns // 5
        start, end = begin + int(args.warmup * ns), begin + int((args.warmup + args.seconds) * ns)
        per = args.rate / 2 / driver.procs
        await phase("latency", "open", per_proc=lambda i: (per, begin, start, end, i / driver.procs))
        return out
    finally:
        if driver is not None:
            try:
                await asyncio.wait_for(driver.stop(), 20)
            except Exception:
                pass
        proc.stop()
        if kind in ("ygg", "durable") and not args.quiet:
            n = _persisted(workdir / ("ygg-data" if kind == "ygg" else "durable.db"))
            print(f"  {kind}: {n:,} messages persisted", flush=True)
        if db_url:
            if not args.quiet:
                n = await asyncio.to_thread(_persisted, db_url)
                print(f"  {kind}: {n:,} messages persisted", flush=True)
            if not args.keep:
                await pg.drop_database(db_url)
            elif not args.quiet:
                print(f"  kept database {db_url}")
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


def server(args: argparse.Namespace) -> int:
    """The `server` subcommand: Ygg next to a raw relay, the same load for both."""
    if args.agents < 3 or args.peers < 2:
        # with one peer, an agent's topic would hold only one pair: 8 in a row is a suspected loop
        print("--agents must be at least 3 and --peers at least 2", file=sys.stderr)
        return 2
    if args.servers is None:
        args.servers = "ygg,pg,pg2" if args.db else "relay,durable,ygg"
    if not set(args.servers.split(",")) <= {"relay", "durable", "ygg", "pg", "pg2"}:
        print("--servers: a comma-separated list of relay, durable, ygg, pg and pg2", file=sys.stderr)
        return 2
    if {"pg", "pg2"} & set(args.servers.split(",")) and not args.db:
        print("pg and pg2 need --db postgresql://… (a server where the benchmark may create a database)",
              file=sys.stderr)
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="ygg-bench-server-"))
    runs: list[dict[str, Measured]] = []
    try:
        for i in range(args.repeat):
            for kind in args.servers.split(","):
                with calm_thresholds():  # the load generator: the servers' collector policy
                    ms = asyncio.run(run_target(kind, args, workdir / f"{kind}-{i + 1}"))
                runs.append({m.phase: m for m in ms})
                if not args.quiet and args.repeat > 1:
                    t, l = runs[-1]["throughput"], runs[-1]["latency"]
                    print(f"  run {i + 1} {kind}: {t.rate:,.0f} msgs/s closed loop; "
                          f"p50/p99 {l.pct(.5):.2f}/{l.pct(.99):.2f} ms at {l.rate:,.0f} msgs/s", flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        elif not args.quiet:
            print(f"  kept {workdir}")
    summary = report(args, runs)
    if args.profile and not args.quiet:
        for kind in args.servers.split(","):
            for f in [Path(args.profile) / f"{kind}.txt", *sorted(Path(args.profile).glob(f"{kind}-[0-9]*.txt"))]:
                if not f.exists():
                    continue
                print(f"where {f.stem}'s busy time went (py-spy, {f}):")
                for thread, cat, share in profile_summary(f):
                    if share >= 0.005:
                        print(f"  {share:6.1%}  {thread:6}  {cat}")
    print(json.dumps(summary))
    return 1 if any(m.result.errors for r in runs for m in r.values()) else 0


def _median(xs: list[float]) -> float:
    xs = sorted(x for x in xs if x == x)
    if not xs:
        return float("nan")
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def report(args, runs: list[dict[str, Measured]]) -> dict:
    """Per server and phase, the median over the repeats of each figure."""
    kinds = list(dict.fromkeys(r["throughput"].kind for r in runs))
    by = {k: [r for r in runs if r["throughput"].kind == k] for k in kinds}

    def med(k: str, phase: str, fn) -> float:
        return _median([fn(r[phase]) for r in by[k]])

    peers = min(args.peers, args.agents - 1)
    summary: dict[str, Any] = {"agents": args.agents, "peers": peers, "window": args.window, "seconds": args.seconds,
                               "rate": args.rate, "procs": args.procs, "repeat": args.repeat,
                               "compression": not args.no_compression, "directives": args.directives}
    for k in kinds:
        for phase in ("throughput", "latency"):
            if len(by[k]) == 1:
                summary[f"{k}_{phase}"] = by[k][0][phase].summary()
            else:
                each = [r[phase].summary() for r in by[k]]
                summary[f"{k}_{phase}"] = {
                    key: (_median([e[key] for e in each]) if isinstance(each[0][key], (int, float)) else
                          [e[key] for e in each]) for key in each[0]}
    fig = {k: {"tput": med(k, "throughput", lambda m: m.rate), "p50": med(k, "latency", lambda m: m.pct(.5)),
               "p99": med(k, "latency", lambda m: m.pct(.99))} for k in kinds}
    if "ygg" in fig and "relay" in fig:
        y, r = fig["ygg"], fig["relay"]
        summary["throughput_ratio"] = round(y["tput"] / r["tput"], 3) if r["tput"] else None
        summary["p99_ratio"] = round(y["p99"] / r["p99"], 3) if r["p99"] == r["p99"] and r["p99"] > 0 else None
        # what the throughput ratio would be if each server had the same CPU to itself: robust to a busy machine
        yu, ru = med("ygg", "throughput", lambda m: m.server_us), med("relay", "throughput", lambda m: m.server_us)
        summary["cpu_ratio"] = round(ru / yu, 3) if yu else None
    if "durable" in fig and "relay" in fig:  # what persisting alone costs, at the least
        d, r = fig["durable"], fig["relay"]
        summary["durable_throughput_ratio"] = round(d["tput"] / r["tput"], 3) if r["tput"] else None
        summary["durable_p99_ratio"] = round(d["p99"] / r["p99"], 3) if r["p99"] == r["p99"] and r["p99"] > 0 else None
    if "pg" in fig and "pg2" in fig:  # issue 7: two nodes on one database, next to one
        summary["pg2_over_pg"] = round(fig["pg2"]["tput"] / fig["pg"]["tput"], 3) if fig["pg"]["tput"] else None
    if args.quiet:
        return summary
    print(f"\nygg bench server: {args.agents} agents, {peers} peers each, window {args.window}, "
          f"{args.seconds:g} s per phase after {args.warmup:g} s warm-up, load generator in {args.procs} process(es), "
          f"compression {'off' if args.no_compression else 'deflate'}"
          + (f", median of {args.repeat} runs" if args.repeat > 1 else ""))
    print(f"{'':38}" + "".join(f"{k:>16}" for k in kinds))

    def row(label, fn):
        print(f"{label:38}" + "".join(f"{fn(k):>16}" for k in kinds))

    row("closed loop: msgs/s", lambda k: f"{med(k, 'throughput', lambda m: m.rate):,.0f}")
    row("closed loop: p50 / p99 ms", lambda k: f"{med(k, 'throughput', lambda m: m.pct(.5)):.1f} / "
                                               f"{med(k, 'throughput', lambda m: m.pct(.99)):.1f}")
    row("closed loop: CPU server / loadgen", lambda k: f"{med(k, 'throughput', lambda m: m.server_cpu / m.wall):.0%} / "
                                                       f"{med(k, 'throughput', lambda m: m.result.cpu / m.wall):.0%}")
    row("closed loop: CPU us/msg server / lg", lambda k: f"{med(k, 'throughput', lambda m: m.server_us):.0f} / "
                                                         f"{med(k, 'throughput', lambda m: m.loadgen_us):.0f}")
    if "ygg" in kinds:
        row("closed loop: CPU main / writer process", lambda k: "" if k != "ygg" else
            f"{med(k, 'throughput', lambda m: m.main_cpu / m.wall):.0%} / "
            f"{med(k, 'throughput', lambda m: (m.server_cpu - m.main_cpu) / m.wall):.0%}")
    if {"pg", "pg2"} & set(kinds):
        row("closed loop: PostgreSQL CPU, us/msg", lambda k: "" if k not in ("pg", "pg2") else
            f"{med(k, 'throughput', lambda m: m.db_cpu / m.wall):.0%}, "
            f"{med(k, 'throughput', lambda m: m.db_cpu / max(1, m.result.total) * 1e6):.0f}")
        row("closed loop: CPU of each node", lambda k: "" if k not in ("pg", "pg2") else " / ".join(
            f"{_median([r['throughput'].node_cpu[i] / r['throughput'].wall for r in by[k]]):.0%}"
            for i in range(len(by[k][0]["throughput"].node_cpu))))
        for key, what in (("running", "running"), ("lock_waits", "waiting for a row lock"),
                          ("idle_in_transaction", "idle in a transaction")):
            row(f"closed loop: backends {what}", lambda k: "" if k not in ("pg", "pg2") else
                f"{med(k, 'throughput', lambda m: m.waits[key]):.2f}")
    row(f"open loop {args.rate:g}/s: achieved msgs/s", lambda k: f"{med(k, 'latency', lambda m: m.rate):,.0f}")
    row(f"open loop {args.rate:g}/s: p50 ms", lambda k: f"{fig[k]['p50']:.2f}")
    row(f"open loop {args.rate:g}/s: p99 ms", lambda k: f"{fig[k]['p99']:.2f}")
    row("open loop: CPU server / loadgen", lambda k: f"{med(k, 'latency', lambda m: m.server_cpu / m.wall):.0%} / "
                                                     f"{med(k, 'latency', lambda m: m.result.cpu / m.wall):.0%}")
    row("open loop: ticks with no free peer", lambda k: f"{med(k, 'latency', lambda m: m.result.skipped):.0f}")
    row("open loop: ticker behind (max ms)", lambda k: f"{med(k, 'latency', lambda m: m.result.late_ms):.1f}")
    for k in kinds:
        errs: Counter = Counter()
        for r in by[k]:
            for m in r.values():
                errs += m.result.errors
        if errs:
            print(f"  {k}: NOT EVERY MESSAGE WOKE ITS RECIPIENT: {dict(errs)}")
    if "throughput_ratio" in summary:
        tr, pr = summary["throughput_ratio"], summary["p99_ratio"]
        if tr is not None:
            print(f"throughput ygg/relay: {tr:.2f}  (goal >= 0.50 with 100 agents: {'met' if tr >= 0.5 else 'NOT met'})")
        if summary["cpu_ratio"] is not None:
            print(f"server CPU per message relay/ygg: {summary['cpu_ratio']:.2f}  (the throughput ratio if both were CPU-bound on equal CPU)")
        if pr is not None:
            print(f"p99 ygg/relay at {args.rate:g} msgs/s offered: {pr:.2f}  (goal <= 2.0: {'met' if pr <= 2 else 'NOT met'})")
    if summary.get("durable_p99_ratio") is not None:
        print(f"the durable relay (messages, deliveries and acks committed first; no routing) against the relay: "
              f"throughput {summary['durable_throughput_ratio']:.2f}, p99 {summary['durable_p99_ratio']:.2f}")
    if summary.get("pg2_over_pg") is not None:
        r = summary["pg2_over_pg"]
        print(f"throughput two nodes / one node on PostgreSQL: {r:.2f}  (goal >= 1.6: {'met' if r >= 1.6 else 'NOT met'})")
    for k in kinds:
        if k in ("pg", "pg2"):
            w = by[k][0]["throughput"].waits
            print(f"  {k}, closed loop (run 1): lock waits by statement {w['lock_waits_by_statement']}; "
                  f"other waits {w['other_waits']}")
    return summary


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--agents", type=int, default=100, help="agent connections (default 100)")
    p.add_argument("--seconds", type=float, default=5.0, help="measured seconds per phase (default 5)")
    p.add_argument("--warmup", type=float, default=1.0, help="unmeasured seconds before each phase (default 1)")
    p.add_argument("--rate", type=float, default=2000.0, help="open loop: messages/s offered in total (default 2000)")
    p.add_argument("--window", type=int, default=2, help="closed loop: requests outstanding per agent (default 2)")
    p.add_argument("--peers", type=int, default=4, help="peers each agent asks, round-robin (default 4)")
    p.add_argument("--procs", type=int, default=1, help="load generator processes (default 1)")
    p.add_argument("--repeat", type=int, default=1, help="run the servers this many times, alternating; report medians")
    p.add_argument("--servers", default=None,
                   help="which servers, in order: relay, durable (the relay committing to SQLite first), "
                        "ygg (one node, SQLite), pg (one node, PostgreSQL), pg2 (two nodes, PostgreSQL) "
                        "(default relay,durable,ygg; with --db: ygg,pg,pg2)")
    p.add_argument("--db", default=None, metavar="URL",
                   help="postgresql://… where pg/pg2 make a fresh database per run (dropped after)")
    p.add_argument("--no-compression", action="store_true", help="clients do not offer permessage-deflate")
    p.add_argument("--directives", action="store_true",
                   help="the agents take the server's directive with each wake (default: bare agents, "
                        "\"directives\": false at auth, as the relay sends none)")
    p.add_argument("--profile", metavar="DIR", help="sample the servers with py-spy into DIR/<server>.txt")
    p.add_argument("--keep", action="store_true", help="keep the temporary data dir and server logs")
    p.add_argument("--quiet", action="store_true", help="print only the JSON summary")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ygg_server.bench.server")
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("relay", help="run the raw relay (the benchmark starts it itself)")
    r.add_argument("--host", default="127.0.0.1")
    r.add_argument("--port", type=int, default=0)
    r.add_argument("--keys", required=True, help="a JSON file mapping api key -> agent name")
    r.add_argument("--persist", metavar="FILE", help="commit messages, deliveries and acks to this SQLite file first")
    s = sub.add_parser("server", help="the server benchmark (same as `python -m ygg_server.bench server`)")
    add_arguments(s)
    args = ap.parse_args(argv)
    if args.command == "relay":
        return asyncio.run(_relay_main(args.host, args.port, args.keys, args.persist))
    return server(args)


if __name__ == "__main__":
    sys.exit(main())
