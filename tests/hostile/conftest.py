"""Hostile input and faults (issue 8): shared fixtures.

The `server` and `team` fixtures are tests/conftest.py's (a real server on loopback, on the backends a
module names; SQLite with the writer on a thread without a marker). Two more things hold for every test here:

- argon2 runs at its cheapest (signing in is not what these tests measure);
- no log record carries a traceback: a hostile frame gets a structured answer, never an exception
  that escaped to a handler (`tracebacks` fails the test otherwise).
"""

from __future__ import annotations

import logging

import pytest

from ygg_server.ops import admin
from ygg_server.core import general_id

from tests.backends import PW


@pytest.fixture(autouse=True)
def cheap_argon2(monkeypatch):
    from argon2 import PasswordHasher

    from ygg_server.ops import auth

    monkeypatch.setattr(auth, "_hasher", PasswordHasher(time_cost=1, memory_cost=8, parallelism=1))


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def text(self) -> str:
        out = []
        for r in self.records:
            out.append(r.getMessage())
            if r.exc_info:
                out.append(logging.Formatter().formatException(r.exc_info))
        return "\n".join(out)


@pytest.fixture(autouse=True)
def tracebacks(request):
    """Every log record of the test (DEBUG and up, every logger); fails the test on a traceback."""
    h = _Records()
    root, aio = logging.getLogger(), logging.getLogger("asyncio")
    old = root.level, aio.level
    root.addHandler(h)
    root.setLevel(logging.DEBUG)
    aio.setLevel(logging.WARNING)
    try:
        yield h
    finally:
        root.removeHandler(h)
        root.setLevel(old[0])
        aio.setLevel(old[1])
    if request.node.get_closest_marker("tracebacks_allowed") is None:
        bad = [r for r in h.records if r.exc_info and r.levelno >= logging.ERROR]
        assert not bad, "a traceback was logged:\n" + "\n".join(
            r.getMessage() + "\n" + logging.Formatter().formatException(r.exc_info) for r in bad[:3])


def pytest_configure(config):
    config.addinivalue_line("markers", "tracebacks_allowed: the test expects logged exceptions")


@pytest.fixture
async def teams(team):
    """Team A (the `team` fixture: alice owns it, bob is a member, agents researcher and reviewer) and
    team B: carol's workspace `other`, which nobody of A is in, with her agent `spy` pinned there, a
    topic in General, a direct conversation, a group, and deliveries not yet acked.

    `team.b` holds every kind of B's ids; `team.a` a few of A's, for comparison."""
    b = team.admin(admin.add_person, "carol", PW)
    ws = team.admin(admin.add_workspace, "other", "carol")["id"]
    spy = team.admin(admin.add_agent, "spy", "carol", ws)
    team.admin(admin.fund, "spy", 10)
    team.admin(admin.add_group, ws, "cell", ["spy"])
    carol = await team.person("carol")
    t = await carol.send(workspace=ws, topic="new", title="Secret", to=["spy"], text="the secret plan")
    dm = await carol.send(workspace=ws, conversation="dm:spy", topic="new", title="DM", to=["spy"], text="psst")
    g = await carol.send(workspace=ws, conversation="group:cell", topic="new", title="Cell", to=["group:cell"],
                         text="cell meeting")
    assert t["op"] == dm["op"] == g["op"] == "sent", (t, dm, g)
    delivery = team.conn.execute(
        "SELECT id FROM deliveries WHERE recipient = ? AND acked_at IS NULL ORDER BY id LIMIT 1", (spy["id"],)
    ).fetchone()[0]
    team.b = {
        "ws": ws, "person": b["id"], "agent": spy["id"], "agent_name": "spy", "key": spy["api_key"],
        "general": general_id(ws), "dm": dm["message"]["conversation"], "group": g["message"]["conversation"],
        "topic": t["message"]["topic"], "dm_topic": dm["message"]["topic"], "message": t["message"]["id"],
        "dm_message": dm["message"]["id"], "delivery": delivery, "personal": b["personal_workspace"],
        "org": b["org"],
    }
    team.carol = carol
    return team


def counts(server) -> dict[str, int]:
    """Row counts of every table a hostile frame could change, and the sum of all balances."""
    c = server.conn
    out = {t: c.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in (
        "messages", "deliveries", "topics", "conversations", "ledger", "wallets", "memberships", "agents",
        "workspaces", "people", "groups", "usage", "idempotency", "flags", "personas", "rulebooks")}
    out["balance"] = c.execute("SELECT coalesce(sum(balance), 0) FROM wallets").fetchone()[0]
    out["acked"] = c.execute("SELECT count(*) FROM deliveries WHERE acked_at IS NOT NULL").fetchone()[0]
    out["usage_sum"] = c.execute("SELECT coalesce(sum(count), 0) FROM usage").fetchone()[0]
    out["topic_states"] = hash(tuple(c.execute("SELECT id, state FROM topics ORDER BY id").fetchall()))
    return out
