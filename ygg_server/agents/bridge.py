"""`ygg-agent`'s bridge: one agent on the socket, its wakes turned into turns on its backend.

For each wake (with the context that piled up since the last one) the bridge:

1. records what it sees in the agent's memory (requests it now owes, answers to
   requests it made, a short transcript per topic);
2. handles the rulebook's notices itself, the same for every backend: a
   closure poll is answered (free, to system.ygg) with done, or with what is
   left; a nudge or a resume gets the owed requests answered; credits_refilled
   replays what a credits_exhausted refusal stopped;
3. otherwise follows the directive the server issued with the wake (adding its
   answer format and memory, directives.py), runs the turn on the backend, runs
   its tool calls between rounds (bounded; the same failing call is not run
   again and again, tools.FailingCalls), and sends the answer with the right
   type, state and in_reply_to;
4. acks the wake only after the answer is stored by the server.

Every send carries a client_id derived from the delivery id (`"{delivery}:…"`),
and every round of a turn is journaled in the agent's data dir before its
effects, so a turn retried after a reconnect or a restart replays: the model
is not asked twice and the server stores each message once. While the agent
is out of credits it stops: further wakes are journaled (deferred) and acked,
and replayed when credits_refilled arrives.

Here the connection loop and the dispatch of each delivery; the Bridge is mixed from its parts: the
notices (notice_replies.py), one turn with its tools (turn.py), what the agent is told (briefing.py),
what it remembers of each message (memory.py), and sending and acking (outbox.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from typing import Any, Callable

from ..client import Client, Refused
from ..core import SYSTEM
from . import backends, tools as toolbox
from .briefing import Briefing
from .config import AgentConfig
from .kit import Kit
from .memory import Memory
from .notice_replies import NoticeReplies
from .outbox import CONNECTION_ERRORS, Outbox
from .state import AgentState
from .turn import TurnRunner

log = logging.getLogger("ygg.agents.bridge")


class Bridge(NoticeReplies, TurnRunner, Briefing, Kit, Memory, Outbox):
    def __init__(self, cfg: AgentConfig, backend: backends.Backend | None = None, *,
                 client_factory: Callable[..., Client] = Client, timeout: float = 30.0):
        self.cfg = cfg
        self.backend = backend or backends.make(cfg)
        self.dir = cfg.data_path()
        self.dir.mkdir(parents=True, exist_ok=True)
        self.state = AgentState(self.dir)
        self.persona = ""  # the persona document as last read from the server (it is stored there)
        self.tools = toolbox.select(cfg.tools)  # until the server says which are attached (kit.py)
        self.skills_prompt = ""  # the compact list of its active skills (kit.py)
        self.skills: list[str] = []  # their names
        self.client_factory = client_factory
        self.timeout = timeout
        self.client: Client | None = None
        self.me: dict[str, Any] = {}
        self.connected = asyncio.Event()  # set once the first session is open (the supervisor waits on it)
        self.stats: Counter = Counter()
        self._roster: dict[str, dict[str, dict]] = {}  # workspace -> participant id -> member row
        self._conversations: dict[str, dict[str, str]] = {}  # workspace -> conversation id -> kind
        self._stopping = False
        self._halt: str | None = None  # set by a refusal that stops the current turn
        self._task: asyncio.Task | None = None
        self._retries: list[tuple[float, int, dict, dict]] = []  # (when, attempt, wake frame, request) after a failed turn

    @property
    def name(self) -> str:
        return self.me.get("handle") or self.cfg.name

    # --- running ---

    async def connect(self) -> None:
        delay = 0.2
        while not self._stopping:
            self.client = self.client_factory(self.cfg.url, api_key=self.cfg.ygg_key(), timeout=self.timeout)
            try:
                session = await self.client.connect()
            except Refused:
                await self.client.close()
                raise  # a wrong or revoked key will not get better by retrying
            except CONNECTION_ERRORS as e:
                await self.client.close()
                log.info("%s: cannot connect yet (%s); retrying in %.1fs", self.cfg.name, e, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)
                continue
            self.me = session["me"]
            await self._seed_persona()
            self.connected.set()
            log.info("%s connected as %s", self.cfg.name, self.me.get("id"))
            return

    async def _seed_persona(self) -> None:
        """The persona lives on the server; the first start writes the config's (or an older local persona.md)."""
        try:
            self.persona = (await self.client.call("get_persona"))["text"]
            if not self.persona:
                local = self.dir / "persona.md"
                seed = local.read_text(encoding="utf-8") if local.exists() else self.cfg.persona
                if seed.strip():
                    await self.client.call("set_persona", text=seed, why="initial")
                    self.persona = seed
        except (Refused, *CONNECTION_ERRORS) as e:
            log.warning("%s: persona not read or seeded: %s", self.name, e)

    async def run(self) -> None:
        """Connect, then take wakes until stopped. Never returns on a bad turn, only on stop (or a bad key)."""
        self._task = asyncio.current_task()
        await self.connect()
        while not self._stopping:
            wait = None
            if self._retries:
                wait = max(0.0, min(r[0] for r in self._retries) - time.monotonic())
            try:
                frame = await self.client.next_delivery(timeout=wait)
            except (asyncio.TimeoutError, TimeoutError):
                await self._due_retries()
                continue
            try:
                await self.handle(frame)
            except asyncio.CancelledError:
                raise
            except Exception:  # a bug in one wake must not kill the agent; the wake is offered again later
                self.stats["crashed_wakes"] += 1
                log.exception("%s: handling delivery %s failed", self.name, frame.get("id"))

    async def _due_retries(self) -> None:
        """Failed turns on requests still owed are tried again, a bounded number of times."""
        now = time.monotonic()
        due = [r for r in self._retries if r[0] <= now]
        self._retries = [r for r in self._retries if r[0] > now]
        for _, n, frame, target in due:
            if target["id"] not in self.state.owed or self.state.broke:
                continue
            key = f"retry.{target['id']}.{n}"
            self.stats["retried_turns"] += 1
            outcome = await self._turn(frame, "request", target, key)
            if outcome != "deferred":
                self.state.drop(key)
                self.state.save()

    async def stop(self) -> None:
        """Stop taking wakes: a turn in progress is cut short (its journal lets it resume next time)."""
        self._stopping = True
        task = self._task
        if task is not None and task is not asyncio.current_task() and not task.done():
            task.cancel()
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass
        if self.client is not None:
            await self.client.close()
        await self.backend.close()

    # --- the protocol around a turn ---

    async def handle(self, frame: dict) -> None:
        did = frame["id"]
        if self.state.is_done(did):
            await self._ack(did)
            return
        self.stats["deliveries"] += 1
        msg = frame["message"]
        for m in frame.get("context") or []:
            self._observe(m)
        self._observe(msg)  # saved with the turn's first round or the ack; a re-offered wake observes again
        if not frame.get("wake"):
            await self._ack(did)
            return
        self.stats["wakes"] += 1
        if msg.get("author") == SYSTEM:
            notice = msg.get("notice")
            if notice == "closure_poll":
                await self._closure_poll(frame)
            elif notice == "credits_refilled":
                await self._refilled(frame)
            elif notice in ("nudge", "resume"):
                await self._owed(frame, notice)
            await self._ack(did)
            return
        await self._turn(frame, self._why(msg), msg, str(did))
        await self._ack(did)

    def _why(self, msg: dict) -> str:
        if msg.get("type") == "response" and msg.get("in_reply_to") in self.state.asked:
            return "response"
        if msg.get("type") == "request":
            return "request"
        return "person" if self._kind(msg.get("workspace"), msg.get("author")) == "human" else "other"


