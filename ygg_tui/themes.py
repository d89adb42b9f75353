"""Themes: TOML files bundled in the package's `theme_files/` (and the user's config dir `themes/`),
each one a Textual `Theme`:

    name = "ygg-dark"
    primary = "#7aa2f7"
    dark = true
    [variables]
    footer-key-foreground = "#7aa2f7"
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from textual.theme import Theme

FIELDS = ("primary", "secondary", "warning", "error", "success", "accent", "foreground", "background",
          "surface", "panel", "boost")
BUILTIN = Path(__file__).resolve().parent / "theme_files"  # package data: in the wheel too


def load_theme(path: Path) -> Theme | None:
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return None
    if not isinstance(raw.get("name"), str) or not isinstance(raw.get("primary"), str):
        return None
    kw = {k: raw[k] for k in FIELDS if isinstance(raw.get(k), str)}
    variables = {str(k): str(v) for k, v in (raw.get("variables") or {}).items()}
    return Theme(name=raw["name"], dark=bool(raw.get("dark", True)), variables=variables, **kw)


def load_themes(*dirs: Path) -> list[Theme]:
    out: list[Theme] = []
    for d in (BUILTIN, *dirs):
        if d and d.is_dir():
            for p in sorted(d.glob("*.toml")):
                t = load_theme(p)
                if t is not None:
                    out.append(t)
    return out
