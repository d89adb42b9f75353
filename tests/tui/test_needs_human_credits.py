"""needs_human: a queue always on screen, h jumps to the next, answering resumes the topic.
Credits: live balances, a funding request names who ran out, funding from the TUI."""

from ygg_server.ops import admin

from ygg_tui.screens.dialogs import FundScreen
from ygg_tui.widgets.needs_human import NeedsHumanBar
from ygg_tui.widgets.participants import ParticipantsPanel

from .conftest import SIZE, delivery_with, answer, open_topic, ready, wait_for, wait_text


async def test_needs_human_queue_jump_and_resume(team):
    researcher = await team.agent("researcher")
    reviewer = await team.agent("reviewer")
    alice2 = await team.person("alice")
    await open_topic(team, alice2, "researcher", "Deploy plan", "Can we deploy on Friday?")
    await answer(team, researcher, state="needs_human", text="A person must approve a Friday deploy.")
    await open_topic(team, alice2, "reviewer", "Budget", "Is the budget fine?")
    await answer(team, reviewer, state="needs_human", text="Needs a decision on the budget.")
    await open_topic(team, alice2, "researcher", "Other work", "Something else")
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        bar = main.query_one(NeedsHumanBar)
        await wait_text(pilot, "2 waiting on a person", "Deploy plan", "Budget")
        main.messages.focus()
        await pilot.press("h")
        first = main.topic
        assert app.store.topics[first]["title"] == "Deploy plan"  # oldest first
        assert main.composer.area.has_focus  # ready to answer
        # (asked in a response: the answer goes to the asker, addressed in front, as the next topic's is to its own)
        await wait_for(pilot, lambda: main.composer.text == "@researcher ", what="addressed to the asker")
        main.messages.focus()
        await pilot.press("h")
        assert app.store.topics[main.topic]["title"] == "Budget"
        await wait_for(pilot, lambda: main.composer.text == "@reviewer ", what="to this topic's asker")
        main.messages.focus()
        await pilot.press("h")
        assert main.topic == first  # it wraps around
        await wait_for(pilot, lambda: main.composer.text == "@researcher ")
        # answering resumes the topic, and the queue shrinks
        await pilot.press(*"yes, go ahead", "enter")
        d = await delivery_with(researcher, "@researcher yes, go ahead")
        assert d["wake"]
        await wait_for(pilot, lambda: app.store.topics[first]["status"] == "open", what="resumed")
        await wait_text(pilot, "1 waiting on a person")
        assert "Deploy plan" not in str(bar.render())


async def test_funding_request_and_fund_from_the_tui(team):
    # scout has no wallet and the pool is empty: its first message is refused and alice is asked to fund
    out = team.server.admin(admin.add_agent, "scout", "alice", team.ws)
    scout_id = out["id"]
    team.keys["scout"] = out["api_key"]
    scout = await team.agent("scout")
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        alice2 = await team.person("alice")
        await open_topic(team, alice2, "scout", "Scout around", "Look around, please")
        d = await scout.next_delivery(timeout=5)
        await scout.ack([d["id"]])
        m = d["message"]
        refused = await scout.send(workspace=team.ws, conversation="general", topic=m["topic"], type="response",
                                   in_reply_to=m["id"], text="found things")
        assert refused["op"] == "refused" and refused["reason"] == "credits_exhausted"
        panel = main.query_one(ParticipantsPanel)
        await wait_for(pilot, lambda: (team.ws, scout_id) in app.store.funding, what="funding request")
        await wait_text(pilot, "scout ran out of credits")
        assert any("$1" in str(o.prompt) for o in main.query_one("#sidebar")._options), "a $ badge on General"
        # fund it from the TUI: f, the agent is preselected, type an amount, enter
        main.messages.focus()
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, FundScreen), what="fund dialog")
        assert app.screen.query_one("#account").value == scout_id
        inp = app.screen.query_one("#amount")
        inp.value = "50"
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.store.workspaces[team.ws].balances.get(scout_id) == 50, what="funded")
        await wait_for(pilot, lambda: (team.ws, scout_id) not in app.store.funding, what="request cleared")
        await wait_text(pilot, "scout  50")
        # the scout is woken to resend
        woke = await scout.next_delivery(timeout=5)
        assert woke["message"].get("notice") == "credits_refilled"
        # the pool, too
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, FundScreen))
        app.screen.query_one("#account").value = FundScreen.POOL
        app.screen.query_one("#amount").value = "25"
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.store.workspaces[team.ws].pool == 25, what="pool funded")


