from .conftest import SIZE, ready, wait_for


async def test_opens_and_sends(team):
    app = team.app()
    researcher = await team.agent("researcher")
    async with app.run_test(size=SIZE) as pilot:
        main = await ready(pilot)
        assert main.conversation is not None
        await pilot.press(*"@researcher hello")
        await pilot.press("enter")
        # a new topic asks for its title
        await wait_for(pilot, lambda: type(app.screen).__name__ == "TitlePrompt", what="title prompt")
        await pilot.press("ctrl+a") if False else None
        await pilot.press(*" there")
        await pilot.press("enter")
        d = await researcher.next_delivery(timeout=5)
        assert d["message"]["text"] == "@researcher hello"
        assert d["wake"] is True
        await wait_for(pilot, lambda: len(main.messages) == 1)
