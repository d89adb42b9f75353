"""Who waits on which topic: the MCP endpoint's calls following their task (net/mcp.py), told by the gateway of
every message it publishes (net/fanout.py). Apart from net/mcp.py so the gateway needs no MCP SDK to start."""

from __future__ import annotations

import asyncio


class TopicWatch:
    """Who waits on which topic; told by the gateway of every message it publishes (net/fanout.py)."""

    def __init__(self) -> None:
        self._waiting: dict[str, set[asyncio.Event]] = {}

    def __bool__(self) -> bool:
        return bool(self._waiting)

    def add(self, topic: str) -> asyncio.Event:
        ev = asyncio.Event()
        self._waiting.setdefault(topic, set()).add(ev)
        return ev

    def remove(self, topic: str, ev: asyncio.Event) -> None:
        s = self._waiting.get(topic)
        if s is not None:
            s.discard(ev)
            if not s:
                del self._waiting[topic]

    def seen(self, messages) -> None:
        for m in messages:
            for ev in self._waiting.get(m.topic, ()):
                ev.set()
