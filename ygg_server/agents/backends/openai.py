"""The OpenAI Chat Completions API over httpx, for any compatible server.

`base_url` is the API root including its version (`https://api.openai.com/v1`,
Ollama's `http://localhost:11434/v1`, llama.cpp's `http://localhost:8080/v1`);
the key is optional for local servers. The stable blocks become one system
message that starts every request (OpenAI's automatic prompt caching works on
an identical prefix), the dynamic part the user message.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx

from ..types import ToolCall, TurnInput, TurnOutput, failed
from .base import Backend, RetryPolicy, Sleep, parse_envelope, post_json


class OpenAIBackend(Backend):
    name = "openai"

    def __init__(self, *, model: str, api_key: str | None = None, base_url: str = "https://api.openai.com/v1",
                 max_tokens: int | None = None, timeout: float = 60.0, retry: RetryPolicy | None = None,
                 http: httpx.AsyncClient | None = None, sleep: Sleep = asyncio.sleep,
                 temperature: float | None = None, max_tokens_field: str = "max_tokens"):
        self.model, self.api_key, self.max_tokens, self.temperature = model, api_key, max_tokens, temperature
        self.max_tokens_field = max_tokens_field  # "max_completion_tokens" for OpenAI's newest models
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.retry = retry or RetryPolicy()
        self.http = http or httpx.AsyncClient(timeout=timeout)
        self._own_http = http is None
        self.sleep = sleep

    def request_body(self, inp: TurnInput) -> dict[str, Any]:
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": inp.directive.system},
            {"role": "user", "content": inp.directive.dynamic},
        ]
        for step in inp.steps:
            msg: dict[str, Any] = {"role": "assistant", "content": step.text or None}
            if step.calls:
                msg["tool_calls"] = [{"id": c.id, "type": "function",
                                      "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                                     for c in step.calls]
            messages.append(msg)
            messages += [{"role": "tool", "tool_call_id": r.call_id, "content": r.content} for r in step.results]
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if inp.tools:
            body["tools"] = [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                                "parameters": t.parameters}} for t in inp.tools]
        if self.max_tokens:
            body[self.max_tokens_field] = self.max_tokens
        if self.temperature is not None:
            body["temperature"] = self.temperature
        return body

    async def turn(self, inp: TurnInput) -> TurnOutput:
        headers = {"content-type": "application/json"}
        if self.api_key:
            headers["authorization"] = f"Bearer {self.api_key}"
        data, err, stats = await post_json(self.http, self.url, self.request_body(inp), headers, self.retry, self.sleep)
        if err is not None:
            return failed(f"openai: {err}", **stats)
        try:
            msg = data["choices"][0]["message"]
            text = msg.get("content") or ""
            calls = []
            for c in msg.get("tool_calls") or []:
                raw = c["function"].get("arguments") or "{}"
                try:
                    args = json.loads(raw) if isinstance(raw, str) else dict(raw)
                except ValueError:
                    args = {"_unparsed": raw}
                calls.append(ToolCall(id=c.get("id") or f"call_{len(calls)}", name=c["function"]["name"],
                                      arguments=args if isinstance(args, dict) else {"_unparsed": raw}))
        except (KeyError, IndexError, TypeError, AttributeError) as e:
            return failed(f"openai: unexpected answer shape ({e!r})", **stats)
        out = parse_envelope(text) if text else TurnOutput()
        out.tool_calls = calls + out.tool_calls
        out.usage = {**stats, **(data.get("usage") or {}), "finish_reason": data["choices"][0].get("finish_reason")}
        return out

    async def close(self) -> None:
        if self._own_http:
            await self.http.aclose()
