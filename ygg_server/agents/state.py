"""An agent's own memory and its bridge's journal, kept in one JSON file in the agent's data dir.

Memory (the agent's, shown to it every turn): requests it owes an answer,
requests it made and the answers they got, a short transcript per topic, and
notes it chose to remember. Journal (the bridge's): for each wake not yet
acked, the wake itself and every round of the turn already computed, so a
retried turn after a reconnect or a restart replays instead of asking the
model again; turns stopped by a refusal (credits, topic limit), replayed when
the agent may go on; and the wakes already acked, so a copy offered again is
skipped.

Written atomically (temp file + rename) after every change.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import msgspec

TRANSCRIPT = 12  # messages remembered per topic
TOPICS = 100  # topics whose transcript is remembered (the most recently active)
ASKED = 300  # requests made, kept once answered
NOTES = 20
DONE_IDS = 1000

_encode = msgspec.json.Encoder().encode


class AgentState:
    def __init__(self, data_dir: str | os.PathLike):
        self.dir = Path(data_dir)
        self.path = self.dir / "state.json"
        self.data: dict[str, Any] = {
            "owed": {}, "asked": {}, "transcript": {}, "topics": {}, "notes": [], "scratch": {},
            "journal": {}, "broke": False, "done_ids": [], "answered": [],
        }
        if self.path.exists():
            try:
                self.data.update(json.loads(self.path.read_text(encoding="utf-8")))
            except ValueError:
                os.replace(self.path, self.path.with_suffix(".corrupt"))

    def save(self) -> None:
        self._prune()
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_bytes(_encode(self.data))
        os.replace(tmp, self.path)

    def _prune(self) -> None:
        for key in ("transcript", "topics"):
            d = self.data[key]
            for old in list(d)[: max(0, len(d) - TOPICS)]:
                del d[old]
        asked = self.data["asked"]
        if len(asked) > ASKED:
            closed = [i for i, a in asked.items() if not a.get("open")]
            for i in closed[: len(asked) - ASKED]:
                del asked[i]

    # --- memory ---

    @property
    def owed(self) -> dict[str, dict]:
        return self.data["owed"]

    @property
    def asked(self) -> dict[str, dict]:
        return self.data["asked"]

    @property
    def notes(self) -> list[str]:
        return self.data["notes"]

    @property
    def scratch(self) -> dict[str, Any]:
        return self.data["scratch"]

    def remember(self, note: str) -> None:
        self.notes.append(note[:500])
        del self.notes[:-NOTES]

    def seen(self, m: dict) -> None:
        """Keep a compact copy of a message in its topic's transcript."""
        t = m.get("topic")
        if not t:
            return
        if m.get("title"):
            self.data["topics"][t] = {"title": m["title"], "conversation": m.get("conversation"),
                                      "workspace": m.get("workspace")}
        elif t not in self.data["topics"]:
            self.data["topics"][t] = {"title": None, "conversation": m.get("conversation"),
                                      "workspace": m.get("workspace")}
        lines = self.data["transcript"].pop(t, [])
        self.data["transcript"][t] = lines  # most recently active last
        if any(x["id"] == m.get("id") for x in lines):
            return
        lines.append({k: m.get(k) for k in ("id", "author", "to", "type", "state", "in_reply_to", "notice")}
                     | {"text": (m.get("text") or "")[:1000]})
        del lines[:-TRANSCRIPT]

    def transcript(self, topic: str | None) -> list[dict]:
        return list(self.data["transcript"].get(topic or "", []))

    def topic_title(self, topic: str | None) -> str | None:
        return (self.data["topics"].get(topic or "") or {}).get("title")

    def owed_in(self, topic: str | None) -> list[tuple[str, dict]]:
        return [(i, o) for i, o in self.owed.items() if o.get("topic") == topic]

    def open_asks(self, topic: str | None = None) -> list[tuple[str, dict]]:
        return [(i, a) for i, a in self.asked.items()
                if a.get("open") and (topic is None or a.get("topic") == topic)]

    def forget_topic(self, topic: str) -> None:
        for i, _ in self.owed_in(topic):
            del self.owed[i]
        for i, a in list(self.asked.items()):
            if a.get("topic") == topic:
                a["open"] = False

    # --- journal ---
    # Keys: str(delivery id) for the turn a wake starts; "{delivery}.{request id}" for the turns a
    # notice (poll, nudge, resume) runs to answer owed requests. Each entry keeps the wake, why, the
    # message answered, every round computed so far, and whether it is complete or deferred.

    def journal_entry(self, key: str) -> dict:
        return self.data["journal"].get(key) or {}

    def begin(self, key: str, frame: dict, why: str, target: dict) -> dict:
        return self.data["journal"].setdefault(
            key, {"key": key, "frame": frame, "why": why, "target": target, "steps": [], "deferred": False})

    def drop(self, key: str) -> None:
        self.data["journal"].pop(key, None)

    def finish(self, delivery_id: int) -> None:
        """The wake is acked: forget its turns, except deferred ones (they wait for credits or a slot)."""
        prefix = f"{delivery_id}."
        for key, e in list(self.data["journal"].items()):
            if (key == str(delivery_id) or key.startswith(prefix)) and not e.get("deferred"):
                del self.data["journal"][key]
        done = self.data["done_ids"]
        if delivery_id not in done:
            done.append(delivery_id)
            del done[:-DONE_IDS]

    def is_done(self, delivery_id: int) -> bool:
        return delivery_id in self.data["done_ids"]

    def deferred(self) -> list[dict]:
        es = [e for e in self.data["journal"].values() if e.get("deferred")]
        return sorted(es, key=lambda e: (e["frame"]["id"], e["key"]))

    @property
    def broke(self) -> bool:
        return bool(self.data["broke"])

    @broke.setter
    def broke(self, v: bool) -> None:
        self.data["broke"] = bool(v)

