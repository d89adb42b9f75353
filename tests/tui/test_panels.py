"""Left (conversations, unread, badges), middle (topics, states, messages), right (presence, credits)."""

from ygg_server.ops import admin

from ygg_tui.widgets.message_list import MessageList
from ygg_tui.widgets.participants import ParticipantsPanel
from ygg_tui.widgets.sidebar import Sidebar
from ygg_tui.widgets.topics import TopicList

from .conftest import SIZE, answer, open_topic, read_all, ready, screen_text, seed_topic, wait_for, wait_text


def option_texts(ol) -> list[str]:
    return [str(ol.get_option_at_index(i).prompt) for i in range(ol.option_count)]


async def test_conversations_unread_and_badges(team):
    bob = await team.person("bob")
    researcher = await team.agent("researcher")
    # a group-less direct conversation between bob and alice, with a message alice has not read
    dm = await bob.send(workspace=team.ws, conversation=f"dm:@alice", topic="new", title="Lunch?",
                        type="request", to=["@alice"], text="Lunch at noon?")
    assert dm["op"] == "sent", dm
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        sidebar = app.main.query_one(Sidebar)
        texts = option_texts(sidebar)
        assert any("team" in t for t in texts) and any("General" in t for t in texts)
        dm_line = next(t for t in texts if "@bob" in t)
        assert dm_line.rstrip().endswith("1"), dm_line  # one unread
        # a topic that waits on a person: a ⚑ badge on General
        alice2 = await team.person("alice")
        await open_topic(team, alice2, "researcher", "Deploy?", "Shall we deploy?")
        await answer(team, researcher, state="needs_human", text="I need a person to decide.")
        await wait_for(pilot, lambda: any("General" in t and "⚑1" in t for t in option_texts(sidebar)),
                       what="needs_human badge")
        # opening the direct conversation reads it: the count goes, and the server has the ack
        dm_cid = dm["message"]["conversation"]
        main.open_conversation(dm_cid)
        await wait_for(pilot, lambda: not any("@bob" in t and t.rstrip().endswith("1") for t in option_texts(sidebar)),
                       what="unread cleared")
        await wait_for(pilot, lambda: len(main.messages) == 1)
        await wait_text(pilot, "Lunch at noon?")
    # a fresh start: nothing unread in the direct conversation any more (acked on the server)
    app2 = team.app()
    async with app2.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.pause(0.2)
        assert app2.store.unread_by_conv.get(dm_cid, 0) == 0


async def test_topics_states_messages_and_notices(team):
    researcher = await team.agent("researcher")
    alice2 = await team.person("alice")
    sent = await open_topic(team, alice2, "researcher", "Summarize the paper", "Please summarize it.")
    await answer(team, researcher, state="done", text="Summary: short.")
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        topics = main.query_one(TopicList)
        line = next(t for t in option_texts(topics) if "Summarize the paper" in t)
        assert "researcher ✓ done" in line and "open" in line  # the topic, its status, each one's state
        await wait_text(pilot, "@alice → researcher  request", "researcher → @alice  response ✓ done  ↳ reply")
        # the closure poll (a system notice) reaches alice: shown apart, as system.ygg
        text = await wait_text(pilot, "⚙ system.ygg · asked whether they are done → @alice")
        notice_row = next(i for i, m in enumerate(main.messages.messages) if m.get("notice"))
        strip = main.messages._render(notice_row, main.messages.scrollable_content_region.width)[0]
        assert any(seg.style and seg.style.italic for seg in strip), "notices look different"
        # whether a message woke anyone: the response woke alice
        resp = next(m for m in main.messages.messages if m["type"] == "response")
        assert app.store.woke.get(resp["id"]) == [team.alice]
        assert "⚡ woke @alice" in text
        assert sent["message"]["topic"] == main.topic


async def test_history_pages_load_as_you_scroll_up(team):
    bob = await team.person("bob")
    first = await bob.send(workspace=team.ws, conversation="general", topic="new", title="Long thread",
                           type="inform", text="message 0")
    tid = first["message"]["topic"]
    for i in range(1, 260):
        r = await bob.send(workspace=team.ws, conversation="general", topic=tid, type="inform", text=f"message {i}")
        assert r["op"] == "sent"
    await read_all(team, "alice", expect=260)  # read elsewhere: only history brings them now
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        ml = main.messages
        assert len(ml) == 100  # one page
        assert ml.messages[-1]["text"] == "message 259"
        ml.focus()
        for want in (200, 260):  # home: the first message, at the top: the next older page comes
            await pilot.press("home")
            await wait_for(pilot, lambda: len(ml) == want and not ml.fetching, what=f"{want} loaded")
        await wait_for(pilot, lambda: len(ml) == 260, what="every page")
        assert [m["text"] for m in ml.messages[:2]] == ["message 0", "message 1"]
        assert len({m["id"] for m in ml.messages}) == 260  # nothing twice
        # the row on screen stayed the one the cursor was on while pages went in above
        assert ml.selected is not None


