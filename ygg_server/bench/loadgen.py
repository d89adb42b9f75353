"""The server benchmark's load generator: raw `websockets`, the same for every server under test.

Agents that follow Ygg's rules (see `bench/server.py`), in this process or spread over several
(`Driver`), each phase measured into a `PhaseResult`.
"""

from __future__ import annotations

import asyncio
import itertools
import multiprocessing as mp
import time
from collections import Counter, deque
from dataclasses import dataclass, field

import websockets
from websockets.asyncio.client import connect

from ..core.rules import MAX_HOPS
from ..gcpolicy import calm_gc
from .wire import decode, dumps


@dataclass
class Target:
    url: str
    workspace: str
    agents: list[tuple[str, str]]  # (name, api key)
    names: dict[str, str]  # participant id -> name
    urls: list[str] = field(default_factory=list)  # several nodes: agent i connects to urls[i % len(urls)]
    directives: bool = False  # whether the agents take the server's directive with each wake (--directives)
    # Ygg's person (handle, password), who opens each agent's topic and writes there again as real work has it
    # (a person's message buys its topic party.maxHops hops: docs/rules.md, "Parties"); None: agents alone (relays)
    person: tuple[str, str] | None = None



class Person:
    """The bench's person on its own connection: writes in a topic and waits for the `sent`. The deliveries it is
    pushed as an observer are neither read nor acked (they stop at its prefetch)."""

    def __init__(self, gen: "LoadGen", handle: str, password: str):
        self.gen, self.handle, self.password = gen, handle, password
        self.id: str | None = None
        self.seq = itertools.count(1)
        self.waiting: dict[int, asyncio.Future] = {}
        self.ws = None
        self.reader: asyncio.Task | None = None

    async def connect(self, url: str) -> None:
        self.ws = await connect(url, max_size=1 << 22, ping_interval=None, open_timeout=30)
        await self.ws.send(dumps({"op": "auth", "ref": "a", "handle": self.handle, "password": self.password,
                                  "prefetch": 1}))
        session = decode(await self.ws.recv())
        if session.get("op") != "session":
            raise RuntimeError(f"the bench's person could not sign in: {session}")
        self.id = session["me"]["id"]
        self.reader = asyncio.ensure_future(self._read())

    async def write(self, topic: str, agent: str, title: str | None = None) -> dict:
        ref = next(self.seq)
        fut = self.waiting[ref] = asyncio.get_running_loop().create_future()
        await self.ws.send(dumps({"op": "send", "ref": ref, "workspace": self.gen.workspace, "conversation": "general",
                                  "topic": topic, "title": title, "type": "inform", "to": [agent],
                                  "text": f"go on, {agent}"}))
        reply = await asyncio.wait_for(fut, 60)
        if reply.get("op") != "sent":
            raise RuntimeError(f"the bench's person could not write: {reply}")
        return reply

    async def _read(self) -> None:
        try:
            async for raw in self.ws:
                f = decode(raw)
                fut = self.waiting.pop(f.get("ref"), None) if f.get("op") in ("sent", "refused", "error") else None
                if fut is not None and not fut.done():
                    fut.set_result(f)
        except websockets.ConnectionClosed:
            pass


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
        self.hops_left = MAX_HOPS  # hops its person's last message left its topic, each request reserving two
        self.waiting_for = 0  # its requests not answered yet
        self.buying = False  # its person is writing in its topic
        self.opened: asyncio.Future | None = None
        self.ws = None
        self.reader: asyncio.Task | None = None

    async def connect(self) -> None:
        self.ws = await connect(self.url or self.gen.url, max_size=1 << 20, compression=self.gen.compression,
                                ping_interval=None, open_timeout=30)
        await self.ws.send(dumps({"op": "auth", "ref": "a", "api_key": self.key, "prefetch": 64,
                                   "directives": self.gen.directives}))
        session = decode(await self.ws.recv())
        if session.get("op") != "session":
            raise RuntimeError(f"{self.name} could not authenticate: {session}")
        self.reader = asyncio.ensure_future(self._read())

    async def open_topic(self) -> None:
        """The one topic this agent works in (and reuses): its person opens it, or else the agent does, with a first
        request to its first peer."""
        person = self.gen.person
        if person is not None:
            self.topic = (await person.write("new", self.name, title=f"Bench topic of {self.name}"))["message"]["topic"]
            await self.request()
            return
        self.opened = asyncio.get_running_loop().create_future()
        await self.request(title=f"Bench topic of {self.name}")
        self.topic = await asyncio.wait_for(self.opened, 60)

    async def request(self, title: str | None = None) -> bool:
        """Ask the next free peer, never the one asked last: else a topic could hold 8 messages in a row with
        one peer when only that peer is free at each tick, and the loop rule (seed 000) would stop it."""
        if not self.free or list(self.free) == [self.last]:
            return False
        if self.gen.person is not None and self.topic is not None:
            if self.hops_left < 2:  # a request and its answer: two hops of what its person's message bought
                if not self.buying:
                    self.buying = True
                    asyncio.ensure_future(self._buy())  # (reading goes on meanwhile)
                return False
            self.hops_left -= 2
            self.waiting_for += 1
        peer = self.free.popleft()
        if peer == self.last:
            self.free.append(peer)
            peer = self.free.popleft()
        self.last = peer
        self.seq += 1
        self.gen.window.outstanding += 1
        t = time.monotonic_ns()
        await self.ws.send(dumps({
            "op": "send", "ref": self.seq, "workspace": self.gen.workspace, "conversation": "general",
            "topic": self.topic or "new", "title": title, "type": "request", "to": [peer],
            "text": f"req {self.name}#{self.seq} for {peer} t{t}",
        }))
        return True

    async def _buy(self) -> None:
        """Its person writes in its topic, buying it party.maxHops hops again, then it asks its next peer. The answers
        still to come when it starts writing may land in the new count: each keeps a hop of it (counted then, not
        when the write is answered: one that came meanwhile may have been decided after the person's message, and
        in 2 runs of 3 the hop limit stopped such an answer)."""
        outstanding = self.waiting_for  # (no request goes out while it buys)
        try:
            await self.gen.person.write(self.topic, self.name)
            self.hops_left = MAX_HOPS - outstanding
        finally:
            self.buying = False
        if self.gen.window.running:
            await self.request()

    async def _read(self) -> None:
        gen = self.gen
        names = gen.names
        try:
            async for raw in self.ws:
                now = time.monotonic_ns()
                f = decode(raw)
                op = f["op"]
                w = gen.window
                if op == "deliver":
                    m = f["message"]
                    if gen.person is not None and m["author"] == gen.person.id:  # its person's word: context
                        await self.ws.send(dumps({"op": "ack", "ids": [f["id"]]}))
                        continue
                    if m.get("notice") or m["author"] not in names:
                        w.result.errors[f"notice:{m.get('notice')}"] += 1
                        await self.ws.send(dumps({"op": "ack", "ids": [f["id"]]}))
                        continue
                    text = m["text"]
                    t = int(text[text.rindex(" t") + 2:])
                    w.result.total += 1
                    if w.start <= now < w.end:
                        w.result.delivered += 1
                    if w.start <= t < w.end:
                        w.result.latencies.append(now - t)
                    await self.ws.send(dumps({"op": "ack", "ids": [f["id"]]}))
                    if not f["wake"]:
                        w.result.errors[f"context:{f['reason']}"] += 1
                    if m["type"] == "request":
                        if f["wake"]:
                            self.seq += 1
                            t = time.monotonic_ns()
                            await self.ws.send(dumps({
                                "op": "send", "ref": self.seq, "workspace": gen.workspace, "conversation": "general",
                                "topic": m["topic"], "type": "response", "in_reply_to": m["id"],
                                "to": [names[m["author"]]], "text": f"re {self.name}#{self.seq} t{t}",
                            }))
                    elif m["type"] == "response":
                        self.free.append(names[m["author"]])
                        w.outstanding -= 1
                        self.waiting_for -= 1
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
        self.person = Person(self, *target.person) if target.person else None
        self.person_url = target.url

    async def connect(self) -> None:
        sem = asyncio.Semaphore(20)
        if self.person is not None:
            await self.person.connect(self.person_url)

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
