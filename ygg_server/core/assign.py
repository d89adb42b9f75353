"""Assigning work (seed 003 §14): a request addressed to a capability goes to the best-scoring agent.

`rank(directory, capability, text, fitness, weights, exclude)` scores every eligible agent and returns
them best first, each with its breakdown (`Score.parts`). Pure: who is online, how much each carries,
its earned trust and its usual response time come in as data (`Fitness`, loaded by the store and the
gateway), never looked up here. docs/rules.md, "Assignment scoring", defines every part.
"""

from __future__ import annotations

from .directory import BARRED, Directory
from .model import Assignment, Fitness, LeftOut, Part, Profile, Score
from .party import words
from .vocabulary import Kind

PREFIX = "capability:"
# The parts of a score, in the order they are shown, with their default weights (workspace setting
# `assign.weights` overrides any of them; a weight of 0 turns a part off).
WEIGHTS: dict[str, float] = {
    "capabilities": 4.0,  # how well its declared capabilities match the work
    "role": 1.0,  # how well its job title fits
    "online": 2.0,  # connected now
    "load": 1.0,  # how little it already carries
    "trust": 1.0,  # earned: the share of its requests it answered
    "cost": 0.5,  # how cheap it declares itself, against the cheapest candidate
    "speed": 0.5,  # its usual response time, against the fastest candidate
    "tools": 1.0,  # how many of the tools the task names it is connected to
}
_NO_PROFILE = Profile()
STEM = 6  # role fit: two words match when equal, or both at least this long and alike this far ("translator", "translation")


def _alike(a: frozenset[str], b: frozenset[str]) -> bool:
    if a & b:
        return True
    long_b = {w[:STEM] for w in b if len(w) >= STEM}
    return any(len(w) >= STEM and w[:STEM] in long_b for w in a)


def weights_of(setting: object) -> dict[str, float]:
    """The workspace's weights: the defaults, overridden by the known parts of `assign.weights`."""
    out = dict(WEIGHTS)
    if isinstance(setting, dict):
        for k, v in setting.items():
            if k in out and type(v) in (int, float) and v >= 0:
                out[k] = float(v)
    return out


def declares(p: Profile, capability: str) -> bool:
    """An agent declares `capability` when one of its capabilities has all of the capability's words."""
    want = words(capability)
    return bool(want) and any(want <= words(c) for c in p.capabilities)


def _declaring(d: Directory, capability: str, exclude: frozenset[str]):
    """The workspace's agents that declare the capability, except `exclude`, by id."""
    for a in sorted(d.memberships):
        p = d.participants.get(a)
        if p is not None and p.kind == Kind.AGENT and a not in exclude and declares(d.profiles.get(a, _NO_PROFILE), capability):
            yield a


def asked(d: Directory, to: tuple[str, ...]) -> list[str]:
    """The agents a send's `capability:` recipients could go to (what the writer loads fitness for), by id."""
    caps = [r[len(PREFIX):] for r in to if r.startswith(PREFIX)]
    return sorted({a for c in caps for a in eligible(d, c)})


def eligible(d: Directory, capability: str, exclude: frozenset[str] = frozenset(),
             sender: str | None = None) -> tuple[str, ...]:
    """The workspace's agents (with receive) that declare the capability, except `exclude`, by id; given a
    `sender`, only those it may send to (seed 002, "Permissions": its can message, their takes messages from)."""
    if sender is None:
        return tuple(a for a in _declaring(d, capability, exclude) if d.memberships[a].receive)
    return tuple(a for a in _declaring(d, capability, exclude) if d.barred(sender, a) is None)


def left_out(d: Directory, capability: str, sender: str, exclude: frozenset[str] = frozenset()) -> tuple[LeftOut, ...]:
    """The agents that declare the capability but may not get `sender`'s request, each with the permission
    that bars it (`Directory.barred`)."""
    return tuple(LeftOut(a, d.participants[a].name, why) for a in _declaring(d, capability, exclude)
                 if (why := d.barred(sender, a)) is not None)


