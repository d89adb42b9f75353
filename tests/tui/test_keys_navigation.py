"""Issue 20, defect 7 and the main screen's navigation: ctrl+k switches conversations, alt+1…9 and alt+↑/↓ go by the
list, ctrl+b hides the list, and 80x24 leaves the messages their room; side conversations fold under their origin."""

from textual.command import CommandPalette

from ygg_tui.widgets.message_list import MessageList
from ygg_tui.widgets.sidebar import Sidebar

from .conftest import SIZE, ready, seed_topic, wait_for, wait_text


async def _two_conversations(team):
    bob = await team.person("bob")
    await seed_topic(team, bob, "Lunch", ["pizza?"])
    sent = await bob.send(workspace=team.ws, conversation="dm:@alice", topic="new", title="Private", type="inform",
                          text="just us")
    assert sent["op"] == "sent", sent
    return sent["message"]["conversation"]


async def test_ctrl_k_alt_numbers_and_alt_arrows_switch_conversations_even_from_the_composer(team):
    dm = await _two_conversations(team)
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        order = main.query_one(Sidebar).order
        assert dm in order and len(order) >= 3
        general = main.conversation
        main.composer.area.focus()
        await pilot.press("alt+down")
        assert main.conversation == order[(order.index(general) + 1) % len(order)]
        await pilot.press("alt+up")
        assert main.conversation == general
        await pilot.press(f"alt+{order.index(dm) + 1}")
        assert main.conversation == dm
        await pilot.press("alt+9")  # no ninth conversation: nothing moves
        assert main.conversation == dm
        await pilot.press("ctrl+k")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette), what="the switcher")
        await pilot.press(*"team general")
        await pilot.pause(0.4)
        await pilot.press("down", "enter")
        await wait_for(pilot, lambda: main.conversation == general, what="team's General")
        assert app.focused is main.composer.area and main.composer.text == ""


async def test_the_list_hides_and_80x24_leaves_the_messages_room(team):
    await _two_conversations(team)
    app = team.app()
    async with app.run_test(size=(80, 24)) as pilot:
        main = await ready(pilot)
        messages, sidebar = main.query_one(MessageList), main.query_one(Sidebar)
        assert sidebar.display and messages.size.width >= 48
        assert messages.size.height >= 8
        await pilot.press("escape", "p")  # people and credits: they take the list's place
        await pilot.pause()
        people = main.query_one("#participants")
        assert people.display and people.region.width > 0
        assert messages.size.width >= 48, messages.size
        await pilot.press("p", "ctrl+b")
        await pilot.pause()
        assert not sidebar.region.width and messages.size.width >= 76
        await pilot.press("ctrl+b")
        await pilot.pause()
        assert sidebar.region.width >= 20


async def test_side_conversations_fold_under_their_origin_titled_by_their_task(team):
    """Seed 003 §15: a task delegated from a direct conversation runs in a side conversation. Each @lead task added
    one, all shown as "↳ side: For @root: …"; now they fold into their origin's line until it is open."""
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        convs = app.store.workspaces[team.ws].conversations
        general = next(c for c in convs.values() if c["kind"] == "general")["id"]
        for n, task in enumerate(("Compare the two plans", "Summarise the thread")):  # (as the server lists them)
            convs[f"side:{n}"] = {"id": f"side:{n}", "kind": "side", "name": f"For @alice: {task}",
                                  "origin": general, "members": [app.store.my_id]}
        sidebar = main.query_one(Sidebar)
        main.open_conversation(general)
        sidebar.rebuild()
        await wait_text(pilot, "↳ Compare the two", "↳ Summarise the")
        assert "For @alice" not in str([sidebar.get_option_at_index(i).prompt for i in range(sidebar.option_count)])
        main.open_conversation(sidebar.order[0])  # alice's personal General: they fold
        await pilot.pause()
        assert "side:0" not in sidebar.order
        await wait_text(pilot, "↳2")


def test_alt_and_a_digit_as_terminals_send_it_is_alt_and_the_digit():
    """xterm and tmux send alt+2 as ESC 2, which Textual read as "™" (macOS's Option+2): alt+1…9 never switched."""
    import ygg_tui.app  # noqa: F401  (it tells Textual so)
    from textual._xterm_parser import XTermParser

    for digit in "123456789":
        parser = XTermParser()
        keys = [e.key for e in [*parser.feed("\x1b" + digit), *parser.feed("")]]
        assert keys == [f"alt+{digit}"], keys
