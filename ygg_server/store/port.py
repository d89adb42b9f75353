"""The Store port: what the writer asks of a store, and what a batch reads.

The writer runs every batch the same way over any store: begin, load the batch's rows
(`Tx.load`), decide in memory in arrival order, confirm where the store needs it
(`Tx.confirm`), write (`Tx.write`), commit; then answer and publish. Two adapters:
`store.sqlite.writer_store.SqliteStore` (embedded; its live cache kept inside it, between
batches) and `store.postgres.writer_store.PgStore` (rows loaded under locks, a charged pool
re-checked, one write with NOTIFY, for several nodes).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, AsyncContextManager, Protocol

from ..core import Directory, Message, Topic
from ..core.model import Fitness
from ..core.state import LiveState

EMPTY = Directory.build("", [], [])


@dataclass(slots=True)
class Keys:
    """What one batch reads: filled by `writer.plan`, loaded by the store (PostgreSQL locks these rows, in one order)."""

    month: str = ""
    workspaces: set[str] = field(default_factory=set)  # written in: their directories, held against a delete
    conversations: set[str] = field(default_factory=set)  # locked (a party's counters and members move)
    shared: set[str] = field(default_factory=set)  # General conversations only agents write in: read unlocked
    topics: set[str] = field(default_factory=set)  # a send's topic: skipped if another node holds it
    waited: set[str] = field(default_factory=set)  # topics waited for (a send left for later, a budget)
    wallets: set[tuple[str, str]] = field(default_factory=set)  # agents' wallets: (workspace, agent)
    pools: set[str] = field(default_factory=set)  # workspaces' pools
    opening: set[str] = field(default_factory=set)  # agents whose open topics are counted
    limited: set[str] = field(default_factory=set)  # organizations on a plan with a monthly limit
    idem: set[tuple[str, str]] = field(default_factory=set)  # (participant, client_id)
    capable: set[str] = field(default_factory=set)  # agents a send to a capability may go to (their fitness)
    paused: set[tuple[str, str]] = field(default_factory=set)  # (workspace, account) a funding resumes topics of
    agents: set[tuple[str, str]] = field(default_factory=set)  # (owner, id or name) whose profile is set
    revised: set[str] = field(default_factory=set)  # messages edited or deleted (PostgreSQL: locked)
    artifacts: set[str] = field(default_factory=set)  # artifacts edited or commented on (PostgreSQL: locked)
    files: set[str] = field(default_factory=set)  # uploads a send names (PostgreSQL: locked)


@dataclass(slots=True)
class Snapshot:
    """What a batch is decided against, all in memory (the batch logic does no I/O).

    `state` is what decisions move (folded in at once, core.state); the rest is read-only for the batch.
    SQLite keeps one Snapshot between batches (its live cache); PostgreSQL loads one per attempt.
    """

    state: LiveState = field(default_factory=LiveState)
    directories: dict[str, Directory] = field(default_factory=dict)
    settings: dict[str, dict] = field(default_factory=dict)
    orgs: dict[str, tuple | None] = field(default_factory=dict)  # workspace -> (org, plan, licensed)
    party_views: dict[str, Any] = field(default_factory=dict)  # conversation -> PartyView, until it changes
    idem: dict[tuple[str, str], bytes] = field(default_factory=dict)  # (participant, client_id) -> kept answer
    busy: set[str] = field(default_factory=set)  # topics another node holds: their sends wait for the next batch
    fitness: dict[str, Fitness] = field(default_factory=dict)
    paused: dict[tuple[str, str], list[Topic]] = field(default_factory=dict)
    agents: dict[tuple[str, str], tuple[str, str] | None] = field(default_factory=dict)  # -> (id, profile json)
    due: list[Topic] = field(default_factory=list)  # topics whose timer is due (nudges, polls, auto-done)
    # messages edited or deleted: id -> (the message as stored, its seq, everyone it was delivered to, who may read
    # its conversation: None for everyone in the workspace)
    revised: dict[str, tuple[Message, int, tuple[str, ...], frozenset[str] | None]] = field(default_factory=dict)
    artifacts: dict[str, Any] = field(default_factory=dict)  # id -> core.artifacts.Head, as its latest version left it
    files: dict[str, Any] = field(default_factory=dict)  # id -> core.files.Upload, the uploads of Keys.files that exist
    rescan: bool = False  # another connection changed the database: the gateway looks at everything again

    def directory(self, ws: Any) -> Directory:
        return self.directories.get(ws, EMPTY) if isinstance(ws, str) else EMPTY


class Tx(Protocol):
    """One batch's transaction (committed when the `Store.batch()` block ends without an error)."""

    async def schedules_due(self, now: int) -> list:
        """The reminders and routines (core.schedule.Schedule) due at `now` (PostgreSQL: locked), read first."""
        ...

    async def catalog(self, workspaces: set[str]) -> Snapshot:
        """The snapshot with these workspaces' directories, settings and organizations (what plans read)."""
        ...

    async def load(self, keys: Keys) -> bool:
        """Load (PostgreSQL: lock) the batch's rows into the snapshot; False: the catalog moved meanwhile, plan again."""
        ...

    async def confirm(self, outcome) -> bool:
        """True: something read without a lock moved; decide the batch again (PostgreSQL's charged pools)."""
        ...

    async def write(self, outcome) -> None:
        """Write the batch's WriteSet and its direct writes; fill the outcome's stored deliveries and messages."""
        ...


class Store(Protocol):
    retryable: tuple[type[BaseException], ...]  # a batch that failed so is decided again, whole

    async def open(self) -> None:
        """Ready to run batches (connect, migrate) before the first."""
        ...

    def ops_connection(self):
        """A new connection beside the writer's, for the reads and management ops of `ops` (a DB-API shape)."""
        ...

    def batch(self) -> AsyncContextManager[Tx]: ...

    def committed(self, outcome) -> None:
        """After the COMMIT: what the store caches between batches follows the batch."""
        ...

    def failed(self) -> None:
        """After a ROLLBACK: drop what the batch moved in memory."""
        ...
