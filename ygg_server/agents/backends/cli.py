"""The coding-tool CLIs as backends, in their non-interactive modes (seed 003 §31).

Claude Code: `claude -p --output-format json --system-prompt STABLE [--model M] ...`
with the dynamic part on stdin; it prints one JSON object
(`{"type":"result","subtype":"success","is_error":false,"result":"…",…}`).

Codex: `codex exec --json --skip-git-repo-check --sandbox read-only [--model M] ... -`
with the whole prompt on stdin (the stable part first, so the prefix repeats
byte for byte); it prints JSON Lines events, the answer being the last
`item.completed` whose item is an `agent_message`; `turn.failed` and `error`
events carry failures.

Both authenticate with the login session of the tool (no API key here). Each
call is one fresh process in the agent's own working directory, with an explicit
environment (`environment`: a few variables by name, the tool's own provider's,
and the backend's `env`; never a value holding a Ygg key), and tools confined to
that directory by default (docs/agents.md, "Prompt injection"); a call that
runs past `timeout` is killed with its process group. Rate-limit failures are
retried a bounded number of times with backoff. Our own tools (persona, send,
corpus) are described in the prompt and requested through the JSON answer's
`tool_calls`; earlier rounds of the turn are replayed as text.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
from typing import Any

from ..types import TurnInput, TurnOutput, failed
from .base import Backend, RetryPolicy, Sleep, parse_envelope

# what a CLI backend's process is given of ours: these variables by name, those of its own provider (by prefix),
# and the `env` it was configured with; nothing else (the agent's Ygg key, other providers' keys, our secrets)
ALLOWED_ENV = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TZ", "TMPDIR",
               "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR",
               "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
               "SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS")
ALLOWED_PREFIXES = ("LC_",)
YGG_KEY = re.compile(r"yggk_|yggs_")  # an API key's or a session token's prefix: such a value is never passed on


def environment(provider: tuple[str, ...], extra: dict[str, str], source: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a CLI backend runs with: of `source` (ours), the ALLOWED_ENV names and the variables
    beginning with ALLOWED_PREFIXES or the tool's own `provider` prefixes; then `extra`; never a Ygg key."""
    source = os.environ if source is None else source
    prefixes = ALLOWED_PREFIXES + provider
    env = {k: v for k, v in source.items() if k in ALLOWED_ENV or k.startswith(prefixes)}
    env.update(extra)
    return {k: v for k, v in env.items() if not YGG_KEY.search(v)}


_RATE = re.compile(r"rate.?limit|\b429\b|overloaded|\b529\b|too many requests", re.I)


def render_steps(inp: TurnInput) -> str:
    if not inp.steps:
        return ""
    lines = ["", "## Earlier in this turn"]
    for i, s in enumerate(inp.steps, 1):
        if s.text:
            lines.append(f"Round {i}, you wrote: {s.text}")
        for c, r in zip(s.calls, s.results):
            lines.append(f"Round {i}, you called {c.name}({json.dumps(c.arguments, sort_keys=True)}) and it "
                         f"{'FAILED' if r.is_error else 'answered'}: {r.content}")
    lines.append("Now give your answer in the JSON format described above.")
    return "\n".join(lines)


class _Process:
    def __init__(self, exe: str, *, timeout: float, retry: RetryPolicy | None, sleep: Sleep, cwd: str | None,
                 env: dict[str, str] | None, extra_args: list[str] | None, provider: tuple[str, ...] = ()):
        self.exe, self.timeout, self.cwd, self.provider = exe, timeout, cwd, provider
        self.retry = retry or RetryPolicy()
        self.sleep = sleep
        self.env = env or {}
        self.extra_args = list(extra_args or [])

    async def run(self, argv: list[str], stdin: str) -> tuple[int | None, str, str]:
        """(returncode, stdout, stderr); returncode None means it timed out and was killed."""
        path = shutil.which(argv[0], path=(self.env.get("PATH") or os.environ.get("PATH")))
        if path is None:
            raise FileNotFoundError(f"{argv[0]} is not on PATH")
        if self.cwd:
            os.makedirs(self.cwd, exist_ok=True)
        proc = await asyncio.create_subprocess_exec(
            path, *argv[1:], stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, cwd=self.cwd, env=environment(self.provider, self.env), start_new_session=True,
        )
        try:
            out, err = await asyncio.wait_for(proc.communicate(stdin.encode()), self.timeout)
        except (asyncio.TimeoutError, asyncio.CancelledError):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            await proc.wait()
            if asyncio.current_task() and asyncio.current_task().cancelling():
                raise
            return None, "", ""
        return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")

    async def attempts(self, argv: list[str], stdin: str, parse) -> TurnOutput:
        stats: dict[str, Any] = {"attempts": 0, "waited": 0.0}
        last = ""
        for attempt in range(self.retry.max_retries + 1):
            stats["attempts"] = attempt + 1
            try:
                code, out, err = await self.run(argv, stdin)
            except (FileNotFoundError, PermissionError, OSError) as e:
                return failed(f"{self.exe}: {e}", **stats)
            if code is None:
                return failed(f"{self.exe}: timed out after {self.timeout:g}s (killed)", **stats)
            result, last = parse(code, out, err)
            if result is not None:
                result.usage = {**stats, **result.usage}
                return result
            if not _RATE.search(last) or attempt == self.retry.max_retries:
                break
            wait = self.retry.backoff(attempt)
            stats["rate_limited"] = stats.get("rate_limited", 0) + 1
            stats["waited"] += wait
            await self.sleep(wait)
        return failed(f"{self.exe}: {last}", **stats)


