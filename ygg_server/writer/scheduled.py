"""Reminders and routines that are due, as sends of the batch (core/schedule.py decides what each sends).

A due schedule becomes one more send of the batch, planned, loaded and decided with the others through the
one pipeline (`Batch._send`): charged, bounded and delivered like any message. Its row is written back in the
same transaction (`Outcome.schedules`), so a run is sent once, or not at all if the batch fails.
"""

from __future__ import annotations

from ..core import schedule as core_schedule
from ..core.schedule import Schedule
from ..protocol import frames
from .commands import Command


def sends(due: list[Schedule], now: int) -> list[tuple[Schedule, Command | None]]:
    """Each due schedule with the send it makes now (None: not due after all, e.g. paused meanwhile)."""
    out = []
    for s in due:
        f = core_schedule.fire(s, now)
        if f is None:
            out.append((s, None))
            continue
        frame = frames.Send(workspace=s.workspace, conversation=f.conversation, topic="new", title=f.title,
                            text=f.text, type=f.type, to=list(f.to), state=f.state)
        out.append((s, Command("send", (f.author, frame))))
    return out
