"""The composer: Enter sends, ctrl+j is a newline, type and state, @ and group: completion,
new topics ask for a title, replies set in_reply_to, refusals show inline in words."""

import asyncio
from contextlib import asynccontextmanager

import pytest

from ygg_server.ops import admin

from ygg_tui.words import REFUSALS

from .conftest import SIZE, open_topic, ready, seed_topic, wait_for, wait_text


async def test_enter_sends_ctrl_j_newline_type_state_title(team):
    researcher = await team.agent("researcher")
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        c = main.composer
        await pilot.press(*"@researcher first line", "ctrl+j", *"second line")
        assert c.text == "@researcher first line\nsecond line"
        await pilot.press("ctrl+t", "ctrl+t")  # request -> response -> inform
        assert c.mtype == "inform"
        await pilot.press("ctrl+t")  # back to request
        assert c.mtype == "request"
        assert c.state == "working"  # the default
        await pilot.press("ctrl+g")  # working -> waiting
        assert c.state == "waiting"
        await pilot.press("ctrl+g", "ctrl+g", "ctrl+g", "ctrl+g")  # needs_human, done, no state, working
        assert c.state == "working"
        await pilot.press("enter")
        # no topic yet: it asks for a title (suggested from the text) and opens the topic
        await wait_for(pilot, lambda: type(app.screen).__name__ == "TitlePrompt", what="title prompt")
        inp = app.screen.query_one("Input")
        assert inp.value == "first line"
        inp.value = "Two lines"
        await pilot.press("enter")
        d = await researcher.next_delivery(timeout=5)
        m = d["message"]
        assert m["text"] == "@researcher first line\nsecond line"
        assert m["type"] == "request" and m["state"] == "working" and m["to"] == [team.ids["researcher"]]
        assert d["wake"] is True
        await wait_for(pilot, lambda: main.topic == m["topic"], what="the new topic is open")
        assert c.text == ""
        await wait_text(pilot, "Two lines", "first line", "second line")


async def test_a_group_made_or_removed_elsewhere_is_offered_or_withdrawn_at_once(team):
    """The `groups` event: a group the operator (or another owner) makes while the app is open is offered by
    @-completion without signing in again, and one removed is no longer offered."""
    from ygg_server.ops import admin

    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        assert "helpers" not in app.store.group_names(team.ws)
        team.server.admin(admin.add_group, team.ws, "helpers", ["researcher", "reviewer"])
        await wait_for(pilot, lambda: app.store.group_names(team.ws) == ["helpers"], what="the group is offered")
        c = main.composer
        await pilot.press(*"group:hel")
        assert c.completing
        await pilot.press("tab")
        assert c.text == "group:helpers "
        team.server.admin(admin.remove_group, team.ws, "helpers")
        await wait_for(pilot, lambda: app.store.group_names(team.ws) == [], what="the group is withdrawn")


async def test_a_reply_begun_in_one_topic_is_not_sent_from_another(team):
    """`r` makes the composer a response in reply to the selected message; leaving the topic (another one, or a new
    one) drops the reply and its response type, which no message of the next topic is in reply to."""
    bob = await team.person("bob")
    await seed_topic(team, bob, "Lunch", ["pizza?"])
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        await wait_for(pilot, lambda: any(m["text"] == "pizza?" for m in main.messages.messages))
        main.messages.focus()
        await pilot.press("k", "r")
        c = main.composer
        assert c.reply_to is not None and c.mtype == "response"
        main.action_new_topic()
        assert c.reply_to is None and c.mtype == "request"


async def test_esc_in_the_composer_goes_back_to_the_messages(team):
    """Esc in the composer (nothing to cancel) hands the keys to the message list, where the hints send the reader
    ("esc then h", j/k, r): it wrapped round to the conversation list instead."""
    await seed_topic(team, await team.person("bob"), "Lunch", ["pizza?"])
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        await wait_for(pilot, lambda: main.topic is not None)
        main.composer.area.focus()
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.focused is main.messages, what="the message list has the keys")


async def test_completion_of_participants_and_groups(team):
    # a group with a conversation, so that its name is known
    team.server.conn.execute("INSERT INTO groups (workspace, name, members) VALUES (?,?,?)",
                             (team.ws, "reviewers", f'["{team.ids["reviewer"]}"]'))
    bob = await team.person("bob")
    r = await bob.send(workspace=team.ws, conversation="group:reviewers", topic="new", title="Review",
                       type="request", to=["group:reviewers"], text="please review")
    assert r["op"] == "sent", r
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        c = main.composer
        await pilot.press(*"@res")
        assert c.completing
        await pilot.press("tab")
        assert c.text == "@researcher "
        await pilot.press(*"and @b")
        assert c.completing
        await pilot.press("enter")  # enter takes the completion, it does not send
        assert c.text == "@researcher and @bob "
        c.area.load_text("")
        await pilot.press(*"group:re")
        assert c.completing
        await pilot.press("down", "up", "tab")
        assert c.text == "group:reviewers "
        await pilot.press("escape")
        assert not c.completing


