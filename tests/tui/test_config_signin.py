"""Config in the user's config dir (TOML), the session token in the data dir, the sign-in screen."""

from textual.widgets import Input

from ygg_tui.app import make_app
from ygg_tui.config import Config
from ygg_tui.screens.main import MainScreen
from ygg_tui.screens.signin import SignInScreen

from .conftest import PW, SIZE, ready, wait_for, wait_text


def test_config_round_trip(tmp_path):
    cfg = Config.load(config_dir=tmp_path / "c", data_dir=tmp_path / "d")
    assert cfg.url.startswith("ws://") and cfg.theme == "ygg-dark"  # defaults without a file
    cfg.url, cfg.handle, cfg.theme, cfg.keys = "ws://example:1/", "alice", "ygg-light", {"ygg.search": "ctrl+f"}
    cfg.save()
    text = cfg.config_path.read_text()
    assert 'handle = "alice"' in text and "[keys]" in text
    again = Config.load(config_dir=tmp_path / "c", data_dir=tmp_path / "d")
    assert (again.url, again.handle, again.theme, again.keys) == (cfg.url, "alice", "ygg-light", {"ygg.search": "ctrl+f"})
    again.store_token("ws://example:1/", "alice", "tok")
    assert again.token_for("ws://example:1/", "alice") == "tok"
    assert oct(again.token_path.stat().st_mode & 0o777) == "0o600"
    (tmp_path / "c" / "config.toml").write_text("this is [not toml")
    assert Config.load(config_dir=tmp_path / "c").handle == ""  # a broken file falls back to defaults


async def test_sign_in_screen_then_the_stored_token(team):
    cfg = Config(url=team.url, clock=False, config_dir=team.tmp / "x" / "cfg", data_dir=team.tmp / "x" / "data")
    app = make_app(config=cfg, presence_every=0)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, SignInScreen), what="sign-in screen")
        screen = app.screen
        assert screen.query_one("#url", Input).value == team.url
        screen.query_one("#handle", Input).value = "alice"
        screen.query_one("#password", Input).value = "wrong password"
        screen.query_one("#password", Input).focus()
        await pilot.press("enter")
        await wait_text(pilot, "not accepted")
        screen = app.screen
        screen.query_one("#handle", Input).value = "alice"
        screen.query_one("#password", Input).value = PW
        screen.query_one("#password", Input).focus()
        await pilot.press("enter")
        await ready(pilot)
        assert isinstance(app.screen, MainScreen)
    token = cfg.token_for(team.url, "alice")
    assert token
    # next time: the handle is enough, the stored token signs in
    app2 = make_app(url=team.url, handle="alice", config=cfg, presence_every=0)
    async with app2.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert app2.session.client.password is None
        assert app2.store.me["handle"] == "alice"


async def test_a_launcher_passes_a_token(team):
    c = await team.person("bob")
    app = make_app(url=team.url, token=c.token, config=team.config("bob"), presence_every=0)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert app.store.me["handle"] == "bob"
        await wait_text(pilot, "@bob · team")


async def test_unreachable_server_asks_again(team):
    cfg = team.config()
    app = make_app(url="ws://127.0.0.1:9/", handle="alice", password=PW, config=cfg, presence_every=0)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, SignInScreen), timeout=15, what="sign-in again")
        await wait_text(pilot, "Could not reach")
