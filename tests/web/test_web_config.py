"""`ygg serve`'s visitors each sign in as themselves (issue 20): nothing of the operator's is handed to them."""

from __future__ import annotations

import shlex

from ygg_tui import web
from ygg_tui.config import Config


def test_a_visitor_never_gets_the_operator_s_stored_session(tmp_path, monkeypatch):
    """Issue 20: "each visitor signing in as themselves (no shared credentials baked into the page)": the operator
    who runs `ygg serve` has a config and a stored session; a visitor's TUI sees neither, and another visitor's
    neither."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    url = "ws://127.0.0.1:8765/"
    mine = Config.load()
    mine.handle = "operator"
    mine.save()
    mine.store_token(url, "operator", "yggs_operator_secret")
    assert Config.load().token_for(url, "operator") == "yggs_operator_secret"

    visitor, home = web.web_config(url)
    other, other_home = web.web_config(url)
    assert visitor.handle == "" and visitor.url == url
    assert visitor.token_for(url, "operator") is None
    visitor.store_token(url, "bob", "yggs_bob")  # bob signs in in one tab
    assert other.token_for(url, "bob") is None and home != other_home  # another tab does not resume him
    assert str(tmp_path) not in str(visitor.token_path)

    argv = shlex.split(web.command(url))
    assert argv[1:] == ["-m", "ygg_tui.cli", "--web", "--url", url]  # no handle, password or token
