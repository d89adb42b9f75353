"""What an operation raises when it will not do what it was asked: the gateway turns each into its reply.

- `NotFound`: `not_found`, exactly as for an id that does not exist (one workspace learns nothing of another's);
- `Forbidden`: `forbidden`, a membership without receive (it may not subscribe or search);
- `AdminError(code, detail)`: an error of that code (`forbidden`, `name_taken`, `last_owner`, …), also the admin
  CLI's `{"error": code, "detail": …}`;
- `Refused(reason, detail)`: `refused` with that reason, as a send is (`permission_denied`, `persona_shrink`, …).
"""

from __future__ import annotations


class NotFound(Exception):
    pass


class Forbidden(Exception):
    """A member whose membership does not allow this (seed 002: receive lets it subscribe and search)."""


class AdminError(Exception):
    def __init__(self, code: str, detail: str):
        super().__init__(detail)
        self.code, self.detail = code, detail


class Refused(Exception):
    def __init__(self, reason: str, detail: str, **extra):
        super().__init__(detail)
        self.reason, self.detail, self.extra = reason, detail, extra


def person_only(who: str) -> None:
    """Management is a person's (seed 002: agents belong to a person)."""
    if not who.startswith("human."):
        raise AdminError("forbidden", "only a person manages workspaces and agents")
