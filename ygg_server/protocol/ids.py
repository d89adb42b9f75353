"""Ids the server gives: random UUIDs (version 4), never a client's."""

from __future__ import annotations

import os

_ids: list[str] = []  # random bytes for the next ids, 32 hex digits each
_VARIANT = {c: "89ab"[int(c, 16) & 3] for c in "0123456789abcdef"}
os.register_at_fork(after_in_child=_ids.clear)  # a child never hands out its parent's next ids


def new_id() -> str:
    """A random UUID (version 4, as `str(uuid.uuid4())`), from the OS's CSPRNG, which is read once for
    256 ids: a quarter of the cost of `uuid.uuid4()` (one getrandom call and a UUID object per id)."""
    try:
        h = _ids.pop()
    except IndexError:
        raw = os.urandom(16 * 256).hex()
        _ids.extend([raw[i:i + 32] for i in range(0, len(raw), 32)])
        h = _ids.pop()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{_VARIANT[h[16]]}{h[17:20]}-{h[20:]}"
