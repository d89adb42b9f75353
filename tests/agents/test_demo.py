"""start_demo: the offline team created on a data dir and run in-process, end to end with a person."""

from __future__ import annotations

import json

from ygg_server.agents.demo import DEMO_AGENTS, start_demo

from .conftest import history, topic_status, until


async def test_demo_team_handles_a_request_that_needs_a_person(server):
    demo = await start_demo(server.url, data_dir=server.tmp, workspace="team", owner="alice")
    try:
        assert demo.supervisor.order == list(DEMO_AGENTS)
        alice = await server.person("alice")
        balances = (await alice.call("balances", workspace=server.ws))["agents"]
        assert balances[demo.agents["eager"]["id"]] == 5 and balances[demo.agents["lead"]["id"]] == 200
        sent = await alice.send(workspace=server.ws, conversation="general", topic="new", title="Gateway rollout",
                                type="request", to=["lead"],
                                text="We want to deploy the new gateway to production. What do our notes say about credits?")
        q = sent["message"]

        async def question_for_alice():
            msgs = await history(alice, server.ws, q["topic"])
            return next((m for m in msgs if m["state"] == "needs_human" and m["to"] == [alice.me["id"]]), None)

        ask = await until(question_for_alice)
        assert (await topic_status(alice, server.ws, q["topic"]))["status"] == "paused"
        await alice.send(workspace=server.ws, conversation="general", topic=q["topic"], type="response",
                         in_reply_to=ask["id"], text="Yes, approved.")

        async def final():
            msgs = await history(alice, server.ws, q["topic"])
            return next((m for m in msgs if m["type"] == "response" and m["in_reply_to"] == q["id"]), None)

        answer = await until(final)
        assert "researcher:" in answer["text"] and "reviewer: Approved" in answer["text"]
        # seed 003 §5-7: the lead's answer opened a side thread with the reviewer (`<dm>`), settled with its answer
        assert answer["threads"] and "<dm" not in answer["text"]

        async def settled():
            convs = (await alice.call("list_conversations", workspace=server.ws))["conversations"]
            t = next(c for c in convs if c["id"] == answer["threads"][0])
            return t if t["thread"] == "resolved" else None

        thread = await until(settled)
        assert thread["origin_message"] == answer["id"] and thread["summary"].startswith("reviewer:")
        # seed 003 §8: the researcher posted what it found as an artifact in the conversation
        arts = (await alice.call("list_artifacts", workspace=server.ws))["artifacts"]
        assert arts and arts[0]["kind"] == "document" and arts[0]["title"].startswith("Notes:")
        body = (await alice.call("get_artifact", workspace=server.ws, artifact=arts[0]["id"]))["body"]
        assert body.startswith("# Notes:") and "From the Ygg handbook." in body
        await alice.send(workspace=server.ws, conversation="general", topic=q["topic"], type="inform", state="done",
                         text="Great, thanks all.")
        t = await topic_status(alice, server.ws, q["topic"])
        assert t["status"] == "closed", t
        msgs = await history(alice, server.ws, q["topic"])
        asks = [m for m in msgs if m["state"] == "needs_human"]
        assert len(asks) == 1  # the reviewer asked once, even when polled while waiting
    finally:
        await demo.stop()

    # A second start reuses the agents and keys kept in the data dir.
    keys = json.loads((server.tmp / "agents" / "demo-keys.json").read_text())
    again = await start_demo(server.url, data_dir=server.tmp, workspace="team", owner="alice")
    try:
        assert {n: a["id"] for n, a in again.agents.items()} == {n: k["id"] for n, k in keys.items()}
        assert all(b.connected.is_set() for b in again.bridges.values())
    finally:
        await again.stop()


async def test_the_demo_agents_have_profiles_that_capability_assignment_finds(server):
    """Issue 20: agents' profiles "(job title, description, capabilities, cost: so `capability:` assignment finds the
    shipped demo agents)"; seed 003 §14: "The highest score gets the task"."""
    demo = await start_demo(server.url, data_dir=server.tmp, workspace="team", owner="alice")
    try:
        alice = await server.person("alice")
        wanted = {"capability:research": "researcher", "capability:review": "reviewer",
                  "capability:delegation": "lead"}
        for to, name in wanted.items():
            sent = await alice.send(workspace=server.ws, conversation="general", topic="new", title=to,
                                    type="request", to=[to], text="who takes this?")
            assert sent["op"] == "sent", sent
            assert sent["message"]["assignment"]["chosen"] == demo.agents[name]["id"], (to, sent["message"]["assignment"])
        prof = await alice.call("get_profile", agent="researcher")
        assert prof["profile"]["title"] == "Researcher" and "research" in prof["profile"]["capabilities"]
    finally:
        await demo.stop()


