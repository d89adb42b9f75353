"""Embeddings optional, behind an interface (issue 23): the store's full-text search by default; an `Embedder`
re-ranks what the store found, per workspace, with no model download."""

from __future__ import annotations

import pytest

from ygg_server.ops import admin, embedding, memory

pytestmark = pytest.mark.backends("sqlite", "postgres")


@pytest.fixture(autouse=True)
def no_embedder():
    yield
    embedding.use(None)


class Favouring:
    """A fake embedder: the query (the first text) and the texts naming `word` point one way, the others another
    (so those naming it rank first)."""

    name = "favouring"

    def __init__(self, word: str):
        self.word, self.seen = word, []

    def embed(self, texts):
        self.seen.append(list(texts))
        return [[1.0, 0.0] if i == 0 or self.word in t else [0.0, 1.0] for i, t in enumerate(texts)]


async def test_an_embedder_reranks_what_the_store_found_and_never_widens_the_workspace(team):
    """Issue 23: "Search runs on the store (SQLite FTS5 and PostgreSQL full text; embeddings optional, behind an
    interface"."""
    s = team
    aid = s.admin(admin.add_agent, "scout", "alice", s.ws)["id"]
    other = s.admin(admin.add_workspace, "lab", "alice")["id"]
    now = s.gw.clock()
    for i, text in enumerate(["deploys happen on Tuesday", "deploys need the reviewer", "lunch is on Friday"]):
        s.admin(memory.save, aid, s.ws, text, now + i)
    fts = [m["text"] for m in s.admin(memory.search, aid, s.ws, "deploys", 2)]
    assert set(fts) <= {"deploys happen on Tuesday", "deploys need the reviewer"} and len(fts) == 2
    fake = Favouring("reviewer")
    embedding.use(fake)
    got = [m["text"] for m in s.admin(memory.search, aid, s.ws, "deploys", 1)]
    assert got == ["deploys need the reviewer"]
    assert sorted(fake.seen[0][1:]) == ["deploys happen on Tuesday", "deploys need the reviewer"], \
        "it re-ranks what the full-text search found (not lunch, which does not match)"
    assert s.admin(memory.search, aid, other, "deploys", 5) == [], "never across a workspace's isolation"

    embedding.use(embedding.Hashing())
    got = [m["text"] for m in s.admin(memory.search, aid, s.ws, "deploys Tuesday", 5, any_word=True)]
    assert got[0] == "deploys happen on Tuesday"


def test_the_hashing_embedder_is_deterministic_and_puts_similar_texts_close():
    h = embedding.Hashing(dims=128)
    a, b, c = h.embed(["the deploy needs two approvals", "deploys need approvals", "lunch on friday"])
    assert a == h.embed(["the deploy needs two approvals"])[0] and len(a) == 128
    rows = [("x", "lunch on friday"), ("y", "deploys need approvals")]
    assert [r[0] for r in embedding.rerank(h, "the deploy needs two approvals", rows)] == ["y", "x"]
