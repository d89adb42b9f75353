"""Micro-benchmarks: `python -m ygg_server.bench <subcommand>`.

Each subcommand is a function in `COMMANDS` taking the parsed arguments and
returning a process exit code; add yours there (and its options in `_parser`).

`core` measures the routing core alone: decisions per second of
`decide(view, post, now)` on a realistic mix of sends. A seeded simulation
first plays a workspace (people and agents opening topics, asking, answering,
informing, finishing, sometimes breaking the rules) and records every
(view, post, now) it judged; the timed part replays those inputs, so it
measures `decide` and nothing else (no state keeping, no I/O).
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time
from collections import Counter
from typing import Callable


from ..core import (
    Conversation, ConversationKind, Directory, Kind, Membership, MessageType, Participant,
    Post, Role, State, View, decide, due, general_id,
)
from ..core.rules import SECOND
from ..core.state import LiveState


class _Sim:
    """A workspace played by a seeded random script, applying decisions like the store does."""

    def __init__(self, seed: int, people: int = 3, agents: int = 8):
        self.rng = random.Random(seed)
        self.ws = "ws.bench"
        self.now = 1_767_225_600 * SECOND
        self.n = 0
        ps: list[Participant] = []
        ms: list[Membership] = []
        self.people = [f"human.p{i}" for i in range(people)]
        self.agents = [f"agent{i}" for i in range(agents)]
        for i, h in enumerate(self.people):
            ps.append(Participant(h, Kind.HUMAN, f"p{i}"))
            ms.append(Membership(h, Role.OWNER if i == 0 else Role.MEMBER))
        for i, a in enumerate(self.agents):
            ps.append(Participant(a, Kind.AGENT, a, owner=self.people[i % people]))
            ms.append(Membership(a))
        groups = {"odd": frozenset(self.agents[1::2]), "even": frozenset(self.agents[0::2])}
        self.directory = Directory.build(self.ws, ps, ms, groups)
        general = Conversation(general_id(self.ws), self.ws, ConversationKind.GENERAL, "General")
        self.live = LiveState()  # what decisions move, folded as the writer folds them (core.state)
        self.live.conversations[self.ws] = self.conversations = {general.id: general}
        self.topics, self.wallets, self.flags = self.live.topics, self.live.wallets, self.live.flags
        self.wallets.update({a: 5_000 for a in self.agents})
        self.live.pools[self.ws] = 20_000
        self.inbox: dict[str, list[tuple[str, str]]] = {p: [] for p in self.people + self.agents}
        self.recorded: list[tuple[View, Post, int]] = []
        self.outcomes: Counter[str] = Counter()

    def view(self, author: str, conv: str, topic: str | None) -> View:
        c = self.directory.conversation(conv, author, self.conversations)
        opened = sum(1 for t in self.topics.values() if t.opener == author and t.status != "closed")
        return View(self.directory, c, self.topics.get(topic) if topic else None, open_opened=opened,
                    wallet=self.wallets.get(author), pool=self.live.pools[self.ws], flags=frozenset(self.flags),
                    new_conversation=c is not None and c.id not in self.conversations)

    def send(self, author: str, conv: str = "general", topic: str | None = "new", **kw) -> None:
        self.n += 1
        self.now += self.rng.randrange(1, 30) * SECOND
        post = Post(id=f"m{self.n}", author=author, workspace=self.ws, topic=topic, **kw)
        view = self.view(author, conv, topic if topic not in (None, "new") else None)
        d = decide(view, post, self.now)
        self.recorded.append((view, post, self.now))
        if d.refusal is not None:
            self.outcomes["refused " + d.refusal.reason] += 1
        else:
            self.outcomes[post.type] += 1
        self.apply(d)

    def apply(self, d) -> None:
        self.live.fold(d)
        for r in d.routed:
            m = r.message
            for x in r.deliveries:
                if x.wake and m.topic is not None and x.recipient in self.inbox:
                    self.inbox[x.recipient].append((m.topic, m.id if m.type == "request" else ""))

    def timers(self) -> None:
        for t in [t for t in self.topics.values() if t.status == "open"]:
            conv = self.conversations[t.conversation]
            self.apply(due(View(self.directory, conv, flags=frozenset(self.flags)), t, self.now))

    def opened(self, agent: str) -> int:
        return sum(1 for t in self.topics.values() if t.opener == agent and t.status != "closed")

    def text(self) -> str:
        return " ".join(self.rng.choice(_WORDS) for _ in range(self.rng.randrange(3, 160)))

    def step(self) -> None:
        rng = self.rng
        roll = rng.random()
        open_topics = [t for t in self.topics.values() if t.status != "closed"]
        if roll < 0.1 or not open_topics:  # open a topic with a request
            free = [a for a in self.agents if self.opened(a) < 3]
            author = rng.choice(free or self.people) if rng.random() < 0.95 else rng.choice(self.agents)
            others = rng.sample([a for a in self.agents if a != author], rng.randrange(1, 4))
            conv = "general" if rng.random() < 0.6 else "dm:" + others[0]
            to = tuple(others[:1]) if conv != "general" else tuple(others)
            self.send(author, conv, "new", type=MessageType.REQUEST, text=self.text(),
                      title="Look into " + rng.choice(_WORDS), to=to)
            return
        if roll < 0.55:  # an agent works through its inbox
            busy = [a for a in self.agents if self.inbox[a]]
            if busy:
                a = rng.choice(busy)
                tid, req = self.inbox[a].pop(0)
                t = self.topics.get(tid)
                if t is None or (t.status == "closed" and rng.random() < 0.9):
                    return
                conv = t.conversation
                kind = rng.random()
                if req and kind < 0.6:
                    self.send(a, conv, tid, type=MessageType.RESPONSE, text=self.text(), in_reply_to=req,
                              state=State.DONE if rng.random() < 0.5 else State.WORKING)
                elif kind < 0.75:  # ask someone else in the topic
                    others = [p for p in t.members if p != a] or [rng.choice(self.agents)]
                    self.send(a, conv, tid, type=MessageType.REQUEST, text=self.text(),
                              to=(rng.choice(others),), state=State.WAITING)
                elif kind < 0.9:
                    self.send(a, conv, tid, type=MessageType.INFORM, text=self.text(), state=State.DONE)
                else:  # answer a closure poll, or anything else, to system.ygg
                    self.send(a, conv, tid, type=MessageType.RESPONSE, text="done", to=("system.ygg",),
                              in_reply_to=req or None, state=State.DONE)
                return
        t = rng.choice(open_topics)
        conv = self.conversations[t.conversation]
        if roll < 0.7:  # a person steps in
            p = rng.choice([p for p in self.people if not conv.members or p in conv.members] or self.people)
            to = tuple(rng.sample([m for m in t.members if m in self.agents] or self.agents[:1], 1))
            self.send(p, t.conversation, t.id, type=rng.choice((MessageType.REQUEST, MessageType.INFORM)),
                      text=self.text(), to=to, state=rng.choice((State.WORKING, State.DONE)))
        elif roll < 0.85:  # an agent chimes in with a status
            a = rng.choice([m for m in t.members if m in self.agents] or self.agents[:1])
            self.send(a, t.conversation, t.id, type=MessageType.INFORM, text=self.text(),
                      state=rng.choice((State.WORKING, State.WAITING, State.DONE)))
        elif roll < 0.9:  # copying: the same text again and again
            a = rng.choice([m for m in t.members if m in self.agents] or self.agents[:1])
            to = tuple(m for m in t.members if m != a)[:2] or (self.agents[0],)
            self.send(a, t.conversation, t.id, type=MessageType.REQUEST, text="Can you check this again?", to=to)
        else:  # rule breakers: no topic, a closed topic, a stranger, no title, a stale id
            a = rng.choice(self.agents)
            k = rng.randrange(5)
            closed = [x for x in self.topics.values() if x.status == "closed"]
            if k == 0:
                self.send(a, "general", None, type=MessageType.REQUEST, text="hi", to=(self.agents[0],))
            elif k == 1 and closed:
                x = rng.choice(closed)
                self.send(a, x.conversation, x.id, type=MessageType.REQUEST, text="again?", to=(self.agents[1],))
            elif k == 2:
                self.send(a, "general", "new", type=MessageType.REQUEST, text="who?", title="Stranger", to=("nobody",))
            elif k == 3:
                self.send(a, "general", "new", type=MessageType.REQUEST, text="untitled", to=(self.agents[2],))
            else:
                self.send(a, t.conversation, t.id, type=MessageType.RESPONSE, text="late", in_reply_to="m0")


def record(steps: int, seed: int = 7) -> tuple[list[tuple[View, Post, int]], Counter[str]]:
    """Play `steps` sends and return what `decide` was asked, with how each came out."""
    sim = _Sim(seed)
    while len(sim.recorded) < steps:
        sim.step()
        if len(sim.recorded) % 50 == 0:
            sim.timers()  # nudges, closure polls, auto-done: not timed, not recorded
        if sim.rng.random() < 0.01:  # a person tops wallets up now and then
            for a in sim.agents:
                sim.wallets[a] = max(sim.wallets[a], 1_000)
    return sim.recorded[:steps], sim.outcomes


def core(args: argparse.Namespace) -> int:
    inputs, outcomes = record(args.steps, args.seed)
    for v, p, now in inputs:  # warm-up, and a check that replay is pure
        decide(v, p, now)
    best = 0.0
    gc.disable()
    try:
        for _ in range(args.repeat):
            start = time.perf_counter()
            for v, p, now in inputs:
                decide(v, p, now)
            elapsed = time.perf_counter() - start
            best = max(best, len(inputs) / elapsed)
    finally:
        gc.enable()
    if not args.quiet:
        mix = ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items()))
        print(f"mix of {len(inputs)} sends: {mix}")
        print(f"decide: {best:,.0f} decisions/s ({1e6 / best:.1f} us each, best of {args.repeat})")
    return 0


def server(args: argparse.Namespace) -> int:
    """A real server and a raw websockets relay under the same load: see `bench/server.py`."""
    from .server import server as run

    return run(args)


def fanout(args: argparse.Namespace) -> int:
    """Fan-out and presence with few and with many connections open: see `bench/fanout.py`."""
    from .fanout import fanout as run

    return run(args)


def frames(args: argparse.Namespace) -> int:
    """Microseconds to decode a send and an ack frame: see `bench/frames.py`."""
    from .frames import run

    return run(args)


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {"core": core, "server": server, "fanout": fanout,
                                                           "frames": frames}


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m ygg_server.bench", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    c = sub.add_parser("core", help="decisions per second of the routing core")
    c.add_argument("--steps", type=int, default=20_000, help="sends in the recorded mix")
    c.add_argument("--repeat", type=int, default=5, help="timed replays; the best is reported")
    c.add_argument("--seed", type=int, default=7)
    c.add_argument("--quiet", action="store_true")
    from .server import add_arguments

    add_arguments(sub.add_parser("server", help="routed+persisted messages/s and latency of a real server, next to a raw relay"))
    from . import fanout

    fanout.add_arguments(sub.add_parser("fanout", help="fan-out and presence cost with few and many connections open"))
    from . import frames

    frames.add_arguments(sub.add_parser("frames", help="microseconds to decode a send and an ack frame"))
    return ap


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    return COMMANDS[args.command](args)


_WORDS = (
    "auth patch review tests flaky build cache schema index query latency budget release notes "
    "draft summary sources citation deploy rollback metrics alert token session handshake retry "
    "backoff queue worker lease claim fanout presence topic title credit wallet pool"
).split()


if __name__ == "__main__":
    sys.exit(main())