async def test_the_demo_has_a_morning_routine_and_a_reminder(server):
    """Issue 22: "the demo: a built-in agent with a morning routine [...] a reminder, and an approval that a person
    grants"; seed 003 §36: each run is
    handed "to its agent as a real task"; §42: "A reminder always shows up in a direct message with its owner"."""
    demo = await start_demo(server.url, data_dir=server.tmp, workspace="team", owner="alice")
    try:
        alice = await server.person("alice")
        listed = (await alice.call("list_schedules", workspace=server.ws))["schedules"]
        assert sorted((s["kind"], s["agent_name"]) for s in listed) == [
            ("reminder", "researcher"), ("routine", "lead"), ("routine", "ops")]
        assert next(s for s in listed if s["kind"] == "routine")["cron"] == "0 8 * * *"
        server.advance(121)  # the routine's first run and the reminder fall due

        async def shown(conv: str, words: str):
            got = await alice.request("history", workspace=server.ws, conversation=conv)
            return next((m for m in got.get("messages", []) if words in m["text"]), None)

        task = await until(lambda: shown("dm:lead", "Good morning"))
        assert task["type"] == "request" and task["title"] == "Routine: morning digest"
        # seed 003 §49: the lead answers it from the work graph (its `work_graph` tool: the protocol's query)
        digest = await until(lambda: shown("dm:lead", "Where things stand (the work graph"))
        assert digest["author"] == demo.agents["lead"]["id"] and digest["in_reply_to"] == task["id"], digest
        # open: the routine's task, and the researcher's loop's first iteration (due 30 s after the start)
        assert "2 open topic(s)" in digest["text"] and "no topic waits on a person" in digest["text"], digest["text"]
        reminder = await until(lambda: shown("dm:researcher", "Reminder:"))
        assert reminder["author"] == demo.agents["researcher"]["id"]

        async def waiting():
            return (await alice.call("list_approvals", workspace=server.ws))["approvals"]

        (card,) = await until(waiting)  # ops's nightly deploy ran: it waits for alice's approval
        assert card["tool"] == "deploy" and card["arg"] == "staging" and card["agent_name"] == "ops"
        await alice.call("decide_approval", workspace=server.ws, id=card["id"], answer="approve")
        done = await until(lambda: shown("dm:ops", "deployed to staging"))
        assert done["author"] == demo.agents["ops"]["id"]
    finally:
        await demo.stop()
    again = await start_demo(server.url, data_dir=server.tmp, workspace="team", owner="alice")
    try:
        assert len((await alice.call("list_schedules", workspace=server.ws))["schedules"]) == 3, "made once"
    finally:
        await again.stop()


async def test_the_demo_researcher_uses_its_skill_and_its_memory(server):
    """Issue 23: "the built-in researcher uses a skill and its memory in the demo": it loads its skill's body on
    demand (its prompt lists only the name and one line), follows it, keeps one memory, and recalls it next time."""
    demo = await start_demo(server.url, data_dir=server.tmp, workspace="team", owner="alice")
    try:
        alice = await server.person("alice")
        mine = await alice.call("list_skills", agent="researcher")
        assert [s["name"] for s in mine["skills"] if s["layer"] == "agent"] == ["handbook-answers"]
        tools = [t["name"] for t in (await alice.call("list_tools", agent="researcher"))["tools"]]
        assert sorted(tools) == sorted(DEMO_AGENTS["researcher"]["tools"])  # attached on the server's registry as the demo names them
        answers = []
        for n, text in enumerate(("How do credits work?", "Remind me how credits work, please.")):
            sent = await alice.send(workspace=server.ws, conversation="general", topic="new", title=f"Credits {n}",
                                    type="request", to=["researcher"], text=text)

            async def answered():
                msgs = await history(alice, server.ws, sent["message"]["topic"])
                return next((m for m in msgs if m["type"] == "response"), None)

            answers.append((await until(answered))["text"])
        assert "Source: handbook, “" in answers[0] and not answers[0].startswith("Last time")
        assert answers[1].startswith("Last time, @alice asked about “")  # recalled from its memory
        researcher = demo.bridges["researcher"]
        assert researcher.stats["tool:load_skill"] == 2 and researcher.stats["tool:remember"] == 2
        kept = (await alice.call("list_memories", workspace=server.ws, agent="researcher"))["memories"]
        assert len(kept) >= 1 and all("asked about" in m["text"] for m in kept)
    finally:
        await demo.stop()


