"""Approvals and tool rules (seed 003 §59-61; core/approvals.py decides): socket ops on a sqlite3-shaped connection.

- `request_approval` (an agent, before a tool call): judged by the standing rules of its workspace; `allow` or
  `deny` is answered at once; `ask` stores a pending request, tells the people who may decide (an event `approval`
  to their connections) and answers `pending` with its id. The agent's bridge then waits, asking `get_approval`
  (which costs no credit: no message, no model), until it is decided or expired.
- `get_approval`: the agent, or one who may decide; a pending request past its expiry is marked `expired` here
  (the clean-up: the agent is answered "expired", and nobody can approve it any more).
- `list_approvals`: the pending requests of a workspace that the asker may decide (expired ones are cleaned up).
- `decide_approval` (approve, deny, always_allow, always_deny): by the agent's owner or the workspace's owners and
  admins; an "always" also stores the standing rule; the agent's connections are told (`approval_decided`).
- `set_tool_rule` / `list_tool_rules`: a workspace's standing rules (`Tool(specifier)`, deny, ask or allow) for
  one agent (or "*"), set by the agent's owner (for it) or the workspace's owners and admins.
"""

from __future__ import annotations

import sqlite3
import uuid

from ..core import approvals as core
from ..core.approvals import Approval, Rule
from ..protocol import frames
from ..store.transactions import Tx, serialized
from .refusals import NotFound, Refused

_COLS = "id, workspace, agent, tool, arg, status, created_at, expires_at, decided_by, decided_at"


def _role(conn: sqlite3.Connection, ws, pid: str) -> str:
    row = conn.execute("SELECT role FROM memberships WHERE workspace = ? AND participant = ?",
                       (ws if isinstance(ws, str) else "", pid)).fetchone()
    if row is None:
        raise NotFound
    return row[0]


def _owner(conn: sqlite3.Connection, agent: str) -> str | None:
    row = conn.execute("SELECT owner FROM agents WHERE id = ?", (agent,)).fetchone()
    return row[0] if row else None


def may_decide(conn: sqlite3.Connection, who: str, ws: str, agent: str) -> bool:
    """The agent's owner, or the workspace's owners and admins (seed 003 §59: a person approves that call)."""
    if not who.startswith("human."):
        return False
    row = conn.execute("SELECT role FROM memberships WHERE workspace = ? AND participant = ?", (ws, who)).fetchone()
    return row is not None and (who == _owner(conn, agent) or row[0] in ("owner", "admin"))


def deciders(conn: sqlite3.Connection, ws: str, agent: str) -> list[str]:
    rows = conn.execute("SELECT participant FROM memberships WHERE workspace = ? AND role IN ('owner', 'admin') "
                        "AND participant LIKE 'human.%'", (ws,)).fetchall()
    out = {r[0] for r in rows}
    owner = _owner(conn, agent)
    if owner and conn.execute("SELECT 1 FROM memberships WHERE workspace = ? AND participant = ?",
                              (ws, owner)).fetchone():
        out.add(owner)
    return sorted(out)


def rules(conn: sqlite3.Connection, ws: str) -> list[Rule]:
    return [Rule(effect=e, tool=t, specifier=s, workspace=ws, agent=a) for e, t, s, a in conn.execute(
        "SELECT effect, tool, specifier, agent FROM tool_rules WHERE workspace = ? ORDER BY created_at, id", (ws,))]


def _approval(row) -> Approval:
    return Approval(**dict(zip([c.strip() for c in _COLS.split(",")], row)))


def _load(conn: sqlite3.Connection, ws: str, aid) -> Approval:
    row = conn.execute(f"SELECT {_COLS} FROM approvals WHERE id = ? AND workspace = ?",
                       (aid if isinstance(aid, str) else "", ws)).fetchone()
    if row is None:
        raise NotFound
    return _approval(row)


def _as_dict(conn: sqlite3.Connection, a: Approval) -> dict:
    name = conn.execute("SELECT name FROM agents WHERE id = ?", (a.agent,)).fetchone()
    return {k: getattr(a, k) for k in a.__struct_fields__} | {"agent_name": name[0] if name else a.agent}


