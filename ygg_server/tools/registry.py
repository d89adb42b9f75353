"""The one tool registry (seed 003 §51-52): every tool an agent can call, registered once with its schema and
its handler; a call is validated against it (`Registry.check`) and routed to that handler.

Where a tool runs is part of its registration: `bridge` tools act on the agent's own connection (sending a
message, a handoff, its persona, the bundled corpus) and run in the bridge, which validates the call against this
same registry first; `server` tools run on the server behind the `call_tool` op (server_tools.py), which checks
again that the tool is attached to the asking agent, so a bridge can never reach a tool it was not given.

An agent sees only the tools attached to it (ops/toolkit.py): its owner attaches and detaches them; one whose
owner never did has `DEFAULT`. Owners' API connections are tools too, named `api_<connection>` (`connection_tool`).

Approvals (seed 003 §59-61): every server call passes the hook set with `Registry.set_approver` (tools/approving.py,
over ops/approvals.py: the workspace's standing rules `Tool(specifier)`, deny, then ask, then allow); a tool
registered with `approval=True` (and an owner's API connection that writes) is asked when no rule covers it. Until
a hook is set, such a call is refused `approval_unavailable`, never run unapproved.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from .schema import problem

_S = {"type": "string"}
NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")  # a tool's name: what every model provider accepts


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    runs: str = "server"  # "server" (call_tool) or "bridge" (the agent's own connection)
    handler: Callable[..., Awaitable[Any]] | None = None  # server tools: async handler(call, arguments)
    approval: bool = False  # held for a person's approval first (the approvals seam)
    group: str = "platform"  # how the TUI groups it: messaging, persona, knowledge, web, memory, skills, api

    def wire(self) -> dict[str, Any]:
        """What an agent (and its owner) is shown of it."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters,
                "runs": self.runs, "group": self.group, **({"approval": True} if self.approval else {})}


class Registry:
    def __init__(self) -> None:
        self._tools: dict[str, ToolSpec] = {}
        self._approver: Callable[..., Awaitable[bool]] | None = None

    def register(self, spec: ToolSpec) -> ToolSpec:
        if not NAME.match(spec.name) or spec.name.startswith("api_"):
            raise ValueError(f"bad tool name {spec.name!r} (api_ names are owners' connections)")
        if spec.name in self._tools:
            raise ValueError(f"tool {spec.name} is registered already")
        if spec.runs not in ("server", "bridge") or (spec.runs == "server") != (spec.handler is not None):
            raise ValueError(f"tool {spec.name}: a server tool has a handler, a bridge tool none")
        self._tools[spec.name] = spec
        return spec

    def handler(self, name: str):
        """Decorator: the server handler of an already described tool (server_tools.py)."""
        def put(fn):
            spec = self._tools[name]
            self._tools[name] = ToolSpec(**{**spec.__dict__, "handler": fn})
            return fn
        return put

    def set_approver(self, fn: Callable[..., Awaitable[bool]] | None) -> None:
        self._approver = fn

    @property
    def approver(self):
        return self._approver

    def get(self, name: str) -> ToolSpec | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return sorted(self._tools)

    def specs(self) -> list[ToolSpec]:
        return [self._tools[n] for n in sorted(self._tools)]

    def check(self, spec: ToolSpec | None, name: str, arguments: Any) -> str | None:
        """Why a call of `name` with `arguments` is not valid against the registry (None: it is)."""
        if spec is None:
            return f"there is no tool called {name}"
        return problem(spec.parameters, arguments if arguments is not None else {})


def connection_tool(name: str, description: str, method: str) -> ToolSpec:
    """An owner's API connection as a tool: `api_<name>`, its path, query and body the call's arguments."""
    params: dict[str, Any] = {"path": {**_S, "maxLength": 2000,
                                       "description": "appended to the connection's URL (optional)"},
                              "query": {"type": "object", "description": "query parameters (optional)"}}
    if method in ("POST", "PUT", "PATCH"):
        params["body"] = {"description": "the JSON body to send (optional)"}
    return ToolSpec(name="api_" + name, group="api", runs="server", handler=_no_handler, approval=method != "GET",
                    description=(description or f"Call the {name} API") + f" ({method}; the connection's "
                                "credentials are added by the server, never shown to you).",
                    parameters={"type": "object", "properties": params})


