"""Plan: the rows a batch of commands reads, named before anything is loaded (pure).

The store loads them (PostgreSQL locks them, in one global order) before the batch is decided, so
deciding needs no I/O. Two steps: the workspaces first (their directories say who is an agent and
which conversation a name means), then every other key.
"""

from __future__ import annotations

from typing import Any

from ..core import POOL, Directory, Kind, general_id, plan_of
from ..core import assign as core_assign, side as core_side, threads as core_threads
from ..store.port import Keys, Snapshot
from .commands import Command


def workspaces(cmds: list[Command]) -> set[str]:
    """The workspaces the commands act in (a made-up id is looked up too, and found empty)."""
    return {ws for c in cmds if (ws := c.workspace()) is not None}


def keys(cmds: list[Command], snap: Snapshot, month: str) -> Keys:
    k = Keys(month=month)
    locked: set[str] = set()  # General conversations a person writes in: locked after all
    for c in cmds:
        planner = _PLANNERS.get(c.kind)
        if planner is None:
            continue
        ws = c.workspace()
        d = snap.directory(ws)
        if ws is not None:
            if c.args[0] not in d.memberships:
                continue  # refused without reading a row (a made-up or foreign workspace is neither held nor loaded)
            k.workspaces.add(ws)
        planner(k, c, d, snap, locked)
    k.shared -= locked
    k.conversations |= locked
    return k


def conversation_id(d: Directory, ref: str, author: str) -> str | None:
    """The id a conversation reference names (General's and a direct or group conversation's are derived)."""
    if ref == "general":
        return general_id(d.workspace)
    made = d.conversation(ref, author, {})
    return made.id if made is not None else ref


def _send(k: Keys, c: Command, d: Directory, snap: Snapshot, locked: set[str]) -> None:
    author, frame = c.args
    ws = frame.workspace
    agent = d.participants[author].kind == Kind.AGENT
    cid = conversation_id(d, frame.conversation, author)
    if cid is not None:  # General too: its party counters move with agents' messages
        if cid == general_id(ws):
            (k.shared if agent else locked).add(cid)
        else:
            k.conversations.add(cid)
    t = frame.topic
    opening = t is None or t == "new"
    if not opening:
        (k.waited if c.deferred else k.topics).add(t)
        if cid is not None and isinstance(t, str) and cid != general_id(ws):
            # a direct conversation's topic that delegated work counts its hops on its side conversation (core.side)
            k.conversations.add(core_side.side_id(cid, t))
    if agent:
        k.wallets.add((ws, author))
        k.pools.add(ws)
        if opening:
            k.opening.add(author)
    if cid is not None and isinstance(frame.text, str):  # the side threads its `<dm>` parts go to (core.threads)
        for part in core_threads.extract(frame.text).parts:
            found = d.resolve(part.targets)
            if isinstance(found, tuple):
                k.conversations.add(core_threads.thread_id(cid, frozenset({author, *found})))
    if frame.files:  # the uploads it sends (core.files): their rows, locked on PostgreSQL
        k.files.update(frame.files)
    if frame.client_id is not None:
        k.idem.add((author, frame.client_id))
    org = snap.orgs.get(ws)
    if org is not None and plan_of(*org[1:]).messages_per_month is not None:
        k.limited.add(org[0])
    to = frame.to
    if isinstance(to, list) and any(isinstance(r, str) and r.startswith(core_assign.PREFIX) for r in to):
        k.capable.update(core_assign.asked(d, tuple(r for r in to if isinstance(r, str))))


def _fund(k: Keys, c: Command, d: Directory, snap: Snapshot, locked: set[str]) -> None:
    frame = c.args[1]
    ws = frame.workspace
    account = funded_account(d, frame.account)
    k.paused.add((ws, account))
    if account == POOL:
        k.pools.add(ws)
    elif isinstance(account, str):
        k.wallets.add((ws, account))


def funded_account(d: Directory, account: Any) -> Any:
    """The account a funding names: the pool, or an agent by id or by name."""
    if account != POOL:
        found = d.resolve((account,))
        if isinstance(found, tuple) and len(found) == 1:
            return found[0]
    return account


def _set_budget(k: Keys, c: Command, d: Directory, snap: Snapshot, locked: set[str]) -> None:
    k.waited.add(c.args[1].topic)


def _party(k: Keys, c: Command, d: Directory, snap: Snapshot, locked: set[str]) -> None:
    who, frame = c.args
    cid = conversation_id(d, frame.conversation, who)
    if cid is not None:
        locked.add(cid) if cid == general_id(frame.workspace) else k.conversations.add(cid)


def _set_profile(k: Keys, c: Command, d: Directory, snap: Snapshot, locked: set[str]) -> None:
    k.agents.add((c.args[0], c.args[1].agent))


def _set_setting(k: Keys, c: Command, d: Directory, snap: Snapshot, locked: set[str]) -> None:
    """(Its workspace only: the settings are in the catalog.)"""


def _revise(k: Keys, c: Command, d: Directory, snap: Snapshot, locked: set[str]) -> None:
    k.revised.add(c.args[1].message)


def _artifact(k: Keys, c: Command, d: Directory, snap: Snapshot, locked: set[str]) -> None:
    """The artifact an edit or a comment names; then its message, planned as a send where the artifact is (an
    unknown artifact's message is planned nowhere: it is refused without one)."""
    frame = c.args[1]
    ws = frame.workspace
    if frame.op != "create_artifact":
        k.artifacts.add(frame.artifact)
    cid = conversation_id(d, getattr(frame, "conversation", "general"), c.args[0]) \
        if frame.op == "create_artifact" else None
    if cid is not None:
        (locked if cid == general_id(ws) else k.conversations).add(cid)
    _posting(k, c.args[0], ws, frame.topic, d, snap)


def _posting(k: Keys, who: str, ws: str, topic: Any, d: Directory, snap: Snapshot) -> None:
    """What a message `who` posts in `topic` of a conversation known only once loaded reads: the topic, an agent's
    wallet, the pool and its open topics, a limited plan's usage."""
    if isinstance(topic, str) and topic != "new":
        k.topics.add(topic)
    if d.participants.get(who) is not None and d.participants[who].kind == Kind.AGENT:
        k.wallets.add((ws, who))
        k.pools.add(ws)
        k.opening.add(who)
    org = snap.orgs.get(ws)
    if org is not None and plan_of(*org[1:]).messages_per_month is not None:
        k.limited.add(org[0])


def _card(k: Keys, c: Command, d: Directory, snap: Snapshot, locked: set[str]) -> None:
    """A card's button: its message (PostgreSQL: locked; its conversation read with it), and what the request to
    the card's author reads (General, in case the card is there: locked for a person, as a send there is)."""
    who, frame = c.args
    k.revised.add(frame.message)
    agent = d.participants[who].kind == Kind.AGENT
    (k.shared if agent else locked).add(general_id(frame.workspace))
    _posting(k, who, frame.workspace, frame.topic, d, snap)


def _thread(k: Keys, c: Command, d: Directory, snap: Snapshot, locked: set[str]) -> None:
    k.conversations.add(c.args[1].thread)


_PLANNERS = {"send": _send, "thread": _thread, "artifact": _artifact, "card": _card, "fund": _fund, "set_budget": _set_budget, "party": _party,
             "set_profile": _set_profile, "set_setting": _set_setting, "revise": _revise}
