"""Embeddings for memory search, optional, behind one interface (issue 23: "Search runs on the store (SQLite FTS5 and
PostgreSQL full text; embeddings optional, behind an interface, with a package that ships its own model where one is
used)").

The default is none: `ops/memory.search` ranks by the store's full-text rank. An `Embedder` set with `use(...)` (the
composition root, or a test) re-ranks what the full-text search found (a wider set of candidates, `WIDEN` times the
limit) by cosine similarity to the query, so the store still does the finding, per workspace, and nothing leaves it.
No model is downloaded here: `Hashing` is a model-free embedder (feature hashing of words and character trigrams)
that shows the seam; an embedder over a package that ships its own model implements the same `embed`.
"""

from __future__ import annotations

import hashlib
import math
import re
from typing import Protocol, Sequence

WIDEN = 4  # candidates the full-text search brings for an embedder to re-rank, per result wanted
_WORD = re.compile(r"[^\W_]+")


class Embedder(Protocol):
    name: str

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, each of the same length (normalized or not: `rerank` normalizes)."""


_current: Embedder | None = None


def use(embedder: Embedder | None) -> None:
    """Memory search re-ranks with `embedder` from now on (None: the store's full-text rank alone)."""
    global _current
    _current = embedder


def current() -> Embedder | None:
    return _current


def _unit(v: Sequence[float]) -> list[float]:
    n = math.sqrt(sum(x * x for x in v)) or 1.0
    return [x / n for x in v]


def rerank(embedder: Embedder, query: str, rows: list[tuple], text_at: int = 1) -> list[tuple]:
    """`rows` (full-text order) by similarity of their text (`row[text_at]`) to `query`, the best first; a tie keeps
    the full-text order."""
    if not rows:
        return rows
    q, *vs = (_unit(v) for v in embedder.embed([query, *(r[text_at] for r in rows)]))
    score = [sum(a * b for a, b in zip(q, v)) for v in vs]
    order = sorted(range(len(rows)), key=lambda i: (-score[i], i))
    return [rows[i] for i in order]


class Hashing:
    """A model-free embedder: words and character trigrams hashed into `dims` buckets (signed), per text."""

    name = "hashing"

    def __init__(self, dims: int = 256):
        self.dims = dims

    def _features(self, text: str) -> list[str]:
        words = [w.lower() for w in _WORD.findall(text)]
        grams = [f"#{w[i:i + 3]}" for w in words for i in range(max(1, len(w) - 2))]
        return words + grams

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out = []
        for text in texts:
            v = [0.0] * self.dims
            for f in self._features(text):
                h = int.from_bytes(hashlib.blake2b(f.encode(), digest_size=8).digest(), "big")
                v[h % self.dims] += 1.0 if (h >> 63) else -1.0
            out.append(v)
        return out
