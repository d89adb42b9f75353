"""j/k, n, /, ?, ctrl+p, the mouse, themes and remapped keys from the config."""

from textual.command import CommandPalette

from ygg_tui.app import make_app
from ygg_tui.screens.help import HelpScreen
from ygg_tui.screens.search import SearchScreen
from ygg_tui.widgets.sidebar import Sidebar

from .conftest import PW, SIZE, answer, open_topic, read_all, ready, seed_topic, wait_for, wait_text


async def test_jk_next_unread_search_help_palette_mouse(team):
    bob = await team.person("bob")
    first = await seed_topic(team, bob, "Old news", ["the needle is here", *(f"filler {i}" for i in range(5))])
    await read_all(team, "alice", expect=6)
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        ml = main.messages
        ml.focus()
        await pilot.press("k")
        assert ml.cursor == 5
        await pilot.press("k", "k")
        assert ml.cursor == 3
        await pilot.press("j")
        assert ml.cursor == 4
        # the mouse: a click on a message selects it
        await pilot.click(ml, offset=(4, ml._offsets[1] - int(ml.scroll_y)))
        assert ml.cursor == 1
        # n: the next unread topic, wherever it is
        sent = await bob.send(workspace=team.ws, conversation="dm:@alice", topic="new", title="Ping",
                              type="request", to=["@alice"], text="are you there?")
        await wait_for(pilot, lambda: app.store.unread_by_conv.get(sent["message"]["conversation"]), what="unread")
        ml.focus()
        await pilot.press("n")
        await wait_for(pilot, lambda: main.topic == sent["message"]["topic"], what="the unread topic")
        await wait_text(pilot, "are you there?")
        # the mouse on the sidebar: General again
        sidebar = main.query_one(Sidebar)
        general = next(c for c, v in app.store.workspaces[team.ws].conversations.items() if v["kind"] == "general")
        idx = sidebar.get_option_index(general)
        await pilot.click(sidebar, offset=(5, idx + 1 - int(sidebar.scroll_y)))  # +1: the border
        await wait_for(pilot, lambda: main.conversation == general, what="clicked General")
        # / searches the workspace and opens what it found
        ml.focus()
        await pilot.press("slash")
        await wait_for(pilot, lambda: isinstance(app.screen, SearchScreen))
        await pilot.press(*"needle", "enter")
        await wait_for(pilot, lambda: app.screen.found, what="search results")
        await pilot.press("tab", "enter")
        await wait_for(pilot, lambda: app.screen is main and ml.selected and ml.selected["text"] == "the needle is here",
                       what="jumped to the result")
        # ? shows the keys
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        await wait_text(pilot, "Next unread", "ygg.next_unread")
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is main)
        # ctrl+p: the command palette knows Ygg's commands
        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette))
        await pilot.press(*"operator view")
        await wait_text(pilot, "Operator view of team")
        await pilot.press("escape")


async def test_theme_and_keymap_from_config(team):
    cfg = team.config()
    cfg.theme = "ygg-light"
    cfg.keys = {"ygg.next_unread": "u", "ygg.help": "f2"}
    app = make_app(url=team.url, handle="alice", password=PW, config=cfg, presence_every=0)
    bob = await team.person("bob")
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        assert app.theme == "ygg-light"
        assert {"ygg-dark", "ygg-light", "ygg-mono"} <= set(app.available_themes)
        sent = await bob.send(workspace=team.ws, conversation="dm:@alice", topic="new", title="Remapped",
                              type="request", to=["@alice"], text="hello")
        await wait_for(pilot, lambda: app.store.unread_by_conv.get(sent["message"]["conversation"]))
        main.messages.focus()
        await pilot.press("n")  # no longer bound
        assert main.topic != sent["message"]["topic"]
        await pilot.press("u")
        await wait_for(pilot, lambda: main.topic == sent["message"]["topic"], what="the unread topic")
        await pilot.press("f2")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        await wait_text(pilot, "u ", "Next unread")
        await pilot.press("escape")
        # choosing a theme from the palette saves it in the config file
        app.set_theme("ygg-mono")
        assert 'theme = "ygg-mono"' in cfg.config_path.read_text()


