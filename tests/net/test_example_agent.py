"""docs/protocol.md promises an agent in under 60 lines that uses only `websockets`: run it."""

import asyncio
import pathlib
import sys

EXAMPLE = pathlib.Path(__file__).parents[2] / "examples" / "echo_agent.py"


def test_example_is_short_and_needs_only_websockets():
    src = EXAMPLE.read_text()
    assert len(src.splitlines()) < 60
    imports = {l.split()[1].split(".")[0] for l in src.splitlines() if l.startswith(("import ", "from "))}
    assert imports <= {"asyncio", "json", "sys", "websockets"}


async def test_example_agent_answers_a_person_and_closes_the_topic(team):
    alice = await team.person("alice")
    proc = await asyncio.create_subprocess_exec(sys.executable, str(EXAMPLE), team.url, team.keys["researcher"], "1")
    sent = await alice.send(workspace=team.ws, topic="new", title="Ping", to=["researcher"], text="ping", state="done")
    assert sent["op"] == "sent"
    await asyncio.wait_for(proc.wait(), 20)
    got = await alice.next_delivery(timeout=5)
    assert got["message"]["type"] == "response" and "ping" in got["message"]["text"]
    topic = await alice.call("topic", workspace=team.ws, topic=sent["message"]["topic"])
    assert topic["topic"]["status"] == "closed"


async def test_example_agent_answers_the_request_once_funded_not_the_refill_notice(team):
    """Issue 20, defect 5: unfunded, the example's answer is refused credits_exhausted; once its owner funds it, the
    credits_refilled notice woke it and it answered the notice "done", never the request. Now the answer goes."""
    from ygg_server.ops import admin

    poor = team.admin(admin.add_agent, "poor", "alice")
    alice = await team.person("alice")
    proc = await asyncio.create_subprocess_exec(sys.executable, str(EXAMPLE), team.url, poor["api_key"])
    try:
        sent = await alice.send(workspace=team.ws, topic="new", title="Ping", to=["poor"], text="ping")
        assert sent["op"] == "sent", sent
        await asyncio.sleep(1.5)  # its answer refused for credits
        funded = await alice.call("fund", workspace=team.ws, agent=poor["id"], amount=50)
        assert funded["op"] == "funded", funded
        while True:
            got = await alice.next_delivery(timeout=10)
            if got["message"]["author"] == poor["id"]:
                break
        assert got["message"]["in_reply_to"] == sent["message"]["id"] and "ping" in got["message"]["text"], got
    finally:
        proc.terminate()
        await proc.wait()
