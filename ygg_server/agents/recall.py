"""Layered memory at the start of a turn (seed 003 §46): the conversation's history is at hand (the bridge's
transcript), while the agent's relevant long-term memories (searched on the server, per workspace) and
background knowledge (its reference corpus) are fetched in parallel under a strict time budget. A source that
has not answered when the budget is spent is dropped, not waited for (its request cancelled), as is one that
failed; the turn is told what was left out (`render`), so it never believes it saw everything.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from dataclasses import dataclass, field
from typing import Awaitable, Callable

log = logging.getLogger("ygg.agents.recall")

Source = Callable[[], Awaitable[list[str]]]


@dataclass
class Recalled:
    found: dict[str, list[str]] = field(default_factory=dict)  # source -> what it brought, in source order
    left_out: dict[str, str] = field(default_factory=dict)  # source -> why (too slow, failed)
    seconds: float = 0.0


async def assemble(sources: dict[str, Source], budget: float) -> Recalled:
    """Every source at once; what answered within `budget` seconds, and what did not (cancelled)."""
    started = time.monotonic()
    out = Recalled()
    if not sources:
        return out
    tasks = {asyncio.ensure_future(fn()): name for name, fn in sources.items()}
    done, pending = await asyncio.wait(tasks, timeout=budget)
    for t in pending:
        t.cancel()
        out.left_out[tasks[t]] = f"too slow (over {budget:g}s)"
    for name in sources:  # in the order the sources were given
        t = next(t for t, n in tasks.items() if n == name)
        if t in done:
            if t.exception() is not None:
                out.left_out[name] = f"failed ({type(t.exception()).__name__})"
            elif t.result():
                out.found[name] = list(t.result())
    if pending:
        await asyncio.gather(*pending, return_exceptions=True)  # (cancelled: this returns at once)
    out.seconds = time.monotonic() - started
    return out


TITLES = {"memory": "From your long-term memory (this workspace)", "knowledge": "Background knowledge",
          "family": "What agents of your family learned (this workspace)"}
_WORD = re.compile(r"[^\W_]{3,}")


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def uncovered(items: list[str], fresh: list[str], share: float = 0.8) -> list[str]:
    """§47: what the fresh context already covers removed: an item whose words are (at `share` or more) in one of
    the `fresh` texts (the conversation, what was recalled of its own) is left out, as is a repeat."""
    fresh_words = [_words(t) for t in fresh if t]
    out: list[str] = []
    for item in items:
        w = _words(item)
        if not w or any(len(w & f) >= share * len(w) for f in fresh_words + [_words(o) for o in out]):
            continue
        out.append(item)
    return out


def render(r: dict) -> str:
    """The recalled part of the turn's memory block (the event's `recalled`)."""
    out: list[str] = []
    for name, items in (r.get("found") or {}).items():
        out.append(f"\n## {TITLES.get(name, name)}")
        out += [f"- {x}" for x in items]
    if r.get("left_out"):
        out.append("\n## Left out of this turn's memory")
        out += [f"- {name}: {why}; search it yourself if you need it" for name, why in r["left_out"].items()]
    return "\n".join(out)