async def test_reply_sets_in_reply_to_and_refusals_in_words(team):
    researcher = await team.agent("researcher")
    alice2 = await team.person("alice")
    await open_topic(team, researcher_client := alice2, "researcher", "Question", "What is 2+2?")
    # the researcher asks alice back, with a request she must answer
    d = await researcher.next_delivery(timeout=5)
    await researcher.ack([d["id"]])
    ask = await researcher.send(workspace=team.ws, conversation="general", topic=d["message"]["topic"],
                                type="request", to=["@alice"], state="waiting", waiting_for=["@alice"],
                                text="Do you mean in base 10?")
    assert ask["op"] == "sent", ask
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        await wait_for(pilot, lambda: any(m["id"] == ask["message"]["id"] for m in main.messages.messages))
        main.messages.focus()
        await pilot.press("k")  # the cursor on the last message
        assert main.messages.selected["id"] == ask["message"]["id"]
        await pilot.press("r")
        c = main.composer
        assert c.reply_to["id"] == ask["message"]["id"] and c.mtype == "response"
        await wait_text(pilot, "↳ replying to researcher")
        await pilot.press(*"yes, base 10", "enter")
        got = await researcher.next_delivery(timeout=5)
        assert got["message"]["in_reply_to"] == ask["message"]["id"]
        assert got["message"]["type"] == "response" and got["wake"] is True
        await wait_for(pilot, lambda: c.reply_to is None)

        # refusals, in words: an unknown recipient
        await pilot.press(*"@nobody hello?", "enter")
        await wait_text(pilot, "refused (unknown_recipient)", REFUSALS["unknown_recipient"])
        assert c.text == "@nobody hello?"  # kept, to fix and resend
        c.clear()
        # a closed topic
        tid = main.topic
        s = await alice2.send(workspace=team.ws, conversation="general", topic=tid, type="inform", state="done",
                              text="done here")
        assert s["op"] == "sent"
        # the researcher still holds its wake from alice's reply: the closure poll folds into it (seed 000:
        # "further requests on that topic are folded into it"), so it answers that wake, done
        await researcher.ack([got["id"]])
        r = await researcher.send(workspace=team.ws, conversation="general", topic=tid, type="response",
                                  in_reply_to=got["message"]["id"], state="done", text="4")
        assert r["op"] == "sent", r
        await wait_for(pilot, lambda: app.store.topics[tid]["status"] == "closed", what="closed topic")
        await pilot.press(*"one more thing", "enter")
        await wait_text(pilot, "refused (topic_closed)", "This topic is closed")


def test_every_refusal_has_words():
    for reason in ("topic_required", "title_required", "topic_limit", "topic_closed", "credits_exhausted",
                   "unknown_recipient", "permission_denied", "plan_limit", "unknown_conversation", "unknown_topic"):
        assert REFUSALS[reason].endswith(".") and "_" not in REFUSALS[reason]


def _burst(app, keys: list[str]) -> None:
    """Keys arriving together, as a fast typist, a paste or a slow link delivers them: no wait between them."""
    from textual import events

    for key in keys:
        event = events.Key(key, key if len(key) == 1 else None)
        event.set_sender(app)
        app._driver.send_message(event)


@asynccontextmanager
async def _composing(team, title: str):
    """alice's TUI on a topic of hers with the researcher, the composer focused: (pilot, composer, researcher)."""
    researcher = await team.agent("researcher")
    alice2 = await team.person("alice")
    sent = await open_topic(team, alice2, "researcher", title, "Start")
    await researcher.ack([(await researcher.next_delivery(timeout=5))["id"]])
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        main.open_topic(sent["message"]["conversation"], sent["message"]["topic"])
        await wait_for(pilot, lambda: main.topic == sent["message"]["topic"], what="the topic open")
        main.composer.area.focus()
        yield pilot, main.composer, researcher


async def test_keys_arriving_together_keep_their_order(team):
    """Enter and ctrl+j are priority bindings, run as the app reads the key, while typed characters wait in the
    text box's queue: a burst "h", "i", Enter sent only what the box held before it and lost the rest."""
    async with _composing(team, "Bursts") as (pilot, c, researcher):
        app = pilot.app
        await pilot.press("h")
        _burst(app, [*"ello", "ctrl+j", *"there"])
        await wait_for(pilot, lambda: len(c.text) >= len("hello\nthere"), what="the burst typed")
        assert c.text == "hello\nthere"
        _burst(app, [*" @researcher", "enter"])
        await wait_for(pilot, lambda: c.text == "", what="sent")
        d = await researcher.next_delivery(timeout=5)
        assert d["message"]["text"] == "hello\nthere @researcher"


