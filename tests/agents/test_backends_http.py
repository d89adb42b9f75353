"""The Anthropic and OpenAI backends against httpx.MockTransport: exact requests, answers, errors, limits."""

from __future__ import annotations

import json

import httpx
import pytest

from ygg_server.agents.backends import AnthropicBackend, OpenAIBackend, RetryPolicy
from ygg_server.agents.tools import select
from ygg_server.agents.types import Directive, Step, ToolCall, ToolResult, TurnInput

STABLE = ("You are researcher.\n## The rulebook ...", "## This conversation's rulebook\n- Reply length: at most 800 characters")
DYNAMIC = "## Now\nIt is your turn, researcher. @alice sent you a request."
TOOLS = select(["search_corpus", "send_message"])


def turn_input(steps=None) -> TurnInput:
    return TurnInput(directive=Directive(stable=STABLE, dynamic=DYNAMIC), tools=TOOLS, steps=steps or [])


class Recorder:
    """A MockTransport handler that answers from a script and keeps every request."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        a = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(a, Exception):
            raise a
        return a

    def body(self, i: int = -1) -> dict:
        return json.loads(self.requests[i].content)


class Sleeps(list):
    async def __call__(self, seconds: float) -> None:
        self.append(seconds)


def anthropic(rec, sleeps=None, **kw) -> AnthropicBackend:
    return AnthropicBackend(model="claude-test-1", api_key="sk-ant-test", base_url="https://anthropic.test",
                            http=httpx.AsyncClient(transport=httpx.MockTransport(rec)), sleep=Sleeps() if sleeps is None else sleeps,
                            retry=kw.pop("retry", RetryPolicy(max_retries=2, base_delay=0.5)), **kw)


def openai(rec, sleeps=None, **kw) -> OpenAIBackend:
    return OpenAIBackend(model=kw.pop("model", "gpt-test"), api_key=kw.pop("api_key", "sk-test"),
                         base_url=kw.pop("base_url", "http://llm.test/v1"),
                         http=httpx.AsyncClient(transport=httpx.MockTransport(rec)), sleep=Sleeps() if sleeps is None else sleeps,
                         retry=kw.pop("retry", RetryPolicy(max_retries=2, base_delay=0.5)), **kw)


ANTHROPIC_OK = {
    "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test-1", "stop_reason": "end_turn",
    "content": [{"type": "text", "text": '{"text": "Topics close when everyone is done.", "type": "response", "state": "done"}'}],
    "usage": {"input_tokens": 12, "output_tokens": 9, "cache_read_input_tokens": 2048, "cache_creation_input_tokens": 0},
}


# --- Anthropic ---

async def test_anthropic_request_is_exact_and_stable_part_is_cached():
    rec = Recorder(httpx.Response(200, json=ANTHROPIC_OK))
    out = await anthropic(rec).turn(turn_input())
    req = rec.requests[0]
    assert req.method == "POST" and str(req.url) == "https://anthropic.test/v1/messages"
    assert req.headers["x-api-key"] == "sk-ant-test" and req.headers["anthropic-version"] == "2023-06-01"
    body = rec.body()
    assert body["model"] == "claude-test-1" and body["max_tokens"] == 1024
    assert body["system"] == [
        {"type": "text", "text": STABLE[0], "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": STABLE[1], "cache_control": {"type": "ephemeral"}},
    ]
    assert body["messages"] == [{"role": "user", "content": DYNAMIC}]
    assert [t["name"] for t in body["tools"]] == ["search_corpus", "send_message"]
    assert body["tools"][0]["input_schema"]["required"] == ["query"]
    assert DYNAMIC not in json.dumps(body["system"])  # nothing dynamic in the cached part
    assert (out.text, out.type, out.state, out.error) == ("Topics close when everyone is done.", "response", "done", None)
    assert out.usage["cache_read_input_tokens"] == 2048


async def test_anthropic_tool_use_and_tool_results_round_trip():
    answer = {**ANTHROPIC_OK, "stop_reason": "tool_use", "content": [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "toolu_1", "name": "search_corpus", "input": {"query": "topics"}}]}
    rec = Recorder(httpx.Response(200, json=answer))
    out = await anthropic(rec).turn(turn_input())
    assert [(c.id, c.name, c.arguments) for c in out.tool_calls] == [("toolu_1", "search_corpus", {"query": "topics"})]
    assert out.text == "Let me look."

    rec2 = Recorder(httpx.Response(200, json=ANTHROPIC_OK))
    step = Step(text="Let me look.", calls=out.tool_calls,
                results=[ToolResult(call_id="toolu_1", name="search_corpus", content='[{"title": "Topics"}]')])
    await anthropic(rec2).turn(turn_input([step]))
    msgs = rec2.body()["messages"]
    assert msgs[1] == {"role": "assistant", "content": [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "toolu_1", "name": "search_corpus", "input": {"query": "topics"}}]}
    assert msgs[2] == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": '[{"title": "Topics"}]', "is_error": False}]}
    assert rec2.body()["system"] == rec.body()["system"]  # same bytes in the second round


async def test_anthropic_429_honours_retry_after_then_succeeds():
    sleeps = Sleeps()
    limited = httpx.Response(429, headers={"retry-after": "2"},
                             json={"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}})
    rec = Recorder(limited, httpx.Response(200, json=ANTHROPIC_OK))
    out = await anthropic(rec, sleeps).turn(turn_input())
    assert out.error is None and out.text.startswith("Topics")
    assert sleeps == [2.0] and len(rec.requests) == 2
    assert out.usage["rate_limited"] == 1 and out.usage["attempts"] == 2


async def test_anthropic_rate_limit_that_persists_is_a_failed_turn_after_bounded_retries():
    sleeps = Sleeps()
    limited = httpx.Response(429, json={"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}})
    rec = Recorder(limited)
    out = await anthropic(rec, sleeps).turn(turn_input())
    assert out.failed and "rate_limit_error" in out.error and "gave up after 3 attempts" in out.error
    assert len(rec.requests) == 3 and len(sleeps) == 2 and sleeps[1] > sleeps[0]  # exponential backoff


async def test_anthropic_long_retry_after_fails_at_once():
    sleeps = Sleeps()
    rec = Recorder(httpx.Response(429, headers={"retry-after": "3600"}, json={"error": {"type": "rate_limit_error"}}))
    out = await anthropic(rec, sleeps).turn(turn_input())
    assert out.failed and "retry after 3600s" in out.error
    assert len(rec.requests) == 1 and sleeps == []


async def test_anthropic_client_error_is_not_retried():
    rec = Recorder(httpx.Response(400, json={"type": "error", "error": {"type": "invalid_request_error",
                                                                        "message": "max_tokens: too large"}}))
    out = await anthropic(rec).turn(turn_input())
    assert out.failed and "invalid_request_error" in out.error and "max_tokens" in out.error
    assert len(rec.requests) == 1


async def test_anthropic_overload_and_timeouts_are_retried_then_surface():
    sleeps = Sleeps()
    rec = Recorder(httpx.Response(529, json={"error": {"type": "overloaded_error"}}), httpx.Response(200, json=ANTHROPIC_OK))
    assert (await anthropic(rec, sleeps).turn(turn_input())).error is None
    rec = Recorder(httpx.ReadTimeout("read timed out"))
    out = await anthropic(rec, Sleeps()).turn(turn_input())
    assert out.failed and out.error.startswith("anthropic: timeout") and len(rec.requests) == 3
    rec = Recorder(httpx.ConnectError("refused"))
    out = await anthropic(rec, Sleeps()).turn(turn_input())
    assert out.failed and "connection failed" in out.error


async def test_anthropic_odd_answers_are_failed_turns_not_crashes():
    out = await anthropic(Recorder(httpx.Response(200, text="<html>gateway</html>"))).turn(turn_input())
    assert out.failed and "not JSON" in out.error
    out = await anthropic(Recorder(httpx.Response(200, json={"unexpected": True}))).turn(turn_input())
    assert out.failed and "unexpected answer shape" in out.error


async def test_plain_text_answer_is_kept_and_defaults_left_to_the_bridge():
    answer = {**ANTHROPIC_OK, "content": [{"type": "text", "text": "Just words, no JSON."}]}
    out = await anthropic(Recorder(httpx.Response(200, json=answer))).turn(turn_input())
    assert out.text == "Just words, no JSON." and out.type is None and out.state is None


# --- OpenAI-compatible ---

OPENAI_OK = {
    "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-test",
    "choices": [{"index": 0, "finish_reason": "stop", "message": {
        "role": "assistant", "content": '```json\n{"text": "Hello @alice", "type": "inform", "state": "working", "to": ["@alice"]}\n```'}}],
    "usage": {"prompt_tokens": 30, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 1024}},
}


async def test_openai_request_is_exact():
    rec = Recorder(httpx.Response(200, json=OPENAI_OK))
    out = await openai(rec, max_tokens=256).turn(turn_input())
    req = rec.requests[0]
    assert str(req.url) == "http://llm.test/v1/chat/completions" and req.headers["authorization"] == "Bearer sk-test"
    body = rec.body()
    assert body["model"] == "gpt-test" and body["max_tokens"] == 256
    assert body["messages"] == [{"role": "system", "content": STABLE[0] + "\n\n" + STABLE[1]},
                                {"role": "user", "content": DYNAMIC}]
    assert body["tools"][1] == {"type": "function", "function": {
        "name": "send_message", "description": TOOLS[1].description, "parameters": TOOLS[1].parameters}}
    assert (out.text, out.type, out.state, out.to) == ("Hello @alice", "inform", "working", ["@alice"])
    assert out.usage["prompt_tokens_details"]["cached_tokens"] == 1024


async def test_openai_compatible_local_server_needs_no_key_and_tool_calls_parse():
    answer = {**OPENAI_OK, "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None, "tool_calls": [
            {"id": "call_9", "type": "function", "function": {"name": "send_message",
                                                              "arguments": '{"to": ["reviewer"], "text": "check"}'}},
            {"id": "call_10", "type": "function", "function": {"name": "search_corpus", "arguments": "{not json"}}]}}]}
    rec = Recorder(httpx.Response(200, json=answer))
    out = await openai(rec, api_key=None, base_url="http://127.0.0.1:11434/v1", model="llama3.2").turn(turn_input())
    assert str(rec.requests[0].url) == "http://127.0.0.1:11434/v1/chat/completions"
    assert "authorization" not in rec.requests[0].headers
    assert out.text is None and [c.name for c in out.tool_calls] == ["send_message", "search_corpus"]
    assert out.tool_calls[0].arguments == {"to": ["reviewer"], "text": "check"}
    assert out.tool_calls[1].arguments == {"_unparsed": "{not json"}

    rec2 = Recorder(httpx.Response(200, json=OPENAI_OK))
    step = Step(calls=[ToolCall(id="call_9", name="send_message", arguments={"to": ["reviewer"], "text": "check"})],
                results=[ToolResult(call_id="call_9", name="send_message", content='{"sent": "m1"}')])
    await openai(rec2).turn(turn_input([step]))
    msgs = rec2.body()["messages"]
    assert msgs[2]["role"] == "assistant" and msgs[2]["tool_calls"][0]["function"]["arguments"] == \
        '{"to": ["reviewer"], "text": "check"}'
    assert msgs[3] == {"role": "tool", "tool_call_id": "call_9", "content": '{"sent": "m1"}'}


async def test_openai_429_with_retry_after_ms_and_server_errors():
    sleeps = Sleeps()
    rec = Recorder(httpx.Response(429, headers={"retry-after-ms": "1500"}, json={"error": {"message": "Rate limit", "code": "rate_limit_exceeded"}}),
                   httpx.Response(503, json={"error": "unavailable"}),
                   httpx.Response(200, json=OPENAI_OK))
    out = await openai(rec, sleeps).turn(turn_input())
    assert out.error is None and sleeps[0] == 1.5 and len(sleeps) == 2 and len(rec.requests) == 3
    out = await openai(Recorder(httpx.Response(401, json={"error": {"message": "bad key", "type": "invalid_api_key"}}))).turn(turn_input())
    assert out.failed and "401" in out.error and "bad key" in out.error


@pytest.mark.parametrize("status", [500, 502, 504])
async def test_openai_gives_up_after_bounded_retries(status):
    sleeps = Sleeps()
    rec = Recorder(httpx.Response(status, text="upstream broke"))
    out = await openai(rec, sleeps, retry=RetryPolicy(max_retries=1, base_delay=0.01)).turn(turn_input())
    assert out.failed and f"HTTP {status}" in out.error and len(rec.requests) == 2 and len(sleeps) == 1