def _cleaned(conn: sqlite3.Connection, a: Approval, now: int) -> Approval:
    """The clean-up of one request: past its expiry, it is stored expired."""
    now_a = core.current(a, now)
    if now_a is not a:
        conn.execute("UPDATE approvals SET status = ?, decided_at = ? WHERE id = ? AND status = 'pending'",
                     (now_a.status, now_a.decided_at, a.id))
    return now_a


def request_approval(conn: sqlite3.Connection, who: str, f: frames.RequestApproval, now: int) -> dict:
    ws = f.workspace
    _role(conn, ws, who)
    if not who.startswith("agent."):
        raise Refused("permission_denied", "an agent asks before its own tool calls")
    if not isinstance(f.tool, str) or core.parse(f.tool) is None or "(" in f.tool:
        raise Refused("bad_rule", "tool is a tool's name")
    arg = f.arg if isinstance(f.arg, str) else ""
    effect, rule = core.verdict(rules(conn, ws), ws, who, f.tool, arg)
    if effect != core.ASK:
        return {"decision": effect, "rule": rule.text if rule else None}
    return _pend(conn, ws, who, f.tool, arg, now)


def _pend(conn: sqlite3.Connection, ws: str, agent: str, tool: str, arg: str, now: int) -> dict:
    """A pending request stored, and the people who may decide it told (an `approval` event each)."""
    a = core.request(str(uuid.uuid4()), ws, agent, tool, arg, now)
    with Tx(conn):
        conn.execute(f"INSERT INTO approvals ({_COLS}) VALUES (?,?,?,?,?,?,?,?,?,?)",
                     tuple(getattr(a, c.strip()) for c in _COLS.split(",")))
    shown = _as_dict(conn, a)
    return {"decision": "pending", "approval": shown, "_notify": [
        (p, {"op": "event", "kind": "approval", "approval": shown}) for p in deciders(conn, ws, agent)]}


def gate(conn: sqlite3.Connection, agent: str, ws: str, tool: str, arguments: dict, needs_approval: bool,
         approval, now: int) -> dict:
    """Whether a registry tool call runs (seed 003 §59-61): `decision` allow, deny (with its `rule`), expired, or
    pending (with the `approval` a person decides; the call is made again naming it once it is decided).

    Without `approval`: the standing rules of the workspace judge the call (deny, then ask, then allow); a call no
    rule covers runs, unless its tool is one that needs approval (`needs_approval`): that one is asked. With
    `approval`: the request for exactly this call (agent, tool, argument, workspace); once approved it is spent by
    this call (`approval_uses`), so one person's yes runs one call."""
    arg = core.call_arg(arguments)
    if approval is None:
        effect, rule = core.verdict(rules(conn, ws), ws, agent, tool, arg)
        if rule is None and not needs_approval:
            return {"decision": core.ALLOW, "rule": None}
        if effect != core.ASK:
            return {"decision": effect, "rule": rule.text if rule else None}
        return _pend(conn, ws, agent, tool, arg, now)
    with Tx(conn):
        a = _load(conn, ws, approval)
        if (a.agent, a.tool, a.arg) != (agent, tool, arg):
            raise Refused("bad_approval", "that approval is for another call (its tool or argument differ)")
        a = _cleaned(conn, a, now)
        if a.status == core.APPROVED:
            serialized(conn, "approval:" + a.id)
            if conn.execute("SELECT 1 FROM approval_uses WHERE approval = ?", (a.id,)).fetchone():
                raise Refused("approval_used", "that approval ran its call already: ask again")
            conn.execute("INSERT INTO approval_uses (approval, used_at) VALUES (?,?)", (a.id, now))
            return {"decision": core.ALLOW, "rule": None, "approval": _as_dict(conn, a)}
    decision = {core.DENIED: core.DENY, core.EXPIRED: "expired", core.PENDING: "pending"}[a.status]
    return {"decision": decision, "rule": None, "approval": _as_dict(conn, a)}


def get_approval(conn: sqlite3.Connection, who: str, f: frames.GetApproval, now: int) -> dict:
    with Tx(conn):
        a = _load(conn, f.workspace, f.id)
        if who != a.agent and not may_decide(conn, who, a.workspace, a.agent):
            raise NotFound
        return {"approval": _as_dict(conn, _cleaned(conn, a, now))}


