"""Approvals (seed 003 §59-61): whether an agent's tool call may run, by standing rules or a person's decision.

Pure: rules and requests come in, the time as `now`. A rule is `Tool` or `Tool(specifier)` with an effect
(deny, ask, allow), for one workspace and one agent (or every agent: "*"). A call is judged deny first, then ask,
then allow, the first matching rule of each winning; a call no rule covers is asked (a person decides that one
call). A pending request expires (`EXPIRES_AFTER`): from then on it answers "expired", and a decision that comes
later is refused, so nothing is approved against a context that is gone.

A specifier matches the call's argument text as a shell-style pattern (`git push *`); one ending in `:*` matches
any argument that starts with what is before it (`Bash(git push:*)`).
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase

import msgspec
from msgspec.structs import replace

DENY, ASK, ALLOW = "deny", "ask", "allow"
EFFECTS = (DENY, ASK, ALLOW)  # the order rules are judged in
EXPIRES_AFTER = 10 * 60 * 1_000_000  # "a pending approval expires (default 10 minutes)"
PENDING, APPROVED, DENIED, EXPIRED = "pending", "approved", "denied", "expired"
ANSWERS = {"approve": APPROVED, "deny": DENIED, "always_allow": APPROVED, "always_deny": DENIED}
MAX_ARG = 500
_RULE = re.compile(r"^([A-Za-z0-9_.\-]{1,64})(?:\((.{1,200})\))?$")


class Rule(msgspec.Struct, frozen=True, kw_only=True):
    effect: str
    tool: str
    specifier: str | None = None
    workspace: str
    agent: str = "*"

    @property
    def text(self) -> str:
        return self.tool if self.specifier is None else f"{self.tool}({self.specifier})"


class Approval(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    workspace: str
    agent: str
    tool: str
    arg: str
    status: str = PENDING
    created_at: int
    expires_at: int
    decided_by: str | None = None
    decided_at: int | None = None


def parse(text: object) -> tuple[str, str | None] | None:
    """`Tool` or `Tool(specifier)` as (tool, specifier), or None if it is neither."""
    m = _RULE.match(text) if isinstance(text, str) else None
    return (m.group(1), m.group(2)) if m else None


def call_arg(arguments: object) -> str:
    """The text a call's rules match (`Tool(specifier)`): its first text argument (a deploy's target, a page's
    address, a routine's text), the same for a bridge's tool and a server's."""
    if isinstance(arguments, dict):
        return next((v for v in arguments.values() if isinstance(v, str)), "")[:MAX_ARG]
    return ""


def matches(rule: Rule, tool: str, arg: str) -> bool:
    if rule.tool != tool:
        return False
    spec = rule.specifier
    if spec is None or spec == "*":
        return True
    if spec.endswith(":*"):
        return arg.startswith(spec[:-2])
    return fnmatchcase(arg, spec)


def verdict(rules: list[Rule], workspace: str, agent: str, tool: str, arg: str) -> tuple[str, Rule | None]:
    """Deny, then ask, then allow: the effect of the first rule that covers the call; none: ask."""
    here = [r for r in rules if r.workspace == workspace and r.agent in (agent, "*")]
    for effect in EFFECTS:
        for r in here:
            if r.effect == effect and matches(r, tool, arg):
                return effect, r
    return ASK, None


def request(aid: str, workspace: str, agent: str, tool: str, arg: str, now: int) -> Approval:
    return Approval(id=aid, workspace=workspace, agent=agent, tool=tool, arg=arg[:MAX_ARG], created_at=now,
                    expires_at=now + EXPIRES_AFTER)


def current(a: Approval, now: int) -> Approval:
    """`a` as it stands at `now`: a pending request past its expiry is expired."""
    if a.status == PENDING and now >= a.expires_at:
        return replace(a, status=EXPIRED, decided_at=a.expires_at)
    return a


def answer(a: Approval, how: str, who: str, now: int) -> tuple[Approval, Rule | None] | str:
    """A person's answer (approve, deny, always_allow, always_deny): the request decided, and the standing rule an
    "always" makes (for this agent, tool and argument, in this workspace); or why it cannot be answered."""
    if how not in ANSWERS:
        return "bad_answer"
    a = current(a, now)
    if a.status == EXPIRED:
        return "approval_expired"
    if a.status != PENDING:
        return "approval_answered"
    decided = replace(a, status=ANSWERS[how], decided_by=who, decided_at=now)
    rule = None
    if how.startswith("always_"):
        rule = Rule(effect=ALLOW if how == "always_allow" else DENY, tool=a.tool, specifier=a.arg or None,
                    workspace=a.workspace, agent=a.agent)
    return decided, rule
