"""The websockets gateway: handshake, sessions, presence, and fan-out.

A thin adapter: frames in are parsed (`protocol.parse`) and handed to the engine
(writes) or to a reader thread (queries); what the engine publishes after each
commit is pushed to the connections that have work. Each connection has its own
outgoing queue and writer task, so one slow client never holds up the rest.
"""

from __future__ import annotations

import asyncio
import logging
import math
import secrets
import sqlite3
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Container
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

import websockets
from websockets.asyncio.server import ServerConnection, serve

from ..ops import admin, auth, guidance, permissions, queries
from .. import protocol
from ..core import POOL, Kind
from ..writer import Published
from ..writer.process import WriterGone
from ..store import loaders, rows as codec
from .feed import Feed
from .inbox import Inbox, Item, Reader
from .following import Following, standing_of
from .issuer import Issuer, elide
from .transport import Deflate, HeardConnection, send_texts

log = logging.getLogger("ygg.net")
# websockets logs every frame at DEBUG, and a frame may carry an API key, a password, a session token or a
# message's text: its logger here stays at INFO whatever the root level (docs/security.md)
ws_log = logging.getLogger("ygg.net.websockets")
ws_log.setLevel(logging.INFO)


# what an expired session is told (docs/protocol.md, "Authentication")
EXPIRED = "the session expired: connect and authenticate again (auth on the open connection before expires_at renews it)"
DROP_GRACE = 2.0  # seconds a dropped slow connection has to take its close frame


@dataclass
class Limits:
    max_frame: int = protocol.MAX_FRAME
    auth_timeout: float = 10.0  # seconds to authenticate after the upgrade
    open_timeout: float = 10.0  # seconds for the opening handshake
    idle_timeout: float = 600.0  # seconds without a frame before we close
    presence_timeout: float = protocol.PRESENCE_TIMEOUT  # an agent silent this long (no frame, no pong): offline
    ping_interval: float = 20.0  # keepalive: a ping every this many seconds; its pong counts as being heard from
    ping_timeout: float = 20.0  # a ping unanswered this long closes the connection (1011): a dead socket goes offline
    close_timeout: float = 10.0  # a closing handshake the other end does not finish is cut off after this
    session_sweep: float = 60.0  # expired sessions are deleted this often
    outgoing: int = 10_000  # frames queued for one slow connection before we drop it
    prefetch: int = 16  # wakes one agent connection may hold at once
    origins: tuple[str, ...] = ()  # browser Origins allowed, besides none at all
    # failed sign-ins allowed per auth_window from one remote address, and for one credential (an API key's
    # id, a handle); past that, `auth` is answered `unauthenticated` with `retry_after` and not checked
    auth_failures_per_address: int = 30
    auth_failures_per_key: int = 10
    auth_window: float = 60.0


class AuthLimiter:
    """Failed sign-ins in a sliding window, per key (("addr", ip) or ("key", credential id)).

    Memory is bounded: each key keeps at most its limit of timestamps, and at most `max_keys` keys are
    remembered (the least recently failed forgotten first), however many made-up key ids are tried."""

    def __init__(self, per_address: int, per_key: int, window: float, max_keys: int = 100_000):
        self.limit = {"addr": max(1, per_address), "key": max(1, per_key)}
        self.window, self.max_keys = window, max_keys
        self.failures: OrderedDict[tuple[str, str], deque] = OrderedDict()

    def retry_after(self, keys: list[tuple[str, str]], now: float) -> float:
        """Seconds until every one of `keys` may try again (0: now)."""
        wait = 0.0
        for k in keys:
            q = self.failures.get(k)
            if q is None:
                continue
            while q and q[0] <= now - self.window:
                q.popleft()
            if len(q) >= self.limit[k[0]]:
                wait = max(wait, q[0] + self.window - now)
        return wait

    def failed(self, keys: list[tuple[str, str]], now: float) -> None:
        for k in keys:
            q = self.failures.get(k)
            if q is None:
                q = self.failures[k] = deque(maxlen=self.limit[k[0]])
                if len(self.failures) > self.max_keys:
                    self.failures.popitem(last=False)
            else:
                self.failures.move_to_end(k)
            q.append(now)


def _auth_keys(conn: "Conn", frame: dict) -> list[tuple[str, str]]:
    """What a sign-in is counted against: the remote address, and the API key's id or the handle.

    Nothing for a session token: 256 random bits are not guessed, and an expired token is the common honest
    failure (a host whose agents all started together would otherwise lock itself out an hour later)."""
    if "api_key" not in frame and "handle" not in frame:
        return []
    peer = conn.ws.remote_address
    keys = [("addr", str(peer[0]) if peer else "?")]
    key, handle = frame.get("api_key"), frame.get("handle")
    if isinstance(key, str) and key.startswith(auth.KEY_PREFIX + "_"):
        keys.append(("key", "k:" + key.split("_", 2)[1][:64]))
    elif isinstance(handle, str):
        keys.append(("key", "h:" + handle[:64]))
    return keys


@dataclass(eq=False)
class Conn:
    ws: ServerConnection
    limits: Limits
    participant: str = ""
    kind: str = ""
    handle: str = ""
    token: str = ""
    expires_at: int = 0
    prefetch: int = 16
    leased: set[int] = field(default_factory=set)
    workspaces: frozenset[str] = frozenset()  # where this participant is a member (for presence events)
    monitors: set[str] = field(default_factory=set)  # workspaces followed whole
    follows: set[str] = field(default_factory=set)  # workspaces whose topic/balance events it gets
    waiting_since: float | None = None  # monotonic time the handler began waiting for the next frame
    queue: asyncio.Queue = field(default_factory=asyncio.Queue)
    ending: bool = False  # its session is gone: told why once, then closed (Gateway._end)
    dropped: bool = False  # too slow: closing (which may take the close timeout); later frames are not queued
    backlog: int = 0  # frames of the backlog (pages of it: net/feed.py) still queued: they are not slowness
    drained: Callable[[], None] | None = None  # told when the queue runs low (a person's next page: net/feed.py)
    dress: Callable[[str, dict], Awaitable[dict]] | None = None  # an agent's wakes get their directive (issuer.py)
    stable_sent: OrderedDict = field(default_factory=OrderedDict)  # directive versions sent here (issuer.elide)
    rosters: dict = field(default_factory=dict)  # conversation -> the PartyView its roster was last sent for here
    inflight: deque = field(default_factory=deque)  # pipelined frames (send, ack) not yet answered, in order
    settled: list = field(default_factory=list)  # futures waiting for an answer to go out (see Gateway._in_order)

    @property
    def last_seen(self) -> float:
        """Monotonic time anything was last heard on this connection: a frame, or a pong to our ping."""
        return getattr(self.ws, "heard", 0.0)

    def push(self, frame: dict) -> None:
        if self.dropped:
            return
        if self.queue.qsize() >= self.limits.outgoing + self.backlog:
            log.warning("dropping slow connection of %s", self.participant)
            self.dropped = True
            asyncio.ensure_future(self._drop())
            return
        self.queue.put_nowait(frame)

    async def _drop(self) -> None:
        """Close 1013; a reader too slow to take even the close frame is cut off (else only keepalive would)."""
        try:
            await asyncio.wait_for(self.ws.close(1013, "too slow"), DROP_GRACE)
        except TimeoutError:
            self.ws.transport.abort()

    async def writer(self) -> None:
        while True:
            frame = await self.queue.get()
            batch = [frame]
            while not self.queue.empty() and len(batch) < 256:
                batch.append(self.queue.get_nowait())
            texts = []
            for f in batch:
                if self.dress is not None and f.get("op") == "deliver" and f.get("wake"):
                    f = await self.dress(self.participant, f)
                    if "directive" in f:
                        f["directive"] = elide(self.stable_sent, f["directive"])
                texts.append(protocol.encode_utf8(f))
            await send_texts(self.ws, texts)
            for _ in batch:
                self.queue.task_done()
            self.backlog = max(0, self.backlog - len(batch))
            if self.drained is not None:
                self.drained()


