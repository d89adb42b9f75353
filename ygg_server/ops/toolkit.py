"""Which tools an agent has (seed 003 §51-52: "an agent sees only the tools attached to it"), its owner's API
connections, and the route of a `call_tool` (the registry's check, then the handler: net/tool_calls.py).

Socket ops (docs/protocol.md, "Tools, skills and memory"), each `fn(conn, participant, frame[, now]) -> dict`:
- `list_tools`: an agent, its own; a person, one of its agents' (with `catalog`: what it could attach);
- `attach_tool` / `detach_tool`: the agent's owner (a person) only; a tool that is neither registered nor one of
  the owner's connections is refused `unknown_tool`;
- `add_connection` / `remove_connection` / `list_connections`: a person's API connections (its auth header sealed
  by tools/vault.py and never shown again: `list_connections` says only that there is one).
An agent or a tool that is not the asker's to see is `not_found`, as one that does not exist.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from enum import StrEnum
from typing import Any
from urllib.parse import urlsplit

import msgspec

from ..protocol import frames
from ..protocol.ids import new_id
from ..store.transactions import Tx, serialized
from ..tools import vault
from ..tools.registry import DEFAULT, REGISTRY, ToolSpec, connection_tool
from .queries import _member
from .refusals import NotFound, Refused


class ToolRefusal(StrEnum):
    UNKNOWN_TOOL = "unknown_tool"  # attach: no such tool in the registry nor among the owner's connections
    TOOL_NOT_ATTACHED = "tool_not_attached"  # call_tool: not a tool of this agent (or no such tool)
    BAD_ARGUMENTS = "bad_arguments"  # call_tool: the arguments break the tool's schema
    BAD_CONNECTION = "bad_connection"  # add_connection: a name, URL, method or header that cannot be used
    APPROVAL_UNAVAILABLE = "approval_unavailable"  # a tool that needs approval, with no approvals to ask


CONNECTION_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
HEADER_NAME = re.compile(r"^[A-Za-z0-9-]{1,64}$")
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


def owned_agent(conn: sqlite3.Connection, who: str, ref: Any) -> tuple[str, str]:
    """(agent id, owner) of `ref` when `who` is its owner; an agent asking names itself (None or its id)."""
    if who.startswith("agent.") and ref in (None, who):
        row = conn.execute("SELECT owner FROM agents WHERE id = ? AND revoked = 0", (who,)).fetchone()
        if row:
            return who, row[0]
        raise NotFound
    if not who.startswith("human.") or not isinstance(ref, str):
        raise NotFound
    row = conn.execute("SELECT id FROM agents WHERE owner = ? AND (id = ? OR name = ?) AND revoked = 0",
                       (who, ref, ref)).fetchone()
    if row is None:
        raise NotFound
    return row[0], who


def connections(conn: sqlite3.Connection, owner: str) -> dict[str, tuple]:
    """An owner's connections by name: (id, url, method, header_name, header_sealed, description)."""
    return {r[0]: r[1:] for r in conn.execute(
        "SELECT name, id, url, method, header_name, header_sealed, description FROM connections WHERE owner = ?",
        (owner,))}


def catalog(conn: sqlite3.Connection, owner: str) -> dict[str, ToolSpec]:
    """Every tool an agent of `owner` could have: the registry's, and the owner's connections."""
    out = {s.name: s for s in REGISTRY.specs()}
    for name, (_, _, method, _, _, description) in connections(conn, owner).items():
        spec = connection_tool(name, description, method)
        out[spec.name] = spec
    return out


def attached(conn: sqlite3.Connection, agent: str, owner: str) -> tuple[bool, list[ToolSpec]]:
    """(whether its owner chose its tools, the tools attached to `agent` that exist), in the order attached."""
    row = conn.execute("SELECT tools FROM agent_tools WHERE agent = ?", (agent,)).fetchone()
    names = msgspec.json.decode(row[0]) if row else list(DEFAULT)
    known = catalog(conn, owner)
    return row is not None, [known[n] for n in names if n in known]


def list_tools(conn: sqlite3.Connection, who: str, f: frames.ListTools) -> dict:
    agent, owner = owned_agent(conn, who, f.agent)
    configured, tools = attached(conn, agent, owner)
    out: dict[str, Any] = {"agent": agent, "configured": configured, "tools": [t.wire() for t in tools]}
    if who == owner:
        out["catalog"] = [t.wire() for t in catalog(conn, owner).values()]
    return out


def set_tools(conn: sqlite3.Connection, agent: str, owner: str, add: list[str] = (), drop: list[str] = (),
              by: str = "", now: int = 0) -> list[str]:
    """Attach `add` and detach `drop` (in one transaction, serialized per agent): the agent's tools after."""
    with Tx(conn):
        serialized(conn, "tools:" + agent)
        _, tools = attached(conn, agent, owner)
        names = [t.name for t in tools]
        names = [n for n in names if n not in drop] + [n for n in add if n not in names and n not in drop]
        conn.execute("""INSERT INTO agent_tools (agent, tools, set_by, updated_at) VALUES (?,?,?,?)
                        ON CONFLICT (agent) DO UPDATE SET tools = excluded.tools, set_by = excluded.set_by,
                        updated_at = excluded.updated_at""",
                     (agent, msgspec.json.encode(names).decode(), by, now))
    return names


def _owner_only(who: str, owner: str) -> None:
    if who != owner:  # an agent does not choose its own tools (a bridge could otherwise give itself anything)
        raise Refused("permission_denied", "an agent's tools are attached by its owner")


