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
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import Counter
from typing import Any, Callable

import msgspec
import websockets

from ..client import Client, Refused
from ..protocol.names import TITLE
from ..core import SYSTEM, general_id
from . import backends, corpus, directives, tools as toolbox
from .config import AgentConfig
from .state import AgentState
from .types import Step, ToolCall, ToolResult, TurnInput, TurnOutput

log = logging.getLogger("ygg.agents.bridge")

CONNECTION_ERRORS = (ConnectionError, OSError, asyncio.TimeoutError, TimeoutError, websockets.WebSocketException)
_enc = msgspec.json.Encoder()


def _clip(s: str, n: int) -> str:
    s = " ".join((s or "").split())
    return s if len(s) <= n else s[: n - 1] + "…"


class Bridge:
    def __init__(self, cfg: AgentConfig, backend: backends.Backend | None = None, *,
                 client_factory: Callable[..., Client] = Client, timeout: float = 30.0):
        self.cfg = cfg
        self.backend = backend or backends.make(cfg)
        self.dir = cfg.data_path()
        self.dir.mkdir(parents=True, exist_ok=True)
        self.state = AgentState(self.dir)
        self.persona = ""  # the persona document as last read from the server (it is stored there)
        self.tools = toolbox.select(cfg.tools)
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

    def _observe(self, m: dict) -> None:
        """Memory: transcript, requests owed to us, answers to our requests."""
        self.state.seen(m)
        me = self.me.get("id")
        if m.get("author") == me:
            return
        if (m.get("type") == "request" and me in (m.get("to") or []) and m.get("author") != SYSTEM
                and m["id"] not in self.state.data.setdefault("answered", [])):
            self.state.owed.setdefault(m["id"], {"topic": m.get("topic"), "message": m, "at": time.time()})
        ask = self.state.asked.get(m.get("in_reply_to") or "")
        if ask is not None and m.get("type") in ("response", "request", "inform"):
            who = self._name(m.get("workspace"), m.get("author"))
            ask.setdefault("answers", {})[who] = m.get("text", "")
            got = set(ask.setdefault("answered_by", []))
            got.add(m.get("author"))
            ask["answered_by"] = sorted(got)
            ask["open"] = bool(set(ask.get("to_ids") or []) - got)

    async def _closure_poll(self, frame: dict) -> None:
        poll = frame["message"]
        topic = poll.get("topic")
        did = frame["id"]
        if self.cfg.closure_polls == "model" and not self.state.broke:
            await self._turn(frame, "closure_poll", poll, str(did))
            return
        if not self.state.broke:
            for oid, o in self._runnable_owed(topic):
                await self._turn(frame, "request", o["message"], f"{did}.{oid}")
                if self._halt:
                    break
        waiting = self.state.open_asks(topic)
        left = self.state.owed_in(topic) or [e for e in self.state.deferred() if (e.get("target") or {}).get("topic") == topic]
        if waiting:
            names = sorted({n for _, a in waiting for n in a.get("to") or []})
            state, text = "waiting", f"Not yet: I am waiting on {', '.join(names)}."
        elif left:
            state, text = "working", ("Not yet: I am out of credits with work left here." if self.state.broke
                                      else "Not yet: I still owe an answer here.")
        else:
            state, text = "done", "Done on my side."
        fields = {"workspace": poll["workspace"], "conversation": poll["conversation"], "topic": topic,
                  "type": "response", "in_reply_to": poll["id"], "to": [SYSTEM], "state": state, "text": text}
        if state == "waiting":
            fields["waiting_for"] = sorted({i for _, a in waiting for i in a.get("to_ids") or []})
        await self._send(fields, f"{did}:poll")

    async def _owed(self, frame: dict, notice: str) -> None:
        """A nudge or a resume: answer what we owe on that topic (or, for a topic-less resume, retry opens)."""
        msg = frame["message"]
        topic = msg.get("topic")
        did = frame["id"]
        if topic is None:  # resumed after a topic closed: the topic_limit refusals may go again
            for e in self.state.deferred():
                if e.get("deferred") == "topic_limit":
                    await self._replay(e)
            return
        if self.state.broke:
            return
        owed = self._runnable_owed(topic)
        for oid, o in owed:
            await self._turn(frame, "request", o["message"], f"{did}.{oid}")
            if self._halt:
                return
        if not self.state.owed_in(topic) and notice == "nudge":
            waiting = self.state.open_asks(topic)
            text = ("I owe nothing here that I know of; I am waiting on "
                    f"{', '.join(sorted({n for _, a in waiting for n in a.get('to') or []}))}." if waiting else
                    "I owe nothing here that I know of. Ask me again if you need something.")
            await self._send({"workspace": msg["workspace"], "conversation": msg["conversation"], "topic": topic,
                              "type": "inform", "state": "waiting" if waiting else "done", "text": text},
                             f"{did}:status")

    def _runnable_owed(self, topic: str | None) -> list[tuple[str, dict]]:
        """Owed requests with no turn in progress: one whose turn asked someone else waits for that answer."""
        busy = {a.get("parent") for _, a in self.state.open_asks()}
        return [(i, o) for i, o in self.state.owed_in(topic) if i not in busy]

    async def _refilled(self, frame: dict) -> None:
        self.state.broke = False
        self.state.save()
        for e in self.state.deferred():
            if e.get("deferred") == "credits_exhausted":
                await self._replay(e)
                if self._halt == "credits_exhausted":
                    return

    async def _replay(self, entry: dict) -> None:
        entry["deferred"] = False
        self.state.save()
        await self._turn(entry["frame"], entry.get("why", "request"), entry.get("target") or entry["frame"]["message"],
                         entry["key"])
        if not self.state.journal_entry(entry["key"]).get("deferred"):
            self.state.drop(entry["key"])
            self.state.save()

    # --- one turn ---

    async def _turn(self, frame: dict, why: str, target: dict, key: str) -> str:
        """Run (or replay) one turn answering `target`; returns done | failed | deferred."""
        self._halt = None
        entry = self.state.begin(key, frame, why, target)
        if entry.get("complete"):
            return "done"
        if self.state.broke:
            entry["deferred"] = "credits_exhausted"
            self.state.save()
            self.stats["deferred"] += 1
            return "deferred"
        started = time.monotonic()
        event = await self._event(frame, why, target, key)
        own = target.get("id") == frame["message"].get("id")
        inp_base = dict(directive=self._directive(event, frame, own), tools=self.tools, event=event)
        steps: list[Step] = []
        failing = toolbox.FailingCalls(self.cfg.max_tool_failures)
        out = TurnOutput()
        replayed = 0
        for k in range(self.cfg.max_steps + 1):
            if k < len(entry["steps"]):
                out = msgspec.convert(entry["steps"][k], TurnOutput)
                replayed += 1
            else:
                out = await self._call(TurnInput(steps=list(steps), **inp_base))
                entry["steps"].append(msgspec.to_builtins(out))
                self.state.save()
                self._log_turn(key, why, out, time.monotonic() - started)
            if out.failed:
                await self._failed(frame, target, out, key)
                entry["complete"] = True
                self.state.save()
                return "failed"
            if not out.tool_calls or k == self.cfg.max_steps:
                break
            results = []
            for i, call in enumerate(out.tool_calls):
                refused = failing.refusal(call)
                if refused is not None:
                    self.stats["tool_repeat_refused"] += 1
                    results.append(refused)
                    continue
                result = await self._tool(call, target, f"{key}:{k}:{i}", why)
                failing.record(call, result)
                results.append(result)
                if self._halt:
                    return self._deferred(entry)
            steps.append(Step(text=out.text or "", calls=out.tool_calls, results=results))
        if replayed:
            self.stats["replayed_rounds"] += replayed
        if out.text:
            fields = self._outgoing(out, target)
            await self._send(fields, f"{key}:reply", parent=target if fields["type"] == "request" else None)
            if self._halt:
                return self._deferred(entry)
        entry["complete"] = True  # saved with the ack; a replay before it only re-sends (deduplicated)
        self.stats["turns"] += 1
        return "done"

    def _deferred(self, entry: dict) -> str:
        entry["deferred"] = self._halt
        self.state.save()
        self.stats["deferred"] += 1
        return "deferred"

    async def _call(self, inp: TurnInput) -> TurnOutput:
        try:
            return await self.backend.turn(inp)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # a backend must not raise, but if one does it is a failed turn
            log.exception("%s: backend raised", self.name)
            return TurnOutput(error=f"{type(e).__name__}: {e}")

    async def _failed(self, frame: dict, target: dict, out: TurnOutput, key: str) -> None:
        """A failed turn is surfaced, never fatal: the request stays owed and is tried again later."""
        self.stats["failed_turns"] += 1
        log.warning("%s: turn failed: %s", self.name, out.error)
        owed = self.state.owed.get(target.get("id") or "")
        again = False
        if owed is not None:
            owed["failures"] = owed.get("failures", 0) + 1
            if owed["failures"] <= self.cfg.failed_retries:
                again = True
                self._retries.append((time.monotonic() + self.cfg.retry_failed_after, owed["failures"], frame, target))
            self.state.save()
        if self.cfg.on_failure != "inform" or target.get("author") == SYSTEM or not target.get("topic"):
            return
        author = self._name(target.get("workspace"), target.get("author"))
        then = (f"I will try again in {self.cfg.retry_failed_after:g}s." if again else
                "I still owe you an answer; a nudge or a new message makes me try again.")
        await self._send({"workspace": target["workspace"], "conversation": target["conversation"],
                          "topic": target["topic"], "type": "inform", "state": "working", "to": [author],
                          "text": f"I could not answer this turn ({_clip(out.error or '', 200)}). {then}"},
                         f"{key}:failed")

    def _side_done(self, target: dict) -> dict | None:
        """Seed 003 §15: "only the final result is sent back where it was asked for". The ask `target`
        answers, when the server moved it into a side conversation (ours was a request in a direct
        conversation), it came from a request we still owe, and nobody it asked is still to answer: the
        turn's answer then goes back to that request, in its own topic (not into the side conversation)."""
        ask = self.state.asked.get(target.get("in_reply_to") or "")
        if (target.get("type") != "response" or not ask or not ask.get("parent")
                or ask.get("conversation") == ask.get("parent_conversation") or ask["parent"] not in self.state.owed):
            return None
        if any(a.get("open") for a in self.state.asked.values() if a.get("parent") == ask["parent"]):
            return None
        return ask

    def _outgoing(self, out: TurnOutput, target: dict) -> dict:
        side = None if (out.topic or out.conversation or out.in_reply_to) else self._side_done(target)
        if side is not None:
            out = msgspec.structs.replace(out, type=out.type or "response", in_reply_to=side["parent"],
                                          topic=side.get("parent_topic"), conversation=side.get("parent_conversation"))
            target = {**target, "id": side["parent"]}
        owed = target.get("id") in self.state.owed
        poll = target.get("author") == SYSTEM and target.get("notice") == "closure_poll"
        mtype = out.type or ("response" if owed or poll else "inform")
        if poll and out.to is None:
            out.to = [SYSTEM]  # answering a poll is free and goes to system.ygg
        fields: dict[str, Any] = {
            "workspace": target["workspace"],
            "conversation": out.conversation or target["conversation"],
            "topic": out.topic or target.get("topic"),
            "type": mtype,
            "state": out.state or ("waiting" if mtype == "request" else "done"),
            "text": out.text,
        }
        if mtype == "response":
            fields["in_reply_to"] = out.in_reply_to or target.get("id")
        elif out.in_reply_to:
            fields["in_reply_to"] = out.in_reply_to
        if out.to is not None and out.to:
            fields["to"] = out.to
        if out.waiting_for:
            fields["waiting_for"] = out.waiting_for
        if out.title or fields["topic"] == "new":
            fields["title"] = _clip(out.title, TITLE) if out.title else _clip(out.text or "", 60)
        return fields

    # --- tools ---

    async def _tool(self, call: ToolCall, target: dict, client_id: str, why: str) -> ToolResult:
        def ok(content: Any) -> ToolResult:
            return ToolResult(call_id=call.id, name=call.name,
                              content=content if isinstance(content, str) else json.dumps(content, ensure_ascii=False))

        def err(content: str) -> ToolResult:
            return ToolResult(call_id=call.id, name=call.name, content=content, is_error=True)

        self.stats[f"tool:{call.name}"] += 1
        if call.name not in {t.name for t in self.tools}:
            return err(f"you have no tool called {call.name}")
        a = call.arguments or {}
        try:
            if call.name == "persona_read":
                self.persona = (await self.client.call("get_persona"))["text"]
                return ok(self.persona)
            if call.name == "persona_write":
                text = a.get("text")
                if not isinstance(text, str):
                    return err("persona_write needs a text")
                reply = await self.client.request("set_persona", text=text, why=str(a.get("why", "")))
                if reply.get("op") != "set_persona":
                    self.stats["persona_refused"] += 1
                    return err(f"refused {reply.get('reason') or reply.get('code')}: {reply.get('detail', '')}")
                self.persona = text
                return ok(f"persona saved ({len(text)} characters, version {reply['version']}); "
                          "it shows in your next turn")
            if call.name == "search_corpus":
                found = corpus.search(str(a.get("query", "")), self.cfg.corpus)
                return ok([{"title": s.title, "text": s.text} for _, s in found])
            if call.name == "search_history":
                reply = await self.client.call("search_messages", workspace=target["workspace"],
                                               query=str(a.get("query", "")), limit=10)
                return ok([{"id": m["id"], "author": self._name(m["workspace"], m["author"]), "text": m["text"][:300]}
                           for m in reply.get("messages", [])])
            if call.name == "remember":
                self.state.remember(str(a.get("note", "")))
                self.state.save()
                return ok("noted")
            if call.name == "send_message":
                return await self._send_tool(a, target, client_id, why, ok, err)
        except Refused as e:
            return err(str(e))
        return err(f"{call.name} is not available")

    async def _send_tool(self, a: dict, target: dict, client_id: str, why: str, ok, err) -> ToolResult:
        text = a.get("text")
        if not isinstance(text, str) or not text.strip():
            return err("send_message needs a text")
        mtype = a.get("type") if a.get("type") in ("request", "response", "inform") else "request"
        fields: dict[str, Any] = {
            "workspace": target["workspace"],
            "conversation": a.get("conversation") or target["conversation"],
            "topic": a.get("topic") or target.get("topic"),
            "type": mtype, "text": text,
            "state": a.get("state") if a.get("state") in ("working", "waiting", "needs_human", "done") else
            ("waiting" if mtype == "request" else "working"),
        }
        for k in ("to", "waiting_for"):
            v = a.get(k)
            if isinstance(v, str):
                v = [v]
            if isinstance(v, list) and v:
                fields[k] = [x for x in v if isinstance(x, str)]
        for k in ("title", "in_reply_to"):
            if isinstance(a.get(k), str) and a[k]:
                fields[k] = _clip(a[k], TITLE) if k == "title" else a[k]  # (a model's title: one line, in bounds)
        if fields["topic"] == "new" and "title" not in fields:
            fields["title"] = _clip(text, 60)
        parent = target if why in ("request", "person") and target.get("id") in self.state.owed else None
        reply = await self._send(fields, client_id, parent=parent)
        if reply.get("op") == "sent":
            m = reply["message"]
            return ok({"sent": m["id"], "topic": m["topic"], "conversation": m["conversation"],
                       "cost": reply.get("cost"), "duplicate": bool(reply.get("duplicate"))})
        return ok({"refused": reply.get("reason") or reply.get("code"), "detail": reply.get("detail", "")})

    # --- talking to the server ---

    async def _send(self, fields: dict, client_id: str, parent: dict | None = None) -> dict:
        """Send once (retrying across reconnects with the same client_id); handle refusals by the rulebook."""
        reply = await self._retrying(lambda: self.client.send(client_id=client_id, **fields))
        if reply.get("op") == "refused":
            reason = reply.get("reason")
            self.stats[f"refused:{reason}"] += 1
            log.info("%s: send refused %s: %s", self.name, reason, reply.get("detail"))
            if reason == "title_required" and "title" not in fields:
                return await self._send({**fields, "title": _clip(fields.get("text", ""), 60)}, client_id, parent)
            if reason == "unknown_recipient" and fields.get("to") and fields.get("type") != "request":
                return await self._send({k: v for k, v in fields.items() if k != "to"}, client_id, parent)
            if reason == "credits_exhausted":
                self.state.broke = True
                self._halt = reason
            elif reason == "topic_limit":
                self._halt = reason
            elif reason == "topic_closed" and fields.get("topic"):
                self.state.forget_topic(fields["topic"])
            self.state.save()
            return reply
        if reply.get("op") != "sent":
            self.stats["send_errors"] += 1
            log.warning("%s: send failed: %s", self.name, reply)
            return reply
        self.stats["duplicates" if reply.get("duplicate") else "sent"] += 1
        self._after_sent(reply, fields, parent)
        return reply

    def _after_sent(self, reply: dict, fields: dict, parent: dict | None) -> None:
        m = reply["message"]
        self.state.seen(m)
        irt = m.get("in_reply_to")
        if m.get("type") == "response" and irt in self.state.owed:
            del self.state.owed[irt]
            answered = self.state.data.setdefault("answered", [])
            answered.append(irt)
            del answered[:-1000]
        if m.get("type") == "request" and m.get("to") and m.get("to") != [SYSTEM]:
            ask = self.state.asked.setdefault(m["id"], {})
            ask.update(id=m["id"], topic=m["topic"], conversation=m["conversation"], workspace=m["workspace"],
                       text=m["text"], to_ids=list(m["to"]), to=[self._name(m["workspace"], i) for i in m["to"]],
                       needs_human=m.get("state") == "needs_human", at=time.time())
            ask.setdefault("answers", {})
            ask.setdefault("answered_by", [])
            ask["open"] = bool(set(m["to"]) - set(ask["answered_by"]))
            if parent is not None:
                ask.update(parent=parent["id"], parent_topic=parent.get("topic"),
                           parent_conversation=parent.get("conversation"), parent_text=parent.get("text", ""))
        # not saved here: the next round, the turn's end or the ack saves it, and a replay after a crash
        # re-sends with the same client_id, gets the stored reply, and records it again

    async def _ack(self, did: int) -> None:
        await self._retrying(lambda: self.client.ack([did]))
        self.state.finish(did)
        self.state.save()
        self.stats["acked"] += 1

    async def _retrying(self, op) -> dict:
        delay = 0.1
        while True:
            try:
                return await op()
            except CONNECTION_ERRORS as e:
                if self._stopping:
                    raise
                self.stats["retries"] += 1
                log.info("%s: connection trouble (%s); retrying", self.name, e)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)

    # --- what the agent is told ---

    async def _members(self, ws: str, refresh: bool = False) -> dict[str, dict]:
        if ws not in self._roster or refresh:
            try:
                rows = (await self.client.call("list_members", workspace=ws))["members"]
            except (Refused, *CONNECTION_ERRORS):
                rows = []
            self._roster[ws] = {r["id"]: r for r in rows}
        return self._roster[ws]

    async def _conversation_kind(self, ws: str, cid: str) -> str | None:
        kinds = self._conversations.get(ws)
        if kinds is None or cid not in kinds:
            try:
                rows = (await self.client.call("list_conversations", workspace=ws))["conversations"]
            except (Refused, *CONNECTION_ERRORS):
                rows = []
            kinds = self._conversations[ws] = {r["id"]: r["kind"] for r in rows}
        return kinds.get(cid)

    def _name(self, ws: str | None, pid: str | None) -> str:
        if pid == SYSTEM or pid is None:
            return pid or "?"
        row = self._roster.get(ws or "", {}).get(pid)
        if row is None:
            return pid
        return "@" + row["handle"] if row.get("kind") == "human" else row["name"]

    def _kind(self, ws: str | None, pid: str | None) -> str:
        if pid == SYSTEM:
            return "system"
        row = self._roster.get(ws or "", {}).get(pid or "")
        if row is not None:
            return row["kind"]
        return "human" if (pid or "").startswith("human.") else "agent"

    def _view(self, m: dict) -> dict:
        ws = m.get("workspace")
        return {**m, "author_name": self._name(ws, m.get("author")), "author_kind": self._kind(ws, m.get("author")),
                "to_names": [self._name(ws, t) for t in m.get("to") or []]}

    async def _event(self, frame: dict, why: str, target: dict, key: str) -> dict[str, Any]:
        ws = target["workspace"]
        members = await self._members(ws)
        ids = {target.get("author"), *(target.get("to") or [])} - {SYSTEM, None}
        if ids - members.keys():
            members = await self._members(ws, refresh=True)
        topic = target.get("topic")
        main = key == str(frame["id"])
        context = [m for m in frame.get("context") or [] if m["id"] != target["id"]] if main else []
        shown = {target["id"], *(m["id"] for m in context)}
        me = self.me.get("id")
        owner = next((r.get("person") for r in members.values() if r["id"] == me), None)
        asked_all = [{**a, "id": i} for i, a in list(self.state.asked.items())[-50:]]
        event: dict[str, Any] = {
            "me": {"id": me, "name": self.name, "owner": owner},
            "why": why,
            "message": self._view(target),
            "context": [self._view(m) for m in context],
            "topic": {"id": topic, "title": self.state.topic_title(topic), "conversation": target.get("conversation"),
                      "workspace": ws},
            "conversation_kind": await self._conversation_kind(ws, target.get("conversation")),
            "transcript": [self._view({**m, "workspace": ws}) for m in self.state.transcript(topic) if m["id"] not in shown],
            "owed": [{"id": i, "author_name": self._name(ws, o["message"].get("author")), "text": o["message"].get("text", "")}
                     for i, o in self.state.owed_in(topic)],
            "asked": [a for a in asked_all if a.get("topic") == topic],
            "asked_all": asked_all,
            "notes": list(self.state.notes),
            "rulebook": (frame.get("directive") or {}).get("rulebook") or self._rulebook(target),
            "roster": sorted(("@" + r["handle"]) if r["kind"] == "human" else r["name"] for r in members.values()),
            "people": sorted("@" + r["handle"] for r in members.values() if r["kind"] == "human"),
            "owner": f"@{owner}" if owner else None,
            "broke": self.state.broke,
        }
        if target.get("id") in self.state.owed:
            event["expect"] = {"type": "response", "in_reply_to": target["id"], "state": "done"}
        return event

    def _rulebook(self, target: dict) -> dict:
        """The config's rulebook, for a frame that carries no directive from the server."""
        ws = target["workspace"]
        return directives.rulebook_for(target.get("conversation"), general=general_id(ws), default=self.cfg.rulebook,
                                       per_conversation=self.cfg.rulebooks)

    def _directive(self, event: dict, frame: dict, own_turn: bool):
        return directives.compute(name=self.name, role=self.cfg.role, persona=self.persona,
                                  rulebook=event["rulebook"], event=event, tools=self.tools,
                                  tools_in_prompt=not backends.native_tools(self.backend),
                                  issued=frame.get("directive"), own_turn=own_turn)

    def _log_turn(self, key: str, why: str, out: TurnOutput, seconds: float) -> None:
        rec = {"at": time.time(), "key": key, "why": why, "backend": getattr(self.backend, "name", "?"),
               "seconds": round(seconds, 4), "error": out.error, "tool_calls": [c.name for c in out.tool_calls],
               "usage": out.usage}
        try:
            with (self.dir / "turns.jsonl").open("a", encoding="utf-8") as f:
                f.write(json.dumps(rec, default=str) + "\n")
        except OSError:
            pass


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
