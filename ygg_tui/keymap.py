"""Actions apart from their keys (Harlequin's keymap): every binding has an id; the config's
`[keys]` table maps ids to other keys, applied with Textual's `App.set_keymap`.

    [keys]
    "ygg.next_unread" = "ctrl+down,n"
    "messages.down" = "j,down"
"""

from __future__ import annotations

from textual.binding import Binding

# id -> (default keys, what it does)
ACTIONS: dict[str, tuple[str, str]] = {
    "app.quit": ("ctrl+q", "Quit"),
    "app.palette": ("ctrl+p", "Commands"),
    "ygg.help": ("question_mark,f1", "Help"),
    "ygg.search": ("slash", "Search"),
    "ygg.next_unread": ("n", "Next unread"),
    "ygg.next_needs_human": ("h", "Next needs_human"),
    "ygg.new_topic": ("ctrl+n", "New topic"),
    "ygg.fund": ("f", "Fund"),
    "ygg.operator": ("o", "Operator view"),
    "ygg.compose": ("i", "Write"),
    "ygg.focus_topics": ("t", "Topics"),
    "ygg.all_topics": ("T", "All the conversation's topics at once"),
    "ygg.work_graph": ("w", "Work graph: how topics, threads, artifacts and agents connect"),
    "ygg.focus_sidebar": ("c", "Conversations"),
    "ygg.focus_messages": ("m", "Messages"),
    "ygg.people": ("p", "People and credits (a narrow screen hides them)"),
    "ygg.switch": ("ctrl+k", "Switch conversation"),
    "ygg.previous_conversation": ("alt+up", "Previous conversation"),
    "ygg.next_conversation": ("alt+down", "Next conversation"),
    "ygg.sidebar": ("ctrl+b", "Conversations list: hide or show"),
    "ygg.undo": ("ctrl+z", "Undo my send or edit, right after it"),
    **{f"ygg.conversation_{n}": (f"alt+{n}", f"Conversation {n} of the list") for n in range(1, 10)},
    "messages.down": ("j,down", "Next message"),
    "messages.up": ("k,up", "Previous message"),
    "messages.reply": ("r", "Reply"),
    "messages.first": ("g,home", "First message"),
    "messages.last": ("G,end", "Last message"),
    "messages.edit": ("e", "Edit my message"),
    "messages.delete": ("d", "Delete my message"),
    "messages.versions": ("v", "A message's versions"),
    "messages.thread": ("x", "A message's side threads: expand or collapse"),
    "messages.artifact": ("a", "A message's artifact: open its pane"),
    "messages.card": ("b", "A message's result card: press one of its buttons"),
    "messages.save_file": ("s", "A message's file: save it"),
    "composer.send": ("enter", "Send"),
    "composer.newline": ("ctrl+j,shift+enter", "New line"),
    "composer.complete": ("tab", "Complete @name"),
    "composer.cancel": ("escape", "Cancel reply / completion"),
    "composer.type": ("ctrl+t", "Message type"),
    "composer.state": ("ctrl+g", "My state"),
    "composer.done": ("ctrl+d", "My part is done"),
    "operator.back": ("escape,o", "Back"),
    "operator.filter": ("ctrl+f", "Filters"),
}


def bind(id: str, action: str, description: str | None = None, *, show: bool = True,
         priority: bool = False) -> Binding:
    keys, words = ACTIONS[id]
    return Binding(keys, action, description or words, show=show, priority=priority, id=id)


def current_keys(overrides: dict[str, str]) -> dict[str, str]:
    """Every action's keys once the config's overrides are applied."""
    return {i: overrides.get(i, keys) for i, (keys, _) in ACTIONS.items()}


def key_label(keys: str) -> str:
    """Keys as a person writes them: "question_mark,f1" -> "?,f1"."""
    return keys.replace("question_mark", "?").replace("slash", "/")


def hint(id: str, overrides: dict[str, str], typing: bool = False) -> str:
    """The key to name in a hint on screen (the first of the action's current keys); `typing`: the focus is in a
    text box, where a character key types itself, so the hint says to leave the box first."""
    key = key_label(current_keys(overrides)[id].split(",")[0])
    return f"esc then {key}" if typing and len(key) == 1 else key


def alt_digits() -> None:
    """alt+1…9 as xterm, tmux and most terminals send them (ESC then the digit) reach the app as alt+N: Textual
    reads ESC+digit as the character macOS's Option key types there (ESC 2 as "™", WezTerm's encoding), so WeeChat's
    alt+2 never switched conversations outside the kitty keyboard protocol. (A private table of Textual's.)"""
    from textual import _ansi_sequences

    for digit in "0123456789":
        _ansi_sequences.ANSI_SEQUENCES_KEYS.pop(f"\x1b{digit}", None)
