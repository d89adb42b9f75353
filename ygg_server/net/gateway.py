"""The websockets gateway: the server, the handshake and sessions, and each connection's frames.

A thin adapter. Each frame is decoded once into its typed frame (`protocol.decode`) and handed on: to the
writer (sends, acks, fundings, budgets, parties, profiles, settings, sessions), to an operation of `ops`
(queries on the reader connection; management and directives on the management connection: each operation
checks who may), or to the ops answered here (`net/handlers.py`). What the writer publishes after each commit
goes out through `net/fanout.py`; each connection's frames through its own queue (`net/conn.py`), so one slow
client never holds up the rest. Where agents' work and presence come from differs between one node alone and
one of several: the `Delivery` port (`net/delivery/`), the only thing the composition root sets apart.
"""

from __future__ import annotations

import asyncio
import logging
import math
import secrets
import threading
import time
from typing import Any, Callable

import websockets
from msgspec import UNSET
from websockets.asyncio.server import ServerConnection, serve

from ..ops import (access, actions, approvals, artifacts, auth, configure, files, goals, graph, guidance, memory,
                   memory_care, queries, schedules, skills, toolkit)
from ..ops.refusals import AdminError, Forbidden, NotFound, Refused
from .. import audit, protocol
from ..core import Kind
from ..writer.process import WriterGone
from ..protocol import ErrorCode as E, frames, replies
from .caps import AcceptErrors, Caps, raise_fd_limit
from .conn import Conn, Limits, close_within
from .delivery import Delivery, LocalDelivery
from .fanout import Fanout
from .feed import Feed
from .following import Following
from .handlers import Handlers, rate_limited
from .http import READY_FRESH, HttpEndpoints, Shared
from .hosting import HOST_PATH, HostEndpoints
from .inbox import Inbox, Item, Reader
from .issuer import Issuer
from .mcp_watch import TopicWatch
from .proxy import networks
from ..metrics import Metrics
from .rates import SendRate
from .signin import AuthLimiter, Full, HashQueue, bucket, sign_in_keys
from .transport import Deflate, HeardConnection
from .uploads import Uploads

log = logging.getLogger("ygg.net")
# websockets logs every frame at DEBUG, and a frame may carry an API key, a password, a session token or a
# message's text: its logger here stays at INFO whatever the root level (docs/security.md)
ws_log = logging.getLogger("ygg.net.websockets")
ws_log.setLevel(logging.INFO)


# what an expired session is told (docs/protocol.md, "Authentication")
EXPIRED = "the session expired: connect and authenticate again (auth on the open connection before expires_at renews it)"


