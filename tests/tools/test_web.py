"""Web search and page fetch (issue 23: "real code over httpx, tested against local fakes"): httpx.MockTransport,
no network."""

from __future__ import annotations

import httpx
import pytest

from ygg_server.tools.web import Web, WebError, html_text
from ygg_server.tools.schema import problem


async def test_a_page_is_read_as_its_title_and_text(fake_web):
    fake_web.pages["https://docs.test/a"] = httpx.Response(200, headers={"content-type": "text/html; charset=utf-8"},
        text="<html><head><title>Ygg  docs</title><style>p{}</style></head><body><h1>Hello</h1>"
             "<script>evil()</script><p>One &amp; two</p></body></html>")
    page = await fake_web.web().fetch_page("https://docs.test/a")
    assert page == {"url": "https://docs.test/a", "title": "Ygg docs", "text": "Hello\nOne & two", "cut": False}


async def test_redirects_are_followed_and_each_hop_checked(fake_web):
    fake_web.pages["https://a.test/old"] = httpx.Response(302, headers={"location": "/new"})
    fake_web.pages["https://a.test/new"] = httpx.Response(200, text="moved here", headers={"content-type": "text/plain"})
    fake_web.pages["https://a.test/inside"] = httpx.Response(302, headers={"location": "http://10.0.0.5/admin"})
    web = fake_web.web()
    assert (await web.fetch_page("https://a.test/old"))["text"] == "moved here"

    async def real_resolver(host):
        return ["10.0.0.5"] if host == "10.0.0.5" else ["93.184.216.34"]
    web.resolver = real_resolver
    with pytest.raises(WebError, match="not a public address"):
        await web.fetch_page("https://a.test/inside")
    assert "10.0.0.5" not in [r.url.host for r in fake_web.seen]


@pytest.mark.parametrize("url", ["http://127.0.0.1/", "http://[::1]:8765/", "http://169.254.169.254/latest",
                                 "http://192.168.1.1/", "file:///etc/passwd", "ftp://x.test/"])
async def test_the_servers_own_network_and_other_schemes_are_not_fetched(url):
    """An agent cannot make the server read its own network (the addresses resolved, literal ones too)."""
    async def resolver(host):
        return [host.strip("[]")]
    web = Web(client=httpx.AsyncClient(transport=httpx.MockTransport(lambda r: httpx.Response(200))),
              resolver=resolver)
    with pytest.raises(WebError):
        await web.fetch_page(url)


async def test_what_is_not_text_is_refused_and_a_large_page_is_cut(fake_web):
    fake_web.pages["https://a.test/img"] = httpx.Response(200, content=b"\x89PNG", headers={"content-type": "image/png"})
    fake_web.pages["https://a.test/big"] = httpx.Response(200, text="x" * 50_000, headers={"content-type": "text/plain"})
    web = fake_web.web(max_bytes=30_000)
    with pytest.raises(WebError, match="not a page of text"):
        await web.fetch_page("https://a.test/img")
    big = await web.fetch_page("https://a.test/big")
    assert big["cut"] and len(big["text"]) == 20_000
    with pytest.raises(WebError, match="answered 404"):
        await web.fetch_page("https://a.test/missing")


async def test_search_needs_a_configured_service_and_reads_its_results(fake_web):
    with pytest.raises(WebError, match="no web search service"):
        await fake_web.web(search_url=None).search("x")
    fake_web.pages["https://s.test/search"] = httpx.Response(200, json={"results": [
        {"title": f"t{i}", "url": f"https://r.test/{i}", "content": "c"} for i in range(9)] + [{"title": "no url"}]})
    hits = await fake_web.web(search_url="https://s.test/search").search("ygg chat", limit=3)
    assert [h["url"] for h in hits] == ["https://r.test/0", "https://r.test/1", "https://r.test/2"]
    fake_web.pages["https://s.test/broken"] = httpx.Response(500)
    with pytest.raises(WebError, match="search service failed"):
        await fake_web.web(search_url="https://s.test/broken").search("x")


def test_html_text_keeps_paragraphs_apart():
    assert html_text("<p>a</p><p>b <b>c</b></p><noscript>n</noscript>") == ("", "a\nb c")


def test_the_schema_check_names_what_is_wrong():
    s = {"type": "object", "properties": {"to": {"type": "array", "items": {"type": "string"}},
                                          "n": {"type": "integer"}, "k": {"type": "string", "enum": ["a", "b"]}},
         "required": ["to"]}
    assert problem(s, {"to": ["x"], "n": 2, "k": "a"}) is None
    assert problem(s, {"to": ["x", 1]}) == "to[1] must be a string"
    assert problem(s, {"to": [], "n": True}) == "n must be an integer"
    assert problem(s, {"to": [], "k": "c"}) == "k must be one of a, b"
    assert problem(s, []) == "arguments must be an object"
