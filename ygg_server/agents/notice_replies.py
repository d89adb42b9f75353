"""The rulebook's notices, handled by the bridge the same for every backend: a closure poll is answered
(free, to system.ygg) with done, or with what is left; a nudge or a resume gets the owed requests
answered; credits_refilled replays what a credits_exhausted refusal stopped."""

from __future__ import annotations

from ..core import SYSTEM


class NoticeReplies:
    """Mixed into the Bridge: one method per notice, and the replay of a deferred turn."""

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
