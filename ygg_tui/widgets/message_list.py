"""The message list: a Line API widget that renders only the rows on screen.

Like toolong's log view, it is a `ScrollView` with `render_line`: it keeps the
messages (plain dicts, oldest first), the height of each at the current width and
the running line offsets; a row is found with one bisect and drawn from a small
cache of rendered messages. 100,000 messages cost a list of ints, not 100,000
widgets. Scrolling near the top asks for the next older page (`LoadOlder`); the
page goes in above without moving what is on screen.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import OrderedDict
from datetime import datetime
from itertools import accumulate
from typing import Callable, Iterable

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ..keymap import bind
from ..messages import ArtifactOpened, CardOpened, FileSave, LoadOlder, ReachedEnd, ReplyTo, Revise, ThreadOpened
from ..state import newer_revision
from ..words import NOTICE_WORDS, STATE_MARK, assignment_line
from . import result_card
from .thread_card import artifact_line, card_lines, file_line

SYSTEM = "system.ygg"
POLL = "closure_poll"  # shown as one line: "⚙ asked X whether they are done"
INDENT = 2
GUTTER = 1  # a column left of every message: "▌" on the selected one's rows
CACHE = 512  # rendered messages kept


def wrap(text: str, width: int) -> list[str]:
    """Greedy word wrap to `width` cells; long words are cut. Fast for the common short line."""
    width = max(width, 8)
    out: list[str] = []
    for para in text.split("\n"):
        ascii_ = para.isascii()
        size = len(para) if ascii_ else cell_len(para)
        if size <= width:
            out.append(para)
            continue
        measure = len if ascii_ else cell_len
        line, used = "", 0
        for word in para.split(" "):
            w = measure(word)
            while w > width:  # a word longer than the line: cut it
                if line:
                    out.append(line)
                    line, used = "", 0
                cut = width if ascii_ else _cut(word, width)
                out.append(word[:cut])
                word = word[cut:]
                w = measure(word)
            need = w if not line else used + 1 + w
            if need <= width:
                line = word if not line else f"{line} {word}"
                used = need
            else:
                out.append(line)
                line, used = word, w
        out.append(line)
    return out


def count_lines(text: str, width: int) -> int:
    """len(wrap(text, width)), without building the lines (the common ASCII case)."""
    width = max(width, 8)
    if not text.isascii():
        return len(wrap(text, width))
    total = 0
    for para in text.split("\n"):
        if len(para) <= width:
            total += 1
            continue
        lines, used, has = 0, 0, False
        for w in map(len, para.split(" ")):
            if w > width:
                return len(wrap(text, width))
            need = used + 1 + w if has else w
            if need <= width:
                has = has or w > 0
                used = need
            else:
                lines += 1
                used, has = w, w > 0
        total += lines + 1
    return total


def _cut(word: str, width: int) -> int:
    used = 0
    for i, ch in enumerate(word):
        used += cell_len(ch)
        if used > width:
            return max(i, 1)
    return len(word)


def clock(iso: str) -> str:
    try:
        return datetime.fromisoformat(iso.replace("Z", "+00:00")).astimezone().strftime("%H:%M")
    except (ValueError, AttributeError):
        return ""


class MessageList(ScrollView, can_focus=True):
    """Messages of one topic (or a filtered feed), virtualized."""

    COMPONENT_CLASSES = {
        "message-list--author", "message-list--me", "message-list--agent", "message-list--meta",
        "message-list--request", "message-list--response", "message-list--inform", "message-list--woke",
        "message-list--notice", "message-list--notice-text", "message-list--cursor", "message-list--reply",
        "message-list--empty", "message-list--state", "message-list--handoff", "message-list--edited",
        "message-list--cursor-mark", "message-list--thread-ongoing", "message-list--thread-resolved",
        "message-list--thread-abandoned", "message-list--thread-summary", "message-list--artifact",
        "message-list--file",
    }

    BINDINGS = [
        bind("messages.down", "cursor_down", "Next msg"),
        bind("messages.up", "cursor_up", "Prev msg"),
        bind("messages.reply", "reply"),
        bind("messages.first", "first", show=False),
        bind("messages.last", "last", show=False),
        bind("messages.edit", "revise('edit')", "Edit"),
        bind("messages.delete", "revise('delete')", "Delete", show=False),
        bind("messages.versions", "revise('versions')", "Versions", show=False),
        bind("messages.thread", "thread", "Thread", show=False),
        bind("messages.artifact", "artifact", "Artifact", show=False),
        bind("messages.card", "card", "Card", show=False),
        bind("messages.save_file", "save_file", "Save file", show=False),
        Binding("pageup", "page_up", show=False),
        Binding("pagedown", "page_down", show=False),
    ]

    DEFAULT_CSS = """
    MessageList { background: $surface; }
    MessageList > .message-list--author { text-style: bold; color: $text; }
    MessageList > .message-list--me { text-style: bold; color: $accent; }
    MessageList > .message-list--agent { text-style: bold; color: $secondary; }
    MessageList > .message-list--meta { color: $text-muted; }
    MessageList > .message-list--request { color: $warning; }
    MessageList > .message-list--response { color: $success; }
    MessageList > .message-list--inform { color: $text-muted; }
    MessageList > .message-list--woke { color: $warning; text-style: bold; }
    MessageList > .message-list--state { color: $text-muted; }
    MessageList > .message-list--notice { color: $warning; text-style: italic; background: $warning 10%; }
    MessageList > .message-list--notice-text { color: $text-muted; text-style: italic; background: $warning 10%; }
    MessageList > .message-list--cursor { background: $accent 25%; }
    MessageList > .message-list--cursor-mark { color: $accent; text-style: bold; }
    MessageList > .message-list--reply { color: $text-muted; }
    MessageList > .message-list--handoff { color: $accent; text-style: bold; }
    MessageList > .message-list--empty { color: $text-muted; text-style: italic; }
    MessageList > .message-list--edited { color: $text-muted; text-style: italic; }
    MessageList > .message-list--thread-ongoing { color: $accent; }
    MessageList > .message-list--thread-resolved { color: $success; }
    MessageList > .message-list--thread-abandoned { color: $error; }
    MessageList > .message-list--thread-summary { color: $text; text-style: italic; }
    MessageList > .message-list--artifact { color: $accent; text-style: bold; }
    MessageList > .message-list--file { color: $secondary; }
    """

    cursor: reactive[int] = reactive(-1, always_update=True)

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None,
                 namer: Callable[[str], str] | None = None, me: str = "", show_clock: bool = True,
                 woke: dict[str, list[str]] | None = None, kinds: dict[str, str] | None = None,
                 empty: str = "No messages here yet.", thread_of: Callable[[str], dict | None] | None = None):
        super().__init__(name=name, id=id, classes=classes)
        self.namer = namer or (lambda p: p)
        self.me = me
        self.show_clock = show_clock
        self.woke = woke if woke is not None else {}
        self.kinds = kinds if kinds is not None else {}
        self.empty = empty
        self.thread_of = thread_of or (lambda tid: None)  # a side thread's conversation (its state, its members)
        self.previews: dict[str, list[dict]] = {}  # a side thread's messages, loaded when its card is expanded
        self.expanded: set[str] = set()  # messages whose thread cards are expanded
        self.key: str | None = None  # which thread is shown (for LoadOlder)
        self.more = False  # older pages exist
        # a page is on its way (not Textual's `loading`: that one covers the list with a spinner and takes the focus
        # away, so the keys pressed while an older page came were lost)
        self.fetching = False
        self._msgs: list[dict] = []
        self._index: dict[str, int] = {}
        self._heights: list[int] = []
        self._offsets: list[int] = []
        self._total = 0
        self._width = 0
        self._cache: OrderedDict[tuple[str, int], list[Strip]] = OrderedDict()
        self._card_cache: dict[str, tuple] = {}  # message id -> (its card's key, its card's lines)
        self._follow = True

    # --- content ---

    @property
    def messages(self) -> list[dict]:
        return self._msgs

    def __len__(self) -> int:
        return len(self._msgs)

    def set_messages(self, msgs: Iterable[dict], key: str | None = None, more: bool = False) -> None:
        """Show these messages (oldest first), scrolled to the newest. The same thread drawn again (its first page
        arriving, a reconnect's refresh, the operator's feed redrawn live: key None) keeps the selected message
        selected and in view: the selection is the message, not its row (a redraw between j and v lost it)."""
        keep = self.selected["id"] if key == self.key and self.selected else None
        self.key, self.more = key, more
        self._msgs = list(msgs)
        self._cache.clear()
        self.cursor = -1
        self._relayout()
        i = self._index.get(keep) if keep else None
        if i is None:
            self._to_end()
        else:
            self._follow = False
            self.cursor = i

    def append(self, msgs: list[dict]) -> None:
        """Live messages at the bottom (already deduplicated by the store)."""
        seen: set[str] = set()
        msgs = [m for m in msgs if m["id"] not in self._index and not (m["id"] in seen or seen.add(m["id"]))]
        if not msgs:
            return
        follow = self._follow or self.is_at_end()
        if self._msgs and any(m["created_at"] < self._msgs[-1]["created_at"] for m in msgs):
            chosen = self.selected
            self._msgs = sorted(self._msgs + msgs, key=lambda m: m["created_at"])
            self._relayout()
            if chosen is not None:  # (the same message stays selected, at its new row)
                self.set_reactive(MessageList.cursor, self._index[chosen["id"]])
        else:
            w = self._text_width()
            for m in msgs:
                self._index[m["id"]] = len(self._msgs)
                self._msgs.append(m)
                h = self._height(m, w)
                self._heights.append(h)
                self._offsets.append(self._total)
                self._total += h
            self._update_virtual()
        if follow:
            self._to_end()
        self.refresh()

    def prepend(self, msgs: list[dict], more: bool) -> None:
        """An older page above; what is on screen stays where it is."""
        self.more = more
        if not msgs:
            self.refresh()
            return
        w = self._text_width()
        heights = [self._height(m, w) for m in msgs]
        added = sum(heights)
        self._msgs[:0] = msgs
        self._heights[:0] = heights
        y = self.scroll_y
        self._reindex()
        if self.cursor >= 0:
            self.set_reactive(MessageList.cursor, self.cursor + len(msgs))
        self.scroll_to(y=y + added, animate=False)
        self.refresh()

    def replace(self, msg: dict) -> None:
        """A message shown here, edited or deleted since: drawn again as it is now, in place (an older copy, come
        late, changes nothing)."""
        i = self._index.get(msg["id"])
        if i is None or not newer_revision(msg, self._msgs[i]):
            return
        follow = self._follow or self.is_at_end()
        self._msgs[i] = msg
        self._heights[i] = self._height(msg, self._text_width())
        self._reindex()
        self.refresh_message(msg["id"])
        if follow:
            self._to_end()

    def refresh_message(self, mid: str) -> None:
        for key in [k for k in self._cache if k[0] == mid]:
            del self._cache[key]
        self.refresh()

    def is_at_end(self) -> bool:
        return self.scroll_y >= self.max_scroll_y - 1

    @property
    def following(self) -> bool:
        """Whether the newest message is in view (and what comes is shown as it comes), not scrolled up."""
        return self._follow or self.is_at_end()

    # --- layout ---

    def _text_width(self) -> int:
        return max(self.scrollable_content_region.width - GUTTER - INDENT, 8)

    def _height(self, m: dict, width: int) -> int:
        if m.get("notice") == POLL:
            return 1
        cards = (len(self._cards(m, width)) if m.get("threads") else 0) + (1 if m.get("artifact") else 0) \
            + len(m.get("files") or ())
        if m.get("card"):
            cards += len(self._result_card(m, width))
        text = m.get("text") or ""  # (drawable: the store made it so)
        if "\n" not in text and len(text) <= width and text.isascii():
            return (2 if text else 1) + cards
        return (1 + count_lines(text, width) if text else 1) + cards

    def _cards(self, m: dict, width: int) -> list[tuple[str, str]]:
        return card_lines(m, self.thread_of, self.previews, m["id"] in self.expanded, self.namer, width)

    def _result_card(self, m: dict, width: int) -> list[Strip]:
        """A message's result card drawn with Rich (widgets/result_card.py), kept while the card is the same."""
        card = m["card"]
        key = (m["id"], width, card.get("state"), card.get("state_at"))
        got = self._card_cache.get(m["id"])
        if got is None or got[0] != key:
            base = self.rich_style
            got = self._card_cache[m["id"]] = (key, result_card.strips(
                card, width, self.app.console, base, self.namer,
                (lambda iso: clock(iso)) if self.show_clock else (lambda iso: "")))
        return got[1]

    def refresh_threads(self) -> None:
        """A side thread's state, summary or messages changed: the cards are drawn again."""
        if any(m.get("threads") for m in self._msgs):
            follow = self._follow or self.is_at_end()
            self._relayout()
            self.refresh()
            if follow:
                self._to_end()

    def _relayout(self) -> None:
        """Heights of every message at the current width (a width change, or a new list)."""
        w = self._text_width()
        self._width = w
        self._heights = [self._height(m, w) for m in self._msgs]
        self._cache.clear()
        self._reindex()

    def _reindex(self) -> None:
        """Offsets and ids from the known heights: cheap, even for 100,000 messages."""
        self._index = {m["id"]: i for i, m in enumerate(self._msgs)}
        self._offsets = [0, *accumulate(self._heights)][:-1] if self._heights else []
        self._total = self._offsets[-1] + self._heights[-1] if self._heights else 0
        self._update_virtual()

    def _update_virtual(self) -> None:
        self.virtual_size = Size(self.scrollable_content_region.width, max(self._total, 1))

    def on_resize(self, event: events.Resize) -> None:
        self._width_changed()

    def _width_changed(self) -> None:
        if self._text_width() != self._width:
            end = self._follow or self.is_at_end()
            self._relayout()
            if end:
                self._to_end()

    def _to_end(self) -> None:
        self._follow = True
        self.scroll_to(y=self.max_scroll_y, animate=False)
        self.call_after_refresh(self._settle_end)

    def _settle_end(self) -> None:
        if self._follow:
            self.scroll_to(y=self.max_scroll_y, animate=False)

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        if new < old:
            self._follow = False
        if new >= self.max_scroll_y - 1:
            if not self._follow:
                self.post_message(ReachedEnd())
            self._follow = True
        self._older_if_near_top(new)

    def _older_if_near_top(self, y: float) -> None:
        """Within a screen of the top, with older pages to come: ask for the next one (one at a time)."""
        if self.more and not self.fetching and self.key and y <= self.scrollable_content_region.height:
            self.fetching = True
            self.post_message(LoadOlder(self.key))

    # --- drawing ---

    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(f"message-list--{name}")

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        base = self.rich_style
        line = int(self.scroll_y) + y
        if not self._msgs:
            if y == 0:
                text = "  loading…" if self.fetching else f"  {self.empty}"
                return Strip([Segment(text, base + self._style("empty"))]).extend_cell_length(width, base).crop(0, width)
            return Strip.blank(width, base)
        if line >= self._total or line < 0:
            return Strip.blank(width, base)
        if y == 0 and self._text_width() != self._width:  # the scrollbar came or went (no resize): heights again
            self.call_later(self._width_changed)
        i = bisect_right(self._offsets, line) - 1
        strips = self._render(i, width - GUTTER)
        row = line - self._offsets[i]
        strip = strips[row] if row < len(strips) else Strip.blank(width - GUTTER, base)
        if i != self.cursor:
            return Strip([Segment(" " * GUTTER, base), *strip], width)
        # the selected message, every cell of it: its background laid over each segment's own (laid under them, it
        # showed only where a segment had none), and a mark that shows in any theme
        cursor = self._style("cursor")
        over = Style(bgcolor=cursor.bgcolor)
        mark = Segment("▌" + " " * (GUTTER - 1), base + self._style("cursor-mark") + over)
        return Strip([mark, *Segment.apply_style(strip, post_style=over)], width)

    def _render(self, i: int, width: int) -> list[Strip]:
        m = self._msgs[i]
        key = (m["id"], width)
        got = self._cache.get(key)
        if got is not None:
            self._cache.move_to_end(key)
            return got
        strips = self._draw(m, width)
        self._cache[key] = strips
        if len(self._cache) > CACHE:
            self._cache.popitem(last=False)
        return strips

    def _draw(self, m: dict, width: int) -> list[Strip]:
        base = self.rich_style
        notice = m.get("author") == SYSTEM
        st = self._style
        segs: list[Segment] = []
        text_style = base + (st("notice-text") if notice else Style())
        if notice:
            head = base + st("notice")
            kind = m.get("notice") or "notice"
            segs.append(Segment(f"⚙ system.ygg · {NOTICE_WORDS.get(kind, kind)}", head))
            if m.get("to"):
                segs.append(Segment(" → " + ", ".join(self.namer(p) for p in m["to"]), head))
        else:
            author = m.get("author", "")
            who = "me" if author == self.me else "agent" if self.kinds.get(author) == "agent" else "author"
            segs.append(Segment(self.namer(author), base + st(who)))
            if m.get("to"):
                segs.append(Segment(" → " + ", ".join(self.namer(p) for p in m["to"]), base + st("meta")))
            mtype = m.get("type") or "inform"
            segs.append(Segment("  ", base))  # (its own background: unstyled, it was a hole in truecolor)
            if m.get("handoff"):  # seed 004: "a handoff is something you can see rather than infer"
                segs.append(Segment("⇢ handoff", base + st("handoff")))
            else:
                segs.append(Segment(mtype, base + st(mtype if mtype in ("request", "response", "inform") else "meta")))
            state = m.get("state")
            if state:
                segs.append(Segment(f" {STATE_MARK.get(state, '')} {state}", base + st("state")))
            if m.get("in_reply_to"):
                segs.append(Segment("  ↳ reply", base + st("reply")))
        woke = self.woke.get(m["id"])
        if woke:
            segs.append(Segment("  ⚡ woke " + ", ".join(self.namer(p) for p in woke), base + st("woke")))
        if m.get("assignment"):
            segs.append(Segment("  " + assignment_line(m["assignment"], self.namer), base + st("meta")))
        if m.get("malformed"):
            segs.append(Segment("  (malformed: kept as an inform)", base + st("meta")))
        if m.get("deleted"):
            segs.append(Segment("  (deleted)", base + st("edited")))
        elif m.get("version"):
            segs.append(Segment("  (edited)", base + st("edited")))
        if self.show_clock:
            segs.append(Segment("  " + clock(m.get("created_at", "")), base + st("meta")))
        fill = text_style if notice else base
        if m.get("notice") == POLL:  # one line: the header says whom it asked, the text is the same every time
            return [Strip(segs).crop(0, width).extend_cell_length(width, fill)]
        head_strip = Strip(segs).crop(0, width).extend_cell_length(width, fill)
        out = [head_strip]
        text = m.get("text") or ""  # (drawable: the store made it so)
        if text:
            for line in wrap(text, width - INDENT):
                out.append(Strip([Segment(" " * INDENT + line, text_style)]).crop(0, width).extend_cell_length(width, fill))
        if m.get("artifact"):  # seed 003 §8: the artifact is viewed on its own (a), not as a wall of text here
            line = artifact_line(m["artifact"])
            out.append(Strip([Segment(line, base + st("artifact"))]).crop(0, width).extend_cell_length(width, base))
        for f in m.get("files") or ():  # issue 21: each file sent with it, its name, size and type (s saves it)
            out.append(Strip([Segment(file_line(f), base + st("file"))]).crop(0, width).extend_cell_length(width, base))
        if m.get("card"):  # seed 003 §11: a structured result drawn as a card, as the server stamped it
            out += self._result_card(m, width)
        if m.get("threads"):  # seed 003 §5: "a small expandable thread card right under that message"
            for line, style in self._cards(m, width):
                out.append(Strip([Segment(line, base + st(style))]).crop(0, width).extend_cell_length(width, base))
        return out

    def notify_style_update(self) -> None:
        """A theme switch (or any CSS change): the rows drawn in the old colours go."""
        super().notify_style_update()
        self._cache.clear()
        self._card_cache.clear()
        self.refresh()

    # --- moving ---

    def watch_cursor(self, old: int, new: int) -> None:
        self.refresh()
        if 0 <= new < len(self._msgs):
            top, h = self._offsets[new], self._heights[new]
            view = self.scrollable_content_region.height
            if top < self.scroll_y:
                self.scroll_to(y=top, animate=False)
            elif top + h > self.scroll_y + view:
                self.scroll_to(y=top + h - view, animate=False)

    @property
    def selected(self) -> dict | None:
        return self._msgs[self.cursor] if 0 <= self.cursor < len(self._msgs) else None

    def select_id(self, mid: str) -> bool:
        i = self._index.get(mid)
        if i is None:
            return False
        self.cursor = i
        return True

    def action_cursor_down(self) -> None:
        if not self._msgs:
            return
        if self.cursor < 0:
            self.cursor = len(self._msgs) - 1
        elif self.cursor < len(self._msgs) - 1:
            self.cursor += 1
        else:
            self.scroll_end(animate=False)

    def action_cursor_up(self) -> None:
        if not self._msgs:
            return
        if self.cursor < 0:
            self.cursor = len(self._msgs) - 1
        elif self.cursor > 0:
            self.cursor -= 1
        else:
            self.scroll_home(animate=False)

    def action_page_up(self) -> None:
        self.scroll_to(y=max(0, self.scroll_y - self.scrollable_content_region.height), animate=False)

    def action_page_down(self) -> None:
        self.scroll_to(y=self.scroll_y + self.scrollable_content_region.height, animate=False)

    def action_first(self) -> None:
        """The first message loaded, and the page before it: asked for here too, as the view may not move (it was
        at the top already, or the list was still settling at its end, which then took the view back down)."""
        if self._msgs:
            self._follow = False
            self.cursor = 0
            self._older_if_near_top(self.scroll_y)

    def action_last(self) -> None:
        if self._msgs:
            self.cursor = len(self._msgs) - 1

    def action_revise(self, how: str) -> None:
        """e, d, v: the selected message to edit, delete, or show the versions of (the screen asks and does it)."""
        m = self.selected
        if m is None:
            self.app.notify("Select a message first (j/k or a click).", title=how)
            return
        self.post_message(Revise(m, how))

    def action_thread(self) -> None:
        """x: the selected message's side-thread cards expanded (their summary and latest messages) or collapsed."""
        m = self.selected
        if m is None or not m.get("threads"):
            self.app.notify("Select a message with a side thread (its card is under it).", title="Side thread")
            return
        opened = m["id"] not in self.expanded
        (self.expanded.add if opened else self.expanded.discard)(m["id"])
        self.refresh_threads()
        if opened:
            self.post_message(ThreadOpened(m))

    def action_artifact(self) -> None:
        """a: the artifact the selected message posted, edited or commented on, in its pane."""
        m = self.selected
        if m is None or not m.get("artifact"):
            self.app.notify("Select a message that posted an artifact (▣ under it).", title="Artifact")
            return
        self.post_message(ArtifactOpened(m))

    def action_card(self) -> None:
        """b: a button of the selected message's result card, to press (the screen asks which)."""
        m = self.selected
        if m is None or not (m.get("card") or {}).get("buttons"):
            self.app.notify("Select a message with a result card that has buttons.", title="Card")
            return
        self.post_message(CardOpened(m))

    def action_save_file(self) -> None:
        """s: the files sent with the selected message, one saved to a local path (the screen asks where)."""
        m = self.selected
        if m is None or not m.get("files"):
            self.app.notify("Select a message with a file (▤ under it).", title="Save file")
            return
        self.post_message(FileSave(m))

    def action_reply(self) -> None:
        """The selected message, or the last one when none is (it did nothing, and the reply typed next fired
        commands)."""
        m = self.selected or (self._msgs[-1] if self._msgs else None)
        if m is not None:
            self.post_message(ReplyTo(m))

    def on_click(self, event: events.Click) -> None:
        line = int(self.scroll_y) + event.y
        if 0 <= line < self._total:
            self.cursor = bisect_right(self._offsets, line) - 1

    def region_of(self, i: int) -> Region:
        return Region(0, self._offsets[i], self.scrollable_content_region.width, self._heights[i])
