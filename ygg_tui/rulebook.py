"""`/rulebook` in the composer: read or set this conversation's rulebook (docs/protocol.md, "Directives").

    /rulebook                              show the rules in force
    /rulebook length=300 style=short, formal   set rules (a value runs to the next `key=`)
    /rulebook interrupt=                   back to the default for that rule
    /rulebook reset                        back to the defaults for all of them

The agents of the conversation get it in the stable part of their next directive.
"""

from __future__ import annotations

import re
from typing import Any

from ygg_server.ops.directives import RULEBOOK_LABELS

COMMAND = "/rulebook"
_KEY = re.compile(r"(?:^|\s)(" + "|".join(RULEBOOK_LABELS) + r")=")


class Usage(ValueError):
    pass


def is_command(text: str) -> bool:
    head = text.strip().split(maxsplit=1)
    return bool(head) and head[0] == COMMAND


def parse(text: str) -> dict[str, Any] | None | str:
    """"show", None (reset all), or the rules to change ({rule: value or None})."""
    rest = text.strip()[len(COMMAND):].strip()
    if not rest:
        return "show"
    if rest == "reset":
        return None
    marks = list(_KEY.finditer(rest))
    if not marks or rest[: marks[0].start()].strip():
        raise Usage(f"say which rules: {', '.join(f'{k}=…' for k in RULEBOOK_LABELS)}, or reset")
    out: dict[str, Any] = {}
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(rest)
        value: Any = rest[m.end():end].strip() or None
        if m.group(1) == "length" and value is not None:
            if not (value.isascii() and value.isdigit()):  # "²".isdigit(), but int() cannot read it
                raise Usage("length is a number of characters")
            value = int(value)
        out[m.group(1)] = value
    return out


def describe(reply: dict) -> str:
    """The rules in force, one line each, marking those the conversation's people set."""
    rb, mine = reply.get("rulebook") or {}, reply.get("set") or {}
    lines = []
    for key in sorted(rb):
        value = f"at most {rb[key]} characters" if key == "length" else rb[key]
        lines.append(f"{RULEBOOK_LABELS.get(key, key)}: {value}" + ("" if key in mine else " (default)"))
    return "\n".join(lines)