async def test_a_search_result_in_a_topic_not_loaded_yet_is_selected(team):
    """Opening a result whose topic was never on screen: the topic loads and the cursor lands on the message
    (its first page's arrival used to redraw the list and drop the cursor)."""
    bob = await team.person("bob")
    far = await seed_topic(team, bob, "Far away", ["the kiwi is here", *(f"after {i}" for i in range(3))])
    await bob.send(workspace=team.ws, conversation="general", topic="new", title="Recent", type="inform",
                   text="newest topic")
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        assert main.topic != far["message"]["topic"]
        main.messages.focus()
        await pilot.press("slash")
        await wait_for(pilot, lambda: isinstance(app.screen, SearchScreen))
        await pilot.press(*"kiwi", "enter")
        await wait_for(pilot, lambda: app.screen.found, what="search results")
        await pilot.press("tab", "enter")
        ml = main.messages
        await wait_for(pilot, lambda: app.screen is main and main.topic == far["message"]["topic"], what="jumped")
        await pilot.pause(0.5)  # (the topic's first page arrives meanwhile)
        await wait_for(pilot, lambda: ml.selected and ml.selected["text"] == "the kiwi is here",
                       what="the result selected")
        assert app.focused is ml


async def test_down_from_the_search_box_goes_to_the_results(team):
    """The status line says "↓ then ⏎ to open": ↓ in the query moves to the results (it did nothing, and ⏎
    searched again)."""
    bob = await team.person("bob")
    await bob.send(workspace=team.ws, conversation="general", topic="new", title="Fruit", type="inform",
                   text="a ripe mango")
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        main.messages.focus()
        await pilot.press("slash")
        await wait_for(pilot, lambda: isinstance(app.screen, SearchScreen))
        await pilot.press(*"mango", "enter")
        await wait_text(pilot, "1 found", "↓ then ⏎ to open")
        await pilot.press("down")
        assert app.focused is app.screen.query_one("#results")
        await pilot.press("enter")
        ml = main.messages
        await wait_for(pilot, lambda: app.screen is main and ml.selected and ml.selected["text"] == "a ripe mango",
                       what="jumped to the result")


async def test_help_fits_a_narrow_terminal(team):
    """At 80 columns the help (110 wide) ran off the right edge, cutting its sentences; and its "[keys]" was
    swallowed as markup."""
    app = team.app()
    async with app.run_test(size=(80, 24)) as pilot:
        main = await ready(pilot)
        main.messages.focus()
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        await pilot.pause()
        dialog = app.screen.query_one(".dialog")
        assert dialog.region.right <= 80
        await wait_text(pilot, "id ([keys] in config.toml)", "and they resume.")


async def test_the_bell_rings_when_a_message_wakes_you_elsewhere(team, monkeypatch):
    """As irssi or weechat ring on a highlight: a request to you, outside the topic on screen, rings the terminal's
    bell (once a second at most); what only reaches you as context, or arrives in the topic you read, does not;
    `bell = false` in config.toml turns it off."""
    app = team.app()
    rang = []
    monkeypatch.setattr(app, "bell", lambda: rang.append(1))
    bob = await team.person("bob")
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        asked = await bob.send(workspace=team.ws, conversation="general", topic="new", title="Your call",
                               type="request", to=["@alice"], text="can you decide?")
        await wait_for(pilot, lambda: app.store.unread_by_thread.get(asked["message"]["topic"]), what="delivered")
        assert rang == [1]
        await bob.send(workspace=team.ws, conversation="general", topic="new", title="FYI", type="inform",
                       text="just so you know")  # to nobody: context for alice, no wake
        await wait_for(pilot, lambda: len(app.store.unread) == 2, what="the second delivered")
        main.open_topic(asked["message"]["conversation"], asked["message"]["topic"])
        app._rang = float("-inf")
        await bob.send(workspace=team.ws, conversation="general", topic=asked["message"]["topic"], type="request",
                       to=["@alice"], text="and this too?")  # in the topic on screen
        await wait_text(pilot, "and this too?")
        assert rang == [1]
        app.config.bell = False
        await bob.send(workspace=team.ws, conversation="general", topic="new", title="Muted", type="request",
                       to=["@alice"], text="anyone?")
        await wait_for(pilot, lambda: any(t.get("title") == "Muted" for t in app.store.topics.values()), what="muted")
        await pilot.pause()
        assert rang == [1]