def _tail(s: str, n: int = 300) -> str:
    s = s.strip()
    return s[-n:] if s else ""


# Claude Code's tools that reach beyond the working directory whatever its permission rules say
CONFINED_OUT = ("Bash", "WebFetch", "WebSearch")


class ClaudeCodeBackend(Backend):
    name = "claude-cli"

    def __init__(self, *, model: str | None = None, exe: str = "claude", timeout: float = 300.0,
                 allowed_tools: list[str] | None = None, max_turns: int | None = None,
                 retry: RetryPolicy | None = None, sleep: Sleep = asyncio.sleep, cwd: str | None = None,
                 env: dict[str, str] | None = None, extra_args: list[str] | None = None):
        self.model, self.allowed_tools, self.max_turns = model, allowed_tools, max_turns
        self.proc = _Process(exe, timeout=timeout, retry=retry, sleep=sleep, cwd=cwd, env=env, extra_args=extra_args,
                             provider=("ANTHROPIC_", "CLAUDE_"))

    def argv(self, inp: TurnInput) -> list[str]:
        argv = [self.proc.exe, "-p", "--output-format", "json", "--system-prompt", inp.directive.system]
        if self.model:
            argv += ["--model", self.model]
        if self.max_turns:
            argv += ["--max-turns", str(self.max_turns)]
        if self.allowed_tools:
            argv += ["--allowedTools", ",".join(self.allowed_tools)]
        else:  # by default: nothing that asks (reads outside the working directory, edits) and no shell or web
            argv += ["--permission-mode", "dontAsk", "--disallowedTools", ",".join(CONFINED_OUT)]
        return argv + self.proc.extra_args

    def prompt(self, inp: TurnInput) -> str:
        return inp.directive.dynamic + render_steps(inp)

    @staticmethod
    def parse(code: int, out: str, err: str) -> tuple[TurnOutput | None, str]:
        result = None
        for line in reversed(out.strip().splitlines() or [""]):
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict) and ("result" in obj or obj.get("type") == "result"):
                result = obj
                break
        if result is None:
            try:
                whole = json.loads(out)
                result = whole if isinstance(whole, dict) else None
            except ValueError:
                pass
        if result is None:
            return None, f"exit {code}: {_tail(err) or _tail(out) or 'no output'}"
        if result.get("is_error") or result.get("subtype", "success") != "success" or code != 0:
            why = result.get("result") or result.get("subtype") or f"exit {code}"
            return None, f"{why} {_tail(err, 200)}".strip()
        out_ = parse_envelope(result.get("result") or "")
        out_.usage = {k: result[k] for k in ("session_id", "total_cost_usd", "num_turns", "duration_ms", "usage")
                      if k in result}
        return out_, ""

    async def turn(self, inp: TurnInput) -> TurnOutput:
        return await self.proc.attempts(self.argv(inp), self.prompt(inp), self.parse)


class CodexBackend(Backend):
    name = "codex-cli"

    def __init__(self, *, model: str | None = None, exe: str = "codex", timeout: float = 300.0,
                 sandbox: str = "read-only", retry: RetryPolicy | None = None, sleep: Sleep = asyncio.sleep,
                 cwd: str | None = None, env: dict[str, str] | None = None, extra_args: list[str] | None = None):
        self.model, self.sandbox = model, sandbox
        self.proc = _Process(exe, timeout=timeout, retry=retry, sleep=sleep, cwd=cwd, env=env, extra_args=extra_args,
                             provider=("OPENAI_", "CODEX_"))

    def argv(self, inp: TurnInput) -> list[str]:
        argv = [self.proc.exe, "exec", "--json", "--skip-git-repo-check", "--sandbox", self.sandbox]
        if self.model:
            argv += ["--model", self.model]
        return argv + self.proc.extra_args + ["-"]

    def prompt(self, inp: TurnInput) -> str:
        return inp.directive.system + "\n\n" + inp.directive.dynamic + render_steps(inp)

    @staticmethod
    def parse(code: int, out: str, err: str) -> tuple[TurnOutput | None, str]:
        text, error, usage, thread = None, None, {}, None
        for line in out.splitlines():
            try:
                ev = json.loads(line)
            except ValueError:
                continue  # log noise or a torn line
            if not isinstance(ev, dict):
                continue
            kind = ev.get("type")
            item = ev.get("item") if isinstance(ev.get("item"), dict) else {}
            if kind == "item.completed" and item.get("type") == "agent_message":
                text = item.get("text", "")
            elif kind == "turn.failed":
                error = (ev.get("error") or {}).get("message") or "turn failed"
            elif kind == "error":
                error = ev.get("message") or (ev.get("error") or {}).get("message") or "error"
            elif kind == "turn.completed":
                usage = ev.get("usage") or {}
            elif kind == "thread.started":
                thread = ev.get("thread_id")
        if text is None:
            return None, error or f"exit {code}: {_tail(err) or 'no agent message'}"
        result = parse_envelope(text)
        result.usage = {"usage": usage, "thread_id": thread}
        return result, ""

    async def turn(self, inp: TurnInput) -> TurnOutput:
        return await self.proc.attempts(self.argv(inp), self.prompt(inp), self.parse)
