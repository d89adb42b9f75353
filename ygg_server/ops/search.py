"""search_messages: what people expect of a search box, on both stores.

A query is words and "quoted phrases". Every word must be there, as a word or the start of one (`deplo` finds
"deploy" and "deployment"); a phrase must be there as written, in order (its last word a prefix too, as the box is
typed into). The same terms become SQLite's FTS5 expression (`fts5`) and PostgreSQL's tsquery (`tsquery`); both
tokenize letters and digits alike (FTS5's unicode61, PostgreSQL's `simple`), so a term is kept to those. Each hit
comes with its topic's title and a snippet of its text cut on word boundaries, where the terms are (`snippet`).
"""

from __future__ import annotations

import re
import sqlite3

import msgspec

from .. import protocol
from ..protocol import frames
from ..store import loaders, rows as codec
from .refusals import Forbidden

_PHRASE = re.compile(r'"([^"]*)"')
_WORD = re.compile(r"[^\W_]+")  # letters and digits: what both stores' tokenizers keep as one token
SNIPPET = 160  # characters of text around the first hit


def terms(query: str) -> list[tuple[str, ...]]:
    """The query's terms, each a tuple of lowercase words: one word, or a phrase's words in order."""
    out: list[tuple[str, ...]] = []
    for phrase in _PHRASE.findall(query):
        words = tuple(w.lower() for w in _WORD.findall(phrase))
        if words:
            out.append(words)
    out += [(w.lower(),) for w in _WORD.findall(_PHRASE.sub(" ", query))]
    return list(dict.fromkeys(out))


def fts5(ts: list[tuple[str, ...]]) -> str:
    """SQLite FTS5: each term a quoted phrase whose last token is a prefix, all of them required."""
    return " AND ".join('"' + " ".join(t) + '"*' for t in ts)


def tsquery(ts: list[tuple[str, ...]]) -> str:
    """PostgreSQL: each word a prefix (`:*`), a phrase's words adjacent (`<->`), all of them required."""
    return " & ".join("(" + " <-> ".join(w + ":*" for w in t) + ")" for t in ts)


def _pattern(ts: list[tuple[str, ...]]) -> re.Pattern:
    """Where the terms are in a text: each word from a word's start, a phrase's words apart by anything else."""
    parts = [r"(?<![^\W_])" + r"[\W_]+".join(map(re.escape, t)) + r"[^\W_]*" for t in ts]
    return re.compile("|".join(parts), re.IGNORECASE)


def snippet(text: str, ts: list[tuple[str, ...]], width: int = SNIPPET) -> dict:
    """Up to `width` characters of `text` around its first hit, cut where a word ends, with "…" where text was
    left out; `hits`: [start, end) of each hit in the snippet's text (for highlighting)."""
    text = " ".join(text.split())  # one line
    found = list(_pattern(ts).finditer(text)) if ts else []
    start = 0
    if found and found[0].start() > width // 3:
        start = found[0].start() - width // 3
        space = text.find(" ", start)
        start = space + 1 if 0 <= space < found[0].start() else found[0].start()
    end = len(text)
    if end - start > width:
        end = text.rfind(" ", start, start + width)
        if end <= start:
            end = start + width
    head = "…" if start > 0 else ""
    tail = "…" if end < len(text) else ""
    shift = len(head) - start
    hits = [[max(m.start(), start) + shift, min(m.end(), end) + shift] for m in found if m.start() < end and m.end() > start]
    return {"text": head + text[start:end] + tail, "hits": hits}


def search_messages(conn, pid: str, f: frames.SearchMessages, now: int) -> dict:
    from .queries import _fitting, _history_floor, _limit, _member, receives  # (queries registers this function: no cycle)

    ws = f.workspace
    _, monitor = _member(conn, ws, pid)
    if not receives(conn, ws, pid):
        raise Forbidden
    q = f.query
    ts = terms(q) if isinstance(q, str) else []
    if not ts:
        return {"messages": []}
    sqlite_store = isinstance(conn, sqlite3.Connection)
    floor, limit = _history_floor(conn, ws, now), _limit(f.limit)
    # what the asker may read is chosen in the query, so a page is full whenever enough matches exist:
    # a monitor everything; anyone else General, groups, and the direct conversations it is in (_visible).
    # The index's matches are walked newest first (CROSS JOIN keeps it the outer loop), so a page stops
    # early however common the terms, and a rare one reads only its matches.
    sql = """SELECT m.body FROM messages_fts f CROSS JOIN messages m ON m.seq = f.rowid
           WHERE messages_fts MATCH ? AND m.workspace = ? AND m.created_at >= ?
           AND (? OR m.conversation IN (SELECT c.id FROM conversations c WHERE c.workspace = ?
                AND (c.kind IN ('general', 'group') OR c.members LIKE ?)))
           ORDER BY f.rowid DESC LIMIT ?"""
    args = [fts5(ts) if sqlite_store else tsquery(ts), ws, floor, monitor, ws,
            '%' + msgspec.json.encode(pid).decode() + '%', limit]
    if sqlite_store:
        # the newest messages may not be indexed yet (the writer indexes in chunks): they are matched in a
        # table of this connection's (store/sqlite.search_tail), all newer than the indexed ones, so they come first
        from ..store import sqlite  # (here: PostgreSQL's path never loads the SQLite store)

        conn.execute("BEGIN")
        try:
            sqlite.search_tail(conn, ws, floor)
            rows = conn.execute(sql.replace("messages_fts", "messages_tail"), args).fetchall()
            if len(rows) < limit:
                rows += conn.execute(sql, args[:-1] + [limit - len(rows)]).fetchall()
        finally:
            conn.execute("COMMIT")
    else:  # (postgres.OVERRIDES: the same question in PostgreSQL's full text search)
        rows = conn.execute(sql, args).fetchall()
    n = _fitting([b for (b,) in rows])  # a page within the bytes a client accepts
    found = [codec.decode_message(b) for (b,) in rows[:n]]
    titles = topic_titles(conn, {m.topic for m in found if m.topic})
    messages = []
    for m in found:
        o = protocol.message_obj(m)
        o["topic_title"] = titles.get(m.topic)
        o["snippet"] = snippet(m.text, ts)
        messages.append(o)
    if pid.startswith("agent."):  # agents see what they find as agents see it, as in history (docs/rules.md)
        pvs = loaders.party_views(conn, [(m.workspace, m.conversation) for m in found])
        messages = [protocol.for_agent(o, pvs[m.conversation]) for m, o in zip(found, messages)]
    return {"messages": messages, "more": n < len(rows)}


def topic_titles(conn, ids: set[str]) -> dict[str, str | None]:
    """The titles of these topics (a topic keeps its title in its state)."""
    out: dict[str, str | None] = {}
    for tid in sorted(ids):
        t = loaders.load_topic(conn, tid)
        if t is not None:
            out[tid] = t.title
    return out
