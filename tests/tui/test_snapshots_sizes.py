"""SVG snapshots (pytest-textual-snapshot) of the main screen at 80x24 and 160x48 (issue 20): what a small
terminal and a large one show, the selected message, where the keys go and what the composer will send.

Update them after a deliberate change with `pytest tests/tui/test_snapshots_sizes.py --snapshot-update`.
"""

from .conftest import ready, wait_for
from .test_snapshots import conversation, quiet, seed


def _shot(snap_compare, team, size, *keys, focus="messages"):
    seed(team, conversation)

    async def before(pilot):
        main = await ready(pilot)
        await wait_for(pilot, lambda: any(m.get("notice") for m in main.messages.messages), what="notice")
        (main.messages if focus == "messages" else main.composer.area).focus()
        await pilot.press(*keys)
        quiet(pilot)
        await pilot.pause(0.2)

    return snap_compare(team.app(), terminal_size=size, run_before=before)


def test_main_screen_80x24_a_message_selected(snap_compare, sync_team):
    assert _shot(snap_compare, sync_team, (80, 24), "k", "k")


def test_main_screen_80x24_people_in_the_lists_place(snap_compare, sync_team):
    assert _shot(snap_compare, sync_team, (80, 24), "p")


def test_main_screen_80x24_without_the_list_writing(snap_compare, sync_team):
    assert _shot(snap_compare, sync_team, (80, 24), "ctrl+b", *"@researcher and more?", focus="composer")


def test_main_screen_160x48_replying(snap_compare, sync_team):
    assert _shot(snap_compare, sync_team, (160, 48), "k", "k", "r", "ctrl+d", *"thanks")


async def _more_topics(team):
    alice = await team.person("alice")
    bob = await team.person("bob")
    for title, text in (("Release plan", "we ship on Tuesday"), ("Lunch", "pizza at noon?")):
        await (bob if title == "Lunch" else alice).send(workspace=team.ws, conversation="general", topic="new",
                                                         title=title, type="inform", text=text)


def _topics_shot(snap_compare, team, size):
    seed(team, conversation, _more_topics)

    async def before(pilot):
        main = await ready(pilot)
        await wait_for(pilot, lambda: len(pilot.app.store.topics_of(main.conversation)) == 3, what="three topics")
        main.messages.focus()
        await pilot.press("T")
        await wait_for(pilot, lambda: type(pilot.app.screen).__name__ == "TopicsScreen", what="the topics view")
        quiet(pilot)
        await pilot.pause(0.2)

    return snap_compare(team.app(), terminal_size=size, run_before=before)


def test_all_topics_80x24(snap_compare, sync_team):
    """T: every topic of the conversation at once (issue 20, defect 8)."""
    assert _topics_shot(snap_compare, sync_team, (80, 24))


def test_all_topics_160x48(snap_compare, sync_team):
    assert _topics_shot(snap_compare, sync_team, (160, 48))
