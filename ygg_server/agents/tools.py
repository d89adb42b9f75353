"""The tools an agent may be given (each agent's config lists its own; seed 004: nothing is pooled).

The bridge runs them (Bridge._tool, turn.py); backends only see these specs.
"""

from __future__ import annotations

import json

from .types import Tool, ToolCall, ToolResult

_S = {"type": "string"}

CATALOG: dict[str, Tool] = {t.name: t for t in (
    Tool(name="persona_read", description="Read your persona document (who you are: tone, values, way of speaking).",
         parameters={"type": "object", "properties": {}}),
    Tool(name="persona_write",
         description=("Replace your persona document with a new full text. A sudden large shrink (under half "
                      "the old length) is refused."),
         parameters={"type": "object", "properties": {"text": _S, "why": _S}, "required": ["text"]}),
    Tool(name="send_message",
         description=("Send a message now, besides your answer: delegate a request to another agent, ask a "
                      "person, or inform. Defaults: this topic, type request."),
         parameters={"type": "object", "properties": {
             "to": {"type": "array", "items": _S}, "text": _S,
             "type": {"type": "string", "enum": ["request", "response", "inform"]},
             "state": {"type": "string", "enum": ["working", "waiting", "needs_human", "done"]},
             "topic": _S, "title": _S, "conversation": _S, "in_reply_to": _S,
             "waiting_for": {"type": "array", "items": _S}},
             "required": ["text"]}),
    Tool(name="handoff",
         description=("Hand this question over to one colleague whose work it is more than yours (a request with "
                      "handoff, in this topic): say what you need from them. Their answer comes back to you; do "
                      "not hand something straight back unless you added to it."),
         parameters={"type": "object", "properties": {"to": _S, "text": _S}, "required": ["to", "text"]}),
    Tool(name="settle_thread",
         description=("Bring a side thread's result back (seed 003 §7): post a short summary and mark the thread "
                      "resolved, or abandoned if it got stuck (ongoing opens it again). Its card in the origin "
                      "conversation shows the state and summary; no message is added there. Defaults: this "
                      "conversation's thread, resolved."),
         parameters={"type": "object", "properties": {
             "thread": _S, "summary": _S, "state": {"type": "string", "enum": ["resolved", "abandoned", "ongoing"]}},
             "required": ["summary"]}),
    Tool(name="artifact_create",
         description=("Post something concrete (a document, a page, a piece of code) as an artifact: a versioned "
                      "object in this conversation, shown on its own instead of a wall of text. Returns its id."),
         parameters={"type": "object", "properties": {
             "title": _S, "body": _S, "kind": {"type": "string", "enum": ["document", "code", "page"]},
             "language": _S}, "required": ["title", "body"]}),
    Tool(name="artifact_update",
         description="Edit an artifact: the new full body (and title) become a new version; old ones stay readable.",
         parameters={"type": "object", "properties": {"artifact": _S, "body": _S, "title": _S},
                     "required": ["artifact", "body"]}),
    Tool(name="artifact_read",
         description="Read an artifact (its latest version, or the one named) with its versions and comments.",
         parameters={"type": "object", "properties": {"artifact": _S, "version": {"type": "integer"}},
                     "required": ["artifact"]}),
    Tool(name="artifact_comment",
         description="Comment on a version of an artifact (the latest by default).",
         parameters={"type": "object", "properties": {"artifact": _S, "text": _S, "version": {"type": "integer"}},
                     "required": ["artifact", "text"]}),
    Tool(name="search_corpus", description="Search the agent's reference notes (the Ygg handbook by default).",
         parameters={"type": "object", "properties": {"query": _S}, "required": ["query"]}),
    Tool(name="search_history", description="Search this workspace's messages you may see.",
         parameters={"type": "object", "properties": {"query": _S}, "required": ["query"]}),
    Tool(name="remember", description="Keep a short note in your memory; your notes are shown to you every turn.",
         parameters={"type": "object", "properties": {"note": _S}, "required": ["note"]}),
    Tool(name="deploy", description=("Deploy a change to an environment (the demo's: it records the deploy). A person "
                                     "approves it first unless a standing rule allows it."),
         parameters={"type": "object", "properties": {"target": _S}, "required": ["target"]}),
)}

DEFAULT_TOOLS = ("persona_read", "persona_write", "send_message", "handoff", "settle_thread", "remember")


def select(names) -> tuple[Tool, ...]:
    """The named tools, in the order given; unknown names are an error (a config typo should be loud)."""
    unknown = [n for n in names if n not in CATALOG]
    if unknown:
        raise ValueError(f"unknown tools: {', '.join(unknown)}; known: {', '.join(sorted(CATALOG))}")
    return tuple(CATALOG[n] for n in names)


class FailingCalls:
    """Seed 003 §18's separate safeguard: within one turn, the same failing tool call (same tool, same
    arguments, failed) is not run again and again. After `limit` identical failures it is refused to the
    model with a result saying so. Nothing to do with the conversation's loop safeguards (core/party.py)."""

    def __init__(self, limit: int = 2):
        self.limit = limit
        self.failures: dict[str, int] = {}

    @staticmethod
    def _key(call: ToolCall) -> str:
        return call.name + "\x00" + json.dumps(call.arguments, sort_keys=True, default=str)

    def refusal(self, call: ToolCall) -> ToolResult | None:
        n = self.failures.get(self._key(call), 0)
        if n < self.limit:
            return None
        return ToolResult(call_id=call.id, name=call.name, is_error=True, content=(
            f"not run: this exact call ({call.name} with these arguments) already failed {n} times in this turn; "
            "it will fail again. Change the arguments, use another tool, or answer with what you have."))

    def record(self, call: ToolCall, result: ToolResult) -> None:
        if result.is_error:
            key = self._key(call)
            self.failures[key] = self.failures.get(key, 0) + 1
