"""Tools, skills and memory: a fake web (httpx.MockTransport, no network) and a key file of the test's own."""

from __future__ import annotations

import httpx
import pytest

from ygg_server.tools import server_tools
from ygg_server.tools.web import Web


@pytest.fixture(autouse=True)
def secret_key(tmp_path, monkeypatch):
    path = tmp_path / "secret.key"
    monkeypatch.setenv("YGG_SECRET_KEY_FILE", str(path))
    return path


class FakeWeb:
    """What the fake internet answers, and every request it saw."""

    def __init__(self):
        self.seen: list[httpx.Request] = []
        self.pages: dict[str, httpx.Response] = {}

    def handler(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request)
        key = f"{request.url.scheme}://{request.url.host}{request.url.path}"
        if key in self.pages:
            return self.pages[key]
        return httpx.Response(404, text="not here")

    def web(self, **kw) -> Web:
        async def public(host):  # every fake host is a public address (the guard is tested on its own)
            return ["93.184.216.34"]
        return Web(client=httpx.AsyncClient(transport=httpx.MockTransport(self.handler)), resolver=public, **kw)


@pytest.fixture
def fake_web():
    return FakeWeb()


def use_web(gw, web: Web) -> None:
    """The gateway's server tools over `web` (the rest as the gateway would make it)."""
    gw.tool_env = server_tools.Env(read=gw.read, manage=gw.manage, clock=gw.clock, web=web)
