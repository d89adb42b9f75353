"""The virtualized message list alone (no server): 100,000 messages, rows drawn on demand,
older pages in above without moving the screen, wrap heights exact."""

import random

from textual.app import App, ComposeResult

from ygg_tui.widgets.message_list import MessageList, count_lines, wrap


def msg(i: int, text: str | None = None) -> dict:
    return {"id": f"m{i}", "author": "human.a" if i % 2 else "agent.r", "type": "inform", "to": [],
            "text": text if text is not None else f"message {i}" + (" with more words to wrap" * 6 if i % 7 == 0 else ""),
            "created_at": f"2026-01-01T00:00:{i // 1_000_000:02d}.{i % 1_000_000:06d}Z"}


class ListApp(App):
    def compose(self) -> ComposeResult:
        yield MessageList(id="ml", namer=lambda p: p.split(".")[-1], show_clock=False)


async def test_hundred_thousand_messages_only_draw_what_is_visible():
    """Speed is measured by `python -m ygg_tui.bench`; here, what makes it fast: rows drawn on demand."""
    app = ListApp()
    async with app.run_test(size=(100, 30)) as pilot:
        ml = app.query_one(MessageList)
        ml.set_messages([msg(i) for i in range(1000, 101_000)], key="t", more=False)
        await pilot.pause()
        assert len(ml) == 100_000 and ml.is_at_end()
        # only the rows on screen were drawn
        assert len(ml._cache) < 40
        bottom = ml.render_line(ml.scrollable_content_region.height - 1).text
        assert "message 100999" in bottom or "message 100999" in ml.render_line(ml.scrollable_content_region.height - 2).text
        ml.focus()
        for _ in range(20):
            await pilot.press("k")
        assert ml.selected["id"] == "m100980"
        # an older page goes in above; the selected message keeps its place on screen
        row_before = ml._offsets[ml.cursor] - ml.scroll_y
        ml.prepend([msg(i) for i in range(900, 1000)], more=True)
        await pilot.pause()
        assert ml.selected["id"] == "m100980"
        assert ml._offsets[ml.cursor] - ml.scroll_y == row_before
        assert ml.messages[0]["id"] == "m900" and len(ml) == 100_100
        # live messages at the bottom, once each
        ml.append([msg(200_000), msg(200_000)])
        assert len(ml) == 100_101


def test_wrap_heights_are_exact():
    rng = random.Random(7)
    words = ["a", "bb", "", "dddddddddd", "e" * 70, "ü", "漢字漢字"]
    for _ in range(3000):
        t = " ".join(rng.choice(words) for _ in range(rng.randint(0, 30)))
        if rng.random() < 0.3:
            t = t.replace(" ", "\n", 2)
        w = rng.randint(8, 50)
        lines = wrap(t, w)
        assert count_lines(t, w) == len(lines)
        from rich.cells import cell_len
        assert all(cell_len(x) <= w for x in lines)


async def test_the_selected_message_is_drawn_whole_and_no_header_has_a_hole():
    """Issue 20, defect 3: the cursor's background was drawn under segments that carry their own, so only a 2-cell
    patch of the header changed; in truecolor every header had a 2-cell hole of the terminal's own background."""
    app = ListApp()
    async with app.run_test(size=(80, 20)) as pilot:
        ml = app.query_one(MessageList)
        ml.set_messages([dict(msg(i), type="request", state="working", to=["agent.r"]) for i in range(1, 4)], key="t")
        await pilot.pause()
        ml.focus()
        await pilot.press("k")
        assert ml.cursor == 2
        cursor_bg = ml._style("cursor").bgcolor
        top = ml._offsets[2] - int(ml.scroll_y)
        for row in range(top, top + ml._heights[2]):
            segments = list(ml.render_line(row))
            assert [s for s in segments if s.style is None or s.style.bgcolor != cursor_bg] == [], cursor_bg
            assert segments[0].text.startswith("▌")  # a mark that shows in every theme, colours or none
        for row in range(0, top):  # the others: every cell on the list's own background
            segments = list(ml.render_line(row))
            assert all(s.style is not None and s.style.bgcolor == ml.rich_style.bgcolor for s in segments), segments


async def test_the_selection_is_the_message_not_its_row():
    """A redraw of the same list (key None: the operator's feed) and a live message that sorts in above keep the
    same message selected (issue 20: the live feed's redraw lost the selection between j and v)."""
    app = ListApp()
    async with app.run_test(size=(80, 20)) as pilot:
        ml = app.query_one(MessageList)
        ml.set_messages([msg(i) for i in range(10, 20)])
        ml.focus()
        assert ml.select_id("m15")
        ml.set_messages([msg(i) for i in range(10, 21)])  # drawn again, one more
        assert ml.selected["id"] == "m15"
        ml.append([msg(5)])  # late, older than the rest: it goes in above
        await pilot.pause()
        assert ml.messages[0]["id"] == "m5" and ml.selected["id"] == "m15"