async def test_presence_and_live_balances(team):
    researcher = await team.agent("researcher")
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        panel = main.query_one(ParticipantsPanel)
        text = str(panel.render())
        assert "● researcher" in text and "○ reviewer" in text and "● @alice" in text
        assert "researcher  1000" in text
        # an agent spends: the balance event updates the panel
        alice2 = await team.person("alice")
        await open_topic(team, alice2, "researcher", "Spend", "go")
        await answer(team, researcher, text="x" * 2500)  # 3 credits
        await wait_for(pilot, lambda: "researcher  997" in str(panel.render()), what="live balance")
        # funding from elsewhere shows too
        reply = await alice2.call("fund", workspace=team.ws, agent="reviewer", amount=5)
        assert reply["balance"] == 1005
        await wait_for(pilot, lambda: "reviewer  1005" in str(panel.render()), what="funded balance")


async def test_who_joins_and_leaves_shows_live_in_the_member_list(team):
    """docs/protocol.md's `members`: bob leaves the workspace alice is looking at, and alice makes an agent there
    elsewhere: the right panel and @-completion follow at once, and a notice says who came and who went."""
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        panel = main.query_one(ParticipantsPanel)
        assert "@bob" in str(panel.render()) and ("@bob", "member") in main._candidates()
        bob = await team.person("bob")
        await bob.call("leave_workspace", workspace=team.ws)
        await wait_for(pilot, lambda: "@bob" not in str(panel.render()), what="bob gone from the panel", timeout=5)
        assert team.bob not in app.store.workspaces[team.ws].members
        assert all(name != "@bob" for name, _ in main._candidates())
        await wait_for(pilot, lambda: any(n.message == "@bob left team." for n in app._notifications), what="told")
        nova = team.server.admin(admin.add_agent, "nova", "alice", team.ws)
        await wait_for(pilot, lambda: "nova" in str(panel.render()), what="nova in the panel", timeout=5)
        assert ("@nova", "agent") in main._candidates()
        assert app.store.workspaces[team.ws].members[nova["id"]]["name"] == "nova"
        await wait_for(pilot, lambda: any(n.message == "nova joined team." for n in app._notifications), what="told")


async def test_a_narrow_terminal_gives_the_room_to_the_conversation(team):
    """80x24: the people-and-credits column and the conversations left the messages 16 columns; now the column
    steps aside (p shows it, and hides it again) and the operator view's credits take less room."""
    app = team.app()
    async with app.run_test(size=(80, 24)) as pilot:
        main = await ready(pilot)
        people = main.query_one(ParticipantsPanel)
        assert not people.display
        assert main.messages.size.width >= 45
        main.messages.focus()
        await pilot.press("p")
        await pilot.pause()
        assert people.display and people.size.width > 0
        await wait_text(pilot, "Credits", "researcher")
        await pilot.press("p")
        await pilot.pause()
        assert not people.display
        await pilot.press("o")
        await wait_for(pilot, lambda: app.operator is not None and app.screen is app.operator, what="operator view")
        await pilot.pause()
        assert app.operator.query_one("#op-left").size.width >= 45
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is main, what="back")
        # wide again: the column is there, and p is no key of this screen
        await pilot.resize_terminal(150, 42)
        await pilot.pause()
        assert people.display and people.size.width > 0
        assert "people" not in {b.binding.action for b in main.active_bindings.values()}


async def test_control_characters_someone_wrote_are_drawn_harmless(team):
    """A message (or a topic title) with an escape sequence, a carriage return or a tab went to the terminal as it
    was: another person's message could clear the screen, recolour it or retitle the window. They are drawn as
    their visible pictures now, line endings as lines, tabs as spaces. (A title with them is refused now,
    docs/protocol.md "Names and titles"; one stored before that is drawn harmless too.)"""
    from msgspec.structs import replace

    from ygg_server.store import loaders, rows as codec

    bob = await team.person("bob")
    sent = await bob.send(workspace=team.ws, conversation="general", topic="new", title="Sneaky", type="inform",
                          text="before\x1b[2J\x1b[31mred\x1b]0;pwned\x07 tab\there\r\nnext line\rlast")
    tid, conn = sent["message"]["topic"], team.server.conn
    old = replace(loaders.load_topic(conn, tid), title="Sneaky\x1b[2J title\nsecond")  # (as stored before the rule)
    conn.execute("UPDATE topics SET state = ? WHERE id = ?", (codec.encode_topic(old), tid))
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        screen = await wait_text(pilot, "before␛[2J␛[31mred␛]0;pwned␇ tab    here", "next line", "last",
                                 "Sneaky␛[2J title second")
        assert not any(ord(ch) < 32 and ch != "\n" or 0x7F <= ord(ch) < 0xA0 for ch in screen), repr(screen)
        ml = main.messages
        assert ml._heights == [1 + 3]  # the head, then three lines


