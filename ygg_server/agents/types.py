"""The nouns every backend and the bridge share: one turn in, one turn out.

A turn's input carries the directive split in two (seed 003 §54): `stable`, the
blocks that stay byte-for-byte identical from turn to turn (role, rules, persona,
the party, the conversation's rulebook) so a provider's prompt cache keeps hitting, and
`dynamic`, what changes every time (whose turn it is, what was just said). The
output is one message for the bridge to send (or none), plus any tool calls.
"""

from __future__ import annotations

from typing import Any

import msgspec


class Tool(msgspec.Struct, frozen=True, kw_only=True):
    """A function the agent may call; `parameters` is a JSON Schema object."""

    name: str
    description: str
    parameters: dict[str, Any] = msgspec.field(default_factory=lambda: {"type": "object", "properties": {}})


class ToolCall(msgspec.Struct, kw_only=True):
    name: str
    arguments: dict[str, Any] = msgspec.field(default_factory=dict)
    id: str = ""


class ToolResult(msgspec.Struct, kw_only=True):
    call_id: str
    name: str
    content: str
    is_error: bool = False


class Step(msgspec.Struct, kw_only=True):
    """An earlier round of this same turn: what the model said and asked, what the tools answered."""

    text: str = ""
    calls: list[ToolCall] = msgspec.field(default_factory=list)
    results: list[ToolResult] = msgspec.field(default_factory=list)


class Directive(msgspec.Struct, frozen=True, kw_only=True):
    """What an agent should do this turn, in two parts (seed 003 §53-55).

    `stable` is a tuple of blocks: the server's core (who the agent is, the rules,
    its persona), the bridge's answer block (the answer format, and the tools when
    the backend cannot call them natively), then the server's conversation block
    (who else is here, the conversation's rulebook). All are byte-identical from
    turn to turn in one conversation; the first two across all of them.
    `dynamic` is fresh for every turn: the server's, then the bridge's memory.
    """

    stable: tuple[str, ...]
    dynamic: str

    @property
    def system(self) -> str:
        return "\n\n".join(self.stable)


class TurnInput(msgspec.Struct, kw_only=True):
    directive: Directive
    tools: tuple[Tool, ...] = ()
    steps: list[Step] = msgspec.field(default_factory=list)
    # The same wake as structured data (see bridge.Event): built-in agents read this instead of prose.
    event: dict[str, Any] = msgspec.field(default_factory=dict)


class TurnOutput(msgspec.Struct, kw_only=True):
    """One turn's answer. Fields left None take the bridge's defaults for this wake.

    `text` None (and no tool calls) means: nothing to say now. `error` set means
    the turn failed (after bounded retries); the bridge surfaces it, never crashes.
    """

    text: str | None = None
    type: str | None = None  # request | response | inform
    state: str | None = None  # working | waiting | needs_human | done
    to: list[str] | None = None
    in_reply_to: str | None = None
    waiting_for: list[str] | None = None
    topic: str | None = None  # a topic id, or "new" (then `title`)
    title: str | None = None
    conversation: str | None = None
    card: dict[str, Any] | None = None  # a result card: {"template", "data"} (docs/protocol.md, "Result cards")
    tool_calls: list[ToolCall] = msgspec.field(default_factory=list)
    error: str | None = None
    usage: dict[str, Any] = msgspec.field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return self.error is not None


def failed(error: str, **usage: Any) -> TurnOutput:
    return TurnOutput(error=error, usage=dict(usage))


MESSAGE_TYPES = ("request", "response", "inform")
STATES = ("working", "waiting", "needs_human", "done")