def attach_tool(conn: sqlite3.Connection, who: str, f: frames.AttachTool, now: int) -> dict:
    agent, owner = owned_agent(conn, who, f.agent)
    _owner_only(who, owner)
    if f.tool not in catalog(conn, owner):
        raise Refused(ToolRefusal.UNKNOWN_TOOL, f"there is no tool {f.tool!r} (list_tools shows the catalog)")
    return {"agent": agent, "tools": set_tools(conn, agent, owner, add=[f.tool], by=who, now=now)}


def detach_tool(conn: sqlite3.Connection, who: str, f: frames.DetachTool, now: int) -> dict:
    agent, owner = owned_agent(conn, who, f.agent)
    _owner_only(who, owner)
    return {"agent": agent, "tools": set_tools(conn, agent, owner, drop=[f.tool], by=who, now=now)}


# --- owners' API connections ---

def connection_problem(name: Any, url: Any, method: Any, header_name: Any, header_value: Any) -> str | None:
    if not isinstance(name, str) or not CONNECTION_NAME.match(name):
        return "a connection's name is 1 to 40 lowercase letters, digits or _ (its tool is api_<name>)"
    if not isinstance(url, str) or len(url) > 2000 or urlsplit(url).scheme not in ("http", "https") \
            or not urlsplit(url).hostname:
        return "a connection's url is an http or https address"
    if method not in METHODS:
        return f"method is one of {', '.join(METHODS)}"
    if not isinstance(header_name, str) or not isinstance(header_value, str) or len(header_value) > 4000:
        return "header_name and header_value are text (the value up to 4000 characters)"
    if header_name and not HEADER_NAME.match(header_name):
        return "header_name is a header's name (letters, digits and -)"
    if header_value and not header_name:
        return "a header_value needs its header_name"
    if any(c in header_value for c in "\r\n"):
        return "a header's value is one line"
    return None


def add_connection(conn: sqlite3.Connection, who: str, f: frames.AddConnection, now: int) -> dict:
    if not who.startswith("human."):
        raise Refused("permission_denied", "API connections are set up by people")
    method = f.method.upper() if isinstance(f.method, str) else f.method
    problem = connection_problem(f.name, f.url, method, f.header_name, f.header_value)
    if problem:
        raise Refused(ToolRefusal.BAD_CONNECTION, problem)
    description = f.description if isinstance(f.description, str) else ""
    sealed = vault.default().seal(f.header_value) if f.header_value else ""
    with Tx(conn):
        conn.execute("DELETE FROM connections WHERE owner = ? AND name = ?", (who, f.name))
        conn.execute("""INSERT INTO connections (id, owner, name, url, method, header_name, header_sealed,
                        description, created_at) VALUES (?,?,?,?,?,?,?,?,?)""",
                     (new_id(), who, f.name, f.url, method, f.header_name, sealed, description[:300], now))
    return {"name": f.name, "tool": "api_" + f.name}


def remove_connection(conn: sqlite3.Connection, who: str, f: frames.RemoveConnection) -> dict:
    if conn.execute("DELETE FROM connections WHERE owner = ? AND name = ?", (who, f.name)).rowcount == 0:
        raise NotFound
    return {"name": f.name}


def list_connections(conn: sqlite3.Connection, who: str, f: frames.ListConnections) -> dict:
    return {"connections": [{"name": n, "tool": "api_" + n, "url": url, "method": m, "header_name": h,
                             "has_secret": bool(sealed), "description": d}
                            for n, (_, url, m, h, sealed, d) in sorted(connections(conn, who).items())]}


# --- a call's route ---

@dataclass(frozen=True)
class Route:
    """A `call_tool` checked against the registry: who calls what, where, and (a connection) how to reach it."""

    agent: str
    owner: str
    workspace: str
    spec: ToolSpec
    arguments: dict
    connection: tuple | None = None  # (url, method, header_name, header_sealed)
    conversation: str | None = None  # where the agent acts (a connected account's tools: ops/connected.resolve)


def route(conn: sqlite3.Connection, who: str, f: frames.CallTool) -> Route:
    """The registry's answer to a call: the tool attached to this agent, its arguments valid, the agent a member
    of the workspace it calls in (memory and skills are per workspace); else refused, saying why."""
    if not who.startswith("agent."):
        raise Refused("permission_denied", "call_tool is an agent's")
    agent, owner = owned_agent(conn, who, None)
    _member(conn, f.workspace, agent)
    _, tools = attached(conn, agent, owner)
    spec = next((t for t in tools if t.name == f.tool), None)
    if spec is None or spec.runs != "server":
        raise Refused(ToolRefusal.TOOL_NOT_ATTACHED, f"you have no tool {f.tool!r} here" if spec is None else
                      f"{f.tool} runs in your bridge, not on the server")
    args = f.arguments if f.arguments is not None else {}
    problem = REGISTRY.check(spec, f.tool, args)
    if problem:
        raise Refused(ToolRefusal.BAD_ARGUMENTS, f"{f.tool}: {problem}")
    connection = None
    if f.tool.startswith("api_"):
        _, url, method, header_name, sealed, _ = connections(conn, owner)[f.tool[4:]]
        connection = (url, method, header_name, sealed)
    conversation = f.conversation if isinstance(f.conversation, str) else None
    return Route(agent, owner, f.workspace, spec, args, connection, conversation)


OPS = {"list_tools": (list_tools, False), "attach_tool": (attach_tool, True), "detach_tool": (detach_tool, True),
       "add_connection": (add_connection, True), "remove_connection": (remove_connection, True),
       "list_connections": (list_connections, False)}
TIMED = frozenset({"attach_tool", "detach_tool", "add_connection"})
