"""Artifacts (seed 003 §8-10; docs/rules.md, "Artifacts"): a separate, versioned object attached to a conversation.

An artifact has a title, a kind (document, code, page), an optional language (for code) and a body (Markdown or
source text). Creating it, editing it (a new version: "Editing an artifact never overwrites") and commenting on a
version each go through the one send pipeline as a message in the conversation, an inform that names the artifact
and its version (`Message.artifact`): delivered, charged (its body's characters too) and refused like any message.
The artifact is the conversation's (§10): whoever may read the conversation reads it, whoever may write in it
writes it. Pure: the writer decides the message with `decide` and writes the version row with the decision.
"""

from __future__ import annotations

import difflib

from msgspec import Struct

from .model import ArtifactRef, Post
from .vocabulary import MessageType

KINDS = ("document", "code", "page")
MAX_BODY = 200_000  # characters of one version's body (a message's text bound)
MAX_COMMENT = 4000
CREATED, UPDATED, COMMENTED = "created", "updated", "commented"


class Head(Struct, frozen=True, gc=False):
    """An artifact as its latest version left it (what an edit or a comment is judged against)."""

    id: str
    workspace: str
    conversation: str
    title: str
    kind: str
    language: str | None
    version: int
    body: str


def problem(title: str | None, kind: str | None, body: str | None) -> str | None:
    """Why these are not an artifact's fields, or None (a title's own rules are the protocol's, names.clean)."""
    if kind is not None and kind not in KINDS:
        return f"an artifact's kind is {', '.join(KINDS)}"
    if body is not None and len(body) > MAX_BODY:
        return f"an artifact's body is at most {MAX_BODY} characters"
    if body is not None and not body.strip():
        return "an artifact's body is not empty"
    if title is not None and not title.strip():
        return "an artifact has a title"
    return None


def announce(post_id: str, author: str, workspace: str, topic: str, ref: ArtifactRef, *, body: str = "",
             text: str | None = None, to: tuple[str, ...] = (), title: str | None = None) -> Post:
    """The message that posts a version (or a comment on one): an inform in `topic`, its text a line saying what it
    is (or the comment), its body's characters paid for (seed 000: "Every message an agent sends costs credits")."""
    if text is None:
        what = "posted" if ref.action == CREATED else "edited"
        text = f"{what} the {ref.kind} “{ref.title}” (version {ref.version})"
    return Post(post_id, author, workspace, topic, MessageType.INFORM, text, title=title, to=to, artifact=ref,
                body_chars=len(body))


def diff(old: str, new: str, old_name: str = "before", new_name: str = "after") -> list[str]:
    """A unified diff between two versions' bodies, line by line (difflib)."""
    return list(difflib.unified_diff(old.splitlines(), new.splitlines(), old_name, new_name, lineterm=""))
