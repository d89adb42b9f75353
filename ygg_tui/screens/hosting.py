"""The palette's actions for where one's agents run and the public agent directory (issue 24; docs/protocol.md,
"Where agents run" and `publish_agent`). Mixed into the main screen after `ManageActions` (its `_ask`, `_form_op`,
`_sure`, `_show_key`)."""

from __future__ import annotations

from textual import work

from .dialogs import Field, ShownOnce

LOCAL = "local"


class HostingActions:
    @work(group="manage", exit_on_error=False)
    async def add_host(self) -> None:
        """A host of one's own for `ygg-agent host`; its key shown once."""
        got, reply = await self._form_op(
            "New host", [Field("name", "Name", placeholder="e.g. vm-1", required=True)], "Create",
            "A machine that runs your hosted agents (ygg-agent host): its key is shown once.",
            lambda got: ("add_host", {"name": got["name"]}))
        if reply:
            await self.app.push_screen_wait(ShownOnce(
                f"The host key of {reply['name']}", reply["host_key"], "Shown this once: keep it now (c copies it). "
                f"Run the host with: YGG_HOST_KEY=… ygg-agent host --url {self.app.url} --root DIR (docs/agents.md)."))

    @work(group="manage", exit_on_error=False)
    async def set_runtime(self, agent: str) -> None:
        """Seed 003 §24: hosted on one of one's hosts, or local (its host assignment cleared completely)."""
        name = self._agent_name(agent)
        listed = await self._ask("list_hosts")
        if listed is None:
            return
        now = next((h["name"] for h in listed["hosts"] if any(a["id"] == agent for a in h["agents"])), None)
        choices = [("on my machine (local)", LOCAL)] + [(f"hosted on {h['name']}", h["id"]) for h in listed["hosts"]]
        current = next((h["id"] for h in listed["hosts"] if h["name"] == now), LOCAL)
        got, reply = await self._form_op(
            f"Where {name} runs", [Field("where", "Runs", current, choices=choices)], "Move",
            f"Now: {'hosted on ' + now if now else 'local'}. Back to local clears its host assignment and ends its "
            "hosted sessions at once; start it yourself then.",
            lambda got: ("set_runtime", {"agent": agent, "runtime": LOCAL} if got["where"] == LOCAL else
                         {"agent": agent, "runtime": "hosted", "host": got["where"]}))
        if reply:
            where = "locally" if reply["runtime"] == LOCAL else "on its host"
            self.notify(f"{name} runs {where} from now on.")

    @work(group="manage", exit_on_error=False)
    async def publish_agent(self, agent: str) -> None:
        """Seed 003 §67: to the public directory, anyone may copy it; not an agent pinned to a shared workspace."""
        name = self._agent_name(agent)
        if await self._sure(f"Publish {name} to the directory?", "Anyone on this server can copy its profile and "
                            "persona into an agent of their own (not its key, wallet or conversations).", "Publish"):
            if await self._ask("publish_agent", agent=agent):
                self.notify(f"{name} is in the directory.")

    @work(group="manage", exit_on_error=False)
    async def copy_agent(self) -> None:
        """A new agent of one's own from a directory listing."""
        listed = await self._ask("list_directory")
        if listed is None:
            return
        if not listed["listings"]:
            self.notify("The directory is empty.")
            return
        choices = [(f"{x['name']} by {x['publisher']}" + (f": {x['title']}" if x["title"] else ""), x["listing"])
                   for x in listed["listings"]]
        got, reply = await self._form_op(
            "Copy an agent from the directory", [Field("listing", "Agent", choices[0][1], choices=choices),
                                                 Field("name", "Its name here", placeholder="(the listing's)")],
            "Copy", "A new agent of yours with its profile and persona; its key is shown once.",
            lambda got: ("copy_agent", {"listing": got["listing"], **({"name": got["name"]} if got["name"] else {})}))
        if reply:
            await self.app.session.load_my_agents()
            await self._members_changed(list(self.store.workspaces))
            await self._show_key(reply)