class Gateway(Handlers, Uploads, Fanout, HttpEndpoints, HostEndpoints):
    def __init__(self, writer, limits: Limits | None = None, delivery: Delivery | None = None):
        self.writer = writer
        self.clock: Callable[[], int] = writer.clock  # the writer's (ygg_server/clock.py, or a test's): sessions, ops
        self.limits = limits or Limits()
        self.conns: dict[str, list[Conn]] = {}
        self.writing: set[Conn] = set()  # connections whose write waits on their reader (`_write_watch` times them)
        self.inboxes: dict[str, Inbox | Feed] = {}  # an agent's, a person's
        self._receives: dict[str, frozenset[str]] = {}  # connected participant -> workspaces it may get deliveries of
        self.following = Following()  # who follows and monitors which workspace here
        self._reader = writer.connect()  # beside the writer's: reads, and management ops (each its own)
        self._reader_lock = asyncio.Lock()
        self._admin = writer.connect()  # management ops write here; the writer notices (another process wrote)
        self._admin_lock = asyncio.Lock()
        # held by the thread using each connection: a cancelled await releases the asyncio lock, not the thread
        self._guards = {id(self._reader): threading.Lock(), id(self._admin): threading.Lock()}
        self._server = None
        self._limiter = AuthLimiter(self.limits.auth_failures_per_address, self.limits.auth_failures_per_key,
                                    self.limits.auth_window)
        self._hashing = HashQueue(self.limits.hash_queue, self.limits.hash_queue_per_address)
        self.send_rate = SendRate(self.limits.send_rate, self.limits.send_burst)
        self.issuer = Issuer(self.read)  # each agent wake goes out with its directive
        self._parties: dict[str, Any] = {}  # conversation -> the PartyView last published for it
        self._events_on: asyncio.Future | None = None  # the writer's sync after the events were turned on
        self.delivery = delivery or LocalDelivery()
        self.delivery.bind(self)
        self.metrics = Metrics()  # (ygg_server/metrics.py; served by net/http.py)
        self.proxies = networks(self.limits.trusted_proxies)  # whose X-Forwarded-For is believed (net/proxy.py)
        self.metrics_from = networks(self.limits.metrics_from)
        self.readiness = Shared(self._not_ready, READY_FRESH)  # /readyz (net/http.py)
        self.topic_watch = TopicWatch()  # MCP calls following their task's topic (net/mcp.py)
        self._hosting_init()  # hosts' connections, and which agent runs on which (net/hosting.py)

    # --- serving ---

    async def start(self, host: str = "127.0.0.1", port: int = 8765, ssl=None):
        await self.writer.open()
        self.writer.start(asyncio.get_running_loop(), self.publish)
        await self.delivery.start()
        origins = [None, *self.limits.origins]
        loop = asyncio.get_running_loop()
        raise_fd_limit()
        if not isinstance(loop.get_exception_handler(), AcceptErrors):
            loop.set_exception_handler(AcceptErrors(loop))
        caps = Caps(self.limits.connections_per_address, self.limits.connections, networks(self.limits.trusted_proxies))
        self._server = await serve(
            self.handler, host, port, max_size=self.limits.max_frame, open_timeout=self.limits.open_timeout,
            origins=origins, ping_interval=self.limits.ping_interval, ping_timeout=self.limits.ping_timeout,
            close_timeout=self.limits.close_timeout, process_request=self.http_request, logger=ws_log,
            create_connection=_counted(caps), compression=None, extensions=[Deflate()], ssl=ssl,
        )
        self._sweep = asyncio.ensure_future(self._sweeper())
        self._watch = asyncio.ensure_future(self._write_watch())
        return self._server

    @property
    def port(self) -> int:
        return self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        for task in (getattr(self, "_sweep", None), getattr(self, "_watch", None)):
            if task is not None:
                task.cancel()
        if self._server:
            self._server.close()
            await self._server.wait_closed()  # every connection detached (on PostgreSQL: their leases returned)
        await self.delivery.close()
        await self.writer.aclose()
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
        if ws.request is not None and ws.request.path.split("?", 1)[0] == HOST_PATH:
            return await self.host_handler(ws)
        conn = Conn(ws, self.limits, prefetch=self.limits.prefetch, address=self.address_of(ws, ws.request),
                    writing=self.writing)
        self.metrics.connections_opened += 1
        writer = asyncio.ensure_future(conn.writer())
        try:
            if not await self._authenticate(conn):
                return
            if not await self._attach(conn):
                await self._end(conn)
                return
            log.info("connection from %s: %s %s signed in", conn.address, conn.kind, conn.handle, extra=_conn_fields(conn))
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
            if conn.participant:
                log.info("connection from %s: %s %s closed (%s)", conn.address, conn.kind, conn.handle,
                         ws.close_code, extra=_conn_fields(conn))
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
                await close_within(conn.ws, 1000, "idle", self.limits.close_timeout)
                return
            await asyncio.sleep(left)

    async def _write_watch(self) -> None:
        """Abort each connection whose write has waited `send_timeout` on its reader (`Conn.write_overdue`), looked
        at every second: one task for all, where a deadline per write cost a task and a timer (12 us a batch)."""
        look = min(1.0, self.limits.send_timeout / 4)
        while True:
            await asyncio.sleep(look)
            now = time.monotonic()
            for conn in list(self.writing):
                conn.write_overdue(now)

    async def _drain(self, conn: Conn) -> None:
        while not conn.queue.empty():
            await asyncio.sleep(0.01)

    async def _end(self, conn: Conn, ref: Any = None) -> None:
        """Close a connection whose session is gone (expired, its agent revoked, its key replaced) with 1008, after
        an `unauthenticated` error whose detail says which: a client sees why, not only a close code."""
        if conn.ending:
            return
        conn.ending = True
        expired = conn.expires_at <= self.clock()
        audit.record("session_end", participant=conn.participant, address=conn.address,
                     reason="expired" if expired else "ended")
        detail = EXPIRED if expired else await self.read(auth.ended, conn.participant)
        conn.push(protocol.error(ref, E.UNAUTHENTICATED, detail))
        await self._close(conn, 1008, "session expired" if expired else "session revoked")

    async def _close(self, conn: Conn, code: int, reason: str) -> None:
        """Close once the frames already queued (the error saying why) went out."""
        try:
            await asyncio.wait_for(conn.queue.join(), 1.0)
        except TimeoutError:
            pass
        await close_within(conn.ws, code, reason, self.limits.close_timeout)

    async def _authenticate(self, conn: Conn) -> bool:
        header = conn.ws.request.headers.get("Authorization", "") if conn.ws.request else ""
        if header.startswith("Bearer "):
            return await self._session(conn, frames.Auth(token=header[7:]), quiet=True)
        deadline = time.monotonic() + self.limits.auth_timeout  # a deadline: other frames do not extend it
        try:
            raw = await asyncio.wait_for(conn.ws.recv(), self.limits.auth_timeout)
        except TimeoutError:
            await close_within(conn.ws, 1008, "authenticate first", self.limits.close_timeout)
            return False
        while True:
            try:
                frame = protocol.decode(raw)
            except protocol.BadFrame as e:  # (an op other than auth, whatever its fields, is not answered yet)
                code = "bad_frame" if e.op in (None, "auth") else "unauthenticated"
                conn.push(protocol.error(e.ref, code, e.detail if code == "bad_frame" else "authenticate first"))
                frame = None
            if isinstance(frame, frames.Auth):
                if await self._session(conn, frame):
                    return True
            elif frame is not None:
                conn.push(protocol.error(frame.ref, E.UNAUTHENTICATED, "authenticate first"))
            try:
                raw = await asyncio.wait_for(conn.ws.recv(), max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                await self._close(conn, 1008, "authenticate first")
                return False

    async def _session(self, conn: Conn, frame: frames.Auth, quiet: bool = False) -> bool:
        """Sign the connection in, or, on a connection already signed in, renew its session (the same participant's
        credentials: a new session, the connection and what it holds kept; options left out stay as they are)."""
        ref = frame.ref
        keys = sign_in_keys((conn.address,), frame)
        wait = self._limiter.retry_after(keys, time.monotonic())
        if wait > 0:  # too many failures from this address or for this credential: not even checked
            audit.record("sign_in", outcome="limited", address=conn.address, **_who(frame),
                         retry_after=math.ceil(wait))
            conn.push({**protocol.error(ref, E.UNAUTHENTICATED, "too many failed sign-ins; try again later"),
                       "retry_after": math.ceil(wait)})
            if quiet:
                await self._close(conn, 1008, "unauthenticated")
            return False
        res = await self.read(auth.credentials, frame, self.clock())
        tried = res.row[0] if isinstance(res, auth.Password) and res.row else None  # the person, if the handle is one
        if isinstance(res, auth.Password):  # a slow hash by design: not on the reader connection everyone queries
            password = res
            try:
                res = await self._hashing.run(bucket((conn.address,)), res.check)
            except Full as e:  # not checked, not counted as a failure
                audit.record("sign_in", outcome="busy", participant=tried, address=conn.address, **_who(frame),
                             retry_after=e.retry_after)
                conn.push({**protocol.error(ref, E.BUSY, "too many sign-ins are being checked; try again later"),
                           "retry_after": e.retry_after})
                return False
            if res is not None:
                await self._rehash(conn, password, res[0])
        if res is None:
            self._limiter.failed(keys, time.monotonic())
            audit.record("sign_in", outcome="failed", participant=tried, address=conn.address, **_who(frame))
            still = f" (this connection stays signed in as {conn.handle})" if conn.participant else ""
            conn.push(protocol.error(ref, E.UNAUTHENTICATED, "those credentials are not valid" + still))
            if quiet:
                await self._close(conn, 1008, "unauthenticated")
            return False
        pid, kind, handle, token, expires = res
        renew = bool(conn.participant)
        if renew and pid != conn.participant:
            conn.push(protocol.error(ref, E.BAD_FRAME, f"this connection is signed in as {conn.handle}; auth again "
                                     "here renews that session: open another connection to sign in as another"))
            return False
        if kind == Kind.HUMAN:  # (a person's session: its device, address, lifetime and idle expiry)
            made = await self._person_session(conn, frame, pid, token)
            if made is None:
                conn.push(protocol.error(ref, E.UNAUTHENTICATED, "that session ended: sign in again"))
                if quiet:
                    await self._close(conn, 1008, "unauthenticated")
                return False
            token, expires = made
        elif token is None:  # (an agent's session is made only while the key it signed in with is still its own)
            key = auth.key_id(frame.api_key) if kind == Kind.AGENT else None
            token, row = auth.session_row(pid, self.clock(), expires, secrets.token_urlsafe(32))
            await self.writer.submit("session", *row, key)
            expires = row[2]
            if renew and await self.read(auth.session_participant, token, self.clock()) is None:
                conn.push(protocol.error(ref, E.UNAUTHENTICATED, await self.read(auth.ended, pid)))
                return False  # (`_attach` checks this for a new connection)
        conn.participant, conn.kind, conn.handle, conn.token, conn.expires_at = pid, kind, handle, token, expires
        audit.record("sign_in", participant=pid, address=conn.address, **_who(frame), renewal=renew)
        if frame.prefetch is not None:
            conn.prefetch = frame.prefetch
        if kind == Kind.AGENT and (frame.directives is not UNSET or not renew):  # an agent's wakes carry their directive
            conn.dress = self.issuer.dress if frame.directives is not False else None
        conn.push(replies.session(ref, token, expires, pid, handle, kind))
        if renew and pid in self.inboxes:  # a larger prefetch has room for more
            self.inboxes[pid].offer()
        return True

    async def _attach(self, conn: Conn) -> bool:
        """Count the connection in (presence, inbox); False: its session is gone already (closed by the caller)."""
        pid = conn.participant
        mine = (await self.read(access.access, [pid]))[pid]
        conn.workspaces = frozenset(mine)
        self._receives[pid] = frozenset(ws for ws, (receive, _) in mine.items() if receive)
        first = pid not in self.conns
        self.conns.setdefault(pid, []).append(conn)
        if first:
            self.delivery.presence(conn, True)
        # an agent's key rotated, or the agent revoked, since the key was checked: no session was made, or it was
        # ended before this connection was among those a rescan closes (`handler` closes it, nothing offered)
        now = self.clock()
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
            feed = self.inboxes[pid] = Feed(pid, self.unacked_of(pid), self.allower(pid))
            return feed
        return await self.delivery.agent_inbox(pid)

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
            self.delivery.presence(conn, False)
        if conn.follows:
            self.following.drop(conn)
            self._events_wanted()

    def unacked_of(self, pid: str) -> Reader:
        """How `pid`'s inbox reads its pages (`inbox.Reader`)."""
        async def read(after: int, n: int, wakes: bool) -> list[Item]:
            return [Item(*row) for row in await self.read(queries.unacked, pid, after, n, wakes)]
        return read

    def allower(self, pid: str):
        """Checked as each delivery arrives and again as it goes out: its workspace is still one where `pid`
        is a member with receive (refreshed by `_rescan` when another connection wrote the database)."""
        def allow(item: Item) -> bool:
            return item.message["workspace"] in self._receives.get(pid, ())
        return allow

    def tell_presence(self, pid: str, workspaces: frozenset[str], online: bool, targets=None) -> None:
        """A `presence` event for `pid` to the connections following any of `workspaces` (or `targets`)."""
        if targets is None:
            targets = self.following.reaching(workspaces)
        for c in targets:
            for ws in c.follows & workspaces:
                c.push(replies.presence_event(ws, pid, online))


    # --- frames ---

    async def _frame(self, conn: Conn, raw: str | bytes) -> None:
        """Answer one frame. `send` and `ack` are pipelined: submitted to the writer as soon as they are read
        (so the writer decides a connection's frames in the order it sent them) and answered, in that order,
        when their batch has committed; the next frame is read meanwhile. Any other frame first waits until
        every earlier answer went out, so it sees (and is answered after) all the connection sent before."""
        try:
            frame = protocol.decode(raw)
        except protocol.BadFrame as e:
            await self._in_order(conn)
            if e.op is not None and conn.expires_at <= self.clock():  # (an op's frame: the session first)
                await self._end(conn, e.ref)
            else:
                conn.push(protocol.error(e.ref, E.BAD_FRAME, e.detail))
            return
        if conn.expires_at <= self.clock():
            await self._in_order(conn)
            await self._end(conn, frame.ref)
            return
        if not isinstance(frame, (frames.Send, frames.Ack)):  # (send: its own rate; ack: in _ack)
            wait = conn.ops.take(time.monotonic(), conn.participant, conn.address)
            if wait:
                await self._in_order(conn)
                conn.push(rate_limited(frame.ref, "too many requests on this connection; try again later", wait))
                return
        pipelined = _PIPELINED.get(type(frame))
        if pipelined is not None:
            started = self._start(pipelined, conn, frame)
            conn.inflight.append((started, frame, time.perf_counter()))  # (read at: /metrics' commit latency)
            if isinstance(started, asyncio.Future):
                started.add_done_callback(lambda _: self._answer(conn))
            else:
                self._answer(conn)
            while len(conn.inflight) >= MAX_INFLIGHT:
                await self._settled(conn)
            return
        await self._in_order(conn)
        try:
            reply = await self._dispatch(conn, frame)
        except Exception as e:
            reply = self._failed(frame, e)
        if reply is not None:
            self.metrics.answered(reply)
            conn.push(reply)

    async def _dispatch(self, conn: Conn, frame: protocol.Frame) -> dict | None:
        """The answer to a frame that is not pipelined: from an op here (`_op_<op>`), the writer, or `ops`."""
        op = frame.op
        handler = getattr(self, "_op_" + op, None)
        if handler is not None:
            return await handler(conn, frame)
        if op in _WRITER_OPS:
            command, stable = _WRITER_OPS[op]
            reply = replies.render(frame.ref, await self.writer.submit(command, conn.participant, frame))
        elif op in _OPS:
            fn, writes, stable = _OPS[op]
            args = (conn.participant, frame, self.clock()) if op in _TIMED else (conn.participant, frame)
            out = await (self.manage if writes else self.read)(fn, *args)
            if isinstance(out, dict) and "_notify" in out:  # (another participant's connections told: not the asker)
                told = out.pop("_notify")
                for pid, event in told if isinstance(told, list) else [told]:  # (one, or several: [(pid, event)])
                    self._notify(pid, event)
            reply = replies.reply(frame, out)
        else:
            return protocol.error(frame.ref, E.BAD_FRAME, f"op {op!r} is not available here")
        if stable:  # a party, a profile, a persona or a rulebook is part of the directives' stable part
            self.issuer.invalidate()
        return reply

    @staticmethod
    def _failed(frame: protocol.Frame, e: Exception) -> dict:
        """The answer to a frame whose handling raised `e`."""
        ref = frame.ref
        if isinstance(e, NotFound):
            return protocol.error(ref, E.NOT_FOUND, "no such thing")
        if isinstance(e, Forbidden):
            return protocol.error(ref, E.FORBIDDEN, "this membership has no receive permission")
        if isinstance(e, AdminError):
            return protocol.error(ref, e.code, e.detail)
        if isinstance(e, Refused):
            return {**protocol.refused(ref, e.reason, e.detail), **e.extra}
        if isinstance(e, (ValueError, TypeError)):
            return protocol.error(ref, E.BAD_FRAME, str(e))
        if isinstance(e, WriterGone):
            return protocol.error(ref, E.UNAVAILABLE, "the writer restarted before it answered; whether this was "
                                  "stored is unknown: send it again (with the same client_id, it is stored once)")
        log.error("op %s failed", frame.op, exc_info=e)
        return protocol.error(ref, E.INTERNAL, "the server failed on this frame; nothing was changed")

    def _start(self, fn: Callable, conn: Conn, frame: protocol.Frame) -> Any:
        """Run the synchronous part of a pipelined frame: a future (the writer's answer), a reply, or the error."""
        try:
            return fn(self, conn, frame)
        except Exception as e:
            return e

    def _answer(self, conn: Conn) -> None:
        """Push the answers of the pipelined frames that are known, oldest first, up to the first still pending."""
        q = conn.inflight
        while q:
            started, frame, read_at = q[0]
            if isinstance(started, asyncio.Future):
                if not started.done():
                    break
                self.metrics.commit_seconds.observe(time.perf_counter() - read_at)
                try:
                    reply = replies.render(frame.ref, started.result())  # the writer's result as its reply
                except (Exception, asyncio.CancelledError) as e:  # answered, so the ones after it are not held
                    reply = self._failed(frame, e if isinstance(e, Exception) else RuntimeError("cancelled"))
            elif isinstance(started, Exception):
                reply = self._failed(frame, started)
            else:
                reply = started
            q.popleft()
            if reply is not None:
                self.metrics.answered(reply)
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

    async def _sweeper(self) -> None:
        swept = time.monotonic()
        while True:
            try:  # loops past their deadline, or whose iteration could not be sent: stopped, with their reason (first
                await self.manage(goals.sweep, self.clock())  # at the start: a deadline passed while it was down)
            except Exception:
                log.exception("loops not swept")
            await asyncio.sleep(min(5.0, self.limits.session_sweep))
            now = self.clock()
            if time.monotonic() - swept >= self.limits.session_sweep:  # expired sessions: deleted
                swept = time.monotonic()
                try:
                    await self.manage(auth.delete_expired, now)
                except Exception:
                    log.exception("expired sessions not deleted")
                try:  # uploads never sent, and bytes no upload names (ops/files.py)
                    await self.manage(files.sweep, now)
                except Exception:
                    log.exception("unsent uploads not swept")
            for conns in list(self.conns.values()):
                for c in list(conns):
                    if c.expires_at <= now:
                        asyncio.ensure_future(self._end(c))
            self.delivery.silences()
            if self.memory_workers is None:  # condensing, decay, consolidation: each on its own schedule
                self.memory_workers = memory_care.Workers(self.manage, self.clock)
            await self.memory_workers.tick()
            try:
                await self._touch_people()
            except Exception:
                log.exception("sessions in use not marked")


def _conn_fields(conn: Conn) -> dict:
    """A connection line's fields (ygg_server/logs.py): where from, and who; never a credential."""
    return {"address": conn.address, "participant": conn.participant, "handle": conn.handle, "kind": str(conn.kind)}


def _counted(caps: Caps):
    """websockets' connection factory: our connections, counted by `caps`."""
    def make(*args, **kw) -> HeardConnection:
        c = HeardConnection(*args, **kw)
        c.caps = caps
        return c
    return make


def _who(frame: frames.Auth) -> dict:
    """What an audit entry says of the credential tried: its kind, and an API key's id (its public part), never
    a password, a key's secret or a token."""
    if isinstance(frame.api_key, str):
        return {"method": "api_key", "key_id": auth.key_id(frame.api_key)}
    # (not the handle as typed: a password typed in the handle's field would be logged)
    return {"method": "password" if frame.handle is not UNSET else "token"}


def _guarded(guard: threading.Lock, fn, conn, *args):
    """Use a connection shared by threads one at a time (two at once, or a close under a query, crash SQLite)."""
    with guard:
        return fn(conn, *args)



MAX_INFLIGHT = 64  # pipelined frames of one connection awaiting their commit; at this many, reading pauses
_PIPELINED: dict[type, Callable] = {frames.Send: Gateway._send, frames.Ack: Gateway._ack}
# ops the writer decides: op -> (its command, whether the directives' stable part may change with it)
_WRITER_OPS = {"fund": ("fund", False), "set_budget": ("set_budget", False), "add_participant": ("party", True),
               "remove_participant": ("party", True), "set_lead": ("party", True),
               "set_profile": ("set_profile", True), "set_setting": ("set_setting", True),
               "edit_message": ("revise", False), "delete_message": ("revise", False),
               "settle_thread": ("thread", False), "create_artifact": ("artifact", False),
               "update_artifact": ("artifact", False), "comment_artifact": ("artifact", False),
               "press_card": ("card", False)}
# ops of `ops`: op -> (fn(conn, participant, frame) -> dict, whether it writes, whether the directives may change)
_OPS = {**{op: (fn, False, False) for op, fn in queries.QUERIES.items()},
        **{op: (fn, False, False) for op, fn in artifacts.QUERIES.items()},
        **{op: (fn, False, False) for op, fn in graph.QUERIES.items()},
        **{op: (fn, False, False) for op, fn in files.QUERIES.items()},
        **{op: (fn, writes, writes) for op, (fn, writes) in guidance.OPS.items()},
        **{op: (fn, writes, False) for op, (fn, writes) in actions.ACTIONS.items()},
        **{op: (fn, writes, False) for op, (fn, writes) in configure.OPS.items()},
        **{op: (fn, writes, False) for m in (schedules, goals, approvals, toolkit, skills, memory)
           for op, (fn, writes) in m.OPS.items()}}
_TIMED = (queries.TIMED | graph.TIMED | guidance.TIMED | actions.TIMED | configure.TIMED | schedules.TIMED
          | approvals.TIMED | goals.TIMED | toolkit.TIMED | skills.TIMED | memory.TIMED | set(files.QUERIES))  # ops of `ops` that take the time: fn(conn, participant, frame, now)