async def test_the_list_keeps_the_keys_while_an_older_page_comes(team):
    """Reaching the top asks for an older page: the list's own "a page is coming" flag was Textual's `loading`,
    which covered the whole list with a spinner and took the focus away from it, so the keys pressed meanwhile
    (k, page up) went nowhere. The list stays on screen and keeps its keys."""
    import asyncio

    bob = await team.person("bob")
    first = await bob.send(workspace=team.ws, conversation="general", topic="new", title="Long", type="inform",
                           text="message 0")
    for i in range(1, 130):
        await bob.send(workspace=team.ws, conversation="general", topic=first["message"]["topic"], type="inform",
                       text=f"message {i}")
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        ml = main.messages
        history = app.session.history

        async def slow(th, older=False):  # (an older page that takes a while, as on a slow link)
            if older:
                await asyncio.sleep(1.0)
            return await history(th, older)

        app.session.history = slow
        ml.focus()
        await pilot.press("g")  # the first message loaded: the top, so an older page is asked for
        await wait_for(pilot, lambda: ml.fetching, what="an older page asked for")
        assert app.focused is ml and ml._cover_widget is None
        before = ml.cursor
        await pilot.press("j")
        assert ml.cursor == before + 1
        await wait_for(pilot, lambda: not ml.fetching, what="the older page")


async def test_a_role_or_permission_changed_elsewhere_shows_live(team):
    """docs/protocol.md's `members`, `changed`: bob, looking at team, is made admin by alice elsewhere: his row in
    the right panel says admin, a notice says so, and the palette offers him what an admin manages (and no more
    once he is a member again); an agent's permissions changed elsewhere are what the member list holds."""
    from .test_manage_forms import titles

    app = team.app("bob")
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        panel = main.query_one(ParticipantsPanel)
        w = app.store.workspaces[team.ws]
        assert "@bob  member" in str(panel.render()) and "Groups of team" not in titles(app)
        alice = await team.person("alice")
        await alice.call("add_member", workspace=team.ws, handle="bob", role="admin")
        await wait_for(pilot, lambda: "@bob  admin" in str(panel.render()), what="bob's row says admin", timeout=5)
        assert w.role == "admin" and "Groups of team" in titles(app)
        await wait_for(pilot, lambda: any(n.message == "Roles or permissions changed in team: @bob is admin."
                                          for n in app._notifications), what="told")
        await alice.call("set_permissions", workspace=team.ws, agent="researcher", receive=False)
        await wait_for(pilot, lambda: w.members[team.ids["researcher"]]["receive"] is False, what="receive off",
                       timeout=5)
        await alice.call("add_member", workspace=team.ws, handle="bob", role="member")
        await wait_for(pilot, lambda: "@bob  member" in str(panel.render()), what="a member again", timeout=5)
        assert w.role == "member" and "Groups of team" not in titles(app)


async def test_what_comes_while_you_read_older_messages_stays_unread_until_you_scroll_down(team):
    """As Slack's "new messages" bar: scrolled up, reading the history of the topic on screen, a message that comes
    is not marked read (the TUI acks a delivery when it is seen); the title says "↓ 1 new below", and scrolling
    down to it reads it."""
    bob = await team.person("bob")
    first = await seed_topic(team, bob, "Long thread", [f"message {i}" for i in range(60)])
    tid = first["message"]["topic"]
    await read_all(team, "alice", expect=60)
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        main.open_topic(first["message"]["conversation"], tid)
        ml = main.messages
        await wait_for(pilot, lambda: len(ml) == 60, what="the topic on screen")
        ml.focus()
        await pilot.press("pageup", "pageup")
        await wait_for(pilot, lambda: not ml.is_at_end(), what="scrolled up")
        await bob.send(workspace=team.ws, topic=tid, type="inform", text="a new one")
        await wait_for(pilot, lambda: len(ml) == 61, what="the new one listed")
        await pilot.pause(0.2)
        assert app.store.unread_by_thread.get(tid) == 1, "not seen yet: not read"
        await wait_text(pilot, "↓ 1 new below")
        await pilot.press("end")
        await wait_for(pilot, lambda: not app.store.unread_by_thread.get(tid), what="read once scrolled down to")
        assert "new below" not in str(main.query_one("#topic-title").render())
        # at the end, what comes is read as it comes
        await bob.send(workspace=team.ws, topic=tid, type="inform", text="and another")
        await wait_for(pilot, lambda: len(ml) == 62, what="listed")
        await pilot.pause(0.2)
        assert not app.store.unread_by_thread.get(tid)
