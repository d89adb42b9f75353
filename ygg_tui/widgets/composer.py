"""The composer: Enter sends, ctrl+j (or shift+enter) starts a new line; type and state are chosen
with keys (or a click on them); `@` completes participants and `group:` completes groups.

Leading mentions address the message (seed 004: the name has to be at the start):
`@researcher @bob group:reviewers can you…` sends `to: ["researcher", "@bob", "group:reviewers"]`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import OptionList, Static, TextArea
from textual.widgets.option_list import Option

from ..keymap import bind, hint
from ..messages import LeftComposer, Submit
from ..words import REFUSALS, STATE_MARK, printable, refusal_sentence

TYPES = ("request", "response", "inform")
STATES = ("working", "waiting", "needs_human", "done", None)
DEFAULT_STATE = "working"  # every message starts here (issue 20: a state chosen once stuck, and closed the next topic)
MENTION = re.compile(r"(?:^|(?<=\s))(@[\w.\-]*|group:[\w.\-]*)$")
# Keys Textual names without finding their character again (`keys.key_to_character`): typed here all the same.
TYPED = {"slash": "/", "plus": "+", "minus": "-", "at": "@", "backslash": "\\", "underscore": "_"}


def leading_mentions(text: str) -> list[str]:
    """The @names and group:names the message starts with."""
    out = []
    for tok in text.split():
        tok = tok.rstrip(",:;")
        if tok.startswith("@") and len(tok) > 1 or tok.startswith("group:") and len(tok) > 6:
            out.append(tok)
        else:
            break
    return out


class ComposerArea(TextArea):
    """The text box. Its keys are bindings with ids, so they can be remapped."""

    BINDINGS = [
        bind("composer.send", "submit", priority=True),
        bind("composer.newline", "newline", priority=True),
        bind("composer.complete", "complete", show=False, priority=True),
        bind("composer.done", "done", priority=True),
        bind("composer.cancel", "cancel", show=False),
    ]

    @dataclass
    class Navigate(Message):
        delta: int

    # The three key actions are priority bindings: they run as the app reads the key, while the characters typed
    # before it still wait in this box's queue (a fast typist, a paste, a slow link deliver keys together). Each
    # runs from that queue instead (`call_later`), after them: else a burst "hi", Enter sent what the box held
    # before the burst and lost the rest, and ctrl+j put its newline ahead of the characters before it.
    def action_submit(self) -> None:
        self.call_later(self._submit)

    def action_newline(self) -> None:
        self.call_later(self._newline)

    def action_complete(self) -> None:
        self.call_later(self._complete)

    def action_done(self) -> None:
        composer = self._composer()
        if composer is not None:
            composer.toggle_done()

    def _submit(self) -> None:
        composer = self._composer()
        if composer is not None and composer.completing:
            composer.accept_completion()
            return
        composer.submit() if composer is not None else None

    def _newline(self) -> None:
        start, end = self.selection
        self._replace_via_keyboard("\n", start, end)

    def _complete(self) -> None:
        """Tab completes, or does nothing: it moved the focus on, and the words typed next fired commands."""
        composer = self._composer()
        if composer is not None and composer.completing:
            composer.accept_completion()
        elif composer is not None:
            composer.finish_word()

    def action_cancel(self) -> None:
        composer = self._composer()
        if composer is not None:
            composer.cancel()

    def on_focus(self) -> None:
        self._said()

    def on_blur(self) -> None:
        self._said()

    def _said(self) -> None:
        """The meta line says whether the keys write here or are commands."""
        composer = self._composer()
        if composer is not None:
            composer.call_later(composer._meta)

    def check_consume_key(self, key: str, character: str | None = None) -> bool:
        """A character key types here, so the screen's binding on it is no key here (the footer offered
        "/ Search" while / typed a slash)."""
        return super().check_consume_key(key, character or TYPED.get(key))

    async def _on_key(self, event: events.Key) -> None:
        # Keys reach this box in the order typed, each after the one before has run. Esc leaves the box at once, here
        # (as a binding it ran only once the key had gone up to the app, after the keys behind it were typed in);
        # a key that comes after it is no text any more: it goes on up, to the screen's bindings (esc, h typed
        # together wrote an "h" here).
        if self.screen.focused is not self:
            event.prevent_default()  # (not TextArea's: it would type it; not stopped: it goes up)
            return
        if any(b.action == "cancel" for b in self._bindings.key_to_bindings.get(event.key, ())):
            event.stop()
            event.prevent_default()
            self.action_cancel()
            return
        composer = self._composer()
        if composer is not None and composer.completing and event.key in ("up", "down"):
            event.stop()
            event.prevent_default()
            composer.move_completion(-1 if event.key == "up" else 1)
            return
        await super()._on_key(event)

    def _composer(self) -> "Composer | None":
        for node in self.ancestors:
            if isinstance(node, Composer):
                return node
        return None


class Composer(Vertical):
    """Reply bar, meta line (type, state, recipients), text box, completions, refusal."""

    BINDINGS = [
        bind("composer.type", "cycle_type", "Type"),
        bind("composer.state", "cycle_state", "State"),
    ]

    mtype: reactive[str] = reactive("request")
    state: reactive[str | None] = reactive(DEFAULT_STATE)
    reply_to: reactive[dict | None] = reactive(None)
    new_topic: reactive[bool] = reactive(False)
    attached: reactive[tuple] = reactive(())  # names of the files that go with the next message (screens/files.py)

    def __init__(self, *, candidates=None, namer=None, **kw):
        super().__init__(**kw)
        self.candidates = candidates or (lambda: [])  # () -> [(completion, description)]
        self.namer = namer or (lambda p: p)
        self.completing = False
        self._in_flight: list[str] = []  # first lines of the messages sent and not answered yet
        self._addressed: str | None = None  # the `@name ` put in front by `address`, while it may still be untouched
        self._said_to = ""  # the recipients the meta line shows
        # no topic to write in (an empty conversation, a direct one to start): a new topic is no choice to cancel, so
        # esc leaves the composer at once (it took two, the first rubbing out "new topic" for nothing)
        self.only_new = False

    def compose(self) -> ComposeResult:
        yield Static("", id="reply-bar")
        with Horizontal(id="composer-meta"):
            yield Static("", id="meta-focus")
            yield Static("", id="meta-type")
            yield Static("", id="meta-to")
            yield Static("", id="meta-state")
            yield Static("", id="meta-topic")
            yield Static("", id="meta-hint")
        yield OptionList(id="completions")
        yield ComposerArea(id="composer-text", soft_wrap=True, show_line_numbers=False, compact=True,
                           placeholder="Write… @name first addresses; ⏎ sends")
        yield Static("", id="sending")
        yield Static("", id="undo")
        yield Static("", id="refusal")

    def on_mount(self) -> None:
        self.query_one("#completions").display = False
        self.query_one("#reply-bar").display = False
        self.query_one("#sending").display = False
        self.query_one("#undo").display = False
        self.query_one("#refusal").display = False
        self._meta()

    @property
    def area(self) -> ComposerArea:
        return self.query_one(ComposerArea)

    @property
    def text(self) -> str:
        return self.area.text

    def clear(self) -> None:
        self.area.load_text("")
        self.done()

    def take(self, text: str) -> None:
        """`text` is being sent: out of the box, keeping whatever was typed after it."""
        if self.text.startswith(text):
            self._set_text(self.text[len(text):].lstrip("\n"))

    def give_back(self, text: str) -> None:
        """`text` was not sent: back in front of whatever was typed since."""
        if not self.is_attached:  # (the screen went away with the send)
            return
        rest = self.text
        self._set_text(text + ("\n" + rest if rest else ""))

    def _set_text(self, text: str) -> None:
        self.area.load_text(text)
        self.area.move_cursor(self.area.document.end)

    def done(self) -> None:
        """A message went out: the next one starts from the defaults (a request, working); its reply, new topic, type
        and state are spent."""
        self.reply_to = None
        self.new_topic = False
        self.mtype = "request"
        self.state = DEFAULT_STATE
        self._addressed = None
        self.hide_refusal()

    def toggle_done(self) -> None:
        """One key marks my part done (and takes it back): ctrl+g went round four states to get there."""
        self.state = DEFAULT_STATE if self.state == "done" else "done"

    def address(self, name: str) -> None:
        """Start the text with `@name ` (seed 004: an @mention at the start addresses), to keep or rub out."""
        self._addressed = f"@{name} "
        self._set_text(self._addressed)

    def leave_topic(self) -> None:
        """Another topic (or a new one) is on screen: a reply, its response type and an `address` left untouched
        belonged to the one before."""
        self.reply_to = None
        self.mtype, self.state = "request", DEFAULT_STATE
        if self._addressed is not None and self.text == self._addressed:
            self._set_text("")
        self._addressed = None

    # --- meta line ---

    def _meta(self) -> None:
        if not self.children:
            return
        keys = getattr(self.app, "keymap_overrides", {})
        writing = self.area.has_focus
        self.query_one("#meta-focus", Static).update(
            Text("✎ writing ", style="bold") if writing else
            Text(f" keys are commands · {hint('ygg.compose', keys)} writes ", style="reverse bold"))
        self.query_one("#meta-type", Static).update(Text(f" {self.mtype}", style="bold"))
        self._meta_to()
        st = self.state
        self.query_one("#meta-state", Static).update(
            Text.assemble((" · ", "dim"), (f"{STATE_MARK.get(st)} {st or 'no state'}", "bold")))
        files = f" · ▤ {len(self.attached)} file{'s' if len(self.attached) != 1 else ''}" if self.attached else ""
        self.query_one("#meta-topic", Static).update(
            Text((" · new topic (asks for a title)" if self.new_topic else "") + files, style="bold"))
        done = hint("composer.done", keys)
        self.query_one("#meta-hint", Static).update(
            Text(f"   ⏎ send · {done} done · {hint('composer.type', keys)} type · {hint('composer.state', keys)} state"
                 f" · esc leaves", style="dim") if writing else "")
        bar = self.query_one("#reply-bar", Static)
        if self.reply_to:
            m = self.reply_to
            first = (m.get("text") or "").split("\n")[0][:60]  # (drawable: the store made it so)
            bar.update(Text.assemble(("↳ replying to ", "dim"), (self.namer(m.get("author", "")), "bold"),
                                     (" (esc cancels)", "dim italic"), (f": {first}", "dim")))
            bar.display = True
        else:
            bar.display = False

    def _meta_to(self) -> None:
        said = f" to {self.recipients_said()}"
        if said != self._said_to:  # (each key typed asks: the line is drawn again only when it changes)
            self._said_to = said
            self.query_one("#meta-to", Static).update(Text(said))

    def recipients_said(self) -> str:
        """Whom the text as it stands goes to: its leading @names, else the author replied to, else everyone."""
        named = [t.lstrip("@") for t in leading_mentions(self.text)]
        if named:
            return ", ".join(named)
        if self.reply_to:
            return self.namer(self.reply_to.get("author", ""))
        return "the new topic's conversation" if self.new_topic else "everyone in the topic"

    def watch_mtype(self) -> None:
        self._meta()

    def watch_state(self) -> None:
        self._meta()

    def watch_reply_to(self) -> None:
        self._meta()

    def watch_new_topic(self) -> None:
        self._meta()

    def watch_attached(self) -> None:
        self._meta()

    def action_cycle_type(self) -> None:
        self.mtype = TYPES[(TYPES.index(self.mtype) + 1) % len(TYPES)]

    def action_cycle_state(self) -> None:
        self.state = STATES[(STATES.index(self.state) + 1) % len(STATES)]

    @on(events.Click, "#meta-type")
    def _click_type(self) -> None:
        self.action_cycle_type()

    @on(events.Click, "#meta-state")
    def _click_state(self) -> None:
        self.action_cycle_state()

    def set_reply(self, m: dict) -> None:
        self.reply_to = m
        self.mtype, self.state = "response", DEFAULT_STATE
        self.area.focus()

    def cancel(self) -> None:
        if self.completing:
            self._close_completion()
        elif self.reply_to is not None or (self.new_topic and not self.only_new):
            self.reply_to = None
            self.new_topic = False
            self.mtype, self.state = "request", DEFAULT_STATE
        else:
            self.hide_refusal()
            self.screen.set_focus(None)  # (at once: the keys already on their way are commands, `ComposerArea._on_key`)
            self.post_message(LeftComposer())

    def show_undo(self, said: str | None) -> None:
        """The line under the box while one's last send or edit can be taken back (screens/undoing.py)."""
        w = self.query_one("#undo", Static)
        if said:
            w.update(Text(said, style="bold", no_wrap=True, overflow="ellipsis"))
        w.display = bool(said)

    # --- refusals ---

    def show_refusal(self, reason: str | None, detail: str = "") -> None:
        w = self.query_one("#refusal", Static)
        known = reason in REFUSALS
        w.update(Text.assemble(("✗ refused", "bold"), (f" ({reason})" if reason else "", "bold"), ": ",
                               refusal_sentence(reason), (f"  [{detail}]" if detail and known else f" {detail}", "dim")))
        w.display = True

    def hide_refusal(self) -> None:
        self.query_one("#refusal", Static).display = False

    # --- sending ---

    SENDING_SHOWN_AFTER = 0.5  # seconds: a send that takes longer (the server away, a slow link) says so

    def sending(self, text: str) -> Callable[[], None]:
        """`text` is on its way to the server: if it takes a while, a line says it is still going (it has left the
        box, and is not in the conversation yet: without the line it was nowhere for as long as the server was
        away). Returns what to call once the server answered."""
        first = printable(text.strip()).split("\n")[0]
        first = first if len(first) <= 40 else first[:39] + "…"
        self._in_flight.append(first)
        timer = self.set_timer(self.SENDING_SHOWN_AFTER, self._show_sending)

        def answered() -> None:
            timer.stop()
            self._in_flight.remove(first)
            if self._in_flight:
                self._show_sending()
            elif self.is_attached:
                self.query_one("#sending").display = False
        return answered

    def _show_sending(self) -> None:
        if not self._in_flight or not self.is_attached:
            return
        away = not getattr(self.app, "connected", True)
        n = len(self._in_flight)
        w = self.query_one("#sending", Static)
        more = f" and {n - 1} more" if n > 1 else ""
        w.update(Text.assemble(("⋯ sending ", "bold"), f"“{self._in_flight[0]}”{more}",
                               ("  the server is away: it goes when the connection is back" if away else
                                "  waiting for the server's answer", "dim")))
        w.display = True

    def submit(self) -> None:
        """The text leaves the box at once, as in any chat app: what is typed meanwhile stays, and a second Enter
        does not send it again. The screen gives it back (`give_back`) if it is not sent."""
        text = self.text
        if not text.strip():
            return
        self.take(text)
        self.post_message(Submit(text))

    # --- completion ---

    @on(TextArea.Changed, "#composer-text")
    def _changed(self) -> None:
        self._meta_to()  # (whom it goes to follows the leading @names)
        word = self._word()
        if word is None:
            self._close_completion()
            return
        options = self._matches(word)
        ol = self.query_one("#completions", OptionList)
        if not options:
            self._close_completion()
            return
        ol.clear_options()
        ol.add_options([Option(Text.assemble((c, "bold"), (f"  {d}", "dim")), id=c) for c, d in options[:8]])
        ol.highlighted = 0
        ol.display = True
        self.completing = True

    def _word(self) -> str | None:
        row, col = self.area.cursor_location
        line = self.area.document[row][:col]
        m = MENTION.search(line)
        return m.group(1) if m else None

    def _matches(self, word: str) -> list[tuple[str, str]]:
        cands = self.candidates()
        w = word.lower()
        if w.startswith("group:"):
            cands = [c for c in cands if c[0].startswith("group:")]
        else:
            cands = [c for c in cands if c[0].startswith("@")]
        starts = [c for c in cands if c[0].lower().startswith(w)]
        inside = [c for c in cands if c not in starts and w.lstrip("@").removeprefix("group:") in c[0].lower()]
        out = starts + inside
        return [] if len(out) == 1 and out[0][0] == word else out

    def finish_word(self) -> None:
        """Tab after a whole @name or group:name: the space after it (typing goes on); anything else: nothing."""
        word = self._word()
        if word and any(c == word for c, _ in self.candidates()):
            row, col = self.area.cursor_location
            self.area.insert(" ", (row, col))

    def move_completion(self, delta: int) -> None:
        ol = self.query_one("#completions", OptionList)
        if ol.option_count:
            ol.highlighted = ((ol.highlighted or 0) + delta) % ol.option_count

    def accept_completion(self) -> None:
        ol = self.query_one("#completions", OptionList)
        word = self._word()
        if ol.highlighted is None or word is None:
            self._close_completion()
            return
        choice = ol.get_option_at_index(ol.highlighted).id or ""
        row, col = self.area.cursor_location
        self.area.replace(choice + " ", (row, col - len(word)), (row, col))
        self._close_completion()

    @on(OptionList.OptionSelected, "#completions")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.query_one("#completions", OptionList).highlighted = event.option_index
        self.accept_completion()
        self.area.focus()

    def _close_completion(self) -> None:
        self.completing = False
        self.query_one("#completions").display = False
