"""Claude Code and Codex CLI backends against fake `claude` and `codex` executables first on PATH."""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time

import pytest

from ygg_server.agents.backends import ClaudeCodeBackend, CodexBackend, RetryPolicy, cli
from ygg_server.agents.types import Directive, Step, ToolCall, ToolResult, TurnInput

STABLE = ("You are reviewer.\n## The rulebook ...", "## This conversation's rulebook\n- Reply length: at most 800 characters")
DYNAMIC = "## Now\nIt is your turn, reviewer. lead sent you a request."

FAKE = r'''#!{python}
import json, os, sys, time
tool = os.path.basename(sys.argv[0])
log = os.environ["FAKE_LOG"]
queue_file = os.environ["FAKE_MODES"]
modes = open(queue_file).read().split()
mode = modes[0] if modes else "ok"
if len(modes) > 1:
    open(queue_file, "w").write(" ".join(modes[1:]))
stdin = sys.stdin.read()
with open(log, "a") as f:
    f.write(json.dumps({{"tool": tool, "argv": sys.argv[1:], "stdin": stdin, "cwd": os.getcwd(), "pid": os.getpid(),
                        "mode": mode, "env": dict(os.environ)}}) + "\n")
answer = '{{"text": "LGTM from ' + tool + '", "type": "response", "state": "done"}}'
if tool == "claude":
    if mode == "ok":
        print(json.dumps({{"type": "result", "subtype": "success", "is_error": False, "result": answer,
                          "session_id": "sess-1", "total_cost_usd": 0.0123, "num_turns": 1, "duration_ms": 812}}))
    elif mode == "tools":
        print(json.dumps({{"type": "result", "subtype": "success", "is_error": False,
                          "result": '{{"tool_calls": [{{"name": "search_corpus", "arguments": {{"query": "topics"}}}}]}}'}}))
    elif mode == "rate":
        print(json.dumps({{"type": "result", "subtype": "success", "is_error": True,
                          "result": "API Error: 429 {{\"type\":\"rate_limit_error\"}}"}}))
        sys.exit(1)
    elif mode == "error":
        print(json.dumps({{"type": "result", "subtype": "error_max_turns", "is_error": True}}))
        sys.exit(1)
    elif mode == "crash":
        print("claude: not logged in", file=sys.stderr)
        sys.exit(2)
    elif mode == "hang":
        time.sleep(60)
else:
    if mode == "ok":
        print("Reading prompt from stdin...")
        for ev in ({{"type": "thread.started", "thread_id": "th-1"}}, {{"type": "turn.started"}},
                   {{"type": "item.completed", "item": {{"id": "item_0", "type": "reasoning", "text": "thinking"}}}},
                   {{"type": "item.completed", "item": {{"id": "item_1", "type": "agent_message", "text": answer}}}},
                   {{"type": "turn.completed", "usage": {{"input_tokens": 900, "cached_input_tokens": 800, "output_tokens": 20}}}}):
            print(json.dumps(ev))
    elif mode == "rate":
        print(json.dumps({{"type": "thread.started", "thread_id": "th-2"}}))
        print(json.dumps({{"type": "turn.failed", "error": {{"message": "stream error: 429 Too Many Requests"}}}}))
        sys.exit(1)
    elif mode == "error":
        print(json.dumps({{"type": "error", "message": "model gpt-0 is not supported"}}))
        sys.exit(1)
    elif mode == "hang":
        time.sleep(60)
'''


