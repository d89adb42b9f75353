"""What the agent has this turn, as the server says (seed 003 §43-45, §51-52), and what it recalls (§46).

- `_refresh_kit`: the tools attached to it (the registry's specs, its owner's API connections among them) and the
  compact list of its active skills, read at the start of every turn, so an owner's attach or detach shows in the
  next one; when the server cannot be asked, the turn goes on with what was read last.
- `_recall`: its relevant long-term memories in this workspace (searched on the server) and background knowledge
  (its corpus, when it has search_corpus), fetched at once under `cfg.recall_budget` seconds (recall.py): a slow
  source is dropped and the turn told so. `extra_sources` (name -> fn(message) -> awaitable list) adds sources.
A mixin of the Bridge.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Awaitable, Callable

from ..client import Refused
from . import corpus, recall, tools as toolbox
from .outbox import CONNECTION_ERRORS

log = logging.getLogger("ygg.agents.bridge")


class Kit:
    extra_sources: dict[str, Callable[[dict], Awaitable[list[str]]]] = {}

    async def _refresh_kit(self) -> None:
        try:
            listed, skills = await asyncio.gather(self.client.call("list_tools"), self.client.call("list_skills"))
        except (Refused, asyncio.TimeoutError, *CONNECTION_ERRORS) as e:
            log.info("%s: tools and skills not read this turn (%s); using the last ones", self.name, e)
            return
        self.tools = toolbox.offered(bool(listed.get("configured")), toolbox.from_wire(listed.get("tools") or []),
                                     self.cfg.tools)
        self.skills_prompt = skills.get("prompt") or ""
        self.skills = [s["name"] for s in skills.get("skills") or []]

    async def _recall(self, target: dict) -> dict:
        text = str(target.get("text") or "")
        ws = target.get("workspace")

        async def memories() -> list[str]:
            reply = await self.client.call("list_memories", workspace=ws, query=text, any=True)
            return [m["text"] for m in reply.get("memories", [])[:5]]

        async def knowledge() -> list[str]:
            found = await asyncio.to_thread(corpus.search, text, self.cfg.corpus, 2)
            return [f"{s.title}: {s.text[:300]}" for _, s in found]

        async def family() -> list[str]:
            reply = await self.client.call("list_memories", workspace=ws, family=True)
            return [m["text"] for m in reply.get("memories", [])]

        sources: dict[str, recall.Source] = {"memory": memories, "family": family}
        if any(t.name == "search_corpus" for t in self.tools):
            sources["knowledge"] = knowledge
        for name, fn in self.extra_sources.items():
            sources[name] = (lambda fn=fn: fn(target))
        got = await recall.assemble(sources, self.cfg.recall_budget)
        if "family" in got.found:  # §47: less what the fresh context (and its own memory) already covers
            fresh = [text, *(m.get("text", "") for m in self.state.transcript(target.get("topic"))),
                     *got.found.get("memory", [])]
            got.found["family"] = recall.uncovered(got.found["family"], fresh)[:5]
            if not got.found["family"]:
                del got.found["family"]
        if got.left_out:
            self.stats["recall_left_out"] += len(got.left_out)
        return {"found": got.found, "left_out": got.left_out, "seconds": round(got.seconds, 4)}
