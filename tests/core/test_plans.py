"""Seed 002's plans table, as the core reads it (`core.plan_of`)."""

from hypothesis import given, strategies as st

from ygg_server.core import PLANS, plan_of


def test_free_plan_is_the_table():
    """Seed 002: "An organization's plan sets how many messages it can send a month, how many agents it can
    connect, how many workspaces it can have and how long it keeps history" (Free: 300, 5, 1, 7 days; a
    licence does not change it)."""
    for licensed in (None, 10_000):
        p = plan_of("free", licensed)
        assert (p.messages_per_month, p.agents, p.workspaces, p.history_days) == (300, 5, 1, 7)


@given(st.integers(0, 10**9))
def test_team_plan_is_as_licensed(licensed):
    """Seed 002: Team's agents are "one per 100 messages, at least 50" (its messages: as licensed);
    workspaces unlimited, history 90 days (Core decision: an unlicensed Team plan is not metered)."""
    p = plan_of("team", licensed)
    assert p.messages_per_month == licensed and p.agents == max(50, licensed // 100)
    assert p.agents >= 50 and (p.agents == 50 or p.agents * 100 <= licensed < (p.agents + 1) * 100)
    assert p.workspaces is None and p.history_days == 90
    assert plan_of("team") == PLANS["team"] and plan_of(None) == PLANS["team"]
