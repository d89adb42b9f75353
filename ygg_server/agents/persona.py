"""One persona document per agent, which the agent reads and rewrites through tools (seed 003 §56-57).

Stored as `persona.md` in the agent's data dir, with every accepted version
appended to `persona.history.jsonl`. A sudden large shrink is refused, not
applied: a new text shorter than half the old one, when the old one is longer
than 200 characters. An agent that really wants a shorter persona gets there
in steps, each at least half the last.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

SHRINK_RATIO = 0.5
SHRINK_FLOOR = 200  # personas this short may be rewritten freely
MAX_PERSONA = 20_000


@dataclass(frozen=True)
class PersonaRefused(Exception):
    reason: str
    old_length: int
    new_length: int

    def __str__(self) -> str:
        return self.reason


def check(old: str, new: str) -> str | None:
    """Why `new` may not replace `old`, or None."""
    if not new.strip():
        return "a persona cannot be empty"
    if len(new) > MAX_PERSONA:
        return f"a persona is at most {MAX_PERSONA} characters"
    if len(old) > SHRINK_FLOOR and len(new) < SHRINK_RATIO * len(old):
        return (f"refused: the new persona ({len(new)} chars) is less than half the old one ({len(old)} chars); "
                "a sudden large shrink looks like an accident. Rewrite it keeping most of it, or shrink in steps.")
    return None


class PersonaStore:
    def __init__(self, data_dir: str | os.PathLike, initial: str = ""):
        self.dir = Path(data_dir)
        self.path = self.dir / "persona.md"
        self.history = self.dir / "persona.history.jsonl"
        if not self.path.exists() and initial:
            self._write(initial, "initial")

    def read(self) -> str:
        try:
            return self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return ""

    def write(self, new: str, why: str = "") -> str:
        """Replace the persona; raise PersonaRefused when the rule says no. Returns the text stored."""
        old = self.read()
        reason = check(old, new)
        if reason:
            raise PersonaRefused(reason, len(old), len(new))
        self._write(new, why)
        return new

    def _write(self, text: str, why: str) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, self.path)
        with self.history.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"at": time.time(), "why": why, "length": len(text), "text": text}) + "\n")