async def _no_handler(call, arguments):  # (connections are routed by server_tools.call_connection)
    raise RuntimeError("connections are routed by name")


REGISTRY = Registry()
_reg = REGISTRY.register

# --- the agent's own connection (run by the bridge, agents/turn.py) ---
_reg(ToolSpec(name="persona_read", runs="bridge", group="persona",
              description="Read your persona document (who you are: tone, values, way of speaking)."))
_reg(ToolSpec(name="persona_write", runs="bridge", group="persona",
              description=("Replace your persona document with a new full text. A sudden large shrink (under half "
                           "the old length) is refused."),
              parameters={"type": "object", "properties": {"text": _S, "why": _S}, "required": ["text"]}))
_reg(ToolSpec(name="send_message", runs="bridge", group="messaging",
              description=("Send a message now, besides your answer: delegate a request to another agent, ask a "
                           "person, or inform. Defaults: this topic, type request."),
              parameters={"type": "object", "properties": {
                  "to": {"type": "array", "items": _S}, "text": _S,
                  "type": {"type": "string", "enum": ["request", "response", "inform"]},
                  "state": {"type": "string", "enum": ["working", "waiting", "needs_human", "done"]},
                  "topic": _S, "title": _S, "conversation": _S, "in_reply_to": _S,
                  "waiting_for": {"type": "array", "items": _S}},
                  "required": ["text"]}))
_reg(ToolSpec(name="handoff", runs="bridge", group="messaging",
              description=("Hand this question over to one colleague whose work it is more than yours (a request "
                           "with handoff, in this topic): say what you need from them. Their answer comes back to "
                           "you; do not hand something straight back unless you added to it."),
              parameters={"type": "object", "properties": {"to": _S, "text": _S}, "required": ["to", "text"]}))
_reg(ToolSpec(name="search_corpus", runs="bridge", group="knowledge",
              description="Search the agent's reference notes (the Ygg handbook by default).",
              parameters={"type": "object", "properties": {"query": _S}, "required": ["query"]}))
_reg(ToolSpec(name="search_history", runs="bridge", group="knowledge",
              description="Search this workspace's messages you may see.",
              parameters={"type": "object", "properties": {"query": _S}, "required": ["query"]}))

_reg(ToolSpec(name="settle_thread", runs="bridge", group="messaging",
              description=("Bring a side thread's result back (seed 003 §7): post a short summary and mark the thread "
                           "resolved, or abandoned if it got stuck (ongoing opens it again). Its card in the origin "
                           "conversation shows the state and summary; no message is added there. Defaults: this "
                           "conversation's thread, resolved."),
              parameters={"type": "object", "properties": {
                  "thread": _S, "summary": _S, "state": {"type": "string", "enum": ["resolved", "abandoned", "ongoing"]}},
                  "required": ["summary"]}))
# artifacts (issue 21): each a message of the agent's own connection in the topic of its wake (agents/turn.py)
_reg(ToolSpec(name="artifact_create", runs="bridge", group="artifacts",
              description=("Post something concrete (a document, a page or a piece of code) as an artifact: a "
                           "versioned object in this conversation, shown on its own instead of a wall of text. "
                           "Returns its id."),
              parameters={"type": "object", "properties": {
                  "title": _S, "body": _S, "kind": {"type": "string", "enum": ["document", "code", "page"]},
                  "language": _S}, "required": ["title", "body"]}))
_reg(ToolSpec(name="artifact_update", runs="bridge", group="artifacts",
              description="Edit an artifact: the new full body (and title) become a new version; old ones stay readable.",
              parameters={"type": "object", "properties": {"artifact": _S, "body": _S, "title": _S},
                          "required": ["artifact", "body"]}))
_reg(ToolSpec(name="artifact_read", runs="bridge", group="artifacts",
              description="Read an artifact (its latest version, or the one named) with its versions and comments.",
              parameters={"type": "object", "properties": {"artifact": _S, "version": {"type": "integer"}},
                          "required": ["artifact"]}))
_reg(ToolSpec(name="artifact_comment", runs="bridge", group="artifacts",
              description="Comment on a version of an artifact (the latest by default).",
              parameters={"type": "object", "properties": {"artifact": _S, "text": _S, "version": {"type": "integer"}},
                          "required": ["artifact", "text"]}))
