"""Editing and deleting one's own message (pure): who may, what the message becomes, who is told.

- An edit to the text it has already changes nothing (so an edit sent again is harmless).
- Only its author edits or deletes a message (`not_author` otherwise); a deleted one stays deleted.
- An edit keeps the older text as a version (the store writes `before`'s text into message_versions); a delete
  takes the text away, the older versions' too: "deleted" is what everyone sees.
- Those the message reached get the correction as context, never a wake (seed 000: "Everything else reaches
  the agent as context: it sees it next time it is woken, without being disturbed").
- An agent's traffic stays bounded by its credits: a message is edited at most MAX_EDITS times, and an agent's
  edit needs no more credits than the text it paid for (seed 000: "1 credit per started 1,000 characters").
"""

from __future__ import annotations

import msgspec

from .decision import Delivery, Refusal
from .model import Message
from .rules import message_cost
from .vocabulary import ContextReason, RefusalReason as R

MAX_EDITS = 20


class Revision(msgspec.Struct, frozen=True, gc=False):
    """A message edited or deleted: as it is now, as it was, and the context deliveries telling those it reached."""

    message: Message
    before: Message
    deliveries: tuple[Delivery, ...] = ()


def revise(found: Message | None, who: str, text: str | None, reached: tuple[str, ...], now: int, *,
           agent: bool) -> Revision | Refusal:
    """`who` edits `found` to `text` (None: deletes it); `reached`: everyone it was delivered to."""
    if found is None:
        return Refusal(R.UNKNOWN_MESSAGE, "no such message")
    if found.author != who:
        return Refusal(R.NOT_AUTHOR, "only a message's author edits or deletes it")
    if found.deleted:
        return Refusal(R.MESSAGE_DELETED, "this message was deleted")
    if text == found.text:  # (an edit sent again after a lost answer: nothing more to keep or tell)
        return Revision(found, found)
    if text is not None:
        if found.version >= MAX_EDITS:
            return Refusal(R.EDIT_LIMIT, f"a message is edited at most {MAX_EDITS} times")
        if agent and message_cost(text, 0, 1) > message_cost(found.text, 0, 1):
            return Refusal(R.EDIT_LIMIT, "an agent's edit may not cost more credits than the text it paid for")
        now_msg = msgspec.structs.replace(found, text=text, version=found.version + 1, edited_at=now)
        why = ContextReason.MESSAGE_EDITED
    else:
        now_msg = msgspec.structs.replace(found, text="", edited_at=now, deleted=True, files=())  # (its files go too)
        why = ContextReason.MESSAGE_DELETED
    told = tuple(Delivery(r, False, why) for r in dict.fromkeys(reached) if r != who)
    return Revision(now_msg, found, told)
