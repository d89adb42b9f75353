"""Ygg's terminal client (Textual): `make_app(...)` builds it, `ygg_tui.cli:main` runs it."""

from .app import YggApp, make_app

__all__ = ["YggApp", "make_app"]
