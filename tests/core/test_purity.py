"""DESIGN.md convention 1: the routing core imports no I/O."""

import subprocess
import sys

FORBIDDEN = ("asyncio", "sqlite3", "websockets", "textual", "socket", "httpx", "asyncpg")


def test_core_imports_no_io_modules():
    code = (
        "import sys; import ygg_server.core; "
        f"print(' '.join(m for m in {FORBIDDEN!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"ygg_server.core pulled in: {out.stdout.strip()}"
