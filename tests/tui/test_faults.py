"""After a server restart the TUI reconnects by itself, with nothing lost and nothing twice."""

from .conftest import SIZE, answer, delivery_with, open_topic, ready, wait_for, wait_text


async def test_reconnects_after_restart_nothing_lost_nothing_twice(team):
    researcher = await team.agent("researcher")
    bob = await team.person("bob")
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        await pilot.press(*"@researcher are you up?", "enter")
        await wait_for(pilot, lambda: app.screen.__class__.__name__ == "TitlePrompt")
        await pilot.press("enter")  # the suggested title
        d = await delivery_with(researcher, "@researcher are you up?")
        tid = d["message"]["topic"]
        await wait_for(pilot, lambda: main.topic == tid)
        r1 = await researcher.send(workspace=team.ws, conversation="general", topic=tid, type="response",
                                   in_reply_to=d["message"]["id"], state="working", text="yes, working")
        assert r1["op"] == "sent"
        # an unread message elsewhere, not acked before the restart
        dm = await bob.send(workspace=team.ws, conversation="dm:@alice", topic="new", title="Later",
                            type="request", to=["@alice"], text="when you can")
        dm_conv = dm["message"]["conversation"]
        await wait_for(pilot, lambda: app.store.unread_by_conv.get(dm_conv) == 1)
        await wait_for(pilot, lambda: len(main.messages) == 2)

        team.server.restart()
        await wait_for(pilot, lambda: app.session.client.reconnects >= 1, what="noticed the drop")
        await wait_for(pilot, lambda: app.connected and app.session.client.connected.is_set(), timeout=15,
                       what="reconnected")
        await wait_text(pilot, "connected")
        # the agent (its client reconnects too) goes on; the TUI shows it once
        await researcher.connected.wait()
        r2 = await researcher.send(workspace=team.ws, conversation="general", topic=tid, type="inform",
                                   state="working", text="still here after the restart")
        assert r2["op"] == "sent", r2
        await wait_text(pilot, "still here after the restart")
        ids = [m["id"] for m in main.messages.messages]
        assert len(ids) == len(set(ids)) == 3
        assert app.store.unread_by_conv.get(dm_conv) == 1  # redelivered, counted once
        # and sending from the TUI works on the new connection
        main.composer.area.focus()
        await pilot.press(*"good", "enter")
        got = await delivery_with(researcher, "good")
        assert got["message"]["topic"] == tid
        await wait_for(pilot, lambda: len(main.messages) == 4)


async def test_a_message_sent_while_the_server_is_away_says_it_is_going(team):
    """The text leaves the box on Enter; with the server away it was then nowhere on screen (not in the box, not
    in the conversation) until the server came back. A line under the box says it is still going, and goes when
    the server has answered."""
    bob = await team.person("bob")
    sent = await bob.send(workspace=team.ws, conversation="general", topic="new", title="Ops", type="inform",
                          text="anyone?")
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        await wait_for(pilot, lambda: main.topic == sent["message"]["topic"], what="the topic")
        team.server.stop()
        await wait_for(pilot, lambda: not app.connected, what="noticed the drop")
        main.composer.area.focus()
        await pilot.press(*"while you were away", "enter")
        await wait_text(pilot, "⋯ sending “while you were away”", "the server is away")
        assert main.composer.text == ""
        team.server.start()
        await wait_for(pilot, lambda: any(m.get("text") == "while you were away" for m in main.messages.messages),
                       timeout=20, what="sent once the server is back")
        await wait_for(pilot, lambda: not main.composer.query_one("#sending").display, what="the line gone")
