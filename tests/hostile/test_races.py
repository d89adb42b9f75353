"""Races (issue 8): many sends at once against one wallet, and one client message id sent more than once at
the same time, over several connections of the same agent.
"""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from ygg_server.ops import admin

from .conftest import counts

pytestmark = pytest.mark.backends("sqlite", "postgres")


def wallet(team, agent_id: str) -> int:
    row = team.conn.execute("SELECT balance FROM wallets WHERE account = ?", (agent_id,)).fetchone()
    return row[0] if row else 0


def pool(team) -> int:
    row = team.conn.execute("SELECT balance FROM wallets WHERE workspace = ? AND account = 'pool'", (team.ws,)).fetchone()
    return row[0] if row else 0


async def test_fifty_concurrent_sends_on_ten_credits_accept_exactly_ten(team):
    """PROTOCOL.md: "Refused: `{"op":"refused","ref":2,"reason":"<refusal>","detail":"…"}`, nothing stored, nothing charged": the eleventh send on ten credits, however they race."""
    key = team.admin(admin.add_agent, "poor", "alice")["api_key"]
    team.admin(admin.fund, "poor", 10)
    alice = await team.person("alice")
    conns = [await team.client(api_key=key) for _ in range(5)]
    aid = conns[0].me["id"]
    t = await alice.send(workspace=team.ws, topic="new", title="Race", to=["poor"], text="go")
    topic = t["message"]["topic"]
    before = counts(team)
    sends = [conns[i % 5].send(workspace=team.ws, topic=topic, type="inform", to=["@alice"], text=f"spend {i}")
             for i in range(50)]
    replies = await asyncio.gather(*sends)
    outcome = Counter(r["op"] if r["op"] == "sent" else r["reason"] for r in replies)
    assert outcome == {"sent": 10, "credits_exhausted": 40}, outcome
    assert all(r["cost"] == 1 for r in replies if r["op"] == "sent")
    assert wallet(team, aid) == 0 and pool(team) == 0
    mine = team.conn.execute("SELECT count(*) FROM messages WHERE author = ?", (aid,)).fetchone()[0]
    debits = team.conn.execute("SELECT count(*), sum(delta) FROM ledger WHERE account = ? AND delta < 0", (aid,)).fetchone()
    assert mine == 10 and debits == (10, -10)
    delivered = team.conn.execute(
        "SELECT count(*) FROM deliveries d JOIN messages m ON m.id = d.message WHERE m.author = ? AND d.recipient = ?",
        (aid, team.alice)).fetchone()[0]
    assert delivered == 10, "each accepted message delivered once to alice; no refused one partly"
    assert counts(team)["balance"] == before["balance"] - 10


async def test_one_client_id_sent_many_times_at_once_is_stored_and_charged_once(team):
    """docs/protocol.md: "a repeated `client_id` from the same participant returns the first answer with `"duplicate": true`; the message is stored and charged once"."""
    alice = await team.person("alice")
    conns = [await team.client(api_key=team.keys["researcher"]) for _ in range(4)]
    rid = conns[0].me["id"]
    t = await alice.send(workspace=team.ws, topic="new", title="Idem", to=["researcher"], text="go")
    topic = t["message"]["topic"]
    money = wallet(team, rid)
    for round_, n in enumerate((2, 20)):  # twice at once, then twenty times at once, over four connections
        frame = {"workspace": team.ws, "topic": topic, "type": "inform", "to": ["@alice"], "text": f"once {round_}",
                 "client_id": f"same-{round_}"}
        replies = await asyncio.gather(*[conns[i % 4].send(**frame) for i in range(n)])
        assert all(r["op"] == "sent" for r in replies), replies
        assert len({r["message"]["id"] for r in replies}) == 1, "one message, whichever connection asked"
        assert sorted(bool(r.get("duplicate")) for r in replies) == [False] + [True] * (n - 1)
        mid = replies[0]["message"]["id"]
        assert team.conn.execute("SELECT count(*) FROM messages WHERE id = ?", (mid,)).fetchone()[0] == 1
        assert team.conn.execute("SELECT count(*) FROM deliveries WHERE message = ? AND recipient = ?",
                                 (mid, team.alice)).fetchone()[0] == 1
        assert team.conn.execute("SELECT count(*) FROM ledger WHERE cause = ?", (mid,)).fetchone()[0] == 1
    assert wallet(team, rid) == money - 2
    # later, sequentially, and with other content: still the first answer
    again = await conns[0].send(workspace=team.ws, topic=topic, type="request", to=["reviewer"], text="changed",
                                client_id="same-0")
    assert again.get("duplicate") is True and again["message"]["text"] == "once 0"
    assert wallet(team, rid) == money - 2
    # another participant's same client_id is its own
    other = await alice.send(workspace=team.ws, topic=topic, type="inform", to=["researcher"], text="alice's",
                             client_id="same-0")
    assert other["op"] == "sent" and not other.get("duplicate") and other["message"]["text"] == "alice's"