# loops and pulses (issue 22, seed 003 §34, §39): the agent ends a loop's iteration, or reports a pulse, on its own
# connection (the `loop_verdict` and `pulse_report` ops; ops/goals.py): the server decides what follows
_reg(ToolSpec(name="loop_verdict", runs="bridge", group="loops",
              description=("End the iteration of a loop you were woken for: continue, done (the goal is met) or "
                           "stuck (you need help), with a short report of this iteration and, if it produced "
                           "something, the result. The server decides whether the loop goes on: the same report or "
                           "result several times in a row ends it. Default: your one loop waiting for a verdict here."),
              parameters={"type": "object", "properties": {
                  "verdict": {"type": "string", "enum": ["continue", "done", "stuck"]},
                  "report": {**_S, "maxLength": 2000}, "result": _S, "loop": _S},
                  "required": ["verdict", "report"]}))
_reg(ToolSpec(name="pulse_report", runs="bridge", group="loops",
              description=("Report a pulse (your own checklist, on your own schedule): a summary and each check, ok "
                           "or attention. It is stored for your owner; they get a message only if a check needs "
                           "attention or you say something in `tell`."),
              parameters={"type": "object", "properties": {
                  "summary": {**_S, "maxLength": 2000},
                  "items": {"type": "array", "items": {"type": "object", "properties": {
                      "check": _S, "status": {"type": "string", "enum": ["ok", "attention"]}, "note": _S},
                      "required": ["check", "status"]}},
                  "tell": _S, "pulse": _S}, "required": ["summary", "items"]}))
_reg(ToolSpec(name="work_graph", runs="bridge", group="knowledge",
              description=("How the workspace's work connects (what you may read): topics and what they wait on, "
                           "side threads and side conversations, delegations and handoffs, artifacts and who made "
                           "them, agents and the conversations they serve. Filters: agent (a name), state (open, "
                           "paused, closed, needs_human, credits, ongoing, resolved, abandoned)."),
              parameters={"type": "object", "properties": {"agent": _S, "state": _S}}))
# files (issue 21): a file sent with a message the agent can read (its id from the message's `files`)
_reg(ToolSpec(name="file_read", runs="bridge", group="files",
              description=("Read a file sent with a message you can see (its id is in the message's files): its name, "
                           "type and size, and its text if it is text (else its first bytes in base64)."),
              parameters={"type": "object", "properties": {"file": _S}, "required": ["file"]}))
# the demo's deploy (issue 22): in the bridge's `ask_first`, so each call waits for a person's approval first
_reg(ToolSpec(name="deploy", runs="bridge", group="demo",
              description=("Deploy a change to an environment (the demo's: it records the deploy). A person "
                           "approves it first unless a standing rule allows it."),
              parameters={"type": "object", "properties": {"target": _S}, "required": ["target"]}))

# --- on the server (server_tools.py gives each its handler) ---
_SERVER = _no_handler  # replaced by server_tools' handlers when it is imported
_reg(ToolSpec(name="remember", group="memory", handler=_SERVER,
              description=("Keep a short note in your long-term memory for this workspace; relevant notes are "
                           "recalled at the start of your turns."),
              parameters={"type": "object", "properties": {"note": {**_S, "maxLength": 2000}}, "required": ["note"]}))
_reg(ToolSpec(name="memory_search", group="memory", handler=_SERVER,
              description="Search your long-term memory in this workspace (words, \"quoted phrases\").",
              parameters={"type": "object", "properties": {"query": {**_S, "maxLength": 500}}, "required": ["query"]}))
_reg(ToolSpec(name="load_skill", group="skills", handler=_SERVER,
              description=("Load one of your skills' full instructions (your prompt lists only their names), or "
                           "one of its files (`file`: a path under references/, scripts/ or assets/)."),
              parameters={"type": "object", "properties": {"name": {**_S, "maxLength": 64},
                                                           "file": {**_S, "maxLength": 300}}, "required": ["name"]}))
_reg(ToolSpec(name="web_search", group="web", handler=_SERVER,
              description="Search the web; each hit with its title, address and a snippet.",
              parameters={"type": "object", "properties": {"query": {**_S, "maxLength": 500},
                                                           "limit": {"type": "integer", "minimum": 1, "maximum": 10}},
                          "required": ["query"]}))
