"""Issue 20, defect 9: quiet by default. A closure poll is one line in the topic and notifies nobody unless it asks a
person; "No topic yet" goes when a topic arrives."""

from ygg_tui.widgets.message_list import MessageList

from .conftest import SIZE, answer, ready, wait_for, wait_text


async def test_a_closure_poll_to_the_agents_is_one_line_and_notifies_nobody(team):
    """Seed 000: "the backend asks the others once if they are done too". Asked of the agents, it showed as an unread
    message of two lines after nearly every answer."""
    researcher = await team.agent("researcher")
    await team.agent("reviewer")
    alice = await team.person("alice")
    sent = await alice.send(workspace=team.ws, conversation="general", topic="new", title="Plan", type="request",
                            to=["researcher", "reviewer"], state="done", text="Both of you: plan it")
    assert sent["op"] == "sent", sent
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        await wait_for(pilot, lambda: main.topic == sent["message"]["topic"])
        main.query_one("#topics").focus()  # (the messages are on screen, but alice reads elsewhere: nothing is read)
        await answer(team, researcher, state="done", text="Planned.")
        ml = main.messages
        poll = await wait_for(pilot, lambda: next((m for m in ml.messages if m.get("notice") == "closure_poll"), None),
                              what="the poll in the topic")
        assert app.store.my_id not in poll["to"]
        assert ml._heights[ml._index[poll["id"]]] == 1
        await wait_text(pilot, "asked whether they are done → reviewer")
        assert poll["id"] not in app.store.unread


async def test_no_topic_yet_goes_when_a_topic_arrives(team):
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        await wait_text(pilot, "No topic yet")
        bob = await team.person("bob")
        sent = await bob.send(workspace=team.ws, conversation="general", topic="new", title="Lunch", type="inform",
                              text="pizza?")
        assert sent["op"] == "sent", sent
        await wait_for(pilot, lambda: sent["message"]["topic"] in app.store.topics, what="the topic")
        await pilot.pause(0.3)
        screen = await wait_text(pilot, "Lunch", "A topic is here now: choose it above")
        assert "No topic yet" not in screen


async def test_the_waiting_banner_counts_credit_waits(team):
    """The banner said "Nobody is waiting on a person." while an agent waited for credits."""
    from ygg_server.ops import admin

    out = team.server.admin(admin.add_agent, "scout", "alice", team.ws)
    team.keys["scout"] = out["api_key"]
    scout = await team.agent("scout")
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        alice2 = await team.person("alice")
        await alice2.send(workspace=team.ws, conversation="general", topic="new", title="Scout around",
                          type="request", to=["scout"], text="Look around")
        d = await scout.next_delivery(timeout=5)
        m = d["message"]
        refused = await scout.send(workspace=team.ws, conversation="general", topic=m["topic"], type="response",
                                   in_reply_to=m["id"], text="found things")
        assert refused["reason"] == "credits_exhausted", refused
        await wait_text(pilot, "1 waiting for credits")


async def test_a_theme_switch_leaves_no_old_colours(team):
    """The message list kept the rows it drew in the old theme's colours."""
    from .conftest import seed_topic

    await seed_topic(team, await team.person("bob"), "Lunch", ["pizza?"])
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        ml = main.query_one(MessageList)
        await wait_for(pilot, lambda: ml.messages)
        old = {s.style.bgcolor for s in ml.render_line(0)}
        app.set_theme("ygg-light")
        await pilot.pause(0.2)
        new = {s.style.bgcolor for s in ml.render_line(0)}
        assert new == {ml.rich_style.bgcolor} and not new & old


async def test_presence_shows_within_two_seconds_both_ways(team):
    """Presence lagged 5 s going online and 15-30 s going offline: the TUI asked every 15 s and dropped the server's
    presence events. (The app here never asks: `presence_every=0`.)"""
    import time

    from ygg_tui.widgets.participants import ParticipantsPanel

    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        w = app.store.workspaces[team.ws]
        rid = team.ids["researcher"]
        assert not w.presence.get(rid)
        t0 = time.monotonic()
        researcher = await team.agent("researcher")
        await wait_for(pilot, lambda: w.presence.get(rid), timeout=2, what="online")
        await wait_for(pilot, lambda: "● researcher" in str(main.query_one(ParticipantsPanel).render()), timeout=1)
        await researcher.close()
        t0 = time.monotonic()
        await wait_for(pilot, lambda: w.presence.get(rid) is False, timeout=2, what="offline")
        assert time.monotonic() - t0 < 2
