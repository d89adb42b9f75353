"""What the bridge remembers of each message it sees or sends (`state.AgentState`): the transcript, the
requests it owes, and the requests it made with their answers."""

from __future__ import annotations

import time

from ..core import SYSTEM


class Memory:
    """Mixed into the Bridge: `_observe` a message seen, `_after_sent` one the server stored."""

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
