"""One turn of the bridge: the directive followed, the rounds on the backend with its tool calls run
between them (bounded; the same failing call is not run again and again, tools.FailingCalls), each round
journaled before its effects, and the answer sent with the right type, state and in_reply_to."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import time
from typing import Any

import msgspec

from ..client import Refused
from ..core import SYSTEM
from ..core.approvals import call_arg
from ..protocol.names import TITLE
from . import corpus, tools as toolbox
from .outbox import clip
from .types import Step, ToolCall, ToolResult, TurnInput, TurnOutput

log = logging.getLogger("ygg.agents.bridge")


class TurnRunner:
    """Mixed into the Bridge: `_turn` and what it needs, the tools (`_tool`) and the turn log."""

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
        await self._refresh_kit()
        event = await self._event(frame, why, target, key)
        event["skills"] = list(self.skills)
        event["recalled"] = await self._recall(target)  # under cfg.recall_budget: a slow source is left out
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
                          "text": f"I could not answer this turn ({clip(out.error or '', 200)}). {then}"},
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
        if out.card:
            fields["card"] = out.card
        if out.title or fields["topic"] == "new":
            fields["title"] = clip(out.title, TITLE) if out.title else clip(out.text or "", 60)
        return fields

    async def _tool(self, call: ToolCall, target: dict, client_id: str, why: str) -> ToolResult:
        def ok(content: Any) -> ToolResult:
            return ToolResult(call_id=call.id, name=call.name,
                              content=content if isinstance(content, str) else json.dumps(content, ensure_ascii=False))

        def err(content: str) -> ToolResult:
            return ToolResult(call_id=call.id, name=call.name, content=content, is_error=True)

        self.stats[f"tool:{call.name}"] += 1
        tool = next((t for t in self.tools if t.name == call.name), None)
        if tool is None:
            return err(f"you have no tool called {call.name}")
        wrong = toolbox.problem(tool, call)  # validated against the registry's schema before it runs
        if wrong:
            return err(f"{call.name}: {wrong}")
        a = call.arguments or {}
        try:
            if call.name in self.cfg.ask_first:
                refused = await self._approval(call, target)
                if refused:
                    return err(refused)
            if call.name == "deploy":
                return ok(f"deployed to {a.get('target')!s} (the demo records it)")
            if call.name not in toolbox.BRIDGE:  # routed to the server's registry (which checks again)
                reply = await self.client.request("call_tool", workspace=target["workspace"], tool=call.name,
                                                  arguments=a, conversation=target.get("conversation"))
                if reply.get("op") == "call_tool" and reply.get("pending"):  # held for a person (seed 003 §61)
                    aid = reply["approval"]["id"]
                    status = await self._decided(target["workspace"], aid)
                    if status != "approved":
                        self.stats["tool_not_approved"] += 1
                        return err(f"{call.name} was not run: "
                                   f"{'a person denied it' if status == 'denied' else 'the approval ' + status}")
                    reply = await self.client.request("call_tool", workspace=target["workspace"], tool=call.name,
                                                      arguments=a, approval=aid,
                                                      conversation=target.get("conversation"))
                if reply.get("op") != "call_tool":
                    return err(f"refused {reply.get('reason') or reply.get('code')}: {reply.get('detail', '')}")
                return ok(reply["result"]) if reply.get("ok") else err(str(reply.get("error", "failed")))
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
            if call.name == "work_graph":  # seed 003 §49: the same graph the TUI draws
                reply = await self.client.request("work_graph", workspace=target["workspace"],
                                                  **{k: a[k] for k in ("agent", "state") if isinstance(a.get(k), str)})
                if reply.get("op") != "work_graph":
                    return err(f"refused {reply.get('reason') or reply.get('code')}: {reply.get('detail', '')}")
                return ok({k: reply[k] for k in ("nodes", "edges", "more")})
            if call.name == "send_message":
                return await self._send_tool(a, target, client_id, why, ok, err)
            if call.name.startswith("artifact_"):
                return await self._artifact_tool(call.name, a, target, ok, err)
            if call.name == "file_read":
                return await self._file_read(a, target, ok, err)
            if call.name == "settle_thread":  # seed 003 §7: a summary back, the thread resolved (or abandoned)
                reply = await self.client.request(
                    "settle_thread", workspace=target["workspace"],
                    thread=a.get("thread") if isinstance(a.get("thread"), str) and a["thread"] else target["conversation"],
                    state=a.get("state") if a.get("state") in ("resolved", "abandoned", "ongoing") else "resolved",
                    summary=str(a.get("summary", ""))[:2000] or None)
                if reply.get("op") != "settle_thread":
                    return err(f"refused {reply.get('reason') or reply.get('code')}: {reply.get('detail', '')}")
                return ok({"thread": reply["thread"], "state": reply["state"]})
            if call.name in ("loop_verdict", "pulse_report"):  # seed 003 §39, §34: the server decides what follows
                args = {k: v for k, v in a.items() if v is not None}
                reply = await self.client.request(call.name, workspace=target["workspace"], **args)
                if reply.get("op") != call.name:
                    return err(f"refused {reply.get('reason') or reply.get('code')}: {reply.get('detail', '')}")
                return ok({k: v for k, v in reply.items() if k not in ("op", "ref")})
            if call.name == "handoff":  # seed 004: a request with handoff, to exactly one colleague
                to = a.get("to")
                if not isinstance(to, str) or not to.strip():
                    return err("handoff needs one colleague's name in `to`")
                return await self._send_tool({"to": [to.strip()], "text": a.get("text"), "type": "request"},
                                             target, client_id, why, ok, err, handoff=True)
        except Refused as e:
            return err(str(e))
        return err(f"{call.name} is not available")

    async def _artifact_tool(self, name: str, a: dict, target: dict, ok, err) -> ToolResult:
        """artifact_create / _update / _comment (a message in this topic, through the writer) and artifact_read."""
        ws = target["workspace"]
        where = {"topic": target.get("topic") or "new"}
        if where["topic"] == "new":  # (a topic of its own only where the wake had none)
            where["topic_title"] = clip(str(a.get("title") or "Artifact"), TITLE)
        args = {k: v for k, v in a.items() if k in ("artifact", "title", "body", "kind", "language", "text", "version")
                and v is not None}
        if name == "artifact_read":
            reply = await self.client.request("get_artifact", workspace=ws, **{k: v for k, v in args.items()
                                                                                if k in ("artifact", "version")})
            if reply.get("op") != "get_artifact":
                return err(f"{reply.get('code') or reply.get('reason')}: {reply.get('detail', '')}")
            return ok({k: reply[k] for k in ("artifact", "version", "title", "body", "versions", "comments")})
        op = {"artifact_create": "create_artifact", "artifact_update": "update_artifact",
              "artifact_comment": "comment_artifact"}[name]
        if op == "create_artifact":
            where["conversation"] = target["conversation"]
        reply = await self.client.request(op, workspace=ws, **where, **args)
        if reply.get("op") != op:
            return err(f"refused {reply.get('reason') or reply.get('code')}: {reply.get('detail', '')}")
        return ok({"artifact": reply["artifact"], "cost": reply.get("cost"), "unchanged": bool(reply.get("unchanged"))})

    FILE_TEXT = 20_000  # characters of a text file a file_read returns (more: cut, and said so)

    async def _file_read(self, a: dict, target: dict, ok, err) -> ToolResult:
        """file_read: a file sent with a message this agent reads (download_file, checked by the server)."""
        try:
            meta, data = await self.client.download(target["workspace"], str(a.get("file", ""))[:200])
        except Refused as e:
            return err(f"{e.frame.get('code') or e.frame.get('reason')}: no such file you can read")
        out = {k: meta[k] for k in ("id", "name", "type", "size", "sha256")}
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return ok({**out, "binary": True, "first_bytes_base64": base64.b64encode(data[:3000]).decode("ascii")})
        return ok({**out, "text": text[:self.FILE_TEXT], "cut": len(text) > self.FILE_TEXT})

    APPROVAL_POLL = 1.0  # seconds between looks at a pending approval (each free: no message, no model call)

    async def _approval(self, call: ToolCall, target: dict) -> str | None:
        """Seed 003 §61: a call outside the standing permissions waits for a person's decision, or its expiry,
        without calling the model meanwhile; None when it may run, else why not."""
        got = await self.client.call("request_approval", workspace=target["workspace"], tool=call.name,
                                     arg=call_arg(call.arguments))
        decision = got["decision"]
        if decision == "pending":
            status = await self._decided(target["workspace"], got["approval"]["id"])
            decision = {"approved": "allow", "denied": "deny"}.get(status, status)
        if decision == "allow":
            return None
        self.stats["tool_not_approved"] += 1
        return f"{call.name} was not run: {'a person denied it' if decision == 'deny' else 'the approval ' + decision}"

    async def _decided(self, ws: str, aid: str) -> str:
        """A pending approval's status once a person decided it or it expired (polled: each look is free)."""
        self.stats["approvals_waited"] += 1
        status = "pending"
        while status == "pending":
            await asyncio.sleep(self.APPROVAL_POLL)
            status = (await self.client.call("get_approval", workspace=ws, id=aid))["approval"]["status"]
        return status

    async def _send_tool(self, a: dict, target: dict, client_id: str, why: str, ok, err,
                         handoff: bool = False) -> ToolResult:
        text = a.get("text")
        if not isinstance(text, str) or not text.strip():
            return err(("handoff" if handoff else "send_message") + " needs a text")
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
                fields[k] = clip(a[k], TITLE) if k == "title" else a[k]  # (a model's title: one line, in bounds)
        if fields["topic"] == "new" and "title" not in fields:
            fields["title"] = clip(text, 60)
        if handoff:
            fields["handoff"] = True
        parent = target if why in ("request", "person") and target.get("id") in self.state.owed else None
        reply = await self._send(fields, client_id, parent=parent)
        if reply.get("op") == "sent":
            m = reply["message"]
            return ok({"sent": m["id"], "topic": m["topic"], "conversation": m["conversation"],
                       "cost": reply.get("cost"), "duplicate": bool(reply.get("duplicate"))})
        return ok({"refused": reply.get("reason") or reply.get("code"), "detail": reply.get("detail", "")})

    def _log_turn(self, key: str, why: str, out: TurnOutput, seconds: float) -> None:
        rec = {"at": time.time(), "key": key, "why": why, "backend": getattr(self.backend, "name", "?"),
               "seconds": round(seconds, 4), "error": out.error, "tool_calls": [c.name for c in out.tool_calls],
               "usage": out.usage}
        try:
            with (self.dir / "turns.jsonl").open("a", encoding="utf-8") as f:
                f.write(json.dumps(rec, default=str) + "\n")
        except OSError:
            pass
