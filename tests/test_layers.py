"""The layers, as contracts (issue 16): what each package may import of the others.

The writer decides and writes over the Store port: it imports the core, the frames (protocol) and
the port (store/port.py, the row shapes both adapters share), and the one clock (ygg_server/clock.py),
never a store adapter, the gateway or the management operations. The composition root
(ygg_server/compose.py) alone puts an adapter under it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import ygg_server

ROOT = Path(ygg_server.__file__).parent

WRITER_MAY_IMPORT = ("ygg_server.core", "ygg_server.protocol", "ygg_server.store.port", "ygg_server.store.writeset",
                     "ygg_server.store.rows", "ygg_server.writer", "ygg_server.gcpolicy", "ygg_server.clock")


def _imports(path: Path) -> set[str]:
    """The ygg_server modules a file imports (relative imports resolved)."""
    package = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts[:-1])
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.update(f"{mod}.{a.name}" if not node.module else mod for a in node.names)
    return {m for m in out if m.startswith("ygg_server")}


def test_the_writer_imports_only_the_core_the_frames_and_the_store_port():
    """Issue 16: "the writer imports only the core, the frames and the store port"."""
    wrong = {}
    for path in sorted((ROOT / "writer").glob("*.py")):
        bad = sorted(m for m in _imports(path) if not m.startswith(WRITER_MAY_IMPORT))
        if bad:
            wrong[path.name] = bad
    assert wrong == {}


def test_the_core_imports_nothing_outside_itself():
    wrong = {}
    for path in sorted((ROOT / "core").glob("*.py")):
        bad = sorted(m for m in _imports(path) if not m.startswith("ygg_server.core"))
        if bad:
            wrong[path.name] = bad
    assert wrong == {}


def test_the_imports_are_read_right():
    """(The check itself: a relative import is resolved against its package.)"""
    assert "ygg_server.core" in _imports(ROOT / "writer" / "batch.py")
    assert "ygg_server.store.port" in _imports(ROOT / "writer" / "plan.py")


def test_the_store_adapters_import_neither_the_writer_nor_the_gateway_nor_the_operations():
    """The adapters sit under the writer, beside each other: the writer, net and ops are above them."""
    wrong = {}
    for path in sorted((ROOT / "store").rglob("*.py")):
        bad = sorted(m for m in _imports(path) if m.startswith(("ygg_server.writer", "ygg_server.net", "ygg_server.ops")))
        if bad:
            wrong[str(path.relative_to(ROOT))] = bad
    assert wrong == {}
