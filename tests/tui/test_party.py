"""Parties in the TUI (seed 004, seed 003 §14-16): the party and its Lead, handoffs, the hop limit and
throttle notices, and a request assigned to a capability with its score breakdown."""

from ygg_server.ops import admin

from ygg_tui.widgets.participants import ParticipantsPanel

from .conftest import SIZE, ready, wait_for, wait_text


async def _party(team):
    """A group conversation of alice with researcher and reviewer, researcher its Lead, a handoff, a
    capability request, and the hop limit reached (party.maxHops 0)."""
    alice = await team.person("alice")
    researcher, reviewer = await team.agent("researcher"), await team.agent("reviewer")
    first = await alice.send(workspace=team.ws, conversation="dm:researcher", topic="new", title="Plan",
                             type="request", to=["researcher"], text="Plan the release")
    cid, tid = first["message"]["conversation"], first["message"]["topic"]
    r = await alice.request("add_participant", workspace=team.ws, conversation=cid, participant="reviewer")
    assert r["op"] == "add_participant", r
    r = await alice.request("set_lead", workspace=team.ws, conversation=cid, lead="researcher")
    assert r["op"] == "set_lead", r
    r = await alice.request("set_profile", agent="reviewer", title="Reviewer", capabilities=["review"])
    assert r["op"] == "set_profile", r
    h = await researcher.send(workspace=team.ws, conversation=cid, topic=tid, type="request", to=["reviewer"],
                              handoff=True, text="Reviewer, please check the plan's risks")
    assert h["op"] == "sent", h
    a = await alice.send(workspace=team.ws, conversation=cid, topic=tid, type="request", to=["capability:review"],
                         text="Someone review this please")
    assert a["op"] == "sent", a
    r = await alice.request("set_setting", workspace=team.ws, key="party.maxHops", value=0)
    assert r["op"] == "set_setting", r
    hop = await reviewer.send(workspace=team.ws, conversation=cid, topic=tid, type="request", to=["researcher"],
                              text="Researcher, what about the date?")
    assert hop["op"] == "sent" and not any(x["wake"] for x in hop["deliveries"] if x["to"] != team.alice), hop
    return cid, tid


async def test_party_lead_handoff_notices_and_assignment_are_visible(team):
    """Seed 004: "This appears in the transcript as a Tool call like any other, so a handoff is something you can
    see rather than infer." Seed 004: "When the limit ends an exchange, the transcript says so rather than going
    quiet." Seed 003 §14: "The highest score gets the task." (the breakdown is shown to people)"""
    cid, tid = await _party(team)
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        main.open_conversation(cid, tid)
        await wait_for(pilot, lambda: len(main.messages) >= 5, what="the party's messages")
        await wait_text(pilot, "⇢ handoff")
        await wait_text(pilot, "hop limit reached")
        await wait_text(pilot, "⚖ review: reviewer")
        panel = app.main.query_one(ParticipantsPanel)
        text = str(panel.render())
        assert "This party" in text and "★ researcher" in text and "Lead" in text and "reviewer" in text
        msgs = main.messages.messages
        i = next(i for i, m in enumerate(msgs) if m.get("assignment"))
        main.messages.cursor = i
        main.action_explain_assignment()
        await pilot.pause(0.1)
        shown = [n.message for n in app._notifications]
        assert any("Assigned by capability 'review' to reviewer" in n and "online:" in n for n in shown), shown


async def test_a_side_conversation_is_listed_under_its_origin(team):
    """Seed 003 §15: "only the final result is sent back where it was asked for" (the side conversation is listed
    right under the direct conversation it came from; its result shows in the origin topic)."""
    from ygg_tui.widgets.sidebar import Sidebar

    alice = await team.person("alice")
    researcher, reviewer = await team.agent("researcher"), await team.agent("reviewer")
    asked = await alice.send(workspace=team.ws, conversation="dm:researcher", topic="new", title="Numbers",
                             type="request", to=["researcher"], text="check the numbers")
    cid, tid = asked["message"]["conversation"], asked["message"]["topic"]
    deleg = await researcher.send(workspace=team.ws, conversation=cid, topic=tid, type="request", to=["reviewer"],
                                  text="reviewer, recompute table 2")
    side = deleg["message"]["conversation"]
    r = await reviewer.send(workspace=team.ws, conversation=side, topic=deleg["message"]["topic"], type="response",
                            in_reply_to=deleg["message"]["id"], state="done", text="Table 2 sums to 42.")
    assert r["op"] == "sent", r
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        sidebar = main.query_one(Sidebar)
        ids = [sidebar.get_option_at_index(i).id for i in range(sidebar.option_count)]
        assert side not in ids and "↳1" in str(sidebar.get_option_at_index(ids.index(cid)).prompt), ids  # folded
        main.open_conversation(cid, tid)  # its origin open: listed right under it, titled by its task
        ids = [sidebar.get_option_at_index(i).id for i in range(sidebar.option_count)]
        assert side in ids and ids.index(side) == ids.index(cid) + 1, ids
        assert "↳ Numbers" in str(sidebar.get_option_at_index(ids.index(side)).prompt)
        await wait_text(pilot, "result of a side task")
        await wait_text(pilot, "Table 2 sums to 42.")
        main.open_conversation(side)
        await wait_text(pilot, "recompute table 2")


def test_the_breakdown_names_who_was_left_out_and_why():
    """Seed 002's permissions keep some agents from a sender's request: the breakdown says which, and why."""
    from ygg_tui.words import assignment_text

    a = {"capability": "translation", "chosen": "a1", "scores": [{"agent": "a1", "total": 3, "parts": []}],
         "left_out": [{"agent": "a2", "name": "nova", "reason": "takes_from",
                       "detail": "nova does not take messages from you"}]}
    text = assignment_text(a, {"a1": "pike", "a2": "nova"}.get)
    assert text.splitlines()[-1] == "left out: nova (nova does not take messages from you)"
