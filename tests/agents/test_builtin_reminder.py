"""The demo's researcher sets a reminder with the registry's `reminder_create` (issue 23; seed 003 §41-42)."""

from __future__ import annotations

from ygg_server.agents.bridge import Bridge
from ygg_server.ops import toolkit

from .conftest import history, until


async def test_the_builtin_researcher_sets_a_reminder_for_whoever_asked(server):
    """Seed 003 §41: "An agent can set a reminder just as a person can, either because it noticed something worth
    remembering ... or because it was explicitly asked to remind someone later"; §42: in a direct message with them."""
    aid = server.agent("researcher")
    owner = server.conn.execute("SELECT owner FROM agents WHERE id = ?", (aid,)).fetchone()[0]
    server.admin(toolkit.set_tools, aid, owner, add=["search_corpus", "reminder_create"])
    await server.run(Bridge(server.config("researcher")))
    alice = await server.person("alice")
    sent = await alice.send(workspace=server.ws, conversation="dm:researcher", topic="new", title="Later",
                            type="request", to=["researcher"], text="Remind me in 5 minutes to check the build")

    async def answered():
        msgs = await history(alice, server.ws, sent["message"]["topic"], conversation=sent["message"]["conversation"])
        return next((m for m in msgs if m["author"] == aid), None)

    final = await until(answered)
    assert final["text"].startswith("I will remind you"), final["text"]
    (row,) = server.conn.execute("SELECT owner, workspace, text, next_at - created_at FROM schedules").fetchall()
    assert row[:3] == (owner, server.ws, "check the build") and row[3] == 5 * 60 * 1_000_000
