"""The rule tests quote the seeds verbatim: every quotation in a docstring that cites a seed is checked."""

import ast
import os
import re
from pathlib import Path

import pytest

HERE = Path(__file__).parent
ROOT = HERE.parent.parent
CANDIDATES = [Path(p) for p in os.environ.get("YGG_SEEDS", "").split(os.pathsep) if p] + [
    ROOT / "seeds", ROOT.parent / "shared" / "seeds",
]


def _seeds() -> dict[str, str]:
    for d in CANDIDATES:
        if d.is_dir() and any(d.glob("000_*")):
            out: dict[str, str] = {}
            for f in sorted(d.iterdir()):
                if f.suffix in (".txt", ".md"):
                    out[f.name[:3]] = out.get(f.name[:3], "") + "\n" + f.read_text(encoding="utf-8")
            return out
    return {}


def _norm(s: str) -> str:
    return " ".join(s.replace("\u2014", "-").split())


def _quotes():
    """(test, seed number, quotation) for every `Seed NNN...: "..."` in tests/core docstrings."""
    for path in sorted(HERE.glob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                doc = ast.get_docstring(node, clean=False) or ""
                for para in re.split(r"\n\s*\n", doc):
                    cited = re.findall(r"Seed (\d{3})", para)
                    if not cited:
                        continue
                    for q in re.findall(r'"(.{12,}?)"(?=[\s,.;:)]|$)', para, flags=re.S):
                        yield f"{path.stem}::{node.name}", cited[0], q


QUOTES = list(_quotes())


def test_every_rule_test_cites_the_seed_or_a_decision():
    """Each rule test's docstring quotes the seed, or names the core's decision in docs/rules.md."""
    missing = []
    for path in sorted(HERE.glob("test_*.py")):
        if path.stem in ("test_quotes", "test_purity", "test_invariants", "test_bench", "test_fast_paths"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                doc = ast.get_docstring(node) or ""
                if not re.search(r"Seed \d{3}|Core decision", doc):
                    missing.append(f"{path.stem}::{node.name}")
    assert missing == []


@pytest.mark.skipif(not _seeds(), reason="seed texts not found (set YGG_SEEDS)")
@pytest.mark.parametrize("where, seed, quote", QUOTES, ids=[f"{w}:{i}" for i, (w, _, _) in enumerate(QUOTES)])
def test_quotation_is_verbatim(where, seed, quote):
    texts = _seeds()
    assert seed in texts, f"{where}: no seed {seed}"
    text, at = _norm(texts[seed]), 0
    for part in filter(None, (_norm(p) for p in quote.split("..."))):  # "..." marks an elision
        found = text.find(part, at)
        assert found >= 0, f"{where}: not in seed {seed}: {part!r}"
        at = found + len(part)


def assert_quoted(where: str, source: str, quote: str) -> None:
    """`quote` (parts split by "...", in order) is word for word in `source`: a seed's number, "docs"
    (docs/protocol.md), "architecture" (docs/architecture.md) or "PROTOCOL" (../shared/PROTOCOL.md)."""
    if source in ("docs", "architecture"):
        text = (ROOT / "docs" / ("protocol.md" if source == "docs" else "architecture.md")).read_text(encoding="utf-8")
    elif source == "PROTOCOL":
        path = ROOT.parent / "shared" / "PROTOCOL.md"
        if not path.exists():
            pytest.skip("PROTOCOL.md not found beside the repository")
        text = path.read_text(encoding="utf-8")
    else:
        seeds = _seeds()
        if source not in seeds:
            pytest.skip(f"seed {source} not found (set YGG_SEEDS)")
        text = seeds[source]
    text, at = _norm(text), 0
    for part in filter(None, (_norm(p) for p in quote.split("..."))):  # "..." marks an elision
        found = text.find(part, at)
        assert found >= 0, f"{where}: not in {source}: {part!r}"
        at = found + len(part)
