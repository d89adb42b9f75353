"""The artifact pane (issue 21; seed 003 §8-10): `a` on a message that posted an artifact opens it on its own,
rendered; `[` and `]` go through its versions, `d` shows the diff, `c` comments on the version shown."""

from textual.widgets import Markdown

from ygg_tui.screens.artifact import ArtifactScreen

from .conftest import SIZE, ready, seeded, wait_for, wait_text
from .test_snapshots import quiet

BODY = "# Release plan\n\n- ship on **Tuesday**\n- tell support\n"


async def _artifact(team) -> tuple[dict, dict]:
    researcher = await team.agent("researcher")
    made = await researcher.request("create_artifact", workspace=team.ws, conversation="general", topic="new",
                                    topic_title="Release", title="Release plan", kind="document", body=BODY)
    assert made["op"] == "create_artifact", made
    edited = await researcher.request("update_artifact", workspace=team.ws, artifact=made["artifact"]["id"],
                                      topic=made["message"]["topic"], body=BODY.replace("Tuesday", "Wednesday"))
    assert edited["artifact"]["version"] == 2, edited
    return made, edited


async def _open(pilot, mid: str) -> ArtifactScreen:
    main = await ready(pilot)
    ml = main.messages
    await wait_for(pilot, lambda: ml.select_id(mid), what="the message")
    ml.focus()
    await pilot.press("a")
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, ArtifactScreen) and pilot.app.screen.data,
                   what="the pane")
    return pilot.app.screen


async def test_the_pane_shows_versions_a_diff_and_takes_a_comment(team):
    """Seed 003 §9: "Editing an artifact never overwrites: it creates a new version, so the whole history is visible
    (who changed what, and when), and old versions stay readable. Comments attach to the artifact" """
    made, edited = await _artifact(team)
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_text(pilot, "▣ Release plan · document, version 2 · a: open")
        pane = await _open(pilot, edited["message"]["id"])
        await wait_text(pilot, "version 2 of 2", "Wednesday")
        assert pane.query_one(Markdown).display, "a document is rendered as Markdown"
        await pilot.press("left_square_bracket")
        await wait_text(pilot, "version 1 of 2", "Tuesday")
        await pilot.press("right_square_bracket", "d")
        await wait_text(pilot, "diff with version 1", "-- ship on **Tuesday**", "+- ship on **Wednesday**")
        await pilot.press("c")
        await pilot.press(*"looks right", "enter")
        await wait_text(pilot, "Comments on version 2 (1)", "looks right")
        got = await (await team.person("bob")).call("get_artifact", workspace=team.ws, artifact=made["artifact"]["id"])
        assert [c["text"] for c in got["comments"]] == ["looks right"]
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, ArtifactScreen), what="closed")


def test_artifact_pane_diff_snapshot(snap_compare, sync_team):
    holder = {}
    holder["made"], holder["edited"] = seeded(sync_team, _artifact(sync_team))

    async def before(pilot):
        await _open(pilot, holder["edited"]["message"]["id"])
        await pilot.press("d")
        await wait_text(pilot, "diff with version 1")
        quiet(pilot)
        await pilot.pause(0.1)

    assert snap_compare(sync_team.app(), terminal_size=SIZE, run_before=before)


async def test_p_saves_the_version_shown_as_a_pdf(team):
    """Issue 23: "a PDF of an artifact", saved from the artifact pane (the same bytes as the `artifact_pdf` tool's)."""
    import io

    import pypdf

    made, edited = await _artifact(team)
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        await _open(pilot, edited["message"]["id"])
        await wait_text(pilot, "version 2 of 2")
        await pilot.press("left_square_bracket")
        await wait_text(pilot, "version 1 of 2")
        await pilot.press("p")
        target = app.config.exports_dir / "Release-plan-v1.pdf"
        await wait_for(pilot, target.exists, what="the PDF")
        reader = pypdf.PdfReader(io.BytesIO(target.read_bytes()), strict=True)
        text = reader.pages[0].extract_text()
        assert reader.metadata.title == "Release plan" and "ship on **Tuesday**" in text
