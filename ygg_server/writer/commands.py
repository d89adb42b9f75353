"""The commands the writer takes, as the gateway submits them: `kind` and its arguments.

    send         (author, frame)
    ack          (participant, ids, ref)
    fund         (funder, workspace, account, amount, ref)
    set_budget   (who, workspace, topic, budget, ref)
    party        (who, frame)            add_participant, remove_participant, set_lead
    set_profile  (who, frame)
    set_setting  (who, frame)
    session      (token_hash, participant, expires, created, key)   a session's row (ops.auth.session_row)
    sync         ()                      answered once everything before it is committed
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

KINDS = frozenset({"send", "ack", "fund", "set_budget", "party", "set_profile", "set_setting", "session", "sync"})


@dataclass(slots=True, eq=False)
class Command:
    kind: str
    args: tuple
    future: Any = None  # an asyncio.Future, or the caller's token (the writer process's sequence number)
    loop: Any = None  # the event loop the future belongs to (the writer on a thread answers across)
    deferred: int = 0  # batches that left it for later: its topic was held by another node's batch

    def workspace(self) -> Any:
        """The workspace the command acts in, as given (None for those in none)."""
        k, a = self.kind, self.args
        if k in ("send", "party", "set_setting"):
            return a[1].get("workspace") if isinstance(a[1], dict) else None
        if k in ("fund", "set_budget"):
            return a[1]
        return None
