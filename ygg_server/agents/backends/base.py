"""What every backend shares: the interface, bounded retries, and reading a model's answer."""

from __future__ import annotations

import abc
import asyncio
import email.utils
import json
import logging
import random
import re
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

import httpx

from ..types import MESSAGE_TYPES, STATES, ToolCall, TurnInput, TurnOutput

log = logging.getLogger("ygg.agents.backends")

Sleep = Callable[[float], Awaitable[None]]


class Backend(abc.ABC):
    """One model (or program) that produces an agent's turn. Never raises for a failed turn."""

    name = "backend"

    @abc.abstractmethod
    async def turn(self, inp: TurnInput) -> TurnOutput: ...

    async def close(self) -> None:
        return None


@dataclass
class RetryPolicy:
    """Bounded retries with exponential backoff; a server's retry-after is honoured up to a cap."""

    max_retries: int = 3
    base_delay: float = 0.5
    max_delay: float = 20.0
    max_retry_after: float = 60.0  # a longer retry-after fails the turn instead of stalling the agent

    def backoff(self, attempt: int) -> float:
        return min(self.max_delay, self.base_delay * (2 ** attempt)) * (0.75 + random.random() / 2)


RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})


def retry_after(resp: httpx.Response) -> float | None:
    """Seconds to wait from `retry-after-ms` or `retry-after` (seconds or an HTTP date)."""
    ms = resp.headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = resp.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
        return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def error_text(resp: httpx.Response) -> str:
    """A short, readable reason from a provider's error body."""
    try:
        body = resp.json()
    except ValueError:
        return f"HTTP {resp.status_code}: {resp.text[:200]}"
    err = body.get("error") if isinstance(body, dict) else None
    if isinstance(err, dict):
        kind = err.get("type") or err.get("code") or ""
        return f"HTTP {resp.status_code} {kind}: {err.get('message', '')}".strip()
    if isinstance(err, str):
        return f"HTTP {resp.status_code}: {err}"
    return f"HTTP {resp.status_code}: {str(body)[:200]}"


async def post_json(http: httpx.AsyncClient, url: str, body: dict, headers: dict, policy: RetryPolicy,
                    sleep: Sleep = asyncio.sleep) -> tuple[dict | None, str | None, dict]:
    """POST with bounded retries. Returns (json, None, stats) or (None, error, stats); never raises."""
    stats: dict[str, Any] = {"attempts": 0, "waited": 0.0}
    last = "no attempt"
    for attempt in range(policy.max_retries + 1):
        stats["attempts"] = attempt + 1
        try:
            resp = await http.post(url, json=body, headers=headers)
        except httpx.TimeoutException as e:
            last = f"timeout: {type(e).__name__}"
            wait = policy.backoff(attempt)
        except httpx.HTTPError as e:
            last = f"connection failed: {type(e).__name__}: {e}"
            wait = policy.backoff(attempt)
        else:
            if resp.status_code < 300:
                try:
                    return resp.json(), None, stats
                except ValueError:
                    return None, f"the provider answered something that is not JSON: {resp.text[:200]!r}", stats
            last = error_text(resp)
            if resp.status_code not in RETRYABLE_STATUS:
                return None, last, stats
            hinted = retry_after(resp)
            if hinted is not None and hinted > policy.max_retry_after:
                return None, f"{last} (rate limited; retry after {hinted:.0f}s)", stats
            wait = hinted if hinted is not None else policy.backoff(attempt)
            if resp.status_code == 429:
                stats["rate_limited"] = stats.get("rate_limited", 0) + 1
        if attempt == policy.max_retries:
            break
        log.info("retrying in %.2fs after: %s", wait, last)
        stats["waited"] += wait
        await sleep(wait)
    return None, f"{last} (gave up after {stats['attempts']} attempts)", stats


# --- reading a model's answer ---

_FENCE = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.S)


def _json_object(text: str) -> dict | None:
    s = text.strip()
    candidates = [s]
    candidates += _FENCE.findall(s)
    if "{" in s and "}" in s:
        candidates.append(s[s.index("{"): s.rindex("}") + 1])
    for c in candidates:
        try:
            obj = json.loads(c)
        except ValueError:
            continue
        if isinstance(obj, dict):
            return obj
    return None


def _str_list(v: Any) -> list[str] | None:
    if v is None:
        return None
    if isinstance(v, str):
        return [v] if v else []
    if isinstance(v, list):
        return [x for x in v if isinstance(x, str)]
    return None


def parse_envelope(text: str | None) -> TurnOutput:
    """Read the answer format the directive asks for (see directives.ANSWER_FORMAT).

    A JSON object with "text" (and optionally type, state, to, in_reply_to,
    topic, title, waiting_for, tool_calls) is taken field by field; anything
    else is the reply text itself, and the bridge fills in the rest. Fields
    with values outside the rulebook's words are dropped, not trusted.
    """
    if not text or not text.strip():
        return TurnOutput(text=None)
    obj = _json_object(text)
    if obj is None or not ({"text", "tool_calls", "type", "state"} & obj.keys()):
        return TurnOutput(text=text.strip())
    out = TurnOutput()
    t = obj.get("text")
    out.text = t.strip() if isinstance(t, str) and t.strip() else None
    if obj.get("type") in MESSAGE_TYPES:
        out.type = obj["type"]
    if obj.get("state") in STATES:
        out.state = obj["state"]
    out.to = _str_list(obj.get("to"))
    out.waiting_for = _str_list(obj.get("waiting_for"))
    for k in ("in_reply_to", "topic", "title", "conversation"):
        if isinstance(obj.get(k), str) and obj[k]:
            setattr(out, k, obj[k])
    if isinstance(obj.get("card"), dict):  # a result card (docs/protocol.md, "Result cards"): the server checks it
        out.card = obj["card"]
    calls = obj.get("tool_calls")
    if isinstance(calls, list):
        for i, c in enumerate(calls):
            if isinstance(c, dict) and isinstance(c.get("name"), str):
                args = c.get("arguments", {})
                out.tool_calls.append(ToolCall(name=c["name"], arguments=args if isinstance(args, dict) else {},
                                               id=str(c.get("id") or f"call_{i}")))
    return out