_reg(ToolSpec(name="fetch_page", group="web", handler=_SERVER,
              description="Fetch a web page (http or https) and read its text.",
              parameters={"type": "object", "properties": {"url": {**_S, "maxLength": 2000}}, "required": ["url"]}))

# task and routine management (seed 003 §35, §41; tools/work_tools.py): an agent's own, in the workspace it calls in
_ID = {**_S, "maxLength": 64}
_reg(ToolSpec(name="schedules_list", group="schedule", handler=_SERVER,
              description="List your routines and reminders in this workspace (id, schedule, next run, paused)."))
_reg(ToolSpec(name="routine_create", group="schedule", handler=_SERVER,
              description=("Give yourself a routine: a standing instruction run on a schedule (every so many seconds, "
                           "at least 300, or a cron schedule like '0 8 * * 1-5' in time zone tz), each run a request "
                           "to you from your owner. At most ten; only while your owner allows you routines."),
              parameters={"type": "object", "properties": {
                  "text": {**_S, "maxLength": 2000}, "name": {**_S, "maxLength": 60},
                  "every": {"type": "integer", "minimum": 300, "maximum": 366 * 86400},
                  "cron": {**_S, "maxLength": 100}, "tz": {**_S, "maxLength": 64}}, "required": ["text"]}))
_reg(ToolSpec(name="reminder_create", group="schedule", handler=_SERVER,
              description=("Set a reminder, delivered in your direct conversation with your owner (or the person "
                           "who asked: `person`), here: `at` an ISO 8601 time, or `in_minutes`."),
              parameters={"type": "object", "properties": {
                  "text": {**_S, "maxLength": 2000}, "at": {**_S, "maxLength": 40},
                  "in_minutes": {"type": "integer", "minimum": 1, "maximum": 5 * 366 * 1440},
                  "person": {**_S, "maxLength": 100}}, "required": ["text"]}))
_reg(ToolSpec(name="schedule_pause", group="schedule", handler=_SERVER,
              description="Pause one of your routines or reminders (paused false: resume it).",
              parameters={"type": "object", "properties": {"id": _ID, "paused": {"type": "boolean"}},
                          "required": ["id"]}))
_reg(ToolSpec(name="schedule_delete", group="schedule", handler=_SERVER,
              description="Delete one of your routines or reminders.",
              parameters={"type": "object", "properties": {"id": _ID}, "required": ["id"]}))
_reg(ToolSpec(name="task_create", group="schedule", handler=_SERVER,
              description=("Open a task: a new topic with a request to an agent (or person) you may address, sent "
                           "as any message of yours (charged, delivered, answered there). Default: in your direct "
                           "conversation with them."),
              parameters={"type": "object", "properties": {
                  "to": {**_S, "maxLength": 100}, "title": {**_S, "maxLength": 200},
                  "text": {**_S, "maxLength": 20_000}, "conversation": {**_S, "maxLength": 100}},
                  "required": ["to", "text"]}))
_reg(ToolSpec(name="task_list", group="schedule", handler=_SERVER,
              description="List the tasks (topics) you opened or take part in here, newest first, with their state.",
              parameters={"type": "object", "properties": {
                  "status": {"type": "string", "enum": ["open", "closed", "all"]}}}))
_reg(ToolSpec(name="artifact_pdf", group="artifacts", handler=_SERVER,
              description=("Make a PDF of an artifact (its latest version, or `version`): its file name, pages, "
                           "size, and the bytes in base64 (up to 256 KB)."),
              parameters={"type": "object", "properties": {"artifact": _ID, "version": {"type": "integer", "minimum": 1}},
                          "required": ["artifact"]}))

# an agent whose owner never chose its tools has these (what a bridge was given before the registry, less what
# reaches outside the workspace: the web and API connections are attached by an owner, deliberately)
DEFAULT = ("persona_read", "persona_write", "send_message", "handoff", "settle_thread", "search_corpus",
           "search_history", "remember", "memory_search", "load_skill", "loop_verdict", "pulse_report",
           "file_read")

from . import github, google  # noqa: E402,F401  (the connected accounts' tools, issue 24, register themselves)
