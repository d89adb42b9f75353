"""Model backends behind one interface: `await backend.turn(TurnInput) -> TurnOutput` (seed 003 §30-32).

`make(config)` reads an agent's `[backend]` and builds the matching one, so
everything above (the bridge, tools, memory, directives) is written once.
"""

from __future__ import annotations

from ..config import AgentConfig
from .anthropic import AnthropicBackend
from .base import Backend, RetryPolicy, parse_envelope
from .builtin import PERSONALITIES, BuiltinBackend
from .cli import ClaudeCodeBackend, CodexBackend
from .openai import OpenAIBackend

__all__ = [
    "Backend", "RetryPolicy", "parse_envelope", "AnthropicBackend", "OpenAIBackend", "ClaudeCodeBackend",
    "CodexBackend", "BuiltinBackend", "PERSONALITIES", "make", "native_tools",
]


def native_tools(backend: Backend) -> bool:
    """Whether tools travel as the API's own tool definitions (else they are described in the prompt)."""
    return isinstance(backend, (AnthropicBackend, OpenAIBackend, BuiltinBackend))


def make(cfg: AgentConfig, **overrides) -> Backend:
    b = cfg.backend
    retry = RetryPolicy(max_retries=b.max_retries, max_retry_after=b.max_retry_after)
    if b.kind == "builtin":
        return BuiltinBackend(b.personality or cfg.name, b.options, cfg.corpus)
    if b.kind == "anthropic":
        return AnthropicBackend(model=b.model or "claude-sonnet-4-5", api_key=b.key(),
                                base_url=b.base_url or "https://api.anthropic.com", max_tokens=b.max_tokens or 1024,
                                timeout=b.timeout, retry=retry, temperature=b.temperature, **overrides)
    if b.kind == "openai":
        return OpenAIBackend(model=b.model or "gpt-4o-mini", api_key=b.key(),
                             base_url=b.base_url or "https://api.openai.com/v1", max_tokens=b.max_tokens,
                             timeout=b.timeout, retry=retry, temperature=b.temperature, **overrides)
    workdir = str(cfg.data_path() / "work")
    env = {k: str(v) for k, v in (b.options.get("env") or {}).items()}
    if b.kind == "claude-cli":
        return ClaudeCodeBackend(model=b.model, exe=b.exe or "claude", timeout=b.timeout, retry=retry, cwd=workdir,
                                 allowed_tools=b.allowed_tools or None, max_turns=b.options.get("max_turns"),
                                 env=env, extra_args=b.extra_args, **overrides)
    if b.kind == "codex-cli":
        return CodexBackend(model=b.model, exe=b.exe or "codex", timeout=b.timeout, retry=retry, cwd=workdir,
                            sandbox=b.sandbox, env=env, extra_args=b.extra_args, **overrides)
    raise ValueError(f"unknown backend kind {b.kind!r}")
