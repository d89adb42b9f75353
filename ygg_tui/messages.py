"""Textual messages the TUI posts, as dataclasses (toolong's `messages.py`).

Frames from the server arrive in batches; `can_replace` lets a burst of "redraw"
requests collapse into one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from textual.message import Message


@dataclass
class Delivered(Message):
    """Deliveries for the signed-in person (a batch, in arrival order)."""

    frames: list[dict]


@dataclass
class Evented(Message):
    """Workspace events: topic changes, balances, and (when monitoring) every message."""

    frames: list[dict]


@dataclass
class ConnectionChanged(Message):
    connected: bool
    reconnects: int = 0


@dataclass
class Ready(Message):
    """The first load finished: workspaces, members, conversations, topics, balances."""


@dataclass
class StoreChanged(Message):
    """Something in the store changed; views redraw what they show. Bursts collapse."""

    change: object = None

    def can_replace(self, message: Message) -> bool:
        return False


@dataclass
class OpenConversation(Message):
    conversation: str


@dataclass
class OpenTopic(Message):
    conversation: str
    topic: str | None  # None: the conversation's messages outside any topic


@dataclass
class LoadOlder(Message):
    """The message list scrolled near its top: fetch the next older page."""

    key: str


@dataclass
class Submit(Message):
    """The composer asks to send its text."""

    text: str


@dataclass
class ReplyTo(Message):
    message: dict = field(default_factory=dict)


@dataclass
class SignedIn(Message):
    url: str
    handle: str
    password: str
