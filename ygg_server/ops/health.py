"""What `/readyz` and `/metrics` read from the store (net/http.py)."""

from __future__ import annotations


def reachable(conn) -> bool:
    """The store answers a query."""
    return conn.execute("SELECT 1").fetchone()[0] == 1


def unacked(conn) -> int:
    """Deliveries made and not yet acknowledged, all recipients."""
    return conn.execute("SELECT count(*) FROM deliveries WHERE acked_at IS NULL").fetchone()[0]
