"""Textual messages the TUI posts, as dataclasses (toolong's `messages.py`).

Frames from the server arrive in batches (one message per batch, not per frame), and the
screens coalesce their redraws (`call_later`), so a burst costs one repaint.
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
class LoadOlder(Message):
    """The message list scrolled near its top: fetch the next older page."""

    key: str


class ReachedEnd(Message):
    """The message list is scrolled down to its newest message again: what came meanwhile is seen now."""


@dataclass
class Submit(Message):
    """The composer asks to send its text."""

    text: str


class LeftComposer(Message):
    """Esc in the composer with nothing to cancel: the reader goes back to the messages."""


@dataclass
class ReplyTo(Message):
    message: dict = field(default_factory=dict)


@dataclass
class SignedIn(Message):
    url: str
    handle: str
    password: str


@dataclass
class ArtifactOpened(Message):
    """A message's artifact, to show in its pane (issue 21)."""

    message: dict


@dataclass
class CardOpened(Message):
    """b on a message with a result card: one of its buttons to press (issue 21)."""

    message: dict


@dataclass
class FileSave(Message):
    """A message's file, to save to a local path (issue 21)."""

    message: dict


@dataclass
class ThreadOpened(Message):
    """A message's side-thread cards expanded: their messages are wanted (issue 21)."""

    message: dict


@dataclass
class Revise(Message):
    """The selected message, to edit, delete or show the versions of (`how`: "edit", "delete", "versions")."""

    message: dict
    how: str
