"""Search people expect (issue 20: "prefix and phrase matching, snippets on word boundaries with the hit highlighted,
the topic's title shown"), on both stores (docs/protocol.md, `search_messages`)."""

from __future__ import annotations

import pytest

from ygg_server.ops.search import fts5, snippet, terms, tsquery

pytestmark = pytest.mark.backends("sqlite", "postgres")


def test_a_query_is_words_and_quoted_phrases():
    assert terms('Deplo "the green   Build" v2.1 deplo') == [("the", "green", "build"), ("deplo",), ("v2",), ("1",)]
    assert terms('"" ... "') == []
    assert fts5([("deplo",), ("green", "build")]) == '"deplo"* AND "green build"*'
    assert tsquery([("deplo",), ("green", "build")]) == "(deplo:*) & (green:* <-> build:*)"
    # nothing of the query's own syntax gets through to either store's
    assert terms('a" OR "b NEAR(x) -c* d:*') == [("or",), ("a",), ("b",), ("near",), ("x",), ("c",), ("d",)]


def test_a_snippet_is_cut_on_word_boundaries_around_the_hit():
    text = " ".join(f"word{i}" for i in range(60)) + " the deployment went fine " + " ".join(
        f"tail{i}" for i in range(60))
    s = snippet(text, terms("deploy"))
    assert s["text"].startswith("…") and s["text"].endswith("…")
    inner = s["text"][1:-1]
    assert inner.split()[0] in text.split() and inner.split()[-1] in text.split(), "whole words at both ends"
    assert len(inner) <= 160
    (start, end), = s["hits"]
    assert s["text"][start:end] == "deployment"
    short = snippet("Ship the GREEN build,\nthen the green  build again", terms('"green build"'))
    assert short["text"] == "Ship the GREEN build, then the green build again"
    assert [short["text"][a:b] for a, b in short["hits"]] == ["GREEN build", "green build"]
    assert snippet("nothing here", terms("absent")) == {"text": "nothing here", "hits": []}


async def test_prefixes_and_phrases_are_found_with_the_topics_title_and_a_snippet(team):
    alice = await team.person("alice")
    a = await alice.send(workspace=team.ws, topic="new", title="Release plan", type="inform", to=["researcher"],
                         text="We deploy the green build on Tuesday after the review")
    topic = a["message"]["topic"]
    b = await alice.send(workspace=team.ws, topic=topic, type="inform", to=["researcher"],
                         text="The build is green now; deployment can start")
    c = await alice.send(workspace=team.ws, topic="new", title="Other", type="inform", to=["researcher"],
                         text="Greenhouse notes, nothing to deploy")

    async def found(q):
        return (await alice.call("search_messages", workspace=team.ws, query=q))["messages"]

    ids = lambda ms: [m["id"] for m in ms]  # noqa: E731
    assert ids(await found("deplo")) == [c["message"]["id"], b["message"]["id"], a["message"]["id"]], "a prefix"
    assert ids(await found("DEPLOYMENT")) == [b["message"]["id"]]
    assert ids(await found('"green build"')) == [a["message"]["id"]], "a phrase, in order"
    assert ids(await found("green build")) == [b["message"]["id"], a["message"]["id"]], "each word anywhere"
    assert ids(await found('"green bu"')) == [a["message"]["id"]], "a phrase's last word as typed so far"
    assert ids(await found("gree deplo tues")) == [a["message"]["id"]]
    assert await found("reen") == [], "from a word's start only"

    hit = (await found('"green build" tues'))[0]
    assert hit["topic_title"] == "Release plan"
    s = hit["snippet"]
    assert s["text"] == "We deploy the green build on Tuesday after the review"
    assert [s["text"][x:y] for x, y in s["hits"]] == ["green build", "Tuesday"]
    assert (await found("greenhouse"))[0]["topic_title"] == "Other"
