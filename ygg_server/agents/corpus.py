"""A small bundled corpus (data/handbook.md) and a keyword search over it, for offline agents."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

_WORD = re.compile(r"[a-z0-9_]+")
_STOP = frozenset("""a an and are as at be by can do does for from how i in is it its of on or so that the
this to was what when where which who why will with you your me my we our about tell please ygg""".split())


@dataclass(frozen=True)
class Section:
    title: str
    text: str


def words(s: str) -> list[str]:
    out = []
    for w in _WORD.findall(s.lower()):
        if w in _STOP or len(w) < 2:
            continue
        out.append(w[:-1] if len(w) > 4 and w.endswith("s") else w)
    return out


def parse(markdown: str) -> list[Section]:
    sections, title, lines = [], None, []
    for line in markdown.splitlines():
        if line.startswith("## "):
            if title and lines:
                sections.append(Section(title, " ".join(x.strip() for x in lines if x.strip())))
            title, lines = line[3:].strip(), []
        elif title is not None:
            lines.append(line)
    if title and lines:
        sections.append(Section(title, " ".join(x.strip() for x in lines if x.strip())))
    return sections


@lru_cache(maxsize=8)
def load(path: str | None = None) -> tuple[Section, ...]:
    if path:
        return tuple(parse(Path(path).read_text(encoding="utf-8")))
    text = resources.files("ygg_server.agents").joinpath("data/handbook.md").read_text(encoding="utf-8")
    return tuple(parse(text))


def search(query: str, path: str | None = None, k: int = 3) -> list[tuple[float, Section]]:
    """Sections ranked by query words found (title words count double), rarer words weighing more."""
    sections = load(path)
    q = set(words(query))
    if not q:
        return []
    docs = [(s, set(words(s.text)), set(words(s.title))) for s in sections]
    n = len(docs)
    scored = []
    for s, body, title in docs:
        score = 0.0
        for w in q:
            df = sum(1 for _, b, t in docs if w in b or w in t)
            if not df:
                continue
            idf = math.log(1 + n / df)
            score += idf * ((w in body) + 2 * (w in title))
        if score > 0:
            scored.append((score, s))
    scored.sort(key=lambda x: -x[0])
    return scored[:k]
