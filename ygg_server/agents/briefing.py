"""What the agent is told for a turn: the event (the message, its context, the topic's transcript, what it
owes and asked, its notes, the roster), names for ids, the rulebook and the directive."""

from __future__ import annotations

from typing import Any

from ..client import Refused
from ..core import SYSTEM, general_id
from . import backends, directives
from .outbox import CONNECTION_ERRORS


class Briefing:
    """Mixed into the Bridge: the workspace's members and conversations as the server lists them (cached),
    and the event and directive each turn gets."""

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
                                  issued=frame.get("directive"), own_turn=own_turn, skills=self.skills_prompt)
