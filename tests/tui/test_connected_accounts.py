"""Connected accounts from the TUI (issue 24; seed 003 §62-64): the palette's "Connected accounts", connecting
through the browser and a loopback redirect (against a fake provider on loopback that checks every request),
the list, revocation."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from ygg_server.tools.oauth import OAuthClient
from ygg_tui import loopback
from ygg_tui.screens.connecting import AccountsScreen, ConnectScreen
from ygg_tui.screens.dialogs import ConfirmScreen, FormScreen

from tests.tools.fake_oauth import FakeProvider

from .conftest import SIZE, ready, wait_for
from .test_manage import _palette
from .test_manage_forms import told
from .test_snapshots import quiet


@pytest.fixture
def fakes(server, tmp_path, monkeypatch):
    monkeypatch.setenv("YGG_SECRET_KEY_FILE", str(tmp_path / "secret.key"))
    made = {"github": FakeProvider("github"), "google": FakeProvider("google")}
    server.gw.oauth_client = OAuthClient(providers={k: f.provider() for k, f in made.items()})
    yield made
    for f in made.values():
        f.close()


async def choose(pilot, **values) -> None:
    """Pick the open form's choices, then its Connect button (from the keyboard: focus, then enter)."""
    form = pilot.app.screen
    for key, value in values.items():
        form.query_one(f"#f-{key}").value = value
    form.query_one("#submit").focus()
    await pilot.press("enter")


async def browser(url: str) -> None:
    """The person's browser: the sign-in page (the fake signs in at once), then the redirect to the TUI's port."""
    async with httpx.AsyncClient(follow_redirects=True) as b:
        r = await b.get(url)
        assert r.status_code == 200 and "close this tab" in r.text


async def test_a_person_connects_lists_and_revokes_an_account_from_the_palette(team, fakes):
    """§62: "Once someone connects an account, an agent can act on a real Google or GitHub account, through the same
    per-user OAuth flow you would grant any other app"; §63: "or to the whole workspace if added there"."""
    gh = fakes["github"]
    app = team.app()
    opened: list[str] = []
    app.open_url = lambda url, **kw: opened.append(url)  # (the browser: driven below)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await _palette(pilot, "connected accounts", AccountsScreen)
        assert app.screen.accounts == []
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, FormScreen), what="the form")
        await choose(pilot, provider="github", owner=team.ws)
        await wait_for(pilot, lambda: isinstance(app.screen, ConnectScreen) and opened, what="the sign-in page")
        assert app.screen.url == opened[0] and "code_challenge_method=S256" in opened[0]
        await browser(opened[0])
        await wait_for(pilot, lambda: told(app, "Connected GitHub account octo"), what="connected")
        await wait_for(pilot, lambda: isinstance(app.screen, AccountsScreen), what="the list again")
        [a] = app.screen.accounts
        assert (a["login"], a["owner_kind"], a["workspace"]) == ("octo", "workspace", team.ws)
        assert gh.problems == []
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="asked")
        await pilot.press("y")
        await wait_for(pilot, lambda: told(app, "Revoked octo"), what="revoked")
        await wait_for(pilot, lambda: isinstance(app.screen, AccountsScreen), what="the list again")
        assert app.screen.accounts == [] and gh.revoked == ["octo"] and gh.problems == []


async def test_a_sign_in_declined_at_the_provider_says_so(team, fakes):
    """A person who declines at the provider (`error=access_denied` on the redirect) is told; nothing is kept."""
    app = team.app()
    opened: list[str] = []
    app.open_url = lambda url, **kw: opened.append(url)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await _palette(pilot, "connected accounts", AccountsScreen)
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, FormScreen), what="the form")
        await choose(pilot, provider="google", owner="me")
        await wait_for(pilot, lambda: opened, what="the sign-in page")
        screen = app.screen
        state = httpx.URL(opened[0]).params["state"]
        redirect = httpx.URL(opened[0]).params["redirect_uri"]
        async with httpx.AsyncClient() as b:
            await b.get(redirect, params={"error": "access_denied", "state": state})
        await wait_for(pilot, lambda: "access_denied" in str(screen.query_one("#connect-state").render()),
                       what="said why")
        assert "provider_refused" in str(screen.query_one("#connect-state").render())


def test_connected_accounts_snapshot(snap_compare, sync_team, fakes):
    async def seed():
        alice = await sync_team.person("alice")
        for provider, ws in (("github", None), ("google", sync_team.ws)):
            opened = []
            await loopback.connect(alice.call, provider, lambda url: opened.append(asyncio.create_task(browser(url))),
                                   workspace=ws, timeout=10)
            await asyncio.gather(*opened)
        await sync_team.close_clients()
    asyncio.run(seed())
    time.sleep(0.2)

    async def before(pilot):
        await ready(pilot)
        quiet(pilot)  # (on the main screen: its composer's cursor, the header's address)
        await _palette(pilot, "connected accounts", AccountsScreen)
        await pilot.pause(0.2)

    assert snap_compare(sync_team.app(), terminal_size=SIZE, run_before=before)