def rank(d: Directory, capability: str, text: str, fitness: dict[str, Fitness], weights: dict[str, float],
         exclude: frozenset[str] = frozenset(), sender: str | None = None) -> tuple[Score, ...]:
    """Every eligible agent's score (`eligible`), best first (ties: name, then id). Empty: nobody is eligible."""
    ids = eligible(d, capability, exclude, sender)
    if not ids:
        return ()
    cap_words, text_words = words(capability), words(text)
    profs = {a: d.profiles.get(a, _NO_PROFILE) for a in ids}
    fits = {a: fitness.get(a, Fitness()) for a in ids}
    # The work's domains: the capability asked for, and any candidate's capability the text names.
    domains = {capability.lower()} | {c.lower() for p in profs.values() for c in p.capabilities
                                      if words(c) and words(c) <= text_words}
    # The tools the task names: words of the text (or capability) that are some candidate's tool.
    needed = {t.lower() for p in profs.values() for t in p.tools if t.lower() in text_words | cap_words}
    cheapest = min(p.cost for p in profs.values())
    times = [f.response_us for f in fits.values() if f.response_us is not None]
    fastest = min(times) if times else None
    out = []
    for a in ids:
        p, f = profs[a], fits[a]
        mine = [c.lower() for c in p.capabilities]
        covered = sum(1 for x in domains if any(words(x) <= words(c) for c in mine))
        title = words(p.title)
        values = {
            "capabilities": covered / len(domains),
            "role": 1.0 if _alike(title, cap_words) else 0.5 if _alike(title, text_words) or p.generalist else 0.0,
            "online": 1.0 if f.online else 0.0,
            "load": 1.0 / (1 + f.load),
            "trust": 0.5 if f.trust is None else min(1.0, max(0.0, f.trust)),
            "cost": 1.0 if p.cost <= cheapest else (1 + cheapest) / (1 + p.cost),
            "speed": 0.5 if f.response_us is None or fastest is None else (1 + fastest) / (1 + f.response_us),
            "tools": len(needed & {t.lower() for t in p.tools}) / len(needed) if needed else 0.0,
        }
        parts = tuple(Part(k, round(values[k], 4), w, round(values[k] * w, 4)) for k, w in weights.items())
        out.append(Score(a, d.participants[a].name, round(sum(x.points for x in parts), 4), parts))
    out.sort(key=lambda s: (-s.total, s.name, s.agent))
    return tuple(out)


def assign(d: Directory, capability: str, text: str, fitness: dict[str, Fitness], weights: dict[str, float],
           exclude: frozenset[str] = frozenset(), sender: str | None = None) -> Assignment | None:
    """Seed 003 §14: "The highest score gets the task." None when no agent is eligible. Given a `sender`,
    only agents it may send to are eligible, and the assignment names the others (`left_out`)."""
    scores = rank(d, capability, text, fitness, weights, exclude, sender)
    if not scores:
        return None
    return Assignment(capability, scores[0].agent, scores, left_out(d, capability, sender, exclude) if sender else ())


def explain(a: Assignment) -> dict:
    """An assignment as the wire carries it (docs/protocol.md, `assignment`)."""
    return {"capability": a.capability, "chosen": a.chosen, "scores": [
        {"agent": s.agent, "name": s.name, "total": s.total,
         "parts": [{"name": p.name, "value": p.value, "weight": p.weight, "points": p.points} for p in s.parts]}
        for s in a.scores], "left_out": explain_left_out(a.left_out)}


def explain_left_out(out: tuple[LeftOut, ...]) -> list[dict]:
    """Who was left out and why, as the wire carries it: the permission (`reason`) and its wording (`detail`)."""
    return [{"agent": x.agent, "name": x.name, "reason": x.reason, "detail": BARRED[x.reason].format(x.name)}
            for x in out]
