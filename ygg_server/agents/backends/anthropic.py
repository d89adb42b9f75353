"""The Anthropic Messages API over httpx.

The directive's stable blocks become the `system` array, each marked
`cache_control: {"type": "ephemeral"}`: tools + system form the cached prefix,
and because those bytes never change between turns the cache keeps hitting.
The dynamic part is the user message; earlier tool rounds of the same turn
follow as assistant `tool_use` / user `tool_result` pairs.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from ..types import ToolCall, TurnInput, TurnOutput, failed
from .base import Backend, RetryPolicy, Sleep, parse_envelope, post_json

API_VERSION = "2023-06-01"


class AnthropicBackend(Backend):
    name = "anthropic"

    def __init__(self, *, model: str, api_key: str | None, base_url: str = "https://api.anthropic.com",
                 max_tokens: int = 1024, timeout: float = 60.0, retry: RetryPolicy | None = None,
                 http: httpx.AsyncClient | None = None, sleep: Sleep = asyncio.sleep, temperature: float | None = None):
        self.model, self.api_key, self.max_tokens, self.temperature = model, api_key, max_tokens, temperature
        self.url = base_url.rstrip("/") + "/v1/messages"
        self.retry = retry or RetryPolicy()
        self.http = http or httpx.AsyncClient(timeout=timeout)
        self._own_http = http is None
        self.sleep = sleep

    def request_body(self, inp: TurnInput) -> dict[str, Any]:
        system = [{"type": "text", "text": block, "cache_control": {"type": "ephemeral"}}
                  for block in inp.directive.stable[:4]]  # the API allows four cache breakpoints
        messages: list[dict[str, Any]] = [{"role": "user", "content": inp.directive.dynamic}]
        for step in inp.steps:
            content: list[dict[str, Any]] = []
            if step.text:
                content.append({"type": "text", "text": step.text})
            content += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in step.calls]
            messages.append({"role": "assistant", "content": content})
            messages.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": r.call_id, "content": r.content, "is_error": r.is_error}
                for r in step.results
            ]})
        body: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens, "system": system,
                                "messages": messages}
        if inp.tools:
            body["tools"] = [{"name": t.name, "description": t.description, "input_schema": t.parameters}
                             for t in inp.tools]
        if self.temperature is not None:
            body["temperature"] = self.temperature
        return body

    async def turn(self, inp: TurnInput) -> TurnOutput:
        headers = {"anthropic-version": API_VERSION, "content-type": "application/json"}
        if self.api_key:
            headers["x-api-key"] = self.api_key
        data, err, stats = await post_json(self.http, self.url, self.request_body(inp), headers, self.retry, self.sleep)
        if err is not None:
            return failed(f"anthropic: {err}", **stats)
        try:
            blocks = data["content"]
            text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
            calls = [ToolCall(id=b["id"], name=b["name"], arguments=b.get("input") or {})
                     for b in blocks if b.get("type") == "tool_use"]
        except (KeyError, TypeError, AttributeError) as e:
            return failed(f"anthropic: unexpected answer shape ({e!r})", **stats)
        out = parse_envelope(text) if text else TurnOutput()
        out.tool_calls = calls + out.tool_calls
        out.usage = {**stats, **(data.get("usage") or {}), "stop_reason": data.get("stop_reason")}
        return out

    async def close(self) -> None:
        if self._own_http:
            await self.http.aclose()
