"""Result cards' buttons in the main screen (seed 003 §13; issue 21): `b` on a message with a card lists its buttons
(1-4 or ⏎ to press, esc to cancel). An email draft's Send and Save draft change the card in place (everyone reading
sees its new state); any other button hands the click to the card's author, as a request from whoever pressed it.

A mixin of MainScreen (`store`).
"""

from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList, Static
from textual.widgets.option_list import Option

from ..messages import CardOpened
from ..words import printable


class CardButtonsScreen(ModalScreen[str | None]):
    """Which of a card's buttons to press: its action, or None."""

    BINDINGS = [Binding("escape", "cancel", "Cancel"),
                *(Binding(str(n), f"pick({n - 1})", show=False) for n in range(1, 5))]

    def __init__(self, card: dict):
        super().__init__()
        self.card = card
        self.buttons = list(card.get("buttons") or ())

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(Text(f"“{printable(self.card.get('title') or '', one_line=True)}”: press a button"),
                        classes="dialog-title")
            yield OptionList(*(Option(Text(f"{i}  {printable(b.get('label') or '', one_line=True)}"
                                           + ("  (acts on the card here)" if b.get("in_place") else
                                              "  (tells its author)")), id=str(i - 1))
                               for i, b in enumerate(self.buttons, 1)), id="card-buttons")
            yield Static("1-4 or ⏎ press · esc cancel", classes="dialog-hint")

    def on_mount(self) -> None:
        self.query_one("#card-buttons", OptionList).focus()

    @on(OptionList.OptionSelected, "#card-buttons")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        self.action_pick(int(event.option.id or 0))

    def action_pick(self, i: int) -> None:
        if 0 <= i < len(self.buttons):
            self.dismiss(self.buttons[i].get("action"))

    def action_cancel(self) -> None:
        self.dismiss(None)


class CardActions:
    def on_card_opened(self, event: CardOpened) -> None:
        event.stop()
        self.press_card(event.message)

    @work(group="cards", exit_on_error=False)
    async def press_card(self, m: dict) -> None:
        action = await self.app.push_screen_wait(CardButtonsScreen(m["card"]))
        if action is None:
            return
        reply = await self.app.session.press_card(m, action)
        if reply.get("op") != "press_card":
            self.notify(f"{reply.get('detail') or reply.get('reason') or reply.get('code')}", severity="error",
                        title=f"refused: {reply.get('reason') or reply.get('code')}")
            return
        if reply.get("in_place"):  # the card's new state, in place
            self.app.apply_change(self.store.apply_revised(reply))
            self.notify(f"Card {reply['message']['card'].get('state', 'updated')}.", title="Card", timeout=4)
        else:
            self.app.apply_change(self.store.apply_sent(reply))
            label = (reply["message"].get("press") or {}).get("label", action)
            who = self.store.name(m.get("author") or "")
            self.notify(f"“{label}” sent to {who}.", title="Card", timeout=4)