class Gateway:
    def __init__(self, engine, limits: Limits | None = None):
        self.engine = engine
        self.limits = limits or Limits()
        self.conns: dict[str, list[Conn]] = {}
        self.inboxes: dict[str, Inbox | Feed] = {}  # an agent's, a person's
        self._loading: dict[str, asyncio.Future] = {}
        self._arrived: dict[str, list[Item]] = {}  # published while that inbox was loading
        self._receives: dict[str, frozenset[str]] = {}  # connected participant -> workspaces it may get deliveries of
        self.following = Following()  # who follows and monitors which workspace here
        self._reader = self._connect()
        self._reader_lock = asyncio.Lock()
        self._admin = self._connect()  # management ops write here; the engine notices (data_version)
        self._admin_lock = asyncio.Lock()
        # held by the thread using each connection: a cancelled await releases the asyncio lock, not the thread
        self._guards = {id(self._reader): threading.Lock(), id(self._admin): threading.Lock()}
        self._server = None
        self._limiter = AuthLimiter(self.limits.auth_failures_per_address, self.limits.auth_failures_per_key,
                                    self.limits.auth_window)
        self._hashing = asyncio.Semaphore(1)  # one argon2 check at a time (each takes ~64 MiB), off the reader
        self.issuer = Issuer(self.read)  # each agent wake goes out with its directive
        self._parties: dict[str, Any] = {}  # conversation -> the PartyView last published for it
        self._events_on: asyncio.Future | None = None  # the writer's sync after the events were turned on

    def _connect(self):
        """A connection beside the engine's, for reads and management ops (net/cluster.py: PostgreSQL)."""
        from ..store import sqlite  # (here: PostgreSQL's path never loads the SQLite store)

        return sqlite.connect(self.engine.path)

    # --- serving ---

    async def start(self, host: str = "127.0.0.1", port: int = 8765):
        self.engine.start(asyncio.get_running_loop(), self.publish)
        origins = [None, *self.limits.origins]
        self._server = await serve(
            self.handler, host, port, max_size=self.limits.max_frame, open_timeout=self.limits.open_timeout,
            origins=origins, ping_interval=self.limits.ping_interval, ping_timeout=self.limits.ping_timeout,
            close_timeout=self.limits.close_timeout, process_request=None, logger=ws_log,
            create_connection=HeardConnection, compression=None, extensions=[Deflate()],
        )
        self._sweep = asyncio.ensure_future(self._sweeper())
        return self._server

    @property
    def port(self) -> int:
        return self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if getattr(self, "_sweep", None):
            self._sweep.cancel()
        if self._server:
            self._server.close()
            await self._server.wait_closed()
        await self.engine.aclose()
        for conn in (self._reader, self._admin):  # not while a thread still uses it
            await asyncio.to_thread(_guarded, self._guards[id(conn)], lambda c: c.close(), conn)

    async def manage(self, fn, *args) -> dict:
        """Run an admin operation on its own connection, off the event loop."""
        async with self._admin_lock:
            return await asyncio.to_thread(_guarded, self._guards[id(self._admin)], fn, self._admin, *args)

    async def read(self, fn, *args):
        """Run a read-only query on the reader connection, off the event loop."""
        async with self._reader_lock:
            return await asyncio.to_thread(_guarded, self._guards[id(self._reader)], fn, self._reader, *args)

    # --- one connection ---

    async def handler(self, ws: ServerConnection) -> None:
        conn = Conn(ws, self.limits, prefetch=self.limits.prefetch)
        writer = asyncio.ensure_future(conn.writer())
        try:
            if not await self._authenticate(conn):
                return
            if not await self._attach(conn):
                await self._end(conn)
                return
            watchdog = asyncio.ensure_future(self._idle(conn))  # one timer per connection, not one per frame
            try:
                while True:
                    conn.waiting_since = time.monotonic()
                    raw = await ws.recv()
                    conn.waiting_since = None
                    await self._frame(conn, raw)
            finally:
                watchdog.cancel()
        except websockets.ConnectionClosed:
            pass
        finally:
            self._detach(conn)
            # let queued frames go out before the writer stops
            if ws.state.name == "OPEN":
                try:
                    await asyncio.wait_for(self._drain(conn), 1.0)
                except TimeoutError:
                    pass
            writer.cancel()

    async def _idle(self, conn: Conn) -> None:
        """Close a connection from which nothing was heard for `idle_timeout` while it was waited on (1000 "idle").

        A pong to the keepalive ping is heard too: an agent's app "keeps a channel open" (seed 003 §2), and a
        quiet one whose socket answers is not cut off; one that stops answering is closed by the keepalive."""
        limit = self.limits.idle_timeout
        while True:
            since = conn.waiting_since
            left = limit if since is None else max(since, conn.last_seen) + limit - time.monotonic()
            if left <= 0:
                await conn.ws.close(1000, "idle")
                return
            await asyncio.sleep(left)

    async def _drain(self, conn: Conn) -> None:
        while not conn.queue.empty():
            await asyncio.sleep(0.01)

    async def _end(self, conn: Conn, ref: Any = None) -> None:
        """Close a connection whose session is gone (expired, its agent revoked, its key replaced) with 1008, after
        an `unauthenticated` error whose detail says which: a client sees why, not only a close code."""
        if conn.ending:
            return
        conn.ending = True
        expired = conn.expires_at <= time.time_ns() // 1000
        detail = EXPIRED if expired else await self.read(auth.ended, conn.participant)
        conn.push(protocol.error(ref, "unauthenticated", detail))
        await self._close(conn, 1008, "session expired" if expired else "session revoked")

    async def _close(self, conn: Conn, code: int, reason: str) -> None:
        """Close once the frames already queued (the error saying why) went out."""
        try:
            await asyncio.wait_for(conn.queue.join(), 1.0)
        except TimeoutError:
            pass
        await conn.ws.close(code, reason)

    async def _authenticate(self, conn: Conn) -> bool:
        header = conn.ws.request.headers.get("Authorization", "") if conn.ws.request else ""
        if header.startswith("Bearer "):
            return await self._session(conn, {"token": header[7:]}, None, quiet=True)
        deadline = time.monotonic() + self.limits.auth_timeout  # a deadline: other frames do not extend it
        try:
            raw = await asyncio.wait_for(conn.ws.recv(), self.limits.auth_timeout)
        except TimeoutError:
            await conn.ws.close(1008, "authenticate first")
            return False
        while True:
            try:
                op, ref, frame = protocol.parse(raw)
            except protocol.BadFrame as e:
                conn.push(protocol.error(e.ref, "bad_frame", e.detail))
                op = None
            if op == "auth":
                if await self._session(conn, frame, ref):
                    return True
            elif op is not None:
                conn.push(protocol.error(ref, "unauthenticated", "authenticate first"))
            try:
                raw = await asyncio.wait_for(conn.ws.recv(), max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                await self._close(conn, 1008, "authenticate first")
                return False

    async def _session(self, conn: Conn, frame: dict, ref: Any, quiet: bool = False) -> bool:
        """Sign the connection in, or, on a connection already signed in, renew its session (the same participant's
        credentials: a new session, the connection and what it holds kept; options left out stay as they are)."""
        prefetch, directives = frame.get("prefetch"), frame.get("directives", True)
        if prefetch is not None and (type(prefetch) is not int or not 1 <= prefetch <= 256):
            conn.push(protocol.error(ref, "bad_frame", "prefetch is a whole number from 1 to 256 (default 16)"))
            return False
        if type(directives) is not bool:
            conn.push(protocol.error(ref, "bad_frame", "directives is true or false (default true)"))
            return False
        keys = _auth_keys(conn, frame)
        wait = self._limiter.retry_after(keys, time.monotonic())
        if wait > 0:  # too many failures from this address or for this credential: not even checked
            conn.push({**protocol.error(ref, "unauthenticated", "too many failed sign-ins; try again later"),
                       "retry_after": math.ceil(wait)})
            if quiet:
                await self._close(conn, 1008, "unauthenticated")
            return False
        res = await self.read(_auth, frame)
        if isinstance(res, _Password):  # a slow hash by design: not on the reader connection everyone queries
            async with self._hashing:
                res = await asyncio.to_thread(res.check)
        if res is None:
            self._limiter.failed(keys, time.monotonic())
            still = f" (this connection stays signed in as {conn.handle})" if conn.participant else ""
            conn.push(protocol.error(ref, "unauthenticated", "those credentials are not valid" + still))
            if quiet:
                await self._close(conn, 1008, "unauthenticated")
            return False
        pid, kind, handle, token, expires = res
        renew = bool(conn.participant)
        if renew and pid != conn.participant:
            conn.push(protocol.error(ref, "bad_frame", f"this connection is signed in as {conn.handle}; auth again "
                                     "here renews that session: open another connection to sign in as another"))
            return False
        if token is None:  # (an agent's session is made only while the key it signed in with is still its own)
            key = auth.key_id(frame.get("api_key")) if kind == Kind.AGENT else None
            token, row = auth.session_row(pid, self.engine.clock(), expires, secrets.token_urlsafe(32))
            await self.engine.submit("session", *row, key)
            expires = row[2]
            if renew and await self.read(auth.session_participant, token, time.time_ns() // 1000) is None:
                conn.push(protocol.error(ref, "unauthenticated", await self.read(auth.ended, pid)))
                return False  # (`_attach` checks this for a new connection)
        conn.participant, conn.kind, conn.handle, conn.token, conn.expires_at = pid, kind, handle, token, expires
        if prefetch is not None:
            conn.prefetch = prefetch
        if kind == Kind.AGENT and ("directives" in frame or not renew):  # an agent's wakes carry their directive
            conn.dress = self.issuer.dress if directives else None
        conn.push({"op": "session", "ref": ref, "token": token, "expires_at": protocol.iso(expires),
                   "me": {"id": pid, "handle": handle, "kind": kind}})
        if renew and pid in self.inboxes:  # a larger prefetch has room for more
            self.inboxes[pid].offer()
        return True

    async def _attach(self, conn: Conn) -> bool:
        """Count the connection in (presence, inbox); False: its session is gone already (closed by the caller)."""
        pid = conn.participant
        mine = (await self.read(_access, [pid]))[pid]
        conn.workspaces = frozenset(mine)
        self._receives[pid] = frozenset(ws for ws, (receive, _) in mine.items() if receive)
        first = pid not in self.conns
        self.conns.setdefault(pid, []).append(conn)
        if first:
            self._presence(conn, True)
        # an agent's key rotated, or the agent revoked, since the key was checked: no session was made, or it was
        # ended before this connection was among those a rescan closes (`handler` closes it, nothing offered)
        now = time.time_ns() // 1000
        if conn.kind == Kind.AGENT and await self.read(auth.session_participant, conn.token, now) is None:
            return False
        inbox = await self._inbox(pid, conn.kind == Kind.AGENT)
        if conn in self.conns.get(pid, ()):
            inbox.attach(conn)
            if isinstance(inbox, Feed):  # a person's first page is queued before any frame is answered (the TUI
                await inbox.fill(inbox.places[conn])  # counts what is unread before its first paint)
        return True

    async def _inbox(self, pid: str, is_agent: bool) -> Inbox | Feed:
        if pid in self.inboxes:
            return self.inboxes[pid]
        if not is_agent:  # (each device reads its own pages)
            feed = self.inboxes[pid] = Feed(pid, self._unacked_of(pid), self._allower(pid))
            return feed
        if pid in self._loading:
            try:
                return await asyncio.shield(self._loading[pid])
            except _LoadFailed:  # the load it waited for failed or was cancelled: load again
                return await self._inbox(pid, is_agent)
        fut = asyncio.get_running_loop().create_future()
        self._loading[pid] = fut
        self._arrived[pid] = []
        try:
            inbox = Inbox(pid, allow=self._allower(pid), read=self._unacked_of(pid))
            await inbox.fill()  # its first page
            inbox.add(self._arrived.pop(pid))
            self.inboxes[pid] = inbox
            fut.set_result(inbox)
            return inbox
        except BaseException:
            fut.set_exception(_LoadFailed())  # those waiting on this load are not left waiting for good
            fut.exception()
            raise
        finally:
            self._loading.pop(pid, None)
            self._arrived.pop(pid, None)

    def _detach(self, conn: Conn) -> None:
        pid = conn.participant
        if not pid:
            return
        mine = self.conns.get(pid, [])
        if conn in mine:
            mine.remove(conn)
        inbox = self.inboxes.get(pid)
        if inbox is not None:
            inbox.detach(conn)
        if not mine:
            self.conns.pop(pid, None)
            self.inboxes.pop(pid, None)
            self._receives.pop(pid, None)
            self._presence(conn, False)
        if conn.follows:
            self.following.drop(conn)
            self._events_wanted()

    def _unacked_of(self, pid: str) -> Reader:
        """How `pid`'s inbox reads its pages (`inbox.Reader`)."""
        async def read(after: int, n: int, wakes: bool) -> list[Item]:
            return await self.read(_unacked, pid, after, n, wakes)
        return read

    def _allower(self, pid: str):
        """Checked as each delivery arrives and again as it goes out: its workspace is still one where `pid`
        is a member with receive (refreshed by `_rescan` when another connection wrote the database)."""
        def allow(item: Item) -> bool:
            return item.message["workspace"] in self._receives.get(pid, ())
        return allow

    def _presence(self, conn: Conn, online: bool) -> None:
        """Tell those following a workspace that someone in it came or went (and the engine, for scoring)."""
        self.engine.seen(conn.participant, online)
        self._tell_presence(conn.participant, conn.workspaces, online)

    def _tell_presence(self, pid: str, workspaces: frozenset[str], online: bool, targets=None) -> None:
        """A `presence` event for `pid` to the connections following any of `workspaces` (or `targets`)."""
        if targets is None:
            targets = self.following.reaching(workspaces)
        for c in targets:
            for ws in c.follows & workspaces:
                c.push({"op": "event", "kind": "presence", "workspace": ws, "participant": pid, "online": online})

    def _joined(self, pid: str, workspaces: frozenset[str]) -> None:
        """`pid`, connected here, is in `workspaces` now (joined, added, a restriction lifted): their followers
        are told it is online, as when it connects (going the other way, `members` and `workspace_gone` tell)."""
        self._tell_presence(pid, workspaces, True)

    # --- frames ---

    async def _frame(self, conn: Conn, raw: str | bytes) -> None:
        """Answer one frame. `send` and `ack` are pipelined: submitted to the engine as soon as they are read
        (so the engine decides a connection's frames in the order it sent them) and answered, in that order,
        when their batch has committed; the next frame is read meanwhile. Any other frame first waits until
        every earlier answer went out, so it sees (and is answered after) all the connection sent before."""
        try:
            op, ref, frame = protocol.parse(raw)
        except protocol.BadFrame as e:
            await self._in_order(conn)
            conn.push(protocol.error(e.ref, "bad_frame", e.detail))
            return
        if conn.expires_at <= time.time_ns() // 1000:
            await self._in_order(conn)
            await self._end(conn, ref)
            return
        if op in _PIPELINED:
            started = self._start(_PIPELINED[op], conn, ref, frame)
            conn.inflight.append((started, op, ref))
            if isinstance(started, asyncio.Future):
                started.add_done_callback(lambda _: self._answer(conn))
            else:
                self._answer(conn)
            while len(conn.inflight) >= MAX_INFLIGHT:
                await self._settled(conn)
            return
        await self._in_order(conn)
        try:
            handler = getattr(self, "_op_" + op, None)
            if handler is not None:
                reply = await handler(conn, ref, frame)
            elif op in protocol.ENGINE_OPS:  # parties, profiles, settings: decided in the writer
                reply = await self.engine.submit(protocol.ENGINE_OPS[op], conn.participant, frame)
                self.issuer.invalidate()  # a party or a profile is part of the directives' stable part
            elif op in guidance.OPS:  # personas and rulebooks (directives)
                fn, writes = guidance.OPS[op]
                reply = {"op": op, "ref": ref, **await (self.manage if writes else self.read)(fn, conn.participant, frame)}
                if writes:
                    self.issuer.invalidate()
            elif op in queries.QUERIES:
                reply = {"op": op, "ref": ref, **await self.read(queries.QUERIES[op], conn.participant, frame)}
            else:
                reply = protocol.error(ref, "bad_frame", f"op {op!r} is not available here")
        except Exception as e:
            reply = self._failed(op, ref, e)
        if reply is not None:
            conn.push(reply)

    @staticmethod
    def _failed(op: str, ref: Any, e: Exception) -> dict:
        """The answer to a frame whose handling raised `e`."""
        if isinstance(e, queries.NotFound):
            return protocol.error(ref, "not_found", "no such thing")
        if isinstance(e, queries.Forbidden):
            return protocol.error(ref, "forbidden", "this membership has no receive permission")
        if isinstance(e, admin.AdminError):
            return protocol.error(ref, e.code, e.detail)
        if isinstance(e, (ValueError, TypeError)):
            return protocol.error(ref, "bad_frame", str(e))
        if isinstance(e, WriterGone):
            return protocol.error(ref, "unavailable", "the writer restarted before it answered; whether this was "
                                  "stored is unknown: send it again (with the same client_id, it is stored once)")
        log.error("op %s failed", op, exc_info=e)
        return protocol.error(ref, "internal", "the server failed on this frame; nothing was changed")

    def _start(self, fn: Callable, conn: Conn, ref: Any, frame: dict) -> Any:
        """Run the synchronous part of a pipelined frame: a future (the engine's answer), a reply, or the error."""
        try:
            return fn(self, conn, ref, frame)
        except Exception as e:
            return e

    def _answer(self, conn: Conn) -> None:
        """Push the answers of the pipelined frames that are known, oldest first, up to the first still pending."""
        q = conn.inflight
        while q:
            started, op, ref = q[0]
            if isinstance(started, asyncio.Future):
                if not started.done():
                    break
                try:
                    reply = started.result()
                except (Exception, asyncio.CancelledError) as e:  # answered, so the ones after it are not held
                    reply = self._failed(op, ref, e if isinstance(e, Exception) else RuntimeError("cancelled"))
            elif isinstance(started, Exception):
                reply = self._failed(op, ref, started)
            else:
                reply = started
            q.popleft()
            if reply is not None:
                conn.push(reply)
        if conn.settled:
            waiters, conn.settled = conn.settled, []
            for w in waiters:
                if not w.done():
                    w.set_result(None)

    async def _settled(self, conn: Conn) -> None:
        """Wait until some pipelined answer went out."""
        w = asyncio.get_running_loop().create_future()
        conn.settled.append(w)
        await w

    async def _in_order(self, conn: Conn) -> None:
        """Wait until the answers of the connection's pipelined frames went out."""
        while conn.inflight:
            await self._settled(conn)

    async def _op_auth(self, conn: Conn, ref, frame) -> None:
        await self._session(conn, frame, ref)  # a renewal (its answers pushed there)

    async def _op_ping(self, conn: Conn, ref, frame) -> dict:
        return {"op": "pong", "ref": ref}

    async def _op_whoami(self, conn: Conn, ref, frame) -> dict:
        return {"op": "whoami", "ref": ref, "id": conn.participant, "handle": conn.handle, "kind": conn.kind}

    def _send(self, conn: Conn, ref, frame) -> asyncio.Future:
        return self.engine.submit("send", conn.participant, frame)

    async def _op_fund(self, conn: Conn, ref, frame) -> dict:
        ws = frame.get("workspace")
        account = POOL if frame.get("pool") is True else frame.get("agent")
        if not isinstance(ws, str) or not isinstance(account, str):
            return protocol.error(ref, "bad_frame", 'fund needs "workspace" and "agent" (or "pool": true)')
        return await self.engine.submit("fund", conn.participant, ws, account, frame.get("amount"), ref)

    def _ack(self, conn: Conn, ref, frame) -> dict | asyncio.Future:
        ids = frame.get("ids")
        if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) and -2**63 <= i < 2**63
                                                for i in ids):  # a delivery id is a 64-bit SQLite integer
            return protocol.error(ref, "bad_frame", "ids must be a list of delivery ids: the integer id of each deliver frame")
        inbox = self.inboxes.get(conn.participant)
        retired = inbox.ack(ids) if inbox else []
        extra = [i for i in ids if i not in retired]  # unknown here: still let the store check them
        return self.engine.submit("ack", conn.participant, retired + extra, ref)

    async def _op_subscribe(self, conn: Conn, ref, frame) -> dict:
        ws, monitor = frame.get("workspace"), frame.get("monitor", False)
        if type(monitor) is not bool:
            return protocol.error(ref, "bad_frame", "subscribe's monitor is true or false")
        listed = await self.read(queries.list_members, conn.participant, {"workspace": ws})  # NotFound if not a member
        if not await self.read(queries.receives, ws, conn.participant):
            raise queries.Forbidden
        if monitor and not await self.read(queries.monitors, ws, conn.participant):
            return protocol.error(ref, "forbidden", "monitoring needs the monitor permission")
        if conn not in self.conns.get(conn.participant, ()):  # (it closed while this was read: nothing to follow)
            return None
        self.following.set(conn, conn.follows | {ws}, conn.monitors | ({ws} if monitor else set()))
        # what `members` and `groups` events tell against
        members = {m["id"]: standing_of(m) for m in listed["members"]}
        self.following.know(ws, members, (await self.read(_groups, {ws: members}))[ws])
        # a change committed since the checks above may have been rescanned before this connection followed (that
        # rescan passed it by): its access is read again now that it follows, as a rescan reads it (a narrowing is
        # told as one), and it is answered as it now follows
        await self._refresh_access([conn.participant])
        if ws not in conn.follows:
            raise queries.NotFound if ws not in conn.workspaces else queries.Forbidden
        if not self.engine.events:  # the first follower: every batch after this answer carries the events
            self.engine.events = True
            self._events_on = self.engine.submit("sync")
        if self._events_on is not None and not self._events_on.done():  # (a follower after it waits for it too)
            await asyncio.shield(self._events_on)
        return {"op": "subscribed", "ref": ref, "workspace": ws, "monitor": ws in conn.monitors}

    async def _op_unsubscribe(self, conn: Conn, ref, frame) -> dict:
        ws = frame.get("workspace")
        if not isinstance(ws, str):
            return protocol.error(ref, "bad_frame", "unsubscribe needs workspace (its id)")
        self.following.set(conn, conn.follows - {ws}, conn.monitors - {ws})
        self._events_wanted()
        return {"op": "unsubscribed", "ref": ref, "workspace": ws}

    def _events_wanted(self) -> None:
        """Topic and balance events cost the writer process to hand over: only while someone follows."""
        if self.engine.events and not self.following:
            self.engine.events = False

    # --- management: what the admin CLI does, for a person whose role allows it ---

    async def _my_role(self, role_of: Callable, where: str, conn: Conn) -> str:
        """The connection's role in a workspace or an organization (`admin.role_in`, `admin.org_role`); one it is
        not in is answered as one that does not exist (`not_found`)."""
        mine = await self.read(role_of, where, conn.participant)
        if mine is None:
            raise queries.NotFound
        return mine

    def _person_only(self, conn: Conn) -> None:
        if conn.kind != Kind.HUMAN:
            raise admin.AdminError("forbidden", "only a person manages workspaces and agents")

    async def _op_create_workspace(self, conn: Conn, ref, frame) -> dict:
        self._person_only(conn)
        name, restricted, org = frame.get("name"), frame.get("restricted", False), frame.get("org")
        if not isinstance(name, str) or not name.strip() or not isinstance(restricted, bool) \
                or not isinstance(org, str | None):
            return protocol.error(ref, "bad_frame", "create_workspace needs a name (and optionally restricted, org)")
        if org is not None:
            await self._my_role(admin.org_role, org, conn)
        out = await self.manage(admin.add_workspace, name.strip(), conn.participant, restricted, org)
        return {"op": "create_workspace", "ref": ref, **out}

    async def _op_create_org(self, conn: Conn, ref, frame) -> dict:
        """Seed 002: everyone "can create or join more" organizations, and "Each person gets one Free
        organization": one made here is Free (a Team plan is licensed, so the operator sets it)."""
        self._person_only(conn)
        name = frame.get("name")
        if not isinstance(name, str) or not name.strip():
            return protocol.error(ref, "bad_frame", "create_org needs a name")
        out = await self.manage(admin.add_org, name, conn.participant, "free")
        return {"op": "create_org", "ref": ref, **out}

    async def _op_add_org_member(self, conn: Conn, ref, frame) -> dict:
        """Seed 002: invite people from Organizations; as for workspaces (seed 003 §66), admins invite members,
        only the owner makes admins or changes a role."""
        self._person_only(conn)
        org, handle, role = frame.get("org"), frame.get("handle"), frame.get("role", "member")
        if not all(isinstance(x, str) for x in (org, handle, role)):
            return protocol.error(ref, "bad_frame", "add_org_member needs org, handle and role")
        mine = await self._my_role(admin.org_role, org, conn)
        handle = "@" + handle.removeprefix("@")  # by handle only, as add_member
        pid = await self.read(admin.person, handle)
        if mine not in ("owner", "admin") or (mine != "owner" and (
                role != "member" or await self.read(admin.org_role, org, pid) is not None)):
            return protocol.error(ref, "forbidden", "admins invite members; only the owner gives or changes roles")
        out = await self.manage(admin.add_org_member, org, handle, role)
        return {"op": "add_org_member", "ref": ref, **out}

    async def _op_leave_org(self, conn: Conn, ref, frame) -> dict:
        """A person leaves an organization they are in (not its last owner: `last_owner`)."""
        return await self._leave(conn, ref, frame, "org", admin.org_role, admin.leave_org)

    async def _op_leave_workspace(self, conn: Conn, ref, frame) -> dict:
        """A person leaves one workspace, as one leaves a channel (not a personal one, nor as its last owner)."""
        return await self._leave(conn, ref, frame, "workspace", admin.role_in, admin.leave_workspace)

    async def _op_join_workspace(self, conn: Conn, ref, frame) -> dict:
        """A person joins, by themselves, a workspace their organization opens to them (`list_joinable`); any
        other is `not_found` exactly as a made-up id; their other connections get `workspace_added`."""
        self._person_only(conn)
        ws = frame.get("workspace")
        if not isinstance(ws, str):
            return protocol.error(ref, "bad_frame", "join_workspace needs workspace")
        out = await self._manage_hidden("unknown_workspace", admin.join_workspace, ws, conn.participant, True)  # (by id)
        return {"op": "join_workspace", "ref": ref, **out}

    async def _manage_hidden(self, unknown: str, fn, *args) -> dict:
        """`manage`, its `unknown` refusal answered `not_found`, exactly as an id one may not see."""
        try:
            return await self.manage(fn, *args)
        except admin.AdminError as e:
            if e.code == unknown:
                raise queries.NotFound from None
            raise

    async def _leave(self, conn: Conn, ref, frame, field: str, role_of: Callable, leave: Callable) -> dict:
        """The connection's person leaves the organization or workspace `frame[field]` (`not_found` if not in it);
        their other connections lose what went as on any revocation (`workspace_gone`, `_refresh_access`)."""
        self._person_only(conn)
        where, op = frame.get(field), frame["op"]
        if not isinstance(where, str):
            return protocol.error(ref, "bad_frame", f"{op} needs {field}")
        await self._my_role(role_of, where, conn)
        out = await self.manage(leave, where, conn.participant)
        return {"op": op, "ref": ref, **out}

    async def _op_delete_workspace(self, conn: Conn, ref, frame) -> dict:
        """Seed 003 §66: the owner keeps "deleting the workspace"; §65: a personal one never is."""
        self._person_only(conn)
        ws = frame.get("workspace")
        if not isinstance(ws, str):
            return protocol.error(ref, "bad_frame", "delete_workspace needs workspace")
        mine = await self._my_role(admin.role_in, ws, conn)
        if mine != "owner":
            return protocol.error(ref, "forbidden", "only the workspace's owner deletes it")
        out = await self.manage(admin.delete_workspace, ws)
        return {"op": "delete_workspace", "ref": ref, **out}

    async def _op_set_permissions(self, conn: Conn, ref, frame) -> dict:
        """Seed 002: "Admins manage everything in it; members add and change only their own agents", and
        "Monitor: set by a workspace admin"."""
        self._person_only(conn)
        ws, agent = frame.get("workspace"), frame.get("agent")
        if not isinstance(ws, str) or not isinstance(agent, str):
            return protocol.error(ref, "bad_frame", "set_permissions needs workspace and agent")
        changes = {k: frame[k] for k in permissions.FLAGS + permissions.LISTS if k in frame}
        mine = await self._my_role(admin.role_in, ws, conn)
        aid, owner = await self.read(permissions.target, ws, agent)
        if mine not in ("owner", "admin"):
            if mine == "viewer" or owner != conn.participant:
                return protocol.error(ref, "forbidden", "members change only their own agents' permissions")
            if "monitor" in changes:
                return protocol.error(ref, "forbidden", "monitor is set by a workspace admin")
        out = await self.manage(permissions.set_permissions, ws, aid, changes)
        return {"op": "set_permissions", "ref": ref, **out}

    async def _op_set_restricted(self, conn: Conn, ref, frame) -> dict:
        """Seed 002: "A restricted workspace is open only to the organization's admins and the people added to
        it directly"; the workspace's owners and admins decide."""
        self._person_only(conn)
        ws, restricted = frame.get("workspace"), frame.get("restricted")
        if not isinstance(ws, str) or not isinstance(restricted, bool):
            return protocol.error(ref, "bad_frame", "set_restricted needs workspace and restricted: bool")
        mine = await self._my_role(admin.role_in, ws, conn)
        if mine not in ("owner", "admin"):
            return protocol.error(ref, "forbidden", "only the workspace's owners and admins restrict it")
        out = await self.manage(admin.set_restricted, ws, restricted)
        return {"op": "set_restricted", "ref": ref, **out}

    async def _op_add_member(self, conn: Conn, ref, frame) -> dict:
        """Seed 003 §66: owners and admins invite; only the owner gives or changes roles above member."""
        self._person_only(conn)
        ws, handle, role = frame.get("workspace"), frame.get("handle"), frame.get("role", "member")
        if not all(isinstance(x, str) for x in (ws, handle, role)):
            return protocol.error(ref, "bad_frame", "add_member needs workspace, handle and role")
        handle = "@" + handle.removeprefix("@")  # by handle only: a participant id from elsewhere is not found
        mine = await self._my_role(admin.role_in, ws, conn)
        if mine not in ("owner", "admin") or (role in ("owner", "admin") and mine != "owner"):
            return protocol.error(ref, "forbidden", "admins invite members and viewers; only the owner gives roles")
        pid = await self.read(admin.person, handle)
        if await self.read(admin.role_in, ws, pid) is not None and mine != "owner":
            return protocol.error(ref, "forbidden", "only the owner changes a member's role")
        out = await self.manage(admin.add_member, ws, handle, role)
        return {"op": "add_member", "ref": ref, **out}

    async def _op_add_agent(self, conn: Conn, ref, frame) -> dict:
        """A person makes an agent of their own (in all their workspaces, or pinned to one); the key is shown once."""
        self._person_only(conn)
        name, ws = frame.get("name"), frame.get("workspace")
        if not isinstance(name, str) or (ws is not None and not isinstance(ws, str)):
            return protocol.error(ref, "bad_frame", "add_agent needs a name (and optionally a workspace)")
        if ws is not None:
            await self._my_role(admin.role_in, ws, conn)
        out = await self.manage(admin.add_agent, name, conn.participant, ws)
        return {"op": "add_agent", "ref": ref, **out}

    async def _op_revoke_agent(self, conn: Conn, ref, frame) -> dict:
        """Seed 002: agents belong to a person; its owner retires one (or a leaked key): its key is refused from
        now on and its open connections close (`_rescan`, on every node)."""
        aid = await self._own_agent(conn, frame)
        return {"op": "revoke_agent", "ref": ref, **await self.manage(admin.revoke_agent, aid)}

    async def _op_rotate_key(self, conn: Conn, ref, frame) -> dict:
        """A new key for one's own agent, shown once; the old key is refused at once and the sessions it opened
        end, so its open connections close and sign in again with the new key."""
        aid = await self._own_agent(conn, frame)
        return {"op": "rotate_key", "ref": ref, **await self.manage(admin.rotate_key, aid)}

    async def _op_my_agents(self, conn: Conn, ref, frame) -> dict:
        """A person's own agents, wherever they are (pinned to a workspace they left too): what they may revoke
        or rotate; each with whether it is online."""
        self._person_only(conn)
        agents = await self.read(queries.my_agents, conn.participant)
        return {"op": "my_agents", "ref": ref, "agents": [{**a, "online": self.online(a["id"])} for a in agents]}

    async def _own_agent(self, conn: Conn, frame) -> str:
        """The id of the connection's person's agent `frame["agent"]` (id or name); another's, or a revoked one,
        is answered as one that does not exist (`not_found`)."""
        self._person_only(conn)
        agent = frame.get("agent")
        if not isinstance(agent, str):
            raise ValueError(f"{frame['op']} needs agent (an id, or a name of yours)")
        aid = await self.read(admin.own_agent, conn.participant, agent)
        if aid is None:
            raise queries.NotFound
        return aid

    async def _op_add_group(self, conn: Conn, ref, frame) -> dict:
        """Seed 000: "Agents can be gathered in groups (group:<name>) to address several at once": a workspace's
        owners and admins make a group, or name its members anew (adding and removing them)."""
        self._person_only(conn)
        ws, name, members = frame.get("workspace"), frame.get("name"), frame.get("members")
        if not isinstance(ws, str) or not isinstance(name, str) or not isinstance(members, list) \
                or not all(isinstance(m, str) for m in members):
            return protocol.error(ref, "bad_frame", "add_group needs workspace, name and members (a list of names)")
        if refused := await self._not_group_admin(conn, ws, ref):
            return refused
        out = await self.manage(admin.add_group, ws, name, members)
        return {"op": "add_group", "ref": ref, **out}

    async def _op_remove_group(self, conn: Conn, ref, frame) -> dict:
        """A workspace's owners and admins remove one of its groups; a group that does not exist is `not_found`,
        exactly as one in a workspace one is not in."""
        self._person_only(conn)
        ws, name = frame.get("workspace"), frame.get("name")
        if not isinstance(ws, str) or not isinstance(name, str):
            return protocol.error(ref, "bad_frame", "remove_group needs workspace and name")
        if refused := await self._not_group_admin(conn, ws, ref):
            return refused
        out = await self._manage_hidden("unknown_group", admin.remove_group, ws, name)
        return {"op": "remove_group", "ref": ref, **out}

    async def _not_group_admin(self, conn: Conn, ws: str, ref) -> dict | None:
        """`forbidden` unless the connection's person is an owner or admin of `ws` (who make and remove its groups)."""
        if await self._my_role(admin.role_in, ws, conn) not in ("owner", "admin"):
            return protocol.error(ref, "forbidden", "the workspace's owners and admins make and change its groups")
        return None

    async def _op_set_budget(self, conn: Conn, ref, frame) -> dict:
        ws, topic, budget = frame.get("workspace"), frame.get("topic"), frame.get("budget")
        if not isinstance(ws, str) or not isinstance(topic, str):
            return protocol.error(ref, "bad_frame", "set_budget needs workspace, topic and budget")
        return await self.engine.submit("set_budget", conn.participant, ws, topic, budget, ref)

    async def _op_explain_assignment(self, conn: Conn, ref, frame) -> dict:
        present = await self._present(conn, frame)
        out = await self.read(queries.explain_assignment, conn.participant, frame, present)
        if "refused" in out:
            return {**protocol.refused(ref, *out["refused"]), **({"left_out": out["left_out"]} if "left_out" in out else {})}
        if "error" in out:
            return protocol.error(ref, *out["error"])
        return {"op": "explain_assignment", "ref": ref, **out}

    async def _op_presence(self, conn: Conn, ref, frame) -> dict:
        members = (await self.read(queries.list_members, conn.participant, frame))["members"]
        return {"op": "presence", "ref": ref, "online": {m["id"]: self.online(m["id"]) for m in members}}

    async def _present(self, conn: Conn, frame: dict) -> frozenset[str]:
        """Who is online now, as the engine scores a send to `frame["workspace"]` (seed 003 §14's online part)."""
        return frozenset(p for p in self.conns if self.online(p))

    def online(self, pid: str) -> bool:
        """Seed 003 §26: an agent counts as offline when nothing was heard from it for a few minutes.

        Heard: any frame, or the pong to the keepalive ping sent every `ping_interval`, so a connected agent
        with nothing to say stays online; a socket that stops answering is closed after `ping_timeout`."""
        horizon = time.monotonic() - self.limits.presence_timeout
        return any(c.kind != Kind.AGENT or c.last_seen >= horizon for c in self.conns.get(pid, ()))

    # --- after each commit ---

    def publish(self, out: Published) -> None:
        self._party_moves(out.parties)
        by_recipient: dict[str, list[Item]] = {}
        objs: dict[int, dict] = {}  # one message object per message, however many of its recipients are here
        for s in out.deliveries:
            if s.recipient in self.inboxes or s.recipient in self._arrived:
                obj = objs.get(id(s.message))
                if obj is None:
                    obj = objs[id(s.message)] = protocol.message_obj(s.message)
                party = out.parties.get(s.message.conversation)
                by_recipient.setdefault(s.recipient, []).append(Item(s.id, s.wake, s.reason, obj, party))
        for pid, items in by_recipient.items():
            if pid in self._arrived:
                self._arrived[pid] += items
            else:
                self.inboxes[pid].add(items)
        if out.messages:
            self._monitor(out)
        if out.topics or out.balances:
            self._events(out)
        if out.rescan:
            asyncio.ensure_future(self._rescan())

    def _party_moves(self, parties: dict) -> None:
        """A party can change without an op: a conversation grows to everyone addressed in it (core `_grown`).
        The engine hands over a new PartyView then; the directives' cached blocks about it are dropped.
        An unchanged party keeps the object known before, so comparing it later (a connection's roster, sent
        once per party) is `is`, not a walk over every entry."""
        changed = False
        for cid, pv in parties.items():
            prev = self._parties.get(cid)
            if prev is pv:
                continue
            if prev is not None:
                if prev == pv:
                    parties[cid] = prev
                    continue
                changed = True
            if len(self._parties) >= 100_000:
                self._parties.clear()
            self._parties[cid] = pv
        if changed:
            self.issuer.invalidate()

    def _monitor(self, out: Published) -> None:
        """Every message stored, with its deliveries (none for one absorbed by system.ygg), to monitors."""
        watched = [m for m in out.messages if self.following.monitoring(m.workspace)]
        if not watched:
            return
        sent: dict[int, list] = {}
        for x in out.deliveries:
            sent.setdefault(id(x.message), []).append({"to": x.recipient, "wake": x.wake, "reason": x.reason})
        for m in watched:
            frame = {"op": "event", "kind": "message", "message": protocol.message_obj(m),
                     "deliveries": sent.get(id(m), [])}
            for c in self.following.monitoring(m.workspace):
                c.push(frame)

    def _events(self, out: Published) -> None:
        if not self.following:  # nobody subscribed: build no topic or balance frames
            return
        followed = self.following.followed()
        frames: dict[str, list[tuple[dict, object]]] = {}
        for t in out.topics:
            if t.workspace in followed:
                frames.setdefault(t.workspace, []).append(
                    ({"op": "event", "kind": "topic", "topic": queries.topic_obj(t)}, self._readers(t, out)))
        for ws, account, bal in out.balances:
            if ws in followed:
                frames.setdefault(ws, []).append(({"op": "event", "kind": "balance", "workspace": ws,
                                                   "account": account, "balance": bal}, None))
        for ws, fs in frames.items():
            for c in self.following.followers(ws):
                for f, readers in fs:
                    if readers is None or c.participant in readers or ws in c.monitors:
                        c.push(f)

    def _readers(self, t, out: Published) -> frozenset[str] | None:
        """Who may see topic `t`: everyone following its workspace (None), or, in a direct
        conversation, its members only (monitors always)."""
        conv = out.conversations.get(t.conversation)
        if conv is None:  # (the writer's memory, where it shares this process; a writer process hands it over)
            conv = getattr(self.engine, "conversations", {}).get(t.workspace, {}).get(t.conversation)
        if conv is not None and conv.kind in ("general", "group"):
            return None
        return frozenset(t.members) | (conv.members if conv is not None else frozenset())

    async def _rescan(self) -> None:
        """Another process changed the database: memberships first (what each connection may still get and
        follow: a workspace left, receive or monitor taken away), then revoked sessions, then new deliveries."""
        self.issuer.invalidate()
        await self._refresh_access()
        for pid in list(self.conns):
            for c in list(self.conns.get(pid, ())):
                if await self.read(auth.session_participant, c.token, time.time_ns() // 1000) is None:
                    await self._end(c)
            inbox = self.inboxes.get(pid)
            if inbox is not None:
                await self._offer_again(pid, inbox)

    async def _offer_again(self, pid: str, inbox: Inbox) -> None:
        """After a rescan: what `pid` is owed, read again from its first page (a node on PostgreSQL claims
        instead for an agent)."""
        await inbox.rescan()

    async def _refresh_access(self, pids: list[str] | None = None) -> None:
        """What each connected participant (or each of `pids`) may still receive, follow and monitor, read again;
        for all of them, who is in each followed workspace too."""
        gained: dict[str, frozenset[str]] = {}  # who is in more workspaces than before: announced after `members`
        for pid, mine in (await self.read(_access, list(self.conns) if pids is None else pids)).items():
            if pid not in self.conns:
                continue
            self._receives[pid] = frozenset(ws for ws, (receive, _) in mine.items() if receive)
            if new := frozenset(mine) - self.conns[pid][0].workspaces:
                gained[pid] = new
            for c in self.conns[pid]:
                before, c.workspaces = c.workspaces, frozenset(mine)
                for ws in c.follows - c.workspaces:  # followed, and no longer theirs: deleted, left, removed
                    c.push({"op": "event", "kind": "workspace_gone", "workspace": ws})
                if c.follows:  # a client that follows workspaces is told of a new one (it may follow it too)
                    for ws in c.workspaces - before:
                        c.push({"op": "event", "kind": "workspace_added", "workspace": ws})
                follows = {ws for ws in c.follows if ws in self._receives[pid]}
                monitors = {ws for ws in c.monitors if ws in follows and mine[ws][1]}
                for ws in sorted((c.follows - follows) & c.workspaces):  # still theirs, no longer received
                    c.push(_narrowed(ws, False, "no_receive"))
                for ws in sorted((c.monitors - monitors) & follows):
                    c.push(_narrowed(ws, True, "no_monitor"))
                self.following.set(c, follows, monitors)
        self._events_wanted()
        if pids is None:
            await self._members_moved()
        for pid, new in gained.items():
            self._joined(pid, new)

    async def _members_moved(self) -> None:
        """Who is in each workspace followed here, read again: its followers are told who joined and who left
        since the last read (`members`): someone added or gone, an agent made or revoked, a restriction; and whose
        role or permissions changed (`changed`, when any did)."""
        followed = list(self.following.followed())
        if not followed:
            return
        for ws, (members, groups) in (await self.read(_standings, followed)).items():
            events = []
            moved = self.following.moved(ws, members)
            if moved is not None:
                events.append({"op": "event", "kind": "members", "workspace": ws, "joined": moved[0], "left": moved[1],
                               **({"changed": moved[2]} if moved[2] else {})})
            if self.following.regrouped(ws, groups):
                events.append({"op": "event", "kind": "groups", "workspace": ws, "groups": groups})
            for c in self.following.followers(ws):
                for ev in events:
                    c.push(ev)

    async def _sweeper(self) -> None:
        swept = time.monotonic()
        while True:
            await asyncio.sleep(min(5.0, self.limits.session_sweep))
            now = time.time_ns() // 1000
            if time.monotonic() - swept >= self.limits.session_sweep:  # expired sessions: deleted
                swept = time.monotonic()
                try:
                    await self.manage(auth.delete_expired, now)
                except Exception:
                    log.exception("expired sessions not deleted")
            for conns in list(self.conns.values()):
                for c in list(conns):
                    if c.expires_at <= now:
                        asyncio.ensure_future(self._end(c))
            self._silences()

    def _silences(self) -> None:
        """Seed 003 §26: an agent "counts as offline when nothing has been heard from it" for presence_timeout,
        connected or not: the engine scores it so (as `presence` answers), and online again once heard from."""
        horizon = time.monotonic() - self.limits.presence_timeout
        for pid, conns in self.conns.items():
            if conns and conns[0].kind == Kind.AGENT:
                self.engine.seen(pid, any(c.last_seen >= horizon for c in conns))


def _guarded(guard: threading.Lock, fn, conn, *args):
    """Use a connection shared by threads one at a time (two at once, or a close under a query, crash SQLite)."""
    with guard:
        return fn(conn, *args)


def _auth(conn: sqlite3.Connection, frame: dict):
    """Check credentials (read-only); return (participant, kind, handle, token or None, expires_at) or None.

    A token is resumed as it is; a key or a password earns a new session, made by the engine.
    """
    now = time.time_ns() // 1000
    if "api_key" in frame:
        aid = auth.agent_for_key(conn, frame["api_key"])
        if aid is None:
            return None
        name = conn.execute("SELECT name FROM agents WHERE id = ?", (aid,)).fetchone()[0]
        return aid, Kind.AGENT.value, name, None, auth.AGENT_SESSION
    if "handle" in frame and "password" in frame:
        if not isinstance(frame["handle"], str) or not isinstance(frame["password"], str):
            return None
        row = conn.execute("SELECT id, password_hash FROM people WHERE handle = ?", (frame["handle"],)).fetchone()
        return _Password(row, frame["handle"], frame["password"])  # checked by the caller, off this connection
    if "token" in frame:
        found = auth.session_participant(conn, frame["token"], now)
        if found is None:
            return None
        pid, expires = found
        row = conn.execute("SELECT handle FROM people WHERE id = ?", (pid,)).fetchone()
        if row:
            return pid, Kind.HUMAN.value, row[0], frame["token"], expires
        row = conn.execute("SELECT name FROM agents WHERE id = ? AND revoked = 0", (pid,)).fetchone()
        return (pid, Kind.AGENT.value, row[0], frame["token"], expires) if row else None
    return None


@dataclass(frozen=True)
class _Password:
    """A person's sign-in whose password is still to be checked (argon2: slow on purpose)."""

    row: tuple | None  # (id, password_hash) of that handle, or None
    handle: str
    password: str = field(repr=False)

    def check(self):
        if not auth.check_password(self.row[1] if self.row else None, self.password):
            return None
        return self.row[0], Kind.HUMAN.value, self.handle, None, auth.PERSON_SESSION


def _narrowed(ws: str, following: bool, reason: str) -> dict:
    """The event telling a subscriber that its following of `ws` (still its workspace) narrowed: monitor taken
    away (it follows on without it), or receive (nothing more of it follows)."""
    return {"op": "event", "kind": "subscription", "workspace": ws, "following": following, "monitor": False,
            "reason": reason}


def _chunks(conn: sqlite3.Connection, sql: str, keys: list[str], size: int = 500):
    """The rows of `sql` (its `{}`: the marks of an IN list) for `keys`, a chunk of them at a time."""
    for i in range(0, len(keys), size):
        chunk = keys[i:i + size]
        yield from conn.execute(sql.format(",".join("?" * len(chunk))), chunk)


def _access(conn: sqlite3.Connection, pids: list[str]) -> dict[str, dict[str, tuple[bool, bool]]]:
    """For each participant, its workspaces: {workspace: (receive, monitors)}; nothing for a revoked agent."""
    out: dict[str, dict[str, tuple[bool, bool]]] = {p: {} for p in pids}
    rows = _chunks(conn, """SELECT m.participant, m.workspace, m.receive, m.monitor OR m.role IN ('owner', 'admin')
                            FROM memberships m LEFT JOIN agents a ON a.id = m.participant
                            WHERE m.participant IN ({}) AND coalesce(a.revoked, 0) = 0""", pids)
    for pid, ws, receive, monitor in rows:
        out[pid][ws] = (bool(receive), bool(monitor))
    return out


def _members(conn: sqlite3.Connection, workspaces: list[str]) -> dict[str, dict[str, tuple]]:
    """For each workspace, who is in it with their role and permissions, as `list_members` lists them (a revoked
    agent is not): {workspace: {id: `following.standing_of`}}."""
    out: dict[str, dict[str, tuple]] = {ws: {} for ws in workspaces}
    cols = ", ".join(f"m.{c}" for c in queries.STANDING)
    rows = _chunks(conn, f"""SELECT m.workspace, m.participant, {cols} FROM memberships m
                             LEFT JOIN agents a ON a.id = m.participant
                             WHERE m.workspace IN ({{}}) AND coalesce(a.revoked, 0) = 0""", workspaces)
    for ws, pid, *rest in rows:
        out[ws][pid] = standing_of(queries.standing(*rest))
    return out


def _standings(conn: sqlite3.Connection, workspaces: list[str]) -> dict[str, tuple[dict[str, tuple], list[dict]]]:
    """For each workspace still there, its members (`_members`) and its groups (`_groups`), in one read."""
    members = {ws: m for ws, m in _members(conn, workspaces).items() if m}  # (none: deleted; workspace_gone says)
    groups = _groups(conn, members)
    return {ws: (m, groups[ws]) for ws, m in members.items()}


def _groups(conn: sqlite3.Connection, here: dict[str, Container[str]]) -> dict[str, list[dict]]:
    """Each workspace's groups as `list_groups` lists them, given who is in it (`here`)."""
    out: dict[str, list[dict]] = {ws: [] for ws in here}
    for ws, name, members in _chunks(conn, "SELECT workspace, name, members FROM groups WHERE workspace IN ({}) "
                                           "ORDER BY workspace, name", list(here)):
        out[ws].append(queries.group_row(name, members, here[ws]))
    return out


def _unacked(conn: sqlite3.Connection, pid: str, after: int, n: int, wakes: bool) -> list[Item]:
    """`pid`'s first `n` unacked deliveries above id `after` (`wakes`: wakes only), in id order."""
    rows = conn.execute(
        f"""SELECT d.id, d.wake, d.reason, m.body FROM deliveries d JOIN messages m ON m.id = d.message
            WHERE d.recipient = ? AND d.acked_at IS NULL AND d.id > ?{" AND d.wake = 1" if wakes else ""}
            ORDER BY d.id LIMIT ?""", (pid, after, n)
    ).fetchall()
    msgs = [(i, w, r, codec.decode_message(b)) for i, w, r, b in rows]
    views = loaders.party_views(conn, [(m.workspace, m.conversation) for *_, m in msgs]) if pid.startswith("agent.") else {}
    return [Item(i, bool(w), r, protocol.message_obj(m), views.get(m.conversation)) for i, w, r, m in msgs]


class _LoadFailed(Exception):
    """A participant's inbox load that another connection waited on did not finish."""


MAX_INFLIGHT = 64  # pipelined frames of one connection awaiting their commit; at this many, reading pauses
_PIPELINED: dict[str, Callable[[Gateway, Conn, Any, dict], Any]] = {"send": Gateway._send, "ack": Gateway._ack}