async def test_the_text_leaves_at_once_and_comes_back_when_refused(team):
    """As in any chat app: Enter empties the box before the server answers, so what is typed meanwhile stays
    and a second Enter sends nothing again; a refused message comes back, in front of what was typed since."""
    async with _composing(team, "Quick") as (pilot, c, researcher):
        app = pilot.app
        await pilot.press(*"@researcher first")
        _burst(app, ["enter", "enter", *"next one"])  # typed while the first is on its way
        d = await researcher.next_delivery(timeout=5)
        assert d["message"]["text"] == "@researcher first"
        await wait_for(pilot, lambda: c.text == "next one", what="what was typed meanwhile, kept")
        with pytest.raises(asyncio.TimeoutError):
            await researcher.next_delivery(timeout=0.5)  # the second Enter sent nothing
        # refused: an agent the workspace does not have; the text is back, before what was typed since
        c.area.load_text("")
        await pilot.press(*"@nobody hello")
        _burst(app, ["enter", *"PS"])
        await wait_for(pilot, lambda: c.query_one("#refusal").display, what="the refusal")
        await wait_for(pilot, lambda: c.text == "@nobody hello\nPS", what="the refused text back in front")


async def test_the_footer_offers_no_key_the_composer_types(team):
    """In the composer "/" types a slash: the footer said "/ Search" all the same (Textual finds no character
    for the key "slash"); it offers it again once the focus leaves the box."""
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        assert app.focused is main.composer.area
        assert "slash" not in main.active_bindings
        assert "question_mark" not in main.active_bindings and "f1" in main.active_bindings
        await pilot.press("slash")
        assert main.composer.text == "/"
        main.messages.focus()
        await pilot.pause()
        assert main.active_bindings["slash"].binding.action == "search"


async def test_the_reply_bar_keeps_its_esc_hint_on_a_narrow_screen(team):
    """Replying to a long message: the bar's "esc cancels" came after the quote and was cut off (at 80 columns,
    always); it comes first now, and the quote ends in "…" where the line does."""
    bob = await team.person("bob")
    await bob.send(workspace=team.ws, conversation="general", topic="new", title="Long", type="inform",
                   text="a rather long message that goes on and on about many things, far wider than a line")
    app = team.app()
    async with app.run_test(size=(80, 24)) as pilot:
        main = await ready(pilot)
        main.messages.focus()
        await pilot.press("k", "r")
        await wait_for(pilot, lambda: main.composer.reply_to is not None, what="replying")
        screen = await wait_text(pilot, "↳ replying to @bob (esc cancels): a rather long")
        line = next(ln for ln in screen.splitlines() if "replying to" in ln)
        assert "…" in line
        await pilot.press("escape")
        assert main.composer.reply_to is None


async def test_a_title_over_the_bound_is_said_in_the_prompt_and_kept_to_fix(team):
    """docs/protocol.md, "Names and titles": a title is one line of at most 100 characters. The prompt says so in
    words with what was typed still there (the server would refuse the send `bad_frame`); shortened, it goes."""
    researcher = await team.agent("researcher")
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press(*"@researcher hi", "enter")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "TitlePrompt", what="title prompt")
        inp = app.screen.query_one("Input")
        inp.value = "t" * 101
        await pilot.press("enter")
        said = "✗ A topic's title is at most 100 characters (this one has 101). Fix it, or esc to cancel."
        await wait_for(pilot, lambda: said in str(app.screen.query_one("#title-error").render()), what="the bound")
        assert type(app.screen).__name__ == "TitlePrompt" and inp.value == "t" * 101
        inp.value = "t" * 100
        await pilot.press("enter")
        d = await researcher.next_delivery(timeout=5)
        assert d["message"]["title"] == "t" * 100


async def test_an_empty_title_is_said_not_ignored(team):
    """⏎ on an empty title did nothing at all, with "⏎ open the topic" written under it: it says a title is needed
    now; esc gives the text back."""
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        await pilot.press(*"@researcher hi", "enter")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "TitlePrompt", what="title prompt")
        app.screen.query_one("Input").value = ""
        await pilot.press("enter")
        await wait_text(pilot, "A topic needs a title")
        assert type(app.screen).__name__ == "TitlePrompt"
        await pilot.press("escape")
        await wait_for(pilot, lambda: main.composer.text == "@researcher hi", what="the text back")