class Supervisor:
    """Starts bridges one at a time, each connected before the next (seed 003 §25), and stops them all."""

    def __init__(self, bridges: list[Bridge], connect_timeout: float = 30.0):
        self.bridges = list(bridges)
        self.connect_timeout = connect_timeout
        self.tasks: dict[str, asyncio.Task] = {}
        self.order: list[str] = []

    async def start(self) -> None:
        for b in self.bridges:
            task = asyncio.create_task(b.run(), name=f"ygg-agent:{b.cfg.name}")
            self.tasks[b.cfg.name] = task
            ready = asyncio.create_task(b.connected.wait())
            done, _ = await asyncio.wait({task, ready}, timeout=self.connect_timeout,
                                         return_when=asyncio.FIRST_COMPLETED)
            if ready not in done:
                ready.cancel()
                if task in done and task.exception() is not None:
                    log.error("agent %s did not start: %s", b.cfg.name, task.exception())
                else:
                    log.error("agent %s did not connect within %.0fs; going on", b.cfg.name, self.connect_timeout)
                continue
            self.order.append(b.cfg.name)

    async def stop(self) -> None:
        for b in self.bridges:
            await b.stop()
        for t in self.tasks.values():
            t.cancel()
        for t in self.tasks.values():
            try:
                await t
            except (asyncio.CancelledError, Exception):
                pass

    async def wait(self) -> None:
        await asyncio.gather(*self.tasks.values(), return_exceptions=True)
