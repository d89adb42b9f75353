"""Issue 18: "clients warn before sending credentials over ws:// to a host that is not loopback": the TUI says
so as it signs in (the socket client logs the same for ygg-agent: tests/operate/test_serve_options.py)."""

from __future__ import annotations

from ygg_tui.app import make_app
from ygg_tui.config import Config

from .conftest import PW, SIZE, ready, wait_for


def _said(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def test_the_tui_warns_before_signing_in_over_ws_to_another_host(tmp_path):
    cfg = Config(config_dir=tmp_path, data_dir=tmp_path)
    app = make_app(url="ws://192.0.2.1:9/", handle="alice", password=PW, config=cfg)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: any("not encrypted" in m for m in _said(app)), what="the warning")
        assert any("192.0.2.1" in m and "wss://" in m for m in _said(app))


async def test_no_warning_on_loopback(team):
    app = team.app("alice")
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert not any("not encrypted" in m for m in _said(app))