async def test_the_demo_reviewer_reads_the_files_sent_with_a_request(server):
    """Issue 21: "agents receive them as references they can fetch": the reviewer's wake carries the file as a
    reference (id, name, size, type), and its `file_read` tool fetches the bytes it may read."""
    demo = await start_demo(server.url, data_dir=server.tmp, workspace="team", owner="alice")
    try:
        alice = await server.person("alice")
        f = await alice.upload(server.ws, "plan.md", b"# Plan\n\n- write the docs\n- ship the TUI\n", "text/markdown")
        sent = await alice.send(workspace=server.ws, conversation="general", topic="new", title="Plan review",
                                type="request", to=["reviewer"], text="Please look at the attached plan.",
                                files=[f["id"]])
        assert sent["op"] == "sent" and sent["message"]["files"][0]["name"] == "plan.md", sent

        async def review():
            msgs = await history(alice, server.ws, sent["message"]["topic"])
            return next((m for m in msgs if m["type"] == "response"), None)

        answer = await until(review)
        assert "read plan.md (text/markdown, 40 bytes, 4 lines)" in answer["text"], answer["text"]
    finally:
        await demo.stop()


async def test_the_demo_researcher_posts_a_briefing_card_and_acts_on_its_button(server):
    """Issue 21: "the researcher posts a briefing card"; seed 003 §13: "other buttons hand the click back to the
    agent as a signal": its "More detail" pressed, it answers with more of the handbook."""
    demo = await start_demo(server.url, data_dir=server.tmp, workspace="team", owner="alice")
    try:
        alice = await server.person("alice")
        sent = await alice.send(workspace=server.ws, conversation="general", topic="new", title="Credits",
                                type="request", to=["researcher"], text="How do credits work?")
        topic = sent["message"]["topic"]

        async def carded():
            msgs = await history(alice, server.ws, topic)
            return next((m for m in msgs if m.get("card")), None)

        answer = await until(carded)
        card = answer["card"]
        assert card["template"] == "briefing" and card["title"] == "Briefing: Credits" and not card.get("fallback")
        assert card["sections"] and [b["action"] for b in card["buttons"]] == ["more"]
        pressed = await alice.call("press_card", workspace=server.ws, message=answer["id"], action="more", topic=topic)
        assert pressed["message"]["press"]["action"] == "more"

        async def more():
            msgs = await history(alice, server.ws, topic)
            return next((m for m in msgs if m["type"] == "response" and m.get("in_reply_to") == pressed["message"]["id"]),
                        None)

        reply = await until(more)
        assert reply["text"].startswith("More on Credits:"), reply["text"]
    finally:
        await demo.stop()


async def test_the_demo_has_a_loop_that_ends_by_its_safeguard_and_a_pulse_report(server):
    """Issue 22: "the demo: a built-in agent [...] a loop that ends by its safeguard"; seed 003 §39: "it is the
    server, not the agent, that decides whether the Loop goes on"; §34: a self-started turn "produces a structured
    report rather than an ordinary chat message"."""
    demo = await start_demo(server.url, data_dir=server.tmp, workspace="team", owner="alice")
    try:
        alice = await server.person("alice")

        async def listed():
            return await alice.call("list_loops", workspace=server.ws)

        got = await listed()
        (loop,), (pulse,) = got["loops"], got["pulses"]
        assert loop["agent_name"] == "researcher" and loop["stall_after"] == 3 and pulse["agent_name"] == "lead"
        server.advance(31)  # its first iteration
        for n in (1, 2, 3):  # the researcher finds the same notes each time: no progress after three
            async def reported(n=n):
                return next((x for x in (await listed())["loops"] if len(x["reports"]) >= n), None)
            now = await until(reported)
            if n < 3:
                assert now["status"] == "running" and now["reports"][0]["verdict"] == "continue"
                server.advance(21)
        assert now["status"] == "ended" and now["reason"] == "no_progress" and now["runs"] == 3
        server.advance(60)  # the lead's pulse

        async def pulsed():
            return next((x for x in (await listed())["pulses"] if x["reports"]), None)

        report = (await until(pulsed))["reports"][0]
        assert report["told"] is False and len(report["report"]["items"]) == 3
        assert all(i["status"] == "ok" for i in report["report"]["items"])
    finally:
        await demo.stop()
