"""The Delivery port: where a node's deliveries come from and where presence goes.

The gateway (`net.gateway.Gateway`) is the same on every store; what differs between one node alone and one
node of several is behind this port, with two adapters:

- `LocalDelivery` (`local.py`): one node on SQLite. An agent's inbox is in memory (`net.inbox.Inbox`), filled
  from the store and from what the writer publishes here; presence is this node's connections.
- `ClusterDelivery` (`cluster.py`): one node of several on PostgreSQL. An agent's work is claimed from the
  database under a lease (`claims.ClaimInbox`), except what this node's writer leased to a connection here as
  it committed (it is handed out, not claimed back); other nodes' news comes by NOTIFY; presence is rows and
  a heartbeat. Its SQL is the store's (`store.postgres.deliveries`), handed in by the composition root.

A person's deliveries go to every one of their devices (`net.feed.Feed`) on both.
"""

from __future__ import annotations

from typing import Protocol

from .cluster import ClusterDelivery
from .local import LocalDelivery


class Delivery(Protocol):
    def bind(self, gateway) -> None:
        """The gateway this delivers for: its connections, inboxes and followers."""

    async def start(self) -> None: ...

    async def close(self) -> None:
        """After the gateway stopped serving (its connections detached), before its writer closes."""

    async def agent_inbox(self, pid: str):
        """An agent's inbox on this node (made on its first connection)."""

    def expects(self, pid: str) -> bool:
        """`pid`'s inbox is being made here (what is published for it meanwhile is kept: `arrived`)."""

    def arrived(self, pid: str, items: list) -> None:
        """Deliveries the writer published for `pid` while its inbox was being made."""

    def lease(self, recipients) -> dict[str, str]:
        """Of the agents a batch is about to deliver to, those whose next wake a connection here takes as it is
        committed: agent -> the connection's lease holder ({} where every wake is claimed or handed out)."""

    async def offer_again(self, inbox) -> None:
        """After a rescan: what the inbox's participant is owed, offered again."""

    def presence(self, conn, online: bool) -> None:
        """A participant's first connection here opened (online) or its last closed."""

    def tell(self, pid: str, event: dict) -> None:
        """An event for `pid`'s connections on the other nodes too (this node's were told)."""

    def joined(self, pid: str, workspaces: frozenset[str]) -> None:
        """`pid`, connected here, is in `workspaces` now."""

    async def elsewhere(self, ids: list[str]) -> set[str]:
        """Those of `ids` online through another node."""

    def silences(self) -> None:
        """Every few seconds: agents silent for presence_timeout count as offline where that is kept here."""

    def rescanned(self) -> None:
        """Another process changed the database: what is cached of memberships and parties goes."""


__all__ = ["ClusterDelivery", "Delivery", "LocalDelivery"]
