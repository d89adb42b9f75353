"""PostgreSQL's code does not load the SQLite store: what both stores share lives beside the adapters
(store/rows.py, loaders.py, writes.py, transactions.py, schema/)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SQLITE = "ygg_server.store.sqlite"


def _file(module: str) -> Path | None:
    """The module's source, or its folder for a namespace package (store/, net/: no __init__.py)."""
    base = ROOT.joinpath(*module.split("."))
    for p in (base.with_suffix(".py"), base / "__init__.py", base):
        if p.exists():
            return p
    return None


def _imports(module: str) -> set[str]:
    """The modules `module` imports when it is loaded: its top-level import statements (an import inside a
    function runs only when it is called), and the packages above each."""
    path = _file(module)
    if path.is_dir():
        return set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        for n in names:
            if n.startswith("ygg_server") and _file(n):
                parts = n.split(".")
                out |= {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
    out.discard(module)
    return out


def _loaded_by(*roots: str) -> set[str]:
    seen, todo = set(), list(roots)
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo += _imports(m)
    return seen


def test_the_postgresql_store_and_the_operations_both_stores_run_do_not_load_the_sqlite_one():
    shared = ["ygg_server.store.postgres", "ygg_server.store.rows", "ygg_server.store.loaders",
              "ygg_server.store.writes", "ygg_server.store.transactions", "ygg_server.store.schema",
              "ygg_server.ops.admin", "ygg_server.ops.queries", "ygg_server.ops.auth", "ygg_server.ops.reach",
              "ygg_server.ops.permissions", "ygg_server.ops.guidance", "ygg_server.idempotency"]
    code = f"import sys\nfor m in {shared!r}: __import__(m)\nprint({SQLITE!r} in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    assert SQLITE not in _loaded_by(*shared)  # (the same, read from the source)


def test_the_writer_on_postgresql_and_the_cluster_gateway_do_not_load_the_sqlite_store():
    """Issue 16: one writer over the Store port, its PostgreSQL adapter and the cluster's gateway: none of them
    loads store.sqlite (the composition root, ygg_server/compose.py, names an adapter only when asked for it)."""
    loaded = _loaded_by("ygg_server.writer", "ygg_server.store.postgres.writer_store", "ygg_server.net.delivery.cluster",
                        "ygg_server.store.postgres.deliveries",
                        "ygg_server.compose")
    assert "ygg_server.store.postgres.writer_store" in loaded and "ygg_server.writer.batch" in loaded
    assert SQLITE not in loaded
