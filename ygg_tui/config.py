"""The TUI's settings: a TOML file in the user's config dir, the session token in the data dir.

    # ~/.config/ygg/config.toml
    url = "ws://127.0.0.1:8765/"
    handle = "alice"
    theme = "ygg-dark"
    clock = true            # show message times
    bell = true             # ring the terminal's bell when a message wakes you outside the topic on screen

    [keys]                  # binding id = keys (see `ygg_tui.keymap.ACTIONS` or press ?)
    "ygg.next_unread" = "n,ctrl+down"

Read with `tomllib`, written with `tomli_w`. The token file is JSON keyed by server
url and handle, readable only by its owner.
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path

import platformdirs
import tomli_w

APP = "ygg"
DEFAULT_URL = "ws://127.0.0.1:8765/"


@dataclass
class Config:
    url: str = DEFAULT_URL
    handle: str = ""
    theme: str = "ygg-dark"
    clock: bool = True
    bell: bool = True
    keys: dict[str, str] = field(default_factory=dict)
    # where this config lives (not written to the file)
    config_dir: Path | None = None
    data_dir: Path | None = None

    # --- locations ---

    @property
    def config_path(self) -> Path:
        return (self.config_dir or Path(platformdirs.user_config_dir(APP))) / "config.toml"

    @property
    def token_path(self) -> Path:
        return (self.data_dir or Path(platformdirs.user_data_dir(APP))) / "session.json"

    @property
    def exports_dir(self) -> Path:
        """Where the TUI writes exports (the palette's "Export …")."""
        return (self.data_dir or Path(platformdirs.user_data_dir(APP))) / "exports"

    @property
    def themes_dir(self) -> Path:
        return (self.config_dir or Path(platformdirs.user_config_dir(APP))) / "themes"

    # --- reading and writing ---

    @classmethod
    def load(cls, config_dir: Path | None = None, data_dir: Path | None = None) -> "Config":
        cfg = cls(config_dir=config_dir, data_dir=data_dir)
        try:
            raw = tomllib.loads(cfg.config_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return cfg
        except (OSError, tomllib.TOMLDecodeError):
            return cfg  # a broken file never stops the TUI; defaults apply
        for name in ("url", "handle", "theme"):
            if isinstance(raw.get(name), str):
                setattr(cfg, name, raw[name])
        for name in ("clock", "bell"):
            if isinstance(raw.get(name), bool):
                setattr(cfg, name, raw[name])
        if isinstance(raw.get("keys"), dict):
            cfg.keys = {str(k): str(v) for k, v in raw["keys"].items() if isinstance(v, str)}
        return cfg

    def save(self) -> None:
        data = {k: v for k, v in asdict(self).items() if k not in ("config_dir", "data_dir")}
        path = self.config_path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(tomli_w.dumps(data), encoding="utf-8")

    # --- the session token ---

    def _tokens(self) -> dict:
        try:
            return json.loads(self.token_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}

    def token_for(self, url: str, handle: str) -> str | None:
        tok = self._tokens().get(f"{handle}@{url}")
        return tok if isinstance(tok, str) else None

    def store_token(self, url: str, handle: str, token: str | None) -> None:
        tokens = self._tokens()
        key = f"{handle}@{url}"
        if token is None:
            tokens.pop(key, None)
        else:
            tokens[key] = token
        path = self.token_path
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(tokens, f)
        os.replace(tmp, path)
