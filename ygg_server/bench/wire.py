"""The benchmark's JSON on the wire: the same codec (msgspec) for the load generator and the relays."""

from __future__ import annotations

from typing import Any

import msgspec

_enc = msgspec.json.Encoder()
decode = msgspec.json.Decoder().decode


def dumps(obj: Any) -> str:
    return _enc.encode(obj).decode()
