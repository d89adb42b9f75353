"""Undo of one's own message (issue 20: "No edit, delete or undo of one's own message"): right after sending, ctrl+z
takes the message back (delete_message) and puts its text in the composer again; right after an edit, ctrl+z
restores the text before it (edit_message). The offer is on screen while it lasts, and then ctrl+z is the text box's
own undo again."""

from ygg_tui.screens import undoing

from .conftest import SIZE, edit_selected, ready, screen_text, seed_topic, wait_for, wait_text


async def test_ctrl_z_right_after_sending_takes_the_message_back_into_the_composer(team):
    alice = await team.person("alice")
    await seed_topic(team, alice, "Plans", ["first"])
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        await wait_text(pilot, "first")
        await pilot.press(*"we ship on Tusday", "enter")
        await wait_for(pilot, lambda: any(m["text"] == "we ship on Tusday" for m in main.messages.messages),
                       what="sent")
        mine = next(m for m in main.messages.messages if m["text"] == "we ship on Tusday")
        await wait_text(pilot, "ctrl+z takes it back (")
        assert main.composer.text == ""
        await pilot.press("ctrl+z")
        await wait_for(pilot, lambda: main.messages.messages[main.messages._index[mine["id"]]].get("deleted"),
                       what="deleted for everyone")
        assert main.composer.text == "we ship on Tusday", "the text is back, to correct and send again"
        assert app.focused is main.composer.area
        r = await alice.call("history", workspace=team.ws, conversation="general", topic=mine["topic"])
        assert next(m for m in r["messages"] if m["id"] == mine["id"]).get("deleted"), "gone for everyone"
        assert "ctrl+z takes it back (" not in screen_text(app), "the offer is spent"


async def test_ctrl_z_right_after_an_edit_restores_the_text_before_it(team):
    alice = await team.person("alice")
    sent = await seed_topic(team, alice, "Plans", ["we ship on Tuesday"])
    mid = sent["message"]["id"]
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await edit_selected(pilot, mid)
        ml = main.messages
        await pilot.press(*["backspace"] * len("Tuesday"), *"Friday", "enter")
        await wait_for(pilot, lambda: ml.selected and ml.selected["text"] == "we ship on Friday", what="edited")
        await wait_text(pilot, "ctrl+z restores the text before")
        await pilot.press("ctrl+z")
        await wait_for(pilot, lambda: ml.selected["text"] == "we ship on Tuesday" and ml.selected["version"] == 2,
                       what="the text before the edit, as a new version")
        assert app.screen is main and app.focused is ml


async def test_after_the_offer_ctrl_z_is_the_text_box_undo_again(team, monkeypatch):
    monkeypatch.setattr(undoing, "UNDO_SECONDS", 0.3)
    alice = await team.person("alice")
    await seed_topic(team, alice, "Plans", ["first"])
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        await pilot.press(*"kept", "enter")
        await wait_for(pilot, lambda: any(m["text"] == "kept" for m in main.messages.messages), what="sent")
        await wait_for(pilot, lambda: main.undo_offer is None, what="the offer ends")
        await pilot.press(*"abc")
        await pilot.press("ctrl+z")
        await pilot.pause(0.2)
        assert not next(m for m in main.messages.messages if m["text"] == "kept").get("deleted")
        assert main.composer.text != "abc", "ctrl+z undid the typing, as before"
