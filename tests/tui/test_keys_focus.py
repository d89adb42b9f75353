"""Issue 20, defects 1 and 2: the composer owns the keyboard while it has focus, focus never moves without the person
seeing it, and each message starts from sensible defaults."""

from textual.command import CommandPalette

from ygg_tui.screens.dialogs import FormScreen, FundScreen

from .conftest import SIZE, open_topic, ready, seed_topic, wait_for, wait_text


async def test_tab_after_a_full_handle_completes_and_keeps_the_keys_in_the_composer(team):
    """`@researcher`, Tab, `please`: Tab moved the focus on, and `please` fired p (people), …; now Tab finishes the
    handle (a space) and the rest is typed."""
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        c, where = main.composer, main.conversation
        await pilot.press(*"@researcher", "tab", *"please")
        assert app.focused is c.area
        assert c.text == "@researcher please"
        assert main.conversation == where and app.screen is main
        await pilot.press("tab")  # nothing to complete: nothing happens
        assert app.focused is c.area and c.text == "@researcher please"


async def test_r_with_nothing_selected_replies_to_the_last_message_and_takes_the_keys(team):
    """`r` did nothing without a selected message, and the reply typed next fired f, n, c, h…"""
    await seed_topic(team, await team.person("bob"), "Lunch", ["pizza?", "or sushi?"])
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        await wait_for(pilot, lambda: len(main.messages.messages) == 2)
        main.messages.focus()
        main.messages.cursor = -1
        await pilot.press("r")
        c = main.composer
        assert c.reply_to is not None and c.reply_to["text"] == "or sushi?"
        assert app.focused is c.area
        await pilot.press(*"fnch")
        assert c.text == "fnch" and app.screen is main


async def _from_the_palette(pilot, words: str, dialog: type) -> None:
    """The palette entry `words` finds opens `dialog`; esc closes it, back on the main screen."""
    app = pilot.app
    await pilot.press("ctrl+p")
    await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette), what="the palette")
    await pilot.press(*words)
    await pilot.pause(0.3)
    await pilot.press("enter")
    await wait_for(pilot, lambda: isinstance(app.screen, dialog), what=words)
    await pilot.press("escape")
    await wait_for(pilot, lambda: app.screen is app.main)
    await pilot.pause()


async def test_every_dialog_gives_the_focus_back_where_it_was(team):
    await seed_topic(team, await team.person("bob"), "Lunch", ["pizza?"])
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        c = main.composer
        # the palette, closed with esc, from the composer
        c.area.focus()
        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette), what="the palette")
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is main)
        await pilot.pause()
        assert app.focused is c.area
        # a dialog the palette opened (Fund), closed with esc: the composer again
        await _from_the_palette(pilot, "fund an agent", FundScreen)
        assert app.focused is c.area
        # a form the palette opened (New workspace), cancelled, from the message list
        main.messages.focus()
        await _from_the_palette(pilot, "new workspace", FormScreen)
        assert app.focused is main.messages
        # from the message list: f, esc; ?, esc
        main.messages.focus()
        for key in ("f", "question_mark"):
            await pilot.press(key)
            await wait_for(pilot, lambda: app.screen is not main, what=f"{key}'s dialog")
            await pilot.press("escape")
            await wait_for(pilot, lambda: app.screen is main)
            await pilot.pause()
            assert app.focused is main.messages, key


async def test_the_screen_says_where_the_keys_go(team):
    await seed_topic(team, await team.person("bob"), "Lunch", ["pizza?"])
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        main.composer.area.focus()
        await wait_text(pilot, "writing")
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.focused is main.messages)
        await wait_text(pilot, "keys are commands")


async def test_each_message_starts_from_the_defaults_and_says_what_goes(team):
    """Reply with state done, then ctrl+n and ask: the new request went out "done" (the topic closed when the agent
    answered). Type and state never stick after sending; a new message is a request, working; a reply a response."""
    researcher = await team.agent("researcher")
    alice2 = await team.person("alice")
    sent = await open_topic(team, alice2, "researcher", "Question", "What is 2+2?")
    d = await researcher.next_delivery(timeout=5)
    await researcher.ack([d["id"]])
    ask = await researcher.send(workspace=team.ws, conversation="general", topic=sent["message"]["topic"],
                                type="request", to=["@alice"], text="Base 10?")
    assert ask["op"] == "sent", ask
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        c = main.composer
        assert (c.mtype, c.state) == ("request", "working")
        await wait_for(pilot, lambda: any(m["id"] == ask["message"]["id"] for m in main.messages.messages))
        main.messages.focus()
        await pilot.press("r")
        assert (c.mtype, c.state) == ("response", "working")
        await pilot.press("ctrl+d")  # one key: my part is done
        assert c.state == "done"
        await wait_text(pilot, "response to researcher", "done")
        await pilot.press(*"yes", "enter")
        got = await researcher.next_delivery(timeout=5)
        assert got["message"]["state"] == "done" and got["message"]["type"] == "response"
        await wait_for(pilot, lambda: c.reply_to is None)
        assert (c.mtype, c.state) == ("request", "working")
        await pilot.press("ctrl+n", *"@researcher and 3+3?")
        await wait_text(pilot, "request to researcher", "working", "new topic")


async def test_esc_leaves_the_composer_at_once_where_there_is_no_topic_yet(team):
    """In an empty conversation the first esc only rubbed out "new topic" (the message opens one all the same): the
    keys stayed in the composer, and the letters pressed next were typed."""
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        assert main.topic is None and main.composer.new_topic
        main.composer.area.focus()
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.focused is main.messages, what="the keys are commands")
        assert main.composer.new_topic


async def test_esc_then_a_command_key_at_once_is_a_command(team):
    """Esc and a letter that reach the app together (a fast typist, tmux, a slow link): the letter is a command,
    never typed into the composer the esc just left (tmux_demo.sh's `esc`, `h` once typed an "h" there)."""
    from textual import events

    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        await pilot.press(*"abc")
        assert main.composer.text == "abc"
        for key, char in (("escape", None), ("slash", "/")):  # both queued before either is handled
            app.post_message(events.Key(key, char))
        await wait_for(pilot, lambda: type(app.screen).__name__ == "SearchScreen", what="/ opened search")
        await wait_for(pilot, lambda: getattr(app.focused, "id", None) == "query", what="the search box has the keys")
        assert main.composer.text == "abc", "nothing typed into the composer"
