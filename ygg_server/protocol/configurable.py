"""What `set_profile` and `set_setting` accept, checked in one place for the writer (the socket's ops) and the
operator's commands (`ops/configure.py`) alike (docs/protocol.md, "Parties").

- `check_profile(given)`: an agent's profile fields, their text checked as names are (`names.BadName`).
- `setting_problem(key, value)`: why a workspace setting's value is refused, or None.
- `settings_in_force(stored)`: every setting, the workspace's own or its default.
"""

from __future__ import annotations

from typing import Any

from ..core import assign as core_assign
from ..core.rules import MAX_HOPS, MAX_HOPS_CEILING, THROTTLE_DIRECT, THROTTLE_GROUP
from . import names

# set_profile's text, read by other agents and people (rosters, lists, `capability:` sends): checked as names are
PROFILE_TEXT = {
    "title": lambda v: names.clean_or_blank("job_title", v),
    "description": lambda v: names.clean_text("description", v),
    "capabilities": lambda v: names.clean_each("capability", "capabilities", v),
    "tools": lambda v: names.clean_each("tool", "tools", v),
}
WHOLE_SETTINGS = {  # key: (lowest, highest, default) for whole-number settings
    "party.maxHops": (0, MAX_HOPS_CEILING, MAX_HOPS),
    "party.throttleDirect": (1, MAX_HOPS_CEILING, THROTTLE_DIRECT),
    "party.throttleGroup": (1, MAX_HOPS_CEILING, THROTTLE_GROUP),
}
SETTINGS = (*WHOLE_SETTINGS, "assign.weights", "credits.poolDraw")

# A conversation's setting (its rulebook's `sideThreads` rule, set by its people): whether and in what words its
# agents are told about side threads (seed 003 §6: "A conversation can only decide whether agents are told about side
# threads, and in what words"). "off": not told; any other text: those words; unset: these.
SIDE_THREADS_OFF = "off"
SIDE_THREADS_WORDS = (
    'To ask another agent something privately without filling this conversation, wrap that part of your message in '
    '<dm target="Name">...</dm> (several names separated by commas): it goes to a side thread of just you and them, '
    "shown here as a small card under your message. When the side thread has what was needed, settle it: a short "
    "summary, marked resolved (or abandoned if it got stuck).")


def side_threads_problem(value: Any) -> str | None:
    """Why `value` is not a conversation's `sideThreads` rule, or None."""
    if not isinstance(value, str) or not value.strip() or len(value) > 1000:
        return 'sideThreads is "off" or the words agents are told about side threads (1 to 1000 characters)'
    return None


def side_threads_words(rulebook: dict[str, Any]) -> str | None:
    """What a conversation's agents are told about side threads (None: nothing)."""
    value = rulebook.get("sideThreads")
    if value is None:
        return SIDE_THREADS_WORDS
    return None if value.strip().lower() == SIDE_THREADS_OFF else value.strip()


class UnknownSetting(KeyError):
    """A setting no workspace has."""


def check_profile(given: dict[str, Any]) -> dict[str, Any]:
    """The profile fields `given`, their text cleaned (only those given: a profile stored before these checks
    can still be changed field by field); raises `names.BadName` naming the field and the rule."""
    out = dict(given)
    out.update({k: check(out[k]) for k, check in PROFILE_TEXT.items() if k in out})
    for k in ("capabilities", "tools"):
        if k in out:
            out[k] = tuple(out[k])
    return out


def setting_problem(key: str, value: Any) -> str | None:
    """Why `value` is refused for setting `key` (`bad_amount`), or None; an unknown key raises `UnknownSetting`."""
    if key in WHOLE_SETTINGS:
        lo, hi, _ = WHOLE_SETTINGS[key]
        if value is not None and (type(value) is not int or not lo <= value <= hi):
            return f"{key} is a whole number from {lo} to {hi}, or null"
        return None
    if key == "assign.weights":
        if value is not None and (not isinstance(value, dict) or not all(
                k in core_assign.WEIGHTS and type(v) in (int, float) and 0 <= v <= 1000 for k, v in value.items())):
            return "assign.weights maps parts (" + ", ".join(core_assign.WEIGHTS) + ") to numbers from 0 to 1000"
        return None
    if key == "credits.poolDraw":  # the agents (ids) the pool pays for beyond their own wallet (the writer checks
        if value is not None and not isinstance(value, list):  # they are this workspace's agents)
            return "credits.poolDraw is a list of agent ids, or null"
        return None
    raise UnknownSetting(key)


def settings_in_force(stored: dict[str, Any]) -> dict[str, Any]:
    """Every setting as decided with: the workspace's own value, else its default."""
    out: dict[str, Any] = {k: stored.get(k, default) for k, (_, _, default) in WHOLE_SETTINGS.items()}
    out["assign.weights"] = {**core_assign.WEIGHTS, **(stored.get("assign.weights") or {})}
    out["credits.poolDraw"] = list(stored.get("credits.poolDraw") or [])
    return out
