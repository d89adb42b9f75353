"""Issue 20, defect 4: the new-agent dialog's run hint works as written (it named the builtin backend's missing
personality and the default :8765, while `./run` listens on a random port), and the TUI says which server it is on."""

import asyncio
import os
import shlex
import subprocess
from pathlib import Path

from ygg_tui.screens.dialogs import FormScreen, ShownOnce

from .conftest import SIZE, ready, wait_for, wait_text
from .test_manage import _palette
from .test_manage_forms import fill

ROOT = Path(__file__).resolve().parents[2]


async def test_the_new_agent_hint_runs_as_written_against_this_server(team):
    app = team.app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await wait_text(pilot, f"127.0.0.1:{team.server.port}")  # the address, in the header
        await _palette(pilot, "new agent", FormScreen)
        await fill(pilot, name="helper", workspace=team.ws)
        shown = await wait_for(pilot, lambda: isinstance(app.screen, ShownOnce) and app.screen, what="the key")
        key = shown.secret
        command = shown.why.split("Run it with: ", 1)[1].split(" (docs/", 1)[0]
        assert team.url in command
        words = shlex.split(command)
        assert words[0] == "YGG_KEY=…"
        agent = subprocess.Popen(words[1:], cwd=ROOT, env={**os.environ, "YGG_KEY": key},
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            alice = await team.person("alice")
            helper = next(m["id"] for m in app.store.workspaces[team.ws].members.values() if m["name"] == "helper")
            for _ in range(200):
                assert agent.poll() is None, agent.stdout.read()
                if helper in (await alice.call("presence", workspace=team.ws))["online"]:
                    break
                await asyncio.sleep(0.1)
            else:
                raise AssertionError("the agent never came online")
        finally:
            agent.terminate()
            agent.wait(10)
