"""Migration 21 (issue 23, continued): an agent's memory shared by its owner into another workspace, and the
approvals a server tool call used.

- `memory_shares`: the owner of `agent` lets it recall, in workspace `target`, what it keeps in workspace `source`
  (seed 003 issue 23: "memory is per workspace unless its owner shares it"); read only while that owner still
  owns the agent and is a member of both workspaces (ops/memory.py). Removing the row revokes it.
- `approval_uses`: an approved request runs its one call once (ops/approvals.py `gate`): the row is the spending.

Its own module, so that the step is self-contained (`tables.py` adds these to a new database, the step to an
older one: IF NOT EXISTS).
"""

from __future__ import annotations

from .ddl import Index, Table, big, text

MEMORY_SHARES = Table("memory_shares", text("agent"), text("source"), text("target"), text("shared_by"),
                      big("created_at"), key=("agent", "source", "target"))
APPROVAL_USES = Table("approval_uses", text("approval", key=True), big("used_at"))
SHARING_INDEXES = (Index("memory_shares_target", "memory_shares", "agent, target"),)

