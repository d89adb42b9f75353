"""One agent's configuration: who it is, where it connects, which backend, tools, persona and rules.

Read from a TOML file (docs/agents.md shows every key):

    name = "researcher"
    url = "ws://127.0.0.1:8765/"
    api_key_env = "YGG_RESEARCHER_KEY"     # or api_key = "yggk_…"
    data_dir = "~/.local/share/ygg/agents/researcher"
    role = "Answers questions from the team's notes."
    persona = "Curious, precise, cites its sources."
    tools = ["search_corpus", "persona_read", "persona_write", "remember"]

    [backend]
    kind = "anthropic"                      # builtin | anthropic | openai | claude-cli | codex-cli
    model = "claude-sonnet-4-5"
    api_key_env = "ANTHROPIC_API_KEY"

    [rulebook]
    length = 600
    [rulebooks.general]
    style = "short and to the point"
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .tools import DEFAULT_TOOLS

BACKENDS = ("builtin", "anthropic", "openai", "claude-cli", "codex-cli")


@dataclass
class BackendConfig:
    kind: str = "builtin"
    model: str | None = None
    api_key: str | None = None
    api_key_env: str | None = None
    base_url: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    timeout: float = 120.0
    max_retries: int = 3
    max_retry_after: float = 60.0
    personality: str | None = None  # builtin: researcher | reviewer | lead | eager
    exe: str | None = None  # claude-cli / codex-cli: the executable (default: claude / codex on PATH)
    extra_args: list[str] = field(default_factory=list)
    allowed_tools: list[str] = field(default_factory=list)  # claude-cli: --allowedTools
    sandbox: str = "read-only"  # codex-cli
    options: dict[str, Any] = field(default_factory=dict)  # personality knobs (builtin)

    def key(self) -> str | None:
        if self.api_key:
            return self.api_key
        if self.api_key_env:
            return os.environ.get(self.api_key_env)
        return None


@dataclass
class AgentConfig:
    name: str
    url: str = "ws://127.0.0.1:8765/"
    api_key: str | None = None
    api_key_env: str | None = None
    data_dir: str = ""
    role: str = ""
    persona: str = ""
    tools: list[str] = field(default_factory=lambda: list(DEFAULT_TOOLS))
    backend: BackendConfig = field(default_factory=BackendConfig)
    rulebook: dict[str, Any] = field(default_factory=dict)
    rulebooks: dict[str, dict[str, Any]] = field(default_factory=dict)
    corpus: str | None = None  # a markdown file of "## " sections for search_corpus (default: the handbook)
    max_steps: int = 4  # tool rounds in one turn
    max_tool_failures: int = 2  # the same failing tool call is refused after this many failures in a turn
    recall_budget: float = 0.5  # seconds the turn waits for its memories and knowledge (recall.py); the rest: left out
    on_failure: str = "inform"  # inform | silent: what a failed turn does besides logging
    retry_failed_after: float = 30.0  # seconds before a failed turn on an owed request is tried again
    failed_retries: int = 2  # how many times
    closure_polls: str = "auto"  # auto: the bridge answers polls from memory | model: ask the backend
    # tools whose every call the bridge submits to the server's approvals first (request_approval: standing rules,
    # else a person decides); it waits for the answer without calling the model (seed 003 §59-61)
    ask_first: list[str] = field(default_factory=lambda: ["deploy"])

    def ygg_key(self) -> str:
        key = self.api_key or (os.environ.get(self.api_key_env) if self.api_key_env else None)
        if not key:
            raise ValueError(f"agent {self.name}: no API key (set api_key or api_key_env)")
        return key

    def data_path(self) -> Path:
        if self.data_dir:
            return Path(self.data_dir).expanduser()
        from platformdirs import user_data_dir

        return Path(user_data_dir("ygg")) / "agents" / self.name


def from_dict(d: dict[str, Any]) -> AgentConfig:
    d = dict(d)
    b = d.pop("backend", {}) or {}
    if isinstance(b, str):
        b = {"kind": b}
    backend = BackendConfig(**b)
    if backend.kind not in BACKENDS:
        raise ValueError(f"backend kind {backend.kind!r}: one of {', '.join(BACKENDS)}")
    known = AgentConfig.__dataclass_fields__.keys()
    extra = set(d) - set(known)
    if extra:
        raise ValueError(f"unknown config keys: {', '.join(sorted(extra))}")
    return AgentConfig(backend=backend, **d)


def load(path: str | os.PathLike) -> AgentConfig:
    """A TOML file, or JSON (`.json`: a hosted bridge's, written by its supervisor)."""
    with open(path, "rb") as f:
        if str(path).endswith(".json"):
            return from_dict(json.load(f))
        return from_dict(tomllib.load(f))
