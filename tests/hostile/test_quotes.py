"""Every test here says which sentence of PROTOCOL.md, docs/protocol.md or a seed it checks, word for word."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

HERE = Path(__file__).parent
SOURCES = {"PROTOCOL.md": "PROTOCOL", "docs/protocol.md": "docs", "Seed 002": "002", "Seed 003": "003"}


def _tests():
    for path in sorted(HERE.glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.AsyncFunctionDef | ast.FunctionDef) and node.name.startswith("test_"):
                yield f"{path.stem}::{node.name}", ast.get_docstring(node, clean=False) or ""


def _quotations():
    for where, doc in _tests():
        for source, quote in re.findall(r'(PROTOCOL\.md|docs/protocol\.md|Seed \d{3}): "(.{12,}?)"(?=[\s,.;:)(]|$)',
                                        doc, flags=re.S):
            yield where, SOURCES[source], quote


def test_every_hostile_test_quotes_what_it_checks():
    """PROTOCOL.md: "This page fixes the names that every client and every test may rely on": each test says which sentence it checks."""
    bare = [where for where, doc in _tests() if not any(s in doc for s in SOURCES) and "quotation" not in where]
    assert bare == []


@pytest.mark.parametrize("where, source, quote", list(_quotations()))
def test_hostile_quotation_is_verbatim(where, source, quote):
    from tests.core.test_quotes import assert_quoted

    assert_quoted(where, source, quote)