def list_approvals(conn: sqlite3.Connection, who: str, f: frames.ListApprovals, now: int) -> dict:
    ws = f.workspace
    _role(conn, ws, who)
    with Tx(conn):
        found = [_cleaned(conn, _approval(r), now) for r in conn.execute(
            f"SELECT {_COLS} FROM approvals WHERE workspace = ? AND status = 'pending' ORDER BY created_at", (ws,))]
    return {"workspace": ws, "approvals": [_as_dict(conn, a) for a in found
                                           if a.status == core.PENDING and may_decide(conn, who, ws, a.agent)]}


def decide_approval(conn: sqlite3.Connection, who: str, f: frames.DecideApproval, now: int) -> dict:
    with Tx(conn):
        a = _load(conn, f.workspace, f.id)
        if not may_decide(conn, who, a.workspace, a.agent):
            raise NotFound
        got = core.answer(a, f.answer, who, now)
        if isinstance(got, str):
            _cleaned(conn, a, now)
            raise Refused(got, {"approval_expired": "it expired: the agent was answered expired",
                                "approval_answered": "someone answered it already",
                                "bad_answer": "answer is approve, deny, always_allow or always_deny"}[got])
        decided, rule = got
        conn.execute("UPDATE approvals SET status = ?, decided_by = ?, decided_at = ? WHERE id = ?",
                     (decided.status, who, now, a.id))
        if rule is not None:
            _insert_rule(conn, rule, who, now)
    shown = _as_dict(conn, decided)
    return {"approval": shown, "rule": rule.text if rule else None,
            "_notify": (a.agent, {"op": "event", "kind": "approval_decided", "approval": shown})}


def _insert_rule(conn: sqlite3.Connection, r: Rule, who: str, now: int) -> None:
    conn.execute("INSERT INTO tool_rules (id, workspace, agent, effect, tool, specifier, created_by, created_at) "
                 "VALUES (?,?,?,?,?,?,?,?)", (str(uuid.uuid4()), r.workspace, r.agent, r.effect, r.tool, r.specifier,
                                              who, now))


def set_tool_rule(conn: sqlite3.Connection, who: str, f: frames.SetToolRule, now: int) -> dict:
    ws = f.workspace
    role = _role(conn, ws, who)
    parsed = core.parse(f.rule)
    if parsed is None:
        raise Refused("bad_rule", "a rule is Tool or Tool(specifier)")
    if f.effect is not None and f.effect not in core.EFFECTS:
        raise Refused("bad_rule", "effect is deny, ask or allow (null removes the rule)")
    agent = f.agent if isinstance(f.agent, str) else ""
    if agent != "*":
        row = conn.execute("SELECT a.id FROM agents a JOIN memberships m ON m.participant = a.id AND m.workspace = ? "
                           "WHERE a.id = ? OR a.name = ?", (ws, agent, agent)).fetchone()
        if row is None:
            raise Refused("unknown_recipient", f"no agent {agent!r} in this workspace")
        agent = row[0]
    if not who.startswith("human.") or not (role in ("owner", "admin") or (agent != "*" and _owner(conn, agent) == who)):
        raise Refused("permission_denied", "an agent's owner sets its rules; the workspace's owners and admins any")
    tool, spec = parsed
    with Tx(conn):
        conn.execute("DELETE FROM tool_rules WHERE workspace = ? AND agent = ? AND tool = ? AND "
                     "COALESCE(specifier, '') = ?", (ws, agent, tool, spec or ""))
        if f.effect is not None:
            _insert_rule(conn, Rule(effect=f.effect, tool=tool, specifier=spec, workspace=ws, agent=agent), who, now)
    return {"workspace": ws, "agent": agent, "rule": f.rule, "effect": f.effect}


def list_tool_rules(conn: sqlite3.Connection, who: str, f: frames.ListToolRules) -> dict:
    ws = f.workspace
    _role(conn, ws, who)
    return {"workspace": ws, "rules": [{"agent": r.agent, "rule": r.text, "effect": r.effect} for r in rules(conn, ws)]}


# op: (function, writes?)
OPS = {
    "request_approval": (request_approval, True),
    "get_approval": (get_approval, True),
    "list_approvals": (list_approvals, True),
    "decide_approval": (decide_approval, True),
    "set_tool_rule": (set_tool_rule, True),
    "list_tool_rules": (list_tool_rules, False),
}
TIMED = frozenset({"request_approval", "get_approval", "list_approvals", "decide_approval", "set_tool_rule"})
