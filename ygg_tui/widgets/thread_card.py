"""A side thread's card under the message it came from (seed 003 §5-7; issue 21).

Collapsed, one line per thread: who it is with and its state (◌ ongoing, ✓ resolved, ✗ abandoned). Expanded (`t`
on the message), the summary posted back and the thread's latest messages under it. Pure: the message list asks
for the lines (text, style name) and draws them.
"""

from __future__ import annotations

from typing import Callable

MARKS = {"ongoing": "◌ ongoing", "resolved": "✓ resolved", "abandoned": "✗ abandoned"}
PREVIEW = 5  # latest messages of a thread shown expanded
SYSTEM = "system.ygg"


def card_lines(m: dict, thread_of: Callable[[str], dict | None], previews: dict[str, list[dict]], expanded: bool,
               namer: Callable[[str], str], width: int) -> list[tuple[str, str]]:
    """The card lines of message `m` (none when its `<dm>` parts opened no thread), each (text, style name)."""
    out: list[tuple[str, str]] = []
    for tid in m.get("threads") or ():
        c = thread_of(tid) or {}
        state = c.get("thread") or "ongoing"
        who = [namer(p) for p in c.get("members") or () if p != m.get("author") and not p.startswith("human.")]
        name = ", ".join(who) if who else (c.get("name") or "side thread").removeprefix("thread: ")
        msgs = previews.get(tid)
        count = f" · {len(msgs)} message{'s' if len(msgs) != 1 else ''}" if msgs is not None else ""
        fold = "▾" if expanded else "▸"
        out.append((_fit(f"  ╰ {fold} side thread with {name} · {MARKS.get(state, state)}{count}", width),
                    f"thread-{state}" if state in MARKS else "thread-ongoing"))
        if not expanded:
            continue
        if c.get("summary"):
            out.append((_fit(f"      summary: {c['summary']}", width), "thread-summary"))
        if msgs is None:
            out.append((_fit("      loading…", width), "meta"))
            continue
        for x in msgs[-PREVIEW:]:
            text = (x.get("text") or "").replace("\n", " ")
            who = "⚙" if x.get("author") == SYSTEM else namer(x.get("author") or "")
            out.append((_fit(f"      {who}: {text}", width), "meta"))
    return out


def artifact_line(a: dict) -> str:
    """The line under a message that posted, edited or commented on an artifact (seed 003 §8)."""
    return f"  ▣ {a.get('title', '')} · {a.get('kind', 'document')}, version {a.get('version')} · a: open"


def human_size(n: int) -> str:
    """Bytes as a person reads them: 512 B, 12.3 kB, 4.0 MB."""
    if n < 1000:
        return f"{n} B"
    for unit in ("kB", "MB", "GB"):
        n /= 1000
        if n < 1000 or unit == "GB":
            return f"{n:.1f} {unit}"
    return f"{n:.1f} GB"


def file_line(f: dict) -> str:
    """The line under a message for each file sent with it (issue 21): its name, size and type, and the key."""
    return f"  ▤ {f.get('name', '')} · {human_size(int(f.get('size') or 0))} · {f.get('type', '')} · s: save"


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"
