"""Ids and timestamps as the writer makes them for the wire (protocol.new_id, protocol.iso)."""

from __future__ import annotations

import os
import uuid
from datetime import datetime, timezone

from ygg_server import protocol


def test_ids_are_random_uuids_each_once_also_in_a_forked_child():
    """Seed 003: "a randomly generated UUID primary key instead of a sequential integer": `new_id` reads the
    OS's random source for many ids at once, hands each out once, and a forked child gets ids of its own."""
    ids = [protocol.new_id() for _ in range(2000)]
    assert len(set(ids)) == len(ids)
    for i in ids:
        u = uuid.UUID(i)
        assert str(u) == i and u.version == 4 and u.variant == uuid.RFC_4122
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next ids, written to the parent
        try:
            os.write(w, "\n".join(protocol.new_id() for _ in range(50)).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        child = f.read().split("\n")
    os.waitpid(pid, 0)
    mine = [protocol.new_id() for _ in range(50)]
    assert len(child) == 50 and not set(child) & set(mine)


def test_timestamps_are_microsecond_utc_as_before():
    """Seed 003: "microsecond-precise UTC timestamps": `iso` formats the second once and gives what
    datetime gives, to the microsecond."""
    def slow(us):
        return datetime.fromtimestamp(us / 1_000_000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    base = 1_796_017_354_000_000
    for us in (0, 1, 999_999, base, base + 283_276, base + 999_999, base + 1_000_000, 4_102_444_799_999_999,
               *range(base, base + 3_000_000, 77_777)):
        assert protocol.iso(us) == slow(us), us
        assert protocol.from_iso(protocol.iso(us)) == us
