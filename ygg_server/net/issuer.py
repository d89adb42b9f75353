"""Issues each agent wake with its directive (seed 003 §53-55; the text is `ygg_server/directives.py`).

The gateway hands every deliver frame that wakes an agent to `Issuer.dress` just
before it goes out on that agent's connection (embedded or PostgreSQL, live or
after a reconnect: one place). The inputs come from the store: the workspace's
members with their profiles, the conversation (members, Lead, kind), the agent's
persona, the conversation's rulebook and the topic's title. They are cached, and
the cache is dropped whenever something they come from may have changed: a
persona, rulebook, profile, party or membership op through this gateway, a party
that changed without an op (a conversation grown to someone addressed in it: the
writer publishes a new PartyView, Gateway._party_moves), or a rescan (another
process or node wrote the database). On PostgreSQL, a party changed through
another node shows in the claim that carries the next wake here (the claim reads
the conversation as committed; `ClusterDelivery._party_views` drops the cache then).
Entries also expire after `ttl` seconds, a bound for anything else.

A directive that cannot be built (the store failed) is left out, never holds the
wake back: a frame without `directive` is what a bare-protocol agent gets anyway.

`elide`: a connection gets the stable blocks of a version once; later wakes on it
with the same `version` omit `stable` (the agent keeps what it got). The last
`SEEN` versions sent on a connection count, refreshed on each use; a client that
keeps at least as many, refreshed the same way, always has them. This is what keeps
compressing the same few kilobytes for every wake off the server (docs/performance.md).
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from collections import OrderedDict
from typing import Any, Awaitable, Callable

from ..ops import directives as text
from ..ops import guidance
from ..core import SYSTEM, Conversation, ConversationKind, Directory, Kind, Profile
from ..core import party
from ..store import loaders

log = logging.getLogger("ygg.issuer")
MAX_ENTRIES = 50_000
SEEN = 64  # stable versions a connection is assumed to keep (clients keep at least this many)


class _Abandoned(Exception):
    """A shared load whose loader was cancelled before it finished."""


def elide(seen: OrderedDict, directive: dict) -> dict:
    """`directive` as it goes out on a connection that was sent the versions in `seen` (updated)."""
    v = directive["version"]
    if v in seen:
        seen.move_to_end(v)
        return {k: x for k, x in directive.items() if k != "stable"}
    seen[v] = True
    if len(seen) > SEEN:
        seen.popitem(last=False)
    return directive


class Issuer:
    def __init__(self, read: Callable[..., Awaitable[Any]], ttl: float = 5.0):
        self._read = read  # the gateway's reader: await read(fn, *args) runs fn(conn, *args) off the loop
        self.ttl = ttl
        self._gen = 0
        self._cache: dict[tuple, tuple[int, float, Any]] = {}
        self._loading: dict[tuple, asyncio.Future] = {}  # key -> the load in flight that will bring it

    def invalidate(self) -> None:
        """Something a directive is made of may have changed: load everything again."""
        self._gen += 1
        self._cache.clear()
        self._loading.clear()  # a load begun before the change is not waited for by wakes after it

    def _get(self, key: tuple, now: float) -> tuple[bool, Any]:
        hit = self._cache.get(key)
        if hit is None or hit[0] != self._gen or now - hit[1] > self.ttl:
            return False, None
        return True, hit[2]

    async def dress(self, agent: str, frame: dict) -> dict:
        """The frame with its `directive` (a copy; the frame may be shared)."""
        try:
            directive = await self.directive(agent, frame["message"], frame.get("context") or [])
        except Exception:
            log.exception("could not build the directive for delivery %s", frame.get("id"))
            return frame
        return {**frame, "directive": directive}

    async def _fetch(self, keys: list[tuple], now: float) -> dict[tuple, Any]:
        """The cached values of `keys`, loading what is missing in one read. Wakes going out at once on many
        connections share one load of a key (no stampede when the cache drops)."""
        found: dict[tuple, Any] = {}
        missing, pending = [], set()
        for k in keys:
            ok, value = self._get(k, now)
            if ok:
                found[k] = value
            elif k in self._loading:
                pending.add(self._loading[k])
            else:
                missing.append(k)
        if missing:
            fut = asyncio.get_running_loop().create_future()
            for k in missing:
                self._loading[k] = fut
            gen = self._gen
            try:
                loaded = await self._read(_load, missing)
            except BaseException as e:
                # a cancelled loader (its connection closed) must not cancel the writers waiting on it
                fut.set_exception(e if isinstance(e, Exception) else _Abandoned())
                fut.exception()  # retrieved: the waiters, if any, get it too
                raise
            finally:
                for k in missing:
                    if self._loading.get(k) is fut:
                        del self._loading[k]
            fut.set_result(loaded)
            if len(self._cache) > MAX_ENTRIES:
                self._cache.clear()
            for k, v in loaded.items():
                self._cache[k] = (gen, now, v)
            found.update(loaded)
        for fut in pending:
            try:
                loaded = await asyncio.shield(fut)
            except _Abandoned:  # the load it waited for was given up: load what is still missing
                return await self._fetch(keys, now)
            found.update({k: v for k, v in loaded.items() if k in keys})
        return found

    async def directive(self, agent: str, msg: dict, context: list[dict]) -> dict:
        ws, cid, tid = msg["workspace"], msg["conversation"], msg.get("topic")
        title = next((m.get("title") for m in (msg, *context) if m.get("topic") == tid and m.get("title")), None)
        keys = [("ws", ws), ("conv", cid), ("persona", agent), ("rulebook", cid)]
        if tid and not title:
            keys.append(("title", tid))
        now = time.monotonic()
        gen = self._gen  # the blocks made below are current only if nothing changed while their inputs loaded
        found = await self._fetch(keys, now)
        d: Directory = found[("ws", ws)]
        conv = found[("conv", cid)]
        title = title or found.get(("title", tid))

        ok, stable = self._get(("stable", agent, cid), now)
        if not ok:
            blocks, rulebook = _stable(agent, d, conv, found[("persona", agent)], found[("rulebook", cid)])
            stable = (list(blocks), text.fingerprint(blocks), rulebook)
            self._cache[("stable", agent, cid)] = (gen, now, stable)
        blocks, version, rulebook = stable

        def name(pid: str | None) -> str:
            if pid == SYSTEM:
                return pid
            p = d.participants.get(pid)
            return p.display if p is not None and pid in d.memberships else "(someone no longer here)"

        author = d.participants.get(msg.get("author"))
        reason = text.why(msg, author.kind if author is not None else "agent")
        dynamic = text.dynamic_part(me=agent, my_name=name(agent), reason=reason, message=msg,
                                    context=context, where=_where(conv), topic_title=title, name=name)
        return {"stable": blocks, "dynamic": dynamic, "version": version, "rulebook": rulebook}


def _where(conv) -> str:
    if conv is None:
        return "this conversation"
    if conv.kind == "general":
        return "General, the whole workspace's conversation"
    if conv.kind == "group":
        return f"the group conversation {conv.name}"
    if conv.kind == "side":
        return "a side conversation for a task delegated from a direct conversation (only its result goes back)"
    return "a direct conversation" if len(conv.members) <= 2 else "a party conversation"


def _stable(agent: str, d: Directory, conv: Conversation | None, persona: str,
            stored: dict) -> tuple[tuple[str, str], dict]:
    me = d.participants.get(agent)
    prof = d.profiles.get(agent) or Profile()
    if conv is None or conv.kind == ConversationKind.GENERAL:
        people = [p for p in d.memberships if p in d.participants and d.participants[p].kind == Kind.HUMAN]
    else:
        people = [p for p in conv.members if p in d.memberships and d.participants[p].kind == Kind.HUMAN]
    rulebook = text.rulebook_in_force(stored)
    core = text.core_block(name=me.name if me else agent, title=prof.title, description=prof.description,
                           persona=persona)
    block = text.conversation_block(agents=party.roster(d, conv, agent), people=[d.participants[p].display for p in people],
                                    lead_is_me=conv is not None and conv.lead == agent, where=_where(conv),
                                    rulebook=rulebook)
    return (core, block), rulebook


def _load(conn: sqlite3.Connection, keys: list[tuple]) -> dict[tuple, Any]:
    """What the cache misses, from the store (on the gateway's reader connection)."""
    out: dict[tuple, Any] = {}
    for k in keys:
        kind, ref = k
        if kind == "ws":
            out[k] = loaders.load_directory(conn, ref)
        elif kind == "conv":
            out[k] = loaders.load_conversation(conn, ref)
        elif kind == "persona":
            out[k] = guidance.persona(conn, ref)[0]
        elif kind == "rulebook":
            out[k] = guidance.rulebook(conn, ref)
        elif kind == "title":
            t = loaders.load_topic(conn, ref)
            out[k] = t.title if t is not None else None
    return out
