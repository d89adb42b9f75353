"""The bridge's side of the socket: each send once (a refusal handled by the rulebook), acks, and retries
across reconnects with the same client_id."""

from __future__ import annotations

import asyncio
import logging

import websockets

log = logging.getLogger("ygg.agents.bridge")

CONNECTION_ERRORS = (ConnectionError, OSError, asyncio.TimeoutError, TimeoutError, websockets.WebSocketException)


def clip(s: str, n: int) -> str:
    s = " ".join((s or "").split())
    return s if len(s) <= n else s[: n - 1] + "…"


class Outbox:
    """Mixed into the Bridge: `_send`, `_ack` and `_retrying` on its client, counted in its stats."""

    async def _send(self, fields: dict, client_id: str, parent: dict | None = None) -> dict:
        """Send once (retrying across reconnects with the same client_id); handle refusals by the rulebook."""
        reply = await self._retrying(lambda: self.client.send(client_id=client_id, **fields))
        if reply.get("op") == "refused":
            reason = reply.get("reason")
            self.stats[f"refused:{reason}"] += 1
            log.info("%s: send refused %s: %s", self.name, reason, reply.get("detail"))
            if reason == "title_required" and "title" not in fields:
                return await self._send({**fields, "title": clip(fields.get("text", ""), 60)}, client_id, parent)
            if reason == "bad_card" and "card" in fields:  # the answer still goes, without the card it could not lay out
                return await self._send({k: v for k, v in fields.items() if k != "card"}, client_id, parent)
            if reason == "unknown_recipient" and fields.get("to") and fields.get("type") != "request":
                return await self._send({k: v for k, v in fields.items() if k != "to"}, client_id, parent)
            if reason == "credits_exhausted":
                self.state.broke = True
                self._halt = reason
            elif reason == "topic_limit":
                self._halt = reason
            elif reason == "topic_closed" and fields.get("topic"):
                self.state.forget_topic(fields["topic"])
            self.state.save()
            return reply
        if reply.get("op") != "sent":
            self.stats["send_errors"] += 1
            log.warning("%s: send failed: %s", self.name, reply)
            return reply
        self.stats["duplicates" if reply.get("duplicate") else "sent"] += 1
        self._after_sent(reply, fields, parent)
        return reply

    async def _ack(self, did: int) -> None:
        await self._retrying(lambda: self.client.ack([did]))
        self.state.finish(did)
        self.state.save()
        self.stats["acked"] += 1

    async def _retrying(self, op) -> dict:
        delay = 0.1
        while True:
            try:
                return await op()
            except CONNECTION_ERRORS as e:
                if self._stopping:
                    raise
                self.stats["retries"] += 1
                log.info("%s: connection trouble (%s); retrying", self.name, e)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)
