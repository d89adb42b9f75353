"""`ygg serve`'s page and websocket (issue 20; textual-serve has neither check of its own): the page loads nothing
from another site, and the websocket that starts a visitor's process is refused to another site's page."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("textual_serve", reason="textual-serve is not installed (pip install 'ygg[web]')")
from aiohttp import WSServerHandshakeError  # noqa: E402
from aiohttp.test_utils import TestClient, TestServer  # noqa: E402

from ygg_tui.web import origin_of, parser, web_server  # noqa: E402


async def _client(public_url=None, allow=()) -> tuple[TestClient, str]:
    srv = web_server("ws://127.0.0.1:8765/", "127.0.0.1", 0, public_url, allow)
    client = TestClient(TestServer(await srv._make_app()))
    await client.start_server()
    if public_url is None:  # the page's own address, as `--public-url` would give it
        srv.public_url = f"http://127.0.0.1:{client.port}"
        srv.origins = {origin_of(srv.public_url), *(origin_of(o) for o in allow)}
    return client, srv.public_url


async def test_the_page_loads_nothing_from_another_site():
    client, public = await _client()
    try:
        html = await (await client.get("/")).text()
        urls = re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)""", html) + re.findall(r"""url\(["']?([^"')]+)""", html)
        assert urls and all(u.startswith(public + "/") for u in urls), urls
        assert "googleapis" not in html and "Content-Security-Policy" in html and "font-src 'self'" in html
        font = await client.get("/static/fonts/RobotoMono-VariableFont_wght.ttf")
        assert font.status == 200, "the font is served from here"
    finally:
        await client.close()


async def test_another_site_s_page_cannot_open_the_websocket(monkeypatch):
    from aiohttp import web
    from textual_serve.server import Server

    async def handler(self, request):  # textual-serve's own, past the check: here without a process behind it
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.send_str("textual-serve's handler")
        await ws.close()
        return ws

    monkeypatch.setattr(Server, "handle_websocket", handler)
    client, public = await _client(allow=("http://localhost:8000",))
    try:
        with pytest.raises(WSServerHandshakeError) as refused:
            await client.ws_connect("/ws", headers={"Origin": "http://evil.example"})
        assert refused.value.status == 403
        for origin in (public, "http://localhost:8000"):  # its own page, and one allowed by --allow-origin
            ws = await client.ws_connect("/ws", headers={"Origin": origin})
            assert (await ws.receive_str()) == "textual-serve's handler"
            await ws.close()
    finally:
        await client.close()


def test_allow_origin_is_a_flag():
    args = parser().parse_args(["--allow-origin", "http://localhost:8000", "--allow-origin", "https://a.example"])
    assert args.allow_origin == ["http://localhost:8000", "https://a.example"]
