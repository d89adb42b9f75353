"""`serve`'s settings from its flags and a TOML file (`--config`), flags winning.

Every field of `net.conn.Limits` is a flag, made from the field itself (`max_frame` is `--max-frame N`; a tuple
is a repeatable flag named in FLAG_NAMES, a bool is `--name/--no-name`), so a limit added there is settable at
once. The file holds `[limits]` (the same names, TOML types) and `[serve]` (serve's other options, by their
flag's name with `_` for `-`):

    [serve]
    host = "0.0.0.0"
    data_dir = "/var/lib/ygg"
    [limits]
    max_frame = 1048576
    trusted_proxies = ["127.0.0.1/32"]
"""

from __future__ import annotations

import argparse
import dataclasses
import tomllib
import types
import typing

from .net.conn import Limits
from .startup import StartupError

# tuple fields: the flag that adds one value (repeatable)
FLAG_NAMES = {"origins": "origin", "trusted_proxies": "trusted-proxy", "metrics_from": "metrics-from"}
HELP = {"trusted_proxies": "a reverse proxy (address or CIDR) whose X-Forwarded-For names the client (repeatable)",
        "origins": "a browser Origin to allow (repeatable)",
        "metrics": "serve Prometheus /metrics (to loopback and --metrics-from only; needs ygg[metrics])",
        "metrics_from": "an address or CIDR besides loopback that may read /metrics (repeatable)"}


def _types() -> dict[str, type]:
    """Each field's type, `X | None` read as X (a flag left out keeps the default, None or not)."""
    hints = typing.get_type_hints(Limits)
    out = {}
    for f in dataclasses.fields(Limits):
        kind = hints[f.name]
        args = [a for a in typing.get_args(kind) if a is not type(None)]
        if typing.get_origin(kind) in (typing.Union, types.UnionType) and len(args) == 1:
            kind = args[0]
        out[f.name] = kind
    return out


def flag(name: str) -> str:
    return FLAG_NAMES.get(name, name.replace("_", "-"))


def add_limit_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("limits", "each also settable in the --config file's [limits]")
    defaults = Limits()
    for name, kind in _types().items():
        default = getattr(defaults, name)
        if typing.get_origin(kind) is tuple:
            g.add_argument(f"--{flag(name)}", dest=f"limit_{name}", action="append", default=None,
                           metavar="URL" if name == "origins" else "CIDR", help=HELP.get(name))
        elif kind is bool:
            g.add_argument(f"--{flag(name)}", dest=f"limit_{name}", default=None,
                           action=argparse.BooleanOptionalAction, help=HELP.get(name))
        else:
            g.add_argument(f"--{flag(name)}", dest=f"limit_{name}", type=kind, default=None,
                           metavar="N", help=HELP.get(name, f"default {default}"))


def load_file(path: str | None) -> dict:
    if not path:
        return {}
    try:
        with open(path, "rb") as f:
            raw = tomllib.load(f)
    except OSError as e:
        raise StartupError(f"cannot read the config file {path} ({e.strerror}): check --config") from None
    except tomllib.TOMLDecodeError as e:
        raise StartupError(f"the config file {path} is not valid TOML ({e}): fix it") from None
    unknown = set(raw) - {"serve", "limits", "oauth"}
    if unknown:
        raise StartupError(f"the config file {path} has unknown tables {sorted(unknown)}: only [serve], [limits] "
                           "and [oauth.<provider>]")
    return raw


def oauth_section(file: dict, where: str) -> dict:
    """The file's `[oauth.github]` and `[oauth.google]` (connected accounts' OAuth clients and endpoints:
    tools/oauth.py), checked: `client_id = "…"`, `client_secret`, `authorize_url`, `token_url`, `revoke_url`,
    `api_url`, `scope`."""
    from .tools.oauth import DEFAULTS, FIELDS

    section = file.get("oauth") or {}
    for name, values in section.items():
        if name not in DEFAULTS or not isinstance(values, dict):
            raise StartupError(f"{where}: [oauth] has tables {', '.join(sorted(DEFAULTS))} only, not {name!r}")
        bad = [k for k, v in values.items() if k not in FIELDS or not isinstance(v, str)]
        if bad:
            raise StartupError(f"{where}: [oauth.{name}] takes text values of {', '.join(FIELDS)}; not {bad}")
    return section


def limits_from(args: argparse.Namespace, file: dict, where: str = "") -> Limits:
    """Limits: the defaults, then the file's [limits], then the flags given."""
    types, values = _types(), {}
    for name, value in (file.get("limits") or {}).items():
        if name not in types:
            raise StartupError(f"{where}: [limits] has no {name!r}; known: {', '.join(sorted(types))}")
        values[name] = _coerce(name, types[name], value, where)
    for name in types:
        given = getattr(args, f"limit_{name}", None)
        if given is not None:
            values[name] = tuple(given) if typing.get_origin(types[name]) is tuple else given
    return Limits(**values)


def _coerce(name: str, kind, value, where: str):
    if typing.get_origin(kind) is tuple:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise StartupError(f"{where}: [limits] {name} takes a list of strings")
        return tuple(value)
    ok = isinstance(value, bool) if kind is bool else (
        isinstance(value, (int, float)) and not isinstance(value, bool) if kind is float else
        isinstance(value, int) and not isinstance(value, bool))
    if not ok:
        raise StartupError(f"{where}: [limits] {name} takes a {kind.__name__}, not {value!r}")
    return kind(value)


def apply_serve_section(p: argparse.ArgumentParser, args: argparse.Namespace, file: dict, where: str) -> None:
    """The file's [serve] values for the options not given on the command line (left at their defaults)."""
    for key, value in (file.get("serve") or {}).items():
        dest = key.replace("-", "_")
        if dest.startswith("limit_") or not hasattr(args, dest) or dest == "config":
            raise StartupError(f"{where}: [serve] has no {key!r} (limits go in [limits])")
        if getattr(args, dest) == p.get_default(dest):
            setattr(args, dest, value)
