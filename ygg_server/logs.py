"""The server's log: to stderr or a file (`--log-file`), as text or one JSON object a line (`--log-json`).

A record may carry `address` and `participant` (connection lines do: net/gateway.py); the JSON form puts them
in fields of their own. What is logged never holds a credential: websockets' frame log stays off
(net/gateway.py), sign-ins log who and from where, never what they presented (docs/security.md).
"""

from __future__ import annotations

import json
import logging
import time

FIELDS = ("address", "participant", "handle", "kind")


class JsonLines(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out = {"ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
               "level": record.levelname, "logger": record.name, "message": record.getMessage()}
        for k in FIELDS:
            if hasattr(record, k):
                out[k] = getattr(record, k)
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False)


def setup(level: str, file: str | None = None, as_json: bool = False) -> None:
    try:
        handler: logging.Handler = logging.FileHandler(file, encoding="utf-8") if file else logging.StreamHandler()
    except OSError as e:
        from .startup import StartupError

        raise StartupError(f"cannot write the log file {file} ({e.strerror}): check --log-file") from None
    handler.setFormatter(JsonLines() if as_json else
                         logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    root.addHandler(handler)
    root.setLevel(level.upper())
