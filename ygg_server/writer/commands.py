"""The commands the writer takes, as the gateway submits them: `kind` and its arguments, and what each is
answered with (a typed result, `protocol.results`, which the gateway renders with the frame's ref; or the error
the command ended with).

    send         (author, frames.Send)                      Sent, Duplicate, Refused or Failed
    ack          (participant, ids, ref)                    Acked (`ref` is not part of it: the gateway has it)
    fund         (funder, frames.Fund)                      Funded or Refused
    set_budget   (who, frames.SetBudget)                    BudgetSet or Refused
    party        (who, frames.AddParticipant | RemoveParticipant | SetLead)   PartyChanged or Refused
    set_profile  (who, frames.SetProfile)                   ProfileSet or Failed
    set_setting  (who, frames.SetSetting)                   SettingSet, Refused or Failed
    revise       (who, frames.EditMessage | DeleteMessage)  Revised, Refused or Failed
    thread       (who, frames.SettleThread)                 ThreadSettled, Refused
    artifact     (who, frames.CreateArtifact | UpdateArtifact | CommentArtifact)   ArtifactSaved, Refused or Failed
    card         (who, frames.PressCard)                    CardPressed, Refused
    session      (*row, key)                                None: a session's row (ops.auth.session_row, a
                                                            person's ops.accounts.session_row), then its key
    memory       (op, *args)                                None: an agent's memory kept ("save", *row, keep) or marked
                                                            used ("used", now, *ids): store.writes.write_memory
    sync         ()                                         None, once everything before it is committed
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

KINDS = frozenset({"send", "ack", "fund", "set_budget", "party", "set_profile", "set_setting", "revise", "thread", "artifact",
                   "card", "session", "memory", "sync"})


@dataclass(slots=True, eq=False)
class Command:
    kind: str
    args: tuple
    future: Any = None  # an asyncio.Future, or the caller's token (the writer process's sequence number)
    loop: Any = None  # the event loop the future belongs to (the writer on a thread answers across)
    deferred: int = 0  # batches that left it for later: its topic was held by another node's batch

    def workspace(self) -> str | None:
        """The workspace the command acts in (None for those in none)."""
        return getattr(self.args[1], "workspace", None) if len(self.args) > 1 else None
