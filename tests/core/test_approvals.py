"""core/approvals.py with a fake clock: standing rules, a person's answer, expiry."""

from __future__ import annotations

from ygg_server.core import approvals as ap
from ygg_server.core.approvals import Rule

WS, A = "ws-1", "agent.a"


def _rule(effect: str, text: str, agent: str = A, ws: str = WS) -> Rule:
    tool, spec = ap.parse(text)
    return Rule(effect=effect, tool=tool, specifier=spec, workspace=ws, agent=agent)


def test_deny_then_ask_then_allow_first_match_wins():
    """Seed 003 §59: "Some tool calls are covered by a standing permission, decided once and reused. Others need a
    person to approve or deny that particular call before it runs"."""
    rules = [_rule("allow", "Bash(git:*)"), _rule("ask", "Bash(git push:*)"), _rule("deny", "Bash(git push --force*)")]
    assert ap.verdict(rules, WS, A, "Bash", "git status")[0] == "allow"
    assert ap.verdict(rules, WS, A, "Bash", "git push origin")[0] == "ask"
    assert ap.verdict(rules, WS, A, "Bash", "git push --force origin")[0] == "deny"
    assert ap.verdict(rules, WS, A, "Read", "x") == ("ask", None), "what no rule covers is asked"


def test_rules_are_per_workspace_agent_and_tool():
    """Seed 003 §61: an agent stops to ask for "an action outside its standing permissions"."""
    rules = [_rule("allow", "deploy", agent="*"), _rule("deny", "deploy", agent="agent.b"),
             _rule("allow", "pay", ws="ws-2")]
    assert ap.verdict(rules, WS, A, "deploy", "anything")[0] == "allow"
    assert ap.verdict(rules, WS, "agent.b", "deploy", "anything")[0] == "deny"
    assert ap.verdict(rules, WS, A, "pay", "1")[0] == "ask", "another workspace's rule does not count here"
    assert ap.parse("Bash(git push:*)") == ("Bash", "git push:*") and ap.parse("Bash") == ("Bash", None)
    assert ap.parse("Bash(") is None and ap.parse("") is None and ap.parse(3) is None


def test_a_pending_approval_expires_after_ten_minutes():
    """Seed 003 §60: "A pending approval does not stay open forever: it has an expiry"."""
    a = ap.request("r1", WS, A, "pay", "42 EUR", now=1000)
    assert a.expires_at == 1000 + 10 * 60 * 1_000_000
    assert ap.current(a, a.expires_at - 1).status == "pending"
    assert ap.current(a, a.expires_at).status == "expired"
    assert ap.answer(a, "approve", "human.p", a.expires_at) == "approval_expired", "never approved later"


def test_an_answer_decides_once_and_always_makes_a_rule():
    """Seed 003 §59: "a standing permission, decided once and reused"."""
    a = ap.request("r1", WS, A, "deploy", "staging", now=0)
    decided, rule = ap.answer(a, "always_allow", "human.p", 5)
    assert decided.status == "approved" and decided.decided_by == "human.p"
    assert rule.effect == "allow" and rule.text == "deploy(staging)" and rule.agent == A
    assert ap.verdict([rule], WS, A, "deploy", "staging")[0] == "allow"
    assert ap.answer(decided, "deny", "human.q", 6) == "approval_answered"
    assert ap.answer(a, "maybe", "human.p", 5) == "bad_answer"
    denied, never = ap.answer(a, "always_deny", "human.p", 5)
    assert denied.status == "denied" and never.effect == "deny"
    assert ap.answer(a, "deny", "human.p", 5)[1] is None
