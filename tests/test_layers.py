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


REPLY_BUILDERS = ("answer", "refused", "error", "reply", "render", "replies")  # protocol's names that make frames


def _reply_building(source: str, package: str) -> list[str]:
    """Where code in `package` builds a wire reply: imports protocol.replies (or a reply builder from protocol),
    calls protocol.answer/refused/error/... through any name bound to the protocol package, or writes a dict
    with an `op` or `ref` key."""
    found = []
    aliases = set()  # names bound to ygg_server.protocol

    def resolve(node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        base = package.split(".")[: len(package.split(".")) - node.level + 1]
        return ".".join(base + ([node.module] if node.module else []))

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("ygg_server.protocol.replies"):
                    found.append(f"import {a.name}")
                elif a.name == "ygg_server.protocol" and a.asname:
                    aliases.add(a.asname)
        elif isinstance(node, ast.ImportFrom):
            mod = resolve(node)
            for a in node.names:
                if mod.startswith("ygg_server.protocol.replies"):
                    found.append(f"from {mod} import {a.name}")
                elif mod == "ygg_server.protocol" and a.name in REPLY_BUILDERS:
                    found.append(f"from {mod} import {a.name}")
                elif mod == "ygg_server" and a.name == "protocol":
                    aliases.add(a.asname or a.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id in aliases and node.attr in REPLY_BUILDERS:
                found.append(f"{node.value.id}.{node.attr}")
        elif isinstance(node, ast.Dict):
            keys = {k.value for k in node.keys if isinstance(k, ast.Constant)}
            if keys & {"op", "ref"}:
                found.append("a dict with " + " and ".join(repr(k) for k in sorted(keys & {"op", "ref"})))
    return found


def test_the_writer_answers_with_results_and_never_builds_a_wire_reply():
    """Issue 16: "the writer never sees a raw dict and never builds wire replies": it answers each command with a
    typed result (protocol/results.py); the gateway renders it (`replies.render`), once, at the edge."""
    wrong = {}
    for path in sorted((ROOT / "writer").glob("*.py")):
        package = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts[:-1])
        found = _reply_building(path.read_text(), package)
        if found:
            wrong[path.name] = found
    assert wrong == {}


def test_the_reply_check_is_read_right():
    """(The check itself: each way of building a reply the writer used to have, and the others, is found.)"""
    old = ("from .. import protocol\nfrom ..protocol import ErrorCode as E, frames\n"
           "def _send(ref, d):\n    return protocol.answer(ref, d)\n"
           "def _fund(ref):\n    return protocol.refused(ref, 'r', 'd')\n"
           "def _profile(ref):\n    return protocol.error(ref, E.NOT_FOUND, 'no')\n"
           "def _ack(ref, done):\n    return {'op': 'acked', 'ref': ref, 'ids': done}\n")
    assert sorted(_reply_building(old, "ygg_server.writer")) == [
        "a dict with 'op' and 'ref'", "protocol.answer", "protocol.error", "protocol.refused"]
    assert sorted(_reply_building("from ..protocol import replies\nfrom ..protocol.replies import message_obj\n"
                                  "import ygg_server.protocol as p\np.render(1, x)\n"
                                  "from ygg_server.protocol import error\n", "ygg_server.writer")) == [
        "from ygg_server.protocol import error", "from ygg_server.protocol import replies",
        "from ygg_server.protocol.replies import message_obj", "p.render"]
    assert _reply_building("from .. import protocol\nfrom ..protocol.results import Sent\nprotocol.to_post(f)\n"
                           "Sent(m, ())\n{'message': 1}\n", "ygg_server.writer") == []


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


NET_MAY_NOT_IMPORT = ("ygg_server.store.sqlite", "ygg_server.store.postgres", "asyncpg")
SQL = ("SELECT ", "INSERT INTO", "UPDATE ", "DELETE FROM", "pg_notify")


def test_net_imports_neither_store_adapter():
    """Issue 16: "`net` imports neither store adapter": the gateway and both Delivery adapters are handed what
    they ask the database (the writer, and on PostgreSQL `store.postgres.deliveries`) by the composition root."""
    wrong = {}
    for path in sorted((ROOT / "net").rglob("*.py")):
        bad = sorted(m for m in _imports_all(path) if m.startswith(NET_MAY_NOT_IMPORT))
        if bad:
            wrong[str(path.relative_to(ROOT))] = bad
    assert wrong == {}


def test_net_holds_no_sql():
    """Issue 16: "One gateway, not subclassed, holding no SQL": no string in net/ is a statement."""
    wrong = {}
    for path in sorted((ROOT / "net").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.lstrip().startswith(SQL):
                wrong.setdefault(str(path.relative_to(ROOT)), []).append(node.value[:40])
    assert wrong == {}


def test_the_gateway_is_not_subclassed():
    """Issue 16: "One gateway, not subclassed": what differs between stores is a Delivery adapter."""
    subclasses = []
    for path in sorted(ROOT.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any(getattr(b, "id", getattr(b, "attr", "")) == "Gateway"
                                                       for b in node.bases):
                subclasses.append(f"{path.relative_to(ROOT)}:{node.name}")
    assert subclasses == []


def _imports_all(path: Path) -> set[str]:
    """`_imports`, and third-party modules too."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level:
            out.add(node.module or "")
    return out | _imports(path)

# --- the one clock (issue 16: "one injected clock outside the core") ---

CLOCK_READERS_ALLOWED = ("clock.py", "agents/", "bench/", "client.py")  # the one clock; the clients, the benchmarks
_NOW_WITHOUT_ARGUMENTS = ("gmtime", "localtime", "ctime", "asctime")  # time.gmtime(s) converts; time.gmtime() reads


def _wall_clock_reads(source: str) -> list[int]:
    """The lines where `source` reads the time of day: time.time(), time.time_ns() (or imports them),
    time.gmtime() and its kin without an argument, time.strftime(fmt) without a time, datetime's now(), utcnow(),
    today() (under whatever names they were imported as). time.monotonic() and time.perf_counter() measure
    intervals, not the time of day; time.gmtime(s) and datetime.fromtimestamp(s) convert a given time."""
    tree = ast.parse(source)
    times, days = {"time"}, {"datetime", "date"}  # names of the time module; of datetime's classes (or module)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            times |= {a.asname for a in node.names if a.name == "time" and a.asname}
            days |= {a.asname for a in node.names if a.name == "datetime" and a.asname}
        elif isinstance(node, ast.ImportFrom) and node.module == "datetime":
            days |= {a.asname or a.name for a in node.names if a.name in ("datetime", "date")}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "time" and \
                any(a.name in ("time", "time_ns") for a in node.names):
            found.append(node.lineno)
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        owner = node.func.value
        owner = owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute) else ""
        name = node.func.attr
        if owner in times and (name in ("time", "time_ns") or name in _NOW_WITHOUT_ARGUMENTS and not node.args
                               or name == "strftime" and len(node.args) < 2) \
                or owner in days and name in ("now", "utcnow", "today"):
            found.append(node.lineno)
    return sorted(found)


def test_only_the_one_clock_reads_the_time_of_day():
    """Issue 16: "one injected clock outside the core": ygg_server/clock.py reads the wall clock; the writer and its
    store get it from the composition root, the gateway from its writer, the operations as `now` from their caller.
    The clients (agents/, client.py) and the benchmarks read their own."""
    wrong = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(CLOCK_READERS_ALLOWED):
            continue
        lines = _wall_clock_reads(path.read_text())
        if lines:
            wrong[rel] = lines
    assert wrong == {}
    assert _wall_clock_reads((ROOT / "clock.py").read_text()), "the one clock reads it"


def test_the_wall_clock_reads_are_found():
    """(The check itself: each way of reading the time of day is found; converting a given time is not.)"""
    source = "\n".join([
        "import time, datetime", "from datetime import datetime as dt, timezone",
        "a = time.time()", "b = time.time_ns() // 1000", "c = time.gmtime()", "d = time.strftime('%Y-%m')",
        "e = datetime.datetime.now()", "f = dt.now(timezone.utc)", "from time import time_ns",
        "ok = time.monotonic(), time.perf_counter(), time.gmtime(0), time.strftime('%Y', time.gmtime(0))",
        "ok = datetime.datetime.fromtimestamp(0)",
    ])
    assert _wall_clock_reads(source) == [3, 4, 5, 6, 7, 8, 9]


def test_the_gateway_hands_the_time_to_the_ops_that_take_it_and_to_no_other():
    """The socket ops of `ops` that need the time take `now` (their modules' TIMED); the gateway passes its clock's
    reading to exactly those (`net/gateway.py`, `_TIMED`)."""
    import inspect

    from ygg_server.net import gateway

    takes = {op for op, (fn, *_) in gateway._OPS.items() if "now" in inspect.signature(fn).parameters}
    assert takes == gateway._TIMED and gateway._TIMED <= set(gateway._OPS)
