"""`ygg serve` in headless Chromium (issue 20: "`ygg serve` (textual-serve) opens the same app in a browser, each
visitor signing in as themselves"): sign in, send a message, see an agent's answer, take a screenshot.

Debian's chromium (`.ci/run` installs it) driven by Playwright's Python package with `executable_path`, no browser
download. The page's terminal is drawn on a canvas, so what the browser was sent to draw is read from the page's own
websocket (textual-serve's frames: the app's terminal output), and the screenshot is kept for a person to look at.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import socket
import sys
from pathlib import Path

import pytest

from ygg_server.ops import admin
from tests.backends import PW, start_server, stop_server

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
playwright_api = pytest.importorskip("playwright.async_api", reason="Playwright's Python package is not installed")
pytest.importorskip("textual_serve", reason="textual-serve is not installed (pip install 'ygg[web]')")
pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                reason="Debian's chromium is not installed (.ci/run installs it: apt-get install chromium)")
ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT = os.environ.get("YGG_WEB_SCREENSHOT")  # also copy the screenshot here, to look at it
ANSI = re.compile(r"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[@-Z\\-_]")


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Screen:
    """What the page's websocket brought: the app's terminal output (binary frames; text frames are textual-serve's
    own pongs), its text with the escape sequences taken out, so words drawn on the canvas can be looked for."""

    def __init__(self) -> None:
        self.raw = bytearray()

    def frame(self, payload) -> None:
        if isinstance(payload, (bytes, bytearray)):
            self.raw += payload

    @property
    def text(self) -> str:
        return ANSI.sub("", self.raw.decode("utf-8", "replace"))

    async def shows(self, words: str, timeout: float = 20.0) -> None:
        deadline = asyncio.get_running_loop().time() + timeout
        while words not in self.text:
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"the page never showed {words!r}; it showed, last: {self.text[-1500:]!r}")
            await asyncio.sleep(0.1)


async def answering_agent(url: str, key: str) -> None:
    """The README's example agent (examples/echo_agent.py): answers each request "<name> read: <text>"."""
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import echo_agent
    finally:
        sys.path.remove(str(ROOT / "examples"))
    await echo_agent.main(url, key)


async def test_a_visitor_signs_in_in_the_browser_sends_and_sees_the_agent_s_answer(tmp_path):
    """Issue 20: "A test drives `ygg serve` in headless Chromium, signs in, sends a message and sees an agent's
    answer, and takes a screenshot"; each visitor signs in as themselves (no credentials in the page)."""
    server = await start_server("sqlite", tmp_path / "ygg.db")
    agent = serve = None
    try:
        server.admin(admin.add_person, "alice", PW)
        ws = server.admin(admin.add_workspace, "team", "alice")["id"]
        key = server.admin(admin.add_agent, "echo", "alice", ws)["api_key"]
        server.admin(admin.fund, "echo", 100)
        agent = asyncio.ensure_future(answering_agent(server.url, key))
        port = free_port()
        env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_DATA_HOME": str(tmp_path / "data")}
        serve = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "ygg_tui.cli", "serve", "--url", server.url, "--port", str(port),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, env=env)
        page_url = f"http://127.0.0.1:{port}/"
        await _until_serving(page_url)

        async with playwright_api.async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                               args=["--no-sandbox", "--disable-gpu"])
            page = await browser.new_page(viewport={"width": 1400, "height": 900})
            screen = Screen()
            page.on("websocket", lambda sock: sock.on("framereceived", screen.frame))
            await page.goto(page_url)
            html = await page.content()
            assert PW not in html and "alice" not in html  # nothing of anyone's in the page
            await screen.shows("Sign in to Ygg")
            await page.focus("#terminal textarea")  # the keyboard's (a click would land on the form's middle field)
            await asyncio.sleep(0.5)  # the sign-in screen's focus is on the handle
            await page.keyboard.type("alice", delay=20)
            await page.keyboard.press("Enter")  # on to the password (a person's pace: the focus moves first)
            await asyncio.sleep(0.5)
            await page.keyboard.type(PW, delay=20)
            await page.keyboard.press("Enter")
            try:
                await screen.shows("Write… @name first addresses")
            except AssertionError:
                await page.screenshot(path=str(tmp_path / "failed.png"))
                if SCREENSHOT:
                    shutil.copy(tmp_path / "failed.png", SCREENSHOT)
                raise
            await asyncio.sleep(0.5)  # the first paint settles
            await page.keyboard.type("@echo what is a persona?", delay=20)
            await page.keyboard.press("Enter")
            await screen.shows("New topic: what is it about?")
            await asyncio.sleep(0.3)
            await page.keyboard.press("Control+u")
            await page.keyboard.type("Browser check", delay=20)
            await page.keyboard.press("Enter")
            await screen.shows("echo read: @echo what is a persona?")
            shot = tmp_path / "ygg-serve.png"
            await page.screenshot(path=str(shot))
            assert shot.stat().st_size > 10_000
            if SCREENSHOT:
                shutil.copy(shot, SCREENSHOT)
            await browser.close()
    finally:
        if serve is not None and serve.returncode is None:
            serve.terminate()
            await asyncio.wait_for(serve.wait(), 15)
        if agent is not None:
            agent.cancel()
            await asyncio.gather(agent, return_exceptions=True)
        await stop_server(server)


async def _until_serving(url: str, timeout: float = 30.0) -> None:
    import httpx

    deadline = asyncio.get_running_loop().time() + timeout
    async with httpx.AsyncClient() as client:
        while True:
            try:
                if (await client.get(url)).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"ygg serve never answered on {url}")
            await asyncio.sleep(0.2)