async def test_a_member_funds_only_where_allowed(team):
    app = team.app("carol")  # a viewer: no funding at all
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        main.open_conversation(next(c for c in app.store.workspaces[team.ws].conversations
                                    if app.store.workspaces[team.ws].conversations[c]["kind"] == "general"))
        main.messages.focus()
        await pilot.press("f")
        await wait_for(pilot, lambda: any("does not let you fund" in n.message for n in app._notifications),
                       what="told no")
        assert not isinstance(app.screen, FundScreen)


async def _release(team):
    """alice asks the researcher and the reviewer in a new topic, "Release"; both read it. (researcher, reviewer,
    alice's `sent`)"""
    researcher = await team.agent("researcher")
    reviewer = await team.agent("reviewer")
    sent = await (await team.person("alice")).send(workspace=team.ws, conversation="general", topic="new",
                                                   title="Release", type="request", to=["researcher", "reviewer"],
                                                   text="Ship it?")
    await delivery_with(reviewer, "Ship it?")
    await delivery_with(researcher, "Ship it?")
    return researcher, reviewer, sent


async def _ask(team, agent, tid: str, mtype: str, text: str) -> dict:
    """`agent` asks alice in topic `tid` (needs_human), in a message of type `mtype`."""
    q = await agent.send(workspace=team.ws, conversation="general", topic=tid, type=mtype, to=["@alice"],
                         state="needs_human", text=text)
    assert q["op"] == "sent", q
    return q


async def _h(pilot):
    """The main screen, once the queue shows the question, after h from the message list."""
    main = await ready(pilot)
    await wait_text(pilot, "1 waiting on a person")
    main.messages.focus()
    await pilot.press("h")
    return main


async def test_h_answers_the_question_that_paused_the_topic(team):
    """An agent asks the person a question (a request to them, needs_human) in a topic with another agent: h opens
    it ready to answer that question (a response in reply, as r would), so the answer goes to the asker alone and
    the question is answered; written as it was, it went as a request to both agents and woke the other one too."""
    researcher, reviewer, sent = await _release(team)
    tid = sent["message"]["topic"]
    await reviewer.send(workspace=team.ws, conversation="general", topic=tid, type="response",
                        in_reply_to=sent["message"]["id"], state="working", text="looking at it")
    q = await _ask(team, researcher, tid, "request", "Do you approve the release?")
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        c = (await _h(pilot)).composer
        await wait_for(pilot, lambda: c.reply_to is not None, what="replying to the question")
        assert c.reply_to["id"] == q["message"]["id"] and c.mtype == "response" and c.area.has_focus
        await pilot.press(*"yes", "enter")
        d = await delivery_with(researcher, "yes")
        assert d["wake"] and d["message"]["in_reply_to"] == q["message"]["id"]
        assert d["message"]["to"] == [team.ids["researcher"]]
        await wait_for(pilot, lambda: app.store.topics[tid]["status"] == "open", what="resumed")


async def test_h_answers_a_question_asked_in_an_inform_to_the_asker_alone(team):
    """A question asked in an inform (needs_human) cannot be answered in reply: h starts the answer with `@asker`,
    so it goes to the asker alone as a request (it wakes it) and not to every agent of the topic."""
    researcher, _, sent = await _release(team)
    tid = sent["message"]["topic"]
    await _ask(team, researcher, tid, "inform", "Before I go on: may I delete the old builds?")
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        c = (await _h(pilot)).composer
        await wait_for(pilot, lambda: c.text == "@researcher ", what="addressed to the asker")
        assert c.reply_to is None and c.area.has_focus
        await pilot.press(*"yes", "enter")
        d = await delivery_with(researcher, "@researcher yes")
        assert d["wake"] and d["message"]["type"] == "request" and d["message"]["to"] == [team.ids["researcher"]]


async def test_the_panels_name_the_keys_that_work_where_the_focus_is(team):
    """The queue said "(h: next)" and the credits "f: fund" while the focus was in the composer (where it starts),
    in which h types an h; and whatever the config remapped. They name the key as it is now, and say to leave the
    box first while typing."""
    from ygg_tui.app import make_app

    from .conftest import PW

    researcher = await team.agent("researcher")
    alice2 = await team.person("alice")
    await open_topic(team, alice2, "researcher", "Deploy plan", "Can we deploy on Friday?")
    await answer(team, researcher, state="needs_human", text="A person must approve.")
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        assert main.composer.area.has_focus
        await wait_text(pilot, "1 waiting on a person  (esc then h: next)", "esc then f: fund an agent or")
        main.messages.focus()
        await wait_text(pilot, "1 waiting on a person  (h: next)", "\u258a f: fund an agent or the pool")
    cfg = team.config()
    cfg.keys = {"ygg.next_needs_human": "ctrl+u", "ygg.fund": "F"}
    app = make_app(url=team.url, handle="alice", password=PW, config=cfg, presence_every=0)
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        await wait_text(pilot, "1 waiting on a person  (ctrl+u: next)", "esc then F: fund an agent or")
