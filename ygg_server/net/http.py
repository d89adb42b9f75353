"""Plain HTTP on the server's own port, answered before any WebSocket upgrade (websockets' `process_request`):

- `/healthz`: the process answers (liveness);
- `/readyz`: the store answers a query and the writer commits a batch, each within READY_TIMEOUT (readiness:
  503 naming what is not ready); probes at once share one check, and its answer stands for READY_FRESH
  seconds, so probing, which needs no credential, costs the writer at most one batch a second;
- `/metrics`: Prometheus' text format (ygg_server/metrics.py), only with `serve --metrics`, and then only to
  a client on loopback or in `--metrics-from` (behind a trusted proxy, the client it forwards for counts).

Any other request goes on to the WebSocket handshake.
"""

from __future__ import annotations

import asyncio
import logging
import time
from http import HTTPStatus

from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from ..metrics import render
from ..ops import health
from .proxy import client_address, loopback, trusted

log = logging.getLogger("ygg.net")
READY_TIMEOUT = 2.0
READY_FRESH = 1.0


class Shared:
    """One answer for many callers: callers at once wait for the same run of `check`, and its answer is given
    again for `fresh` seconds after it came."""

    def __init__(self, check, fresh: float):
        self.check, self.fresh = check, fresh
        self.running: asyncio.Future | None = None
        self.answer, self.at = None, float("-inf")

    async def __call__(self):
        if time.monotonic() - self.at < self.fresh:
            return self.answer
        if self.running is None:
            self.running = asyncio.ensure_future(self._run())
        return await asyncio.shield(self.running)

    async def _run(self):
        try:
            self.answer = await self.check()
            self.at = time.monotonic()
            return self.answer
        finally:
            self.running = None


class HttpEndpoints:
    """Mixed into the gateway."""

    def address_of(self, connection, request: Request | None) -> str:
        """The client's address (net/proxy.py): the peer's, or the one a trusted proxy forwards for."""
        peer = connection.remote_address[0] if connection.remote_address else "?"
        forwarded = request.headers.get_all("X-Forwarded-For") if request is not None else []
        return client_address(str(peer), forwarded, self.proxies)

    async def http_request(self, connection, request: Request) -> Response | None:
        path = request.path.split("?", 1)[0]
        if path == "/healthz":
            return connection.respond(HTTPStatus.OK, "ok\n")
        if path == "/readyz":
            why = await self.readiness()
            return connection.respond(HTTPStatus.SERVICE_UNAVAILABLE if why else HTTPStatus.OK, (why or "ready") + "\n")
        if path == "/metrics":
            return await self._metrics(connection, request)
        return None

    async def _not_ready(self) -> str:
        try:
            await asyncio.wait_for(self.read(health.reachable), READY_TIMEOUT)
        except Exception as e:
            return f"the store does not answer ({type(e).__name__})"
        try:
            await asyncio.wait_for(asyncio.shield(self.writer.submit("sync")), READY_TIMEOUT)
        except Exception as e:
            return f"the writer does not commit ({type(e).__name__})"
        return ""

    async def _metrics(self, connection, request: Request) -> Response:
        if not self.limits.metrics:
            return connection.respond(HTTPStatus.NOT_FOUND, "metrics are off (serve --metrics turns them on)\n")
        who = self.address_of(connection, request)
        if not (loopback(who) or trusted(who, self.metrics_from)):
            return connection.respond(HTTPStatus.FORBIDDEN, "metrics are served to loopback and --metrics-from\n")
        body, ctype = render(self.metrics, await self._gauges())
        return Response(HTTPStatus.OK, "OK", Headers([("Content-Type", ctype), ("Content-Length", str(len(body))),
                                                      ("Cache-Control", "no-store")]), body)

    async def _gauges(self) -> dict[str, tuple[str, float]]:
        try:
            unacked = await asyncio.wait_for(self.read(health.unacked), READY_TIMEOUT)
        except Exception:
            unacked = float("nan")
        return {
            "ygg_connections": ("WebSocket connections open and signed in", sum(len(c) for c in self.conns.values())),
            "ygg_participants_connected": ("participants with a connection here", len(self.conns)),
            "ygg_deliveries_unacked": ("deliveries made and not yet acknowledged (all recipients)", unacked),
            "ygg_writer_restarts": ("times the writer process was started again after it ended",
                                    getattr(self.writer, "restarts", 0)),
        }
