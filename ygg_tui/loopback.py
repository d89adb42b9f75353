"""The TUI's side of connecting an account (issue 24; seed 003 §62): a loopback redirect (RFC 8252 §7.3) on
127.0.0.1 and a free port, which takes the provider's one redirect (its code and state) and tells the browser it
may close the tab. The server made the state and keeps the PKCE verifier; this side only relays what came back,
after checking the state is the one it was given (a redirect that is not ours is not relayed)."""

from __future__ import annotations

import asyncio
from typing import Awaitable, Callable
from urllib.parse import parse_qs, urlsplit

PATH = "/callback"
DONE = ("<!doctype html><title>Ygg</title><p>Ygg has what it needs: you can close this tab and go back to the "
        "terminal.</p>")


class LoopbackRedirect:
    def __init__(self) -> None:
        self._server: asyncio.Server | None = None
        self._got: asyncio.Future[dict] | None = None
        self.uri = ""

    async def start(self) -> str:
        self._got = asyncio.get_running_loop().create_future()
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.uri = f"http://127.0.0.1:{port}{PATH}"
        return self.uri

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = (await asyncio.wait_for(reader.readline(), 10)).decode("latin-1").split()
            while (await asyncio.wait_for(reader.readline(), 10)) not in (b"\r\n", b"\n", b""):
                pass  # (the headers: nothing in them is needed)
            parts = urlsplit(line[1]) if len(line) == 3 and line[0] == "GET" else None
            ok = parts is not None and parts.path == PATH and self._got is not None and not self._got.done()
            body = (DONE if ok else "not here").encode()
            writer.write(b"HTTP/1.1 %d %s\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: %d\r\n"
                         b"Connection: close\r\n\r\n" % (200 if ok else 404, b"OK" if ok else b"Not Found", len(body))
                         + body)
            await writer.drain()
            if ok:
                self._got.set_result({k: v[0] for k, v in parse_qs(parts.query).items()})
        except (asyncio.TimeoutError, ConnectionError, IndexError):
            pass
        finally:
            writer.close()

    async def wait(self, timeout: float) -> dict:
        assert self._got is not None
        return await asyncio.wait_for(asyncio.shield(self._got), timeout)

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None


class FlowError(Exception):
    """What went wrong on this side (the redirect never came, or came with another state)."""


async def connect(call: Callable[..., Awaitable[dict]], provider: str, show: Callable[[str], object],
                  workspace: str | None = None, timeout: float = 300.0) -> dict:
    """The whole flow from a client: `call(op, **fields)` is the session's request (raising on a refusal), `show`
    opens or prints the authorize URL. The server's `finish_connect` answer (the account connected)."""
    lb = LoopbackRedirect()
    uri = await lb.start()
    try:
        started = await call("connect_account", provider=provider, redirect_uri=uri,
                             **({"workspace": workspace} if workspace else {}))
        show(started["authorize_url"])
        try:
            got = await lb.wait(timeout)
        except asyncio.TimeoutError:
            raise FlowError(f"no answer from the sign-in page within {int(timeout)} s") from None
        if got.get("state") != started["state"]:
            raise FlowError("the redirect came back with another state: it is not relayed")
        return await call("finish_connect", state=got["state"], code=got.get("code"), error=got.get("error"))
    finally:
        lb.close()