@pytest.fixture
def fake(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("claude", "codex"):
        p = bin_dir / name
        p.write_text(FAKE.format(python=sys.executable))
        p.chmod(0o755)
    log, modes = tmp_path / "calls.jsonl", tmp_path / "modes"
    modes.write_text("ok")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_LOG", str(log))
    monkeypatch.setenv("FAKE_MODES", str(modes))
    monkeypatch.setattr(cli, "ALLOWED_ENV", cli.ALLOWED_ENV + ("FAKE_LOG", "FAKE_MODES"))  # (the fakes' own)

    class Fake:
        workdir = str(tmp_path / "work")

        def modes(self, *m):
            modes.write_text(" ".join(m))

        def calls(self):
            return [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []

    return Fake()


class Sleeps(list):
    async def __call__(self, s):
        self.append(s)


def inp(steps=None):
    return TurnInput(directive=Directive(stable=STABLE, dynamic=DYNAMIC), steps=steps or [])


async def test_claude_cli_exact_invocation_and_answer(fake):
    b = ClaudeCodeBackend(model="sonnet", cwd=fake.workdir, max_turns=2, allowed_tools=["Read", "Grep"])
    out = await b.turn(inp())
    (call,) = fake.calls()
    assert call["tool"] == "claude"
    assert call["argv"] == ["-p", "--output-format", "json", "--system-prompt", STABLE[0] + "\n\n" + STABLE[1],
                            "--model", "sonnet", "--max-turns", "2", "--allowedTools", "Read,Grep"]
    assert call["stdin"] == DYNAMIC  # the dynamic part on stdin; the stable part is the system prompt
    assert call["cwd"] == fake.workdir  # the agent's own working directory
    assert (out.text, out.type, out.state, out.error) == ("LGTM from claude", "response", "done", None)
    assert out.usage["session_id"] == "sess-1" and out.usage["total_cost_usd"] == 0.0123


async def test_claude_cli_tool_calls_and_replayed_rounds(fake):
    fake.modes("tools", "ok")
    b = ClaudeCodeBackend(cwd=fake.workdir)
    out = await b.turn(inp())
    assert [(c.name, c.arguments) for c in out.tool_calls] == [("search_corpus", {"query": "topics"})]
    step = Step(calls=out.tool_calls, results=[ToolResult(call_id=out.tool_calls[0].id, name="search_corpus",
                                                          content='[{"title": "Topics"}]')])
    await b.turn(inp([step]))
    second = fake.calls()[1]
    assert "--model" not in second["argv"]
    assert second["argv"][4] == STABLE[0] + "\n\n" + STABLE[1]  # same system prompt bytes in every round
    assert second["stdin"].startswith(DYNAMIC)
    assert 'you called search_corpus({"query": "topics"}) and it answered: [{"title": "Topics"}]' in second["stdin"]


async def test_claude_cli_rate_limit_is_retried_with_backoff(fake):
    fake.modes("rate", "rate", "ok")
    sleeps = Sleeps()
    out = await ClaudeCodeBackend(cwd=fake.workdir, sleep=sleeps, retry=RetryPolicy(max_retries=3)).turn(inp())
    assert out.error is None and out.text == "LGTM from claude"
    assert len(fake.calls()) == 3 and len(sleeps) == 2 and out.usage["rate_limited"] == 2


async def test_claude_cli_failures_are_failed_turns(fake):
    sleeps = Sleeps()
    fake.modes("rate")
    out = await ClaudeCodeBackend(cwd=fake.workdir, sleep=sleeps, retry=RetryPolicy(max_retries=2)).turn(inp())
    assert out.failed and "429" in out.error and len(fake.calls()) == 3
    fake.modes("error")
    out = await ClaudeCodeBackend(cwd=fake.workdir, sleep=sleeps).turn(inp())
    assert out.failed and "error_max_turns" in out.error and len(fake.calls()) == 4  # not a rate limit: no retry
    fake.modes("crash")
    out = await ClaudeCodeBackend(cwd=fake.workdir, sleep=sleeps).turn(inp())
    assert out.failed and "not logged in" in out.error
    out = await ClaudeCodeBackend(exe="no-such-claude-here", cwd=fake.workdir).turn(inp())
    assert out.failed and "not on PATH" in out.error


async def test_cli_timeout_kills_the_process(fake):
    fake.modes("hang")
    t0 = time.monotonic()
    out = await ClaudeCodeBackend(cwd=fake.workdir, timeout=0.5).turn(inp())
    assert out.failed and "timed out after 0.5s" in out.error and time.monotonic() - t0 < 5
    pid = fake.calls()[-1]["pid"]
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    out = await CodexBackend(cwd=fake.workdir, timeout=0.5).turn(inp())
    assert out.failed and "timed out" in out.error


async def test_codex_cli_exact_invocation_and_jsonl_answer(fake):
    out = await CodexBackend(model="gpt-5-codex", cwd=fake.workdir).turn(inp())
    (call,) = fake.calls()
    assert call["tool"] == "codex"
    assert call["argv"] == ["exec", "--json", "--skip-git-repo-check", "--sandbox", "read-only",
                            "--model", "gpt-5-codex", "-"]
    assert call["stdin"] == STABLE[0] + "\n\n" + STABLE[1] + "\n\n" + DYNAMIC  # stable prefix first, byte for byte
    assert (out.text, out.type, out.state) == ("LGTM from codex", "response", "done")
    assert out.usage["usage"]["cached_input_tokens"] == 800 and out.usage["thread_id"] == "th-1"


async def test_codex_cli_failures(fake):
    sleeps = Sleeps()
    fake.modes("rate", "ok")
    out = await CodexBackend(cwd=fake.workdir, sleep=sleeps).turn(inp())
    assert out.error is None and len(sleeps) == 1
    fake.modes("error")
    out = await CodexBackend(cwd=fake.workdir, sleep=sleeps).turn(inp())
    assert out.failed and "gpt-0 is not supported" in out.error


async def test_the_cli_backends_get_an_explicit_environment_never_a_ygg_key_nor_another_providers(fake, monkeypatch):
    """Issue 18: "the Claude Code and Codex backends inherit the whole environment, the Ygg key and provider keys
    included": each gets the allowed names, its own provider's variables and its configured `env`; never the
    agent's Ygg key (whatever the variable's name), another provider's key, or anything else of ours."""
    monkeypatch.setenv("YGG_AGENT_KEY", "yggk_0123_secret")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-x")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-x")
    monkeypatch.setenv("DATABASE_PASSWORD", "hunter2")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    extra = {"MY_SETTING": "1", "SNEAKY": "yggs_token"}
    await ClaudeCodeBackend(cwd=fake.workdir, env=extra).turn(inp())
    await CodexBackend(cwd=fake.workdir, env=extra).turn(inp())
    claude, codex = (c["env"] for c in fake.calls())
    for env in (claude, codex):
        assert env["PATH"] and env["MY_SETTING"] == "1" and env["LC_ALL"] == "C.UTF-8"
        assert not any(k in env for k in ("YGG_AGENT_KEY", "DATABASE_PASSWORD", "SNEAKY"))
        assert not any("yggk_" in v or "yggs_" in v for v in env.values())
    assert claude["ANTHROPIC_API_KEY"] == "sk-ant-x" and "OPENAI_API_KEY" not in claude
    assert codex["OPENAI_API_KEY"] == "sk-openai-x" and "ANTHROPIC_API_KEY" not in codex


async def test_claude_code_by_default_cannot_leave_its_working_directory(fake):
    """Issue 18: "tools that cannot leave their working directory by default": without allowed_tools, nothing that
    would ask (a read outside the working directory, an edit) is done (`dontAsk` refuses it), and the shell and
    the web tools are taken away; Codex keeps its read-only sandbox."""
    await ClaudeCodeBackend(cwd=fake.workdir).turn(inp())
    await CodexBackend(cwd=fake.workdir).turn(inp())
    claude, codex = (c["argv"] for c in fake.calls())
    assert claude[claude.index("--permission-mode") + 1] == "dontAsk"
    assert set(claude[claude.index("--disallowedTools") + 1].split(",")) >= {"Bash", "WebFetch", "WebSearch"}
    assert codex[codex.index("--sandbox") + 1] == "read-only"
