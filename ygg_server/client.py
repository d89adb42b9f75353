"""The async client library: the TUI, the agent bridge and the tests all speak through it.

    async with Client(url, api_key=KEY) as c:
        reply = await c.send(workspace=ws, conversation="general", topic="new", title="Hi",
                             type="request", to=["reviewer"], text="Please look")
        async for d in c.deliveries():      # {"op": "deliver", "id": ..., "message": {...}, "context": [...]}
            ...
            await c.ack([d["id"]])

It reconnects by itself (backoff), resuming the session token, or signing in again
with the key or password when the token has expired; deliveries not acked before a
drop are offered again by the server, and ones already acked are filtered out.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import itertools
import json
import logging
import random
from collections import OrderedDict
from datetime import datetime, timezone
from typing import Any, AsyncIterator

import websockets
from websockets.asyncio.client import connect

log = logging.getLogger("ygg.client")
ws_log = logging.getLogger("ygg.client.websockets")  # frames carry the key: never logged (INFO and up only)
ws_log.setLevel(logging.INFO)

FILE_CHUNK = 512 * 1024  # bytes of a file per upload_file frame (base64: about 700 kB, under the 1 MiB frame)
RETRIES = 5  # a send answered rate_limited, or a sign-in answered busy, is tried again this many times


def _retry_after(reply: dict) -> float:
    """Seconds the server said to wait (1 when it said nothing usable; a minute at most)."""
    wait = reply.get("retry_after")
    return min(float(wait), 60.0) if isinstance(wait, (int, float)) and wait > 0 else 1.0


RENEW = "resub:"  # the ref of a subscription renewed after a reconnect, before the workspace id
SESSION = "session"  # the ref of an agent's session renewed on its open connection


def _frame(obj: dict) -> str:
    """A frame's text: non-ASCII as UTF-8, not `\\u` escapes (6 bytes a character, 12 outside the BMP), so a whole
    message in any script fits in a frame (docs/protocol.md: frames up to 1 MiB, messages up to 200,000 characters)."""
    text = json.dumps(obj, ensure_ascii=False)
    if not text.isascii():
        try:
            text.encode()
        except UnicodeEncodeError:  # a lone surrogate has no UTF-8: escaped, as JSON allows (the server decides)
            return json.dumps(obj)
    return text


class Refused(Exception):
    def __init__(self, frame: dict):
        super().__init__(f"{frame.get('reason') or frame.get('code')}: {frame.get('detail', '')}")
        self.frame = frame
        self.reason = frame.get("reason") or frame.get("code")


def plaintext_warning(url: str) -> str | None:
    """What to say before credentials go over ws:// to a host that is not this machine (None: nothing)."""
    import ipaddress
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme != "ws":
        return None
    host = (parts.hostname or "").lower()
    try:
        if ipaddress.ip_address(host).is_loopback:
            return None
    except ValueError:
        if host == "localhost" or host.endswith(".localhost"):
            return None
    return (f"{url} is not encrypted (ws://): the password, key or session token sent to {host} can be read on "
            "the way; use wss:// (a server behind TLS: docs/deploy.md)")


