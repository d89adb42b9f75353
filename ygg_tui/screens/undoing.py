"""ctrl+z right after one's own send or edit takes it back, as a chat app's "undo send" does.

After a send: the message is deleted for everyone (`delete_message`) and its text, reply and type come back to the
composer, to correct and send again. After an edit: the text before it is put back (`edit_message`, one more
version: the history keeps all of them). The offer lasts UNDO_SECONDS and is on screen while it lasts (the line
under the composer, or a notice); past it, or while the composer holds new text, ctrl+z is the text box's own undo.
A delete is not offered: its text is gone from the server."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from textual import work

from ..keymap import hint
from ..words import printable

UNDO_SECONDS = 10.0


@dataclass
class UndoOffer:
    kind: str  # "sent" or "edited"
    message: dict  # as the server answered it
    text: str  # sent: the text as typed; edited: the text before the edit
    until: float  # time.monotonic()
    composer: dict = field(default_factory=dict)  # sent: the composer's reply, type and state, to put back
    told: bool = False  # (a screen without a composer said it in a notice)


class UndoActions:
    """Mixed into a screen with a message list (`store`); a screen with a composer shows the offer under it."""

    undo_offer: UndoOffer | None = None
    _undo_timer = None

    def offer_undo(self, kind: str, message: dict, text: str, composer: dict | None = None) -> None:
        self.undo_offer = UndoOffer(kind, message, text, time.monotonic() + UNDO_SECONDS, composer or {})
        if self._undo_timer is not None:
            self._undo_timer.stop()
        self._undo_timer = self.set_interval(min(1.0, UNDO_SECONDS / 3), self._undo_tick)
        self._undo_tick()

    def _undo_said(self) -> str:
        o = self.undo_offer
        key = hint("ygg.undo", getattr(self.app, "keymap_overrides", {}))
        left = max(0, round(o.until - time.monotonic()))
        first = printable(o.text, one_line=True)
        first = first if len(first) <= 30 else first[:29] + "…"
        if o.kind == "sent":
            return f"✓ sent · {key} takes it back ({left} s) · “{first}”"
        return f"✓ edited · {key} restores the text before ({left} s) · “{first}”"

    def _undo_tick(self) -> None:
        o = self.undo_offer
        if o is not None and time.monotonic() >= o.until:
            self.end_undo()
            return
        if o is not None:
            self.show_undo(self._undo_said())

    def end_undo(self) -> None:
        self.undo_offer = None
        if self._undo_timer is not None:
            self._undo_timer.stop()
            self._undo_timer = None
        self.show_undo(None)
        self.refresh_bindings()

    def show_undo(self, said: str | None) -> None:
        """The offer on screen (None: gone). A screen with a composer shows it there (MainScreen)."""
        if said is not None and self.undo_offer is not None and not self.undo_offer.told:
            self.undo_offer.told = True
            self.notify(said, title="undo", timeout=min(UNDO_SECONDS, 5))
        self.refresh_bindings()

    def undo_available(self) -> bool:
        o = self.undo_offer
        return o is not None and time.monotonic() < o.until

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        if action == "undo":
            return self.undo_available()  # (else ctrl+z goes on to the text box's own undo)
        return super().check_action(action, parameters)

    def action_undo(self) -> None:
        o = self.undo_offer
        if o is None:
            return
        self.end_undo()
        self.take_back(o)

    @work(group="undo", exit_on_error=False)
    async def take_back(self, o: UndoOffer) -> None:
        back = self.focused
        m = o.message
        if o.kind == "sent":
            reply = await self.app.session.revise("delete_message", workspace=m["workspace"], message=m["id"])
        else:
            reply = await self.app.session.revise("edit_message", workspace=m["workspace"], message=m["id"],
                                                  text=o.text)
        if reply.get("op") not in ("edit_message", "delete_message"):
            why = reply.get("reason") or reply.get("code")
            self.notify(f"{reply.get('detail') or why}", severity="error", title=f"undo refused: {why}")
            return
        self.app.apply_change(self.store.apply_revised(reply))
        if o.kind == "sent":
            self.sent_taken_back(o)
        elif back is not None:
            back.focus()
        had = [self.store.name(p) for p in self.store.woke.get(m["id"], ())]
        self.notify(("Taken back: deleted for everyone." + (f" {', '.join(had)} had it already (woken by it)." if had
                                                            else "")) if o.kind == "sent" else
                    "The text before the edit is back (the edit stays in its versions: v).", title="undone", timeout=4)

    def sent_taken_back(self, o: UndoOffer) -> None:
        """A screen with a composer puts the text back in it (MainScreen)."""
