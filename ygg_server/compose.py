"""The composition root: which store the writer runs over, where its loop runs, and what the gateway delivers by.

`ygg-server serve`, `ygg --local`, the benchmarks and the tests build their writer and gateway here, so a
store adapter is named in one place: SQLite (`store.sqlite.writer_store`, delivered by `LocalDelivery`) or
PostgreSQL (`store.postgres.writer_store`, delivered by `ClusterDelivery` over `store.postgres.deliveries`).
"""

from __future__ import annotations

import os
from typing import Any

from . import idempotency
from .clock import now_us
from .writer import TaskRunner, ThreadRunner, Writer


def on_sqlite(path, *, clock=now_us, idempotency_window: int = idempotency.WINDOW_US,
              process: bool | None = False) -> Any:
    """The SQLite writer: in its own process, or on a thread beside the loop (None: as $YGG_WRITER says,
    "process" unless it says "thread")."""
    from .store.sqlite.writer_store import SqliteStore

    if process is None:
        process = os.environ.get("YGG_WRITER", "process") != "thread"
    if process:
        from .writer.process import WriterProcess

        return WriterProcess(path, SqliteStore)
    return ThreadRunner(Writer(SqliteStore(path, clock, idempotency_window), clock))


def on_postgres(url: str, *, clock=now_us, **store_kw) -> TaskRunner:
    """The PostgreSQL writer: a task on the event loop, for one of several nodes."""
    from .store.postgres.writer_store import PgStore

    return TaskRunner(Writer(PgStore(url, clock=clock, **store_kw), clock))


def gateway(writer, limits=None):
    """The gateway over `writer` (made above): one node alone on SQLite, or one of several on PostgreSQL."""
    from .net.delivery import ClusterDelivery, LocalDelivery
    from .net.gateway import Gateway

    if isinstance(writer, TaskRunner):
        from .store.postgres.deliveries import PgDeliveries

        return Gateway(writer, limits, ClusterDelivery(PgDeliveries(writer.store)))
    return Gateway(writer, limits, LocalDelivery())