class Client:
    def __init__(self, url: str, *, api_key: str | None = None, handle: str | None = None,
                 password: str | None = None, token: str | None = None, prefetch: int | None = None,
                 reconnect: bool = True, timeout: float = 30.0, ssl=None, device: str | None = None):
        self.url = url
        self.ssl = ssl  # a client SSLContext for wss:// (None: the system's trusted certificates)
        self.device = device  # a person's: named in their list of sessions (docs/protocol.md, "Accounts")
        self.api_key, self.handle, self.password, self.token = api_key, handle, password, token
        self.prefetch = prefetch
        self.reconnect = reconnect
        self.timeout = timeout
        self.me: dict | None = None
        self.expires_at = ""  # the session's end (UTC, as the server writes it)
        self.connected = asyncio.Event()
        self.closed = False
        self.reconnects = 0
        self._refs = itertools.count(1)
        self._waiting: dict[Any, asyncio.Future] = {}
        self._deliveries: asyncio.Queue[dict] = asyncio.Queue()
        self._events: asyncio.Queue[dict] = asyncio.Queue()
        self._acked: set[int] = set()
        self._subscriptions: dict[str, bool] = {}  # workspace -> monitor, renewed after a reconnect
        self._renewing: set[asyncio.Task] = set()
        self._stable: OrderedDict[str, list] = OrderedDict()  # directive version -> its stable blocks
        self._ws = None
        self._task: asyncio.Task | None = None
        self._first: asyncio.Future | None = None

    # --- connecting ---

    async def __aenter__(self) -> "Client":
        await self.connect()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def connect(self) -> dict:
        warning = plaintext_warning(self.url)
        if warning:  # (a password, an API key or a session token is about to go out)
            log.warning("%s", warning)
        self._first = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._run())
        return await asyncio.wait_for(asyncio.shield(self._first), self.timeout)

    async def close(self) -> None:
        self.closed = True
        if self._ws is not None:
            await self._ws.close()
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass

    def _credentials(self) -> dict:
        if self.token:
            return {"token": self.token}
        if self.api_key:
            return {"api_key": self.api_key}
        return {"handle": self.handle, "password": self.password}

    async def _run(self) -> None:
        delay = 0.1
        while not self.closed:
            try:
                async with connect(self.url, max_size=2**24, open_timeout=self.timeout, logger=ws_log,
                                   **({"ssl": self.ssl} if self.ssl is not None else {})) as ws:
                    self._ws = ws
                    self._forget_unacked()
                    session = await self._hello(ws)
                    delay = 0.1
                    self.me, self.token, self.expires_at = session["me"], session["token"], session["expires_at"]
                    for ws_id, monitor in list(self._subscriptions.items()):
                        await self._renew(ws, ws_id, monitor)
                    self.connected.set()
                    if self._first and not self._first.done():
                        self._first.set_result(session)
                    renewing = asyncio.ensure_future(self._keep_session(ws)) if self.api_key else None
                    try:
                        async for raw in ws:
                            self._dispatch(json.loads(raw))
                    finally:
                        if renewing is not None:
                            renewing.cancel()
            except Refused as e:
                if self.token and (self.api_key or self.password):
                    self.token = None  # expired or revoked: sign in again with the long-lived credential
                    continue
                if self._first and not self._first.done():
                    self._first.set_exception(e)
                return
            except (OSError, websockets.WebSocketException, asyncio.TimeoutError) as e:
                log.debug("connection lost: %s", e)
            finally:
                self.connected.clear()
                self._ws = None
                for fut in self._waiting.values():
                    if not fut.done():
                        fut.set_exception(ConnectionError("connection lost"))
                self._waiting.clear()
            if not self.reconnect or self.closed:
                if self._first and not self._first.done():
                    self._first.set_exception(ConnectionError("could not connect"))
                return
            self.reconnects += 1
            await asyncio.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, 5.0)

    async def _hello(self, ws) -> dict:
        frame = {"op": "auth", "ref": "auth", **self._credentials()}
        if self.prefetch:
            frame["prefetch"] = self.prefetch
        if self.device and self.api_key is None:
            frame["device"] = self.device
        await ws.send(_frame(frame))
        busy = 0
        while True:
            reply = json.loads(await asyncio.wait_for(ws.recv(), self.timeout))
            if reply.get("ref") == "auth":
                if reply.get("code") == "busy" and busy < RETRIES:  # the server's password checks are queued full
                    busy += 1
                    await asyncio.sleep(_retry_after(reply))
                    await ws.send(_frame(frame))
                    continue
                if reply.get("op") != "session":
                    raise Refused(reply)
                return reply
            self._dispatch(reply)

    async def _keep_session(self, ws) -> None:
        """An agent's session lasts an hour: renewed on the open connection when a fifth of it is left (the server
        would close the connection as it ends, and its held wakes would be offered again)."""
        while True:  # (a renewal refused is logged, and tried again while a second is left)
            left = datetime.strptime(self.expires_at, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc) \
                - datetime.now(timezone.utc)
            await asyncio.sleep(max(1.0, left.total_seconds() * 0.8))
            try:
                await ws.send(_frame({"op": "auth", "ref": SESSION, "api_key": self.api_key}))
            except websockets.ConnectionClosed:
                return

    def _forget_unacked(self) -> None:
        """After a drop the server offers every unacked delivery again: drop our stale copies."""
        while not self._deliveries.empty():
            self._deliveries.get_nowait()

    def _dispatch(self, frame: dict) -> None:
        op = frame.get("op")
        if op == "deliver":
            if isinstance(frame.get("directive"), dict):
                self._restore(frame["directive"])
            if frame["id"] not in self._acked:
                self._deliveries.put_nowait(frame)
        elif op == "event":
            if frame.get("kind") == "workspace_gone":  # not to be renewed after a reconnect
                self._subscriptions.pop(frame.get("workspace"), None)
            elif frame.get("kind") == "subscription" and frame.get("workspace") in self._subscriptions:
                if frame.get("following"):  # renewed as it is now
                    self._subscriptions[frame["workspace"]] = bool(frame.get("monitor"))
                else:
                    del self._subscriptions[frame["workspace"]]
            self._events.put_nowait(frame)
        elif frame.get("ref") == SESSION and op == "session":
            self.token, self.expires_at = frame["token"], frame["expires_at"]
        elif isinstance(frame.get("ref"), str) and frame["ref"].startswith(RENEW):
            self._renewed(frame)
        elif "ref" in frame and frame["ref"] in self._waiting:
            fut = self._waiting.pop(frame["ref"])
            if not fut.done():
                fut.set_result(frame)
        elif op == "error":
            log.warning("server error: %s", frame)

    @staticmethod
    async def _renew(ws, workspace: str, monitor: bool) -> None:
        try:
            await ws.send(_frame({"op": "subscribe", "ref": RENEW + workspace, "workspace": workspace,
                                      "monitor": monitor}))
        except websockets.ConnectionClosed:
            pass  # renewed at the next connection

    def _renewed(self, frame: dict) -> None:
        """The answer to a subscription renewed after a reconnect. Refused `not_found`: the workspace went (or
        is no longer ours) while we were away: dropped, not asked again at every reconnect. Refused `forbidden`:
        followed again without monitor if it had it (monitor taken away meanwhile), else dropped (receive)."""
        ws_id = frame["ref"][len(RENEW):]
        if frame.get("op") != "error" or ws_id not in self._subscriptions:
            return
        code = frame.get("code")
        if code == "forbidden" and self._subscriptions[ws_id] and self._ws is not None:
            self._subscriptions[ws_id] = False
            task = asyncio.ensure_future(self._renew(self._ws, ws_id, False))
            self._renewing.add(task)
            task.add_done_callback(self._renewing.discard)
        elif code in ("not_found", "forbidden"):
            del self._subscriptions[ws_id]
            log.info("subscription to %s dropped: %s", ws_id, frame.get("detail") or code)
        else:
            log.warning("subscription to %s not renewed: %s", ws_id, frame)

    def _restore(self, d: dict) -> None:
        """A directive's stable blocks come once per connection and version (docs/protocol.md, "Directives"):
        keep them, and put them back in a later wake's directive that omits them. Every deliver frame passes
        here in order, so this cache (larger than the server's, refreshed the same way) always has them."""
        v = d.get("version")
        if not isinstance(v, str):
            return
        if isinstance(d.get("stable"), list):
            self._stable[v] = d["stable"]
        elif v in self._stable:
            d["stable"] = self._stable[v]
        else:
            return
        self._stable.move_to_end(v)
        if len(self._stable) > 256:
            self._stable.popitem(last=False)

    # --- asking ---

    async def request(self, op: str, **fields) -> dict:
        """Send one frame and wait for the reply with the same ref."""
        await asyncio.wait_for(self.connected.wait(), self.timeout)
        ws = self._ws
        if ws is None:
            raise ConnectionError("connection lost")
        ref = next(self._refs)
        fut = asyncio.get_running_loop().create_future()
        self._waiting[ref] = fut
        try:
            await ws.send(_frame({"op": op, "ref": ref, **fields}))
        except websockets.ConnectionClosed as e:
            self._waiting.pop(ref, None)
            fut.cancel()
            raise ConnectionError("connection lost") from e
        return await asyncio.wait_for(fut, self.timeout)

    async def call(self, op: str, **fields) -> dict:
        """Like request, but raise Refused for `refused` and `error` answers."""
        reply = await self.request(op, **fields)
        if reply.get("op") in ("refused", "error"):
            raise Refused(reply)
        return reply

    async def subscribe(self, workspace: str, monitor: bool = False) -> dict:
        """Follow a workspace's events (and, with monitor, all its messages); renewed after reconnects."""
        reply = await self.call("subscribe", workspace=workspace, monitor=monitor)
        self._subscriptions[workspace] = bool(reply.get("monitor"))  # (as followed: monitor taken away meanwhile)
        return reply

    async def unsubscribe(self, workspace: str) -> dict:
        self._subscriptions.pop(workspace, None)
        return await self.call("unsubscribe", workspace=workspace)

    async def send(self, **fields) -> dict:
        """`sent` or `refused` (a refusal is an answer, not an exception). `rate_limited` is waited out (up to
        RETRIES times, each after its `retry_after`), as `busy` is when signing in.

        `unavailable` (the server's writer restarted before answering: whether it was stored is unknown) raises
        ConnectionError when the send has a client_id, as a lost connection does: callers that resend on that
        with the same client_id (the TUI's session, the agent bridge) get it stored once."""
        for _ in range(RETRIES):  # faster than the server's send rate: sent again when it says (nothing was stored)
            reply = await self.request("send", **fields)
            if reply.get("code") != "rate_limited":
                break
            await asyncio.sleep(_retry_after(reply))
        if reply.get("code") == "unavailable" and fields.get("client_id") is not None:
            raise ConnectionError(reply.get("detail") or "the server's writer restarted")
        return reply

    async def upload(self, workspace: str, name: str, data: bytes, type: str | None = None) -> dict:
        """Upload a file in chunks (docs/protocol.md, "Files"): its `file` object (its id goes in a send's `files`);
        Refused if the server refuses it (too large for the plan, a bad name...)."""
        fields = {"name": name, "size": len(data), "sha256": hashlib.sha256(data).hexdigest(),
                  **({"type": type} if type else {})}
        at = 0
        while True:
            chunk = base64.b64encode(data[at:at + FILE_CHUNK]).decode("ascii")
            reply = await self.call("upload_file", workspace=workspace, data=chunk, **fields)
            at += FILE_CHUNK
            if "file" in reply:
                return reply["file"]
            fields = {"upload": reply["upload"]}

    async def download(self, workspace: str, file: str) -> tuple[dict, bytes]:
        """A file sent with a message one may read (or one's own upload): (its `file` object, its bytes)."""
        parts, offset = [], 0
        while True:
            reply = await self.call("download_file", workspace=workspace, file=file, offset=offset)
            chunk = base64.b64decode(reply["data"])
            parts.append(chunk)
            offset += len(chunk)
            if reply["done"] or not chunk:
                return reply["file"], b"".join(parts)

    async def ack(self, ids: list[int]) -> dict:
        reply = await self.request("ack", ids=list(ids))
        self._acked.update(reply.get("ids", ()))
        return reply

    async def next_delivery(self, timeout: float | None = None) -> dict:
        while True:
            d = await asyncio.wait_for(self._deliveries.get(), timeout)
            if d["id"] not in self._acked:
                return d

    async def deliveries(self) -> AsyncIterator[dict]:
        while True:
            d = await self._deliveries.get()
            if d["id"] not in self._acked:
                yield d

    async def next_event(self, timeout: float | None = None) -> dict:
        return await asyncio.wait_for(self._events.get(), timeout)

    def pending_deliveries(self) -> int:
        return self._deliveries.qsize()

    def pending_events(self) -> list[dict]:
        """Every event already received, without waiting (for batching UI updates)."""
        out = []
        while not self._events.empty():
            out.append(self._events.get_nowait())
        return out
