"""Web search and page fetch, over httpx, for the server's `web_search` and `fetch_page` tools.

- A page is fetched only from a public address: each hop's host is resolved and a loopback, private,
  link-local or reserved address is refused (an agent cannot make the server read its own network), redirects
  followed by hand (at most `MAX_REDIRECTS`), each checked again; at most `max_bytes` read; HTML becomes its
  title and text (scripts and styles left out), plain text and JSON stay as they are, anything else is refused.
- Search asks a SearXNG-compatible JSON endpoint (`$YGG_SEARCH_URL`, e.g. `https://searx.example/search`), set by
  the operator; without one, `web_search` says so.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import socket
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Awaitable, Callable
from urllib.parse import urljoin, urlsplit

import httpx

MAX_REDIRECTS = 5
TEXT_LIMIT = 20_000  # characters of a page's text given to the model


class WebError(Exception):
    """What the tool answers instead (the model reads it)."""


async def resolve(host: str) -> list[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return [i[4][0] for i in infos]


def _public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    return ip.is_global and not ip.is_multicast


@dataclass
class Web:
    client: httpx.AsyncClient = field(default_factory=lambda: httpx.AsyncClient(timeout=10.0))
    search_url: str | None = field(default_factory=lambda: os.environ.get("YGG_SEARCH_URL") or None)
    resolver: Callable[[str], Awaitable[list[str]]] = resolve
    max_bytes: int = 1_000_000
    allow_private: bool = False  # tests and a closed network's operator only

    async def check(self, url: str) -> httpx.URL:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise WebError("only http and https addresses with a host can be fetched")
        if not self.allow_private:
            try:
                addresses = await self.resolver(parts.hostname)
            except OSError:
                raise WebError(f"{parts.hostname} does not resolve") from None
            if not addresses or not all(_public(a) for a in addresses):
                raise WebError(f"{parts.hostname} is not a public address; it is not fetched")
        return httpx.URL(url)

    async def get(self, url: str, headers: dict[str, str] | None = None) -> tuple[httpx.Response, bytes]:
        """GET `url` from a public address, redirects checked hop by hop; (the response, its first bytes)."""
        for _ in range(MAX_REDIRECTS + 1):
            target = await self.check(url)
            async with self.client.stream("GET", target, headers=headers, follow_redirects=False) as r:
                if r.is_redirect and "location" in r.headers:
                    url = urljoin(str(target), r.headers["location"])
                    continue
                body = bytearray()
                async for chunk in r.aiter_bytes():
                    body += chunk
                    if len(body) >= self.max_bytes:
                        break
                return r, bytes(body[: self.max_bytes])
        raise WebError(f"more than {MAX_REDIRECTS} redirects")

    async def fetch_page(self, url: str) -> dict:
        try:
            r, body = await self.get(url)
        except httpx.HTTPError as e:
            raise WebError(f"could not fetch {url}: {type(e).__name__}") from None
        if r.status_code >= 400:
            raise WebError(f"{url} answered {r.status_code}")
        kind = r.headers.get("content-type", "").split(";")[0].strip().lower()
        text = body.decode(r.encoding or "utf-8", errors="replace")
        if kind in ("text/html", "application/xhtml+xml"):
            title, text = html_text(text)
        elif kind.startswith("text/") or kind.endswith("json"):
            title = ""
        else:
            raise WebError(f"{url} is {kind or 'of no stated type'}, not a page of text")
        return {"url": str(r.url), "title": title, "text": text[:TEXT_LIMIT], "cut": len(text) > TEXT_LIMIT}

    async def search(self, query: str, limit: int = 5) -> list[dict]:
        if not self.search_url:
            raise WebError("no web search service is configured on this server (YGG_SEARCH_URL)")
        try:
            r = await self.client.get(self.search_url, params={"q": query, "format": "json"})
            r.raise_for_status()
            results = r.json().get("results") or []
        except (httpx.HTTPError, ValueError, AttributeError) as e:
            raise WebError(f"the search service failed: {type(e).__name__}") from None
        return [{"title": str(x.get("title", "")), "url": str(x.get("url", "")), "snippet": str(x.get("content", ""))}
                for x in results[:limit] if isinstance(x, dict) and x.get("url")]


class _Text(HTMLParser):
    SKIP = {"script", "style", "noscript", "template", "svg"}
    BLOCK = {"p", "div", "br", "li", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "section", "article", "pre"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title: list[str] = []
        self._skip = 0
        self._in_title = False

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP:
            self._skip += 1
        elif tag == "title":
            self._in_title = True
        elif tag in self.BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag):
        if tag in self.SKIP and self._skip:
            self._skip -= 1
        elif tag == "title":
            self._in_title = False

    def handle_data(self, data):
        if self._in_title:
            self.title.append(data)
        elif not self._skip:
            self.parts.append(data)


def html_text(html: str) -> tuple[str, str]:
    """(title, text) of an HTML page: its visible text, one paragraph a line."""
    p = _Text()
    p.feed(html)
    lines = (" ".join(line.split()) for line in "".join(p.parts).splitlines())
    return " ".join("".join(p.title).split()), "\n".join(line for line in lines if line)
