"""The bridge's side of the one tool registry (ygg_server/tools/registry.py, seed 003 §51-52).

The specs are the server registry's: `select` names tools from it (a config's `tools`), `from_wire` reads those
the server says are attached to this agent (`list_tools`: what the model is offered, its owner's API connections
included). The bridge checks each call against the spec it offered (`problem`) before running it: its own tools
here (Bridge._tool, turn.py), the server's through `call_tool`, which checks again.
"""

from __future__ import annotations

import json

from ..tools.registry import REGISTRY
from ..tools.schema import problem as schema_problem
from .types import Tool, ToolCall, ToolResult

CATALOG: dict[str, Tool] = {s.name: Tool(name=s.name, description=s.description, parameters=s.parameters)
                            for s in REGISTRY.specs()}
BRIDGE = frozenset(s.name for s in REGISTRY.specs() if s.runs == "bridge")  # run here; any other on the server

DEFAULT_TOOLS = ("persona_read", "persona_write", "send_message", "handoff", "settle_thread", "remember")


def select(names) -> tuple[Tool, ...]:
    """The named tools, in the order given; unknown names are an error (a config typo should be loud)."""
    unknown = [n for n in names if n not in CATALOG]
    if unknown:
        raise ValueError(f"unknown tools: {', '.join(unknown)}; known: {', '.join(sorted(CATALOG))}")
    return tuple(CATALOG[n] for n in names)


def from_wire(specs: list[dict]) -> tuple[Tool, ...]:
    """The tools the server lists as attached (list_tools' `tools`)."""
    return tuple(Tool(name=s["name"], description=s.get("description", ""),
                      parameters=s.get("parameters") or {"type": "object", "properties": {}}) for s in specs)


def offered(configured: bool, attached: tuple[Tool, ...], config_names) -> tuple[Tool, ...]:
    """What the model is offered: the tools the server says are attached; for an agent whose owner never chose
    them, narrowed to those its bridge's config names (as before the registry)."""
    if configured:
        return attached
    by_name = {t.name: t for t in attached}
    return tuple(by_name[n] for n in config_names if n in by_name)


def problem(tool: Tool, call: ToolCall) -> str | None:
    """Why `call` breaks the schema of the tool offered (None: it does not)."""
    return schema_problem(tool.parameters, call.arguments if call.arguments is not None else {})


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
