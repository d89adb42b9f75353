"""Who follows which workspace on this node, indexed by workspace.

A connection that subscribes to a workspace follows it (topic, balance and presence events) and, with the
monitor permission, monitors it (every message). Each event goes to the connections of its workspace found
here, so fanning a batch out, or telling of someone who came, costs what it reaches, not how many
connections are open (a server of many small teams has many connections, few in any one workspace).
`Conn.follows` and `Conn.monitors` are kept as each connection's own view; they change only through `set`.
Who is in each followed workspace, with their role and permissions, and its groups, as last read, are kept here
too (`moved`, `regrouped`), so its followers can be told who joined, who left and whose standing changed, and
what its groups are now; they are forgotten with the workspace's last follower.
"""

from __future__ import annotations

from typing import Any, Iterable

_NONE: frozenset = frozenset()


class Following:
    def __init__(self) -> None:
        self._follows: dict[str, set[Any]] = {}  # workspace -> the connections following it
        self._monitors: dict[str, set[Any]] = {}  # workspace -> the connections monitoring it
        self._members: dict[str, dict[str, tuple]] = {}  # followed workspace -> {member: standing}, as last read
        self._groups: dict[str, list[dict]] = {}  # followed workspace -> its groups (`list_groups`), as last read

    def set(self, conn: Any, follows: set[str], monitors: set[str]) -> None:
        """`conn` follows exactly `follows` and monitors exactly `monitors` from now on."""
        _move(self._follows, conn, conn.follows, follows)
        _move(self._monitors, conn, conn.monitors, monitors)
        for ws in conn.follows - follows:
            if ws not in self._follows:
                self._members.pop(ws, None)
                self._groups.pop(ws, None)
        conn.follows, conn.monitors = follows, monitors

    def drop(self, conn: Any) -> None:
        """`conn` went: it follows nothing."""
        self.set(conn, set(), set())

    def know(self, ws: str, members: dict[str, tuple], groups: list[dict]) -> None:
        """Who is in `ws` ({id: `queries.standing_of`}) and its groups, read as a connection began to follow it (kept if
        they were known already)."""
        if ws in self._follows:
            self._members.setdefault(ws, members)
            self._groups.setdefault(ws, groups)

    def regrouped(self, ws: str, groups: list[dict]) -> bool:
        """`groups` are followed `ws`'s groups now: whether they differ from those last read (known before)."""
        if ws not in self._follows:
            return False
        before, self._groups[ws] = self._groups.get(ws), groups
        return before is not None and before != groups

    def moved(self, ws: str, members: dict[str, tuple]) -> tuple[list[str], list[str], list[str]] | None:
        """`members` ({id: `queries.standing_of`}) are in followed `ws` now: (joined, left, changed: those in it before
        and now whose role or permissions differ) since they were last read, or None (the same, or not known
        before: nothing to tell)."""
        if ws not in self._follows:
            return None
        before, self._members[ws] = self._members.get(ws), members
        if before is None or before == members:
            return None
        changed = sorted(p for p, was in before.items() if p in members and members[p] != was)
        return sorted(members.keys() - before.keys()), sorted(before.keys() - members.keys()), changed

    def followers(self, ws: str) -> Iterable[Any]:
        return self._follows.get(ws, _NONE)

    def monitoring(self, ws: str) -> Iterable[Any]:
        return self._monitors.get(ws, _NONE)

    def followed(self) -> Iterable[str]:
        """Every workspace someone here follows."""
        return self._follows.keys()

    def monitored(self) -> Iterable[str]:
        return self._monitors.keys()

    def reaching(self, workspaces: Iterable[str]) -> set[Any]:
        """The connections following any of `workspaces`."""
        out: set[Any] = set()
        for ws in workspaces:
            out.update(self._follows.get(ws, ()))
        return out

    def __bool__(self) -> bool:
        return bool(self._follows)


def _move(index: dict[str, set[Any]], conn: Any, before: set[str], after: set[str]) -> None:
    for ws in before - after:
        conns = index.get(ws)
        if conns is not None:
            conns.discard(conn)
            if not conns:
                del index[ws]
    for ws in after - before:
        index.setdefault(ws, set()).add(conn)
