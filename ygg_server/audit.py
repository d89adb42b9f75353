"""The audit log: security-relevant events as JSON lines on the `ygg.audit` logger; never a credential."""
from __future__ import annotations

import json
import logging

log = logging.getLogger("ygg.audit")


def record(event: str, *, outcome: str = "ok", participant: str | None = None, address: str | None = None,
           **fields: object) -> None:
    """One event (a sign-in or its failure, a limiter hit, a session's end, a revocation, a rotation, an
    invitation, a membership or role change, a deletion) as one JSON object. Pass ids and handles, never a
    password, key or token."""
    if log.isEnabledFor(logging.INFO):
        entry = {"event": event, "outcome": outcome, "participant": participant, "address": address, **fields}
        log.info(json.dumps(entry, separators=(",", ":"), default=str))
