"""What a person manages from the command palette (seed 002; seed 003 §65-66): organizations, workspaces,
who is in them, agents' permissions and keys, leaving, joining an open workspace again and deleting, a topic's
budget, a workspace's groups. Each asks with a small form, or a yes or no where it cannot be undone, and says a refusal in words (its
reason and the server's detail)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace

from textual import work

from ygg_server.client import Refused

from ..words import refused_in_words
from .dialogs import ConfirmScreen, Field, FormScreen, ShownOnce

FLAGS = {"send": "Send: may write in this workspace", "receive": "Receive: gets messages here",
         "monitor": "Monitor: sees the whole workspace live"}
LISTS = {"can_message": "Can message (empty: anyone)", "takes_from": "Takes messages from (empty: anyone)"}
WHO = "e.g. reviewer, scout@bob, @bob, group:ops"


FIXABLE = (ValueError, Refused, ConnectionError, asyncio.TimeoutError)  # a form comes back, saying why (`in_form`)


def in_form(e: Exception) -> str:
    """Why a form's answer was not taken, as the form that comes back says it: a value to fix (ValueError), a
    refusal in words, or a connection lost before the answer."""
    if isinstance(e, Refused):
        return f"✗ refused ({e.reason}): {refused_in_words(e)}"
    if isinstance(e, (ConnectionError, asyncio.TimeoutError)):
        return "✗ The connection dropped before the server answered: look whether it was done, then try again."
    return str(e)


def handle(raw: str) -> str:
    return "@" + raw.strip().removeprefix("@")


class ManageActions:
    """Mixed into the main screen: the palette's management actions (`ygg_tui/commands.py`)."""

    async def _ask(self, op: str, **fields) -> dict | None:
        """The op's answer, or None after saying why it was refused."""
        try:
            return await self.app.session.call(op, **fields)
        except Refused as e:
            self.notify(refused_in_words(e), severity="error",
                        title=f"refused: {e.reason}")
        except (ConnectionError, asyncio.TimeoutError):
            self.notify("The connection dropped before the server answered: look whether it was done, then try "
                        "again.", severity="error", title="no answer")
        return None

    async def _form(self, title: str, fields: list[Field], submit: str, why: str = "") -> dict | None:
        return await self.app.push_screen_wait(FormScreen(title, fields, submit, why))

    async def _form_op(self, title: str, fields: list[Field], submit: str, why: str,
                       op: Callable[[dict], tuple[str, dict]]) -> tuple[dict | None, dict | None]:
        """A form whose answer the server takes (`op(values)` -> (op, fields); a ValueError is a value to fix):
        refused, the form comes back with what was typed and the refusal in words, to fix or cancel (it closed
        and the typing was lost: a mistyped handle meant the palette, the form and all of it again). Returns
        (values, the server's answer), or (None, None) when cancelled."""
        error = ""
        while True:
            got = await self.app.push_screen_wait(FormScreen(title, fields, submit, why, error))
            if got is None:
                return None, None
            fields = [replace(f, value=got[f.key]) for f in fields]
            try:
                name, args = op(got)
                return got, await self.app.session.call(name, **args)
            except FIXABLE as e:
                error = in_form(e)

    async def _sure(self, title: str, why: str, yes: str) -> bool:
        return await self.app.push_screen_wait(ConfirmScreen(title, why, yes))

    async def _members_changed(self, workspaces) -> None:
        for ws in workspaces:
            await self.app.session.reload_members(ws)
        self.refresh_all()

    # --- organizations ---

    @work(group="manage", exit_on_error=False)
    async def create_org(self) -> None:
        """Seed 002: everyone "can create or join more" organizations."""
        got, reply = await self._form_op(
            "New organization", [Field("name", "Name", placeholder="e.g. Acme", required=True)], "Create",
            "You own it. It is on the Free plan: one Free organization per person.",
            lambda got: ("create_org", {"name": got["name"]}))
        if reply:
            self.store.org_names[reply["id"]], self.store.org_roles[reply["id"]] = reply["name"], "owner"
            self.notify(f"Created the organization {reply['name']}: add workspaces with New workspace.")

    @work(group="manage", exit_on_error=False)
    async def add_org_member(self, org: str) -> None:
        """Seed 002: invite people from Organizations; admins invite members, its owner makes admins."""
        s = self.store
        roles = ["member", "admin"] if s.org_roles.get(org) == "owner" else ["member"]
        got, reply = await self._form_op(
            f"Invite a person to {s.org_names.get(org, 'the organization')}",
            [Field("handle", "Handle", placeholder="@bob", required=True),
             Field("role", "Role", "member", choices=[(r, r) for r in roles])],
            "Invite", "They reach its workspaces that are not restricted (an admin, all of them).",
            lambda got: ("add_org_member", {"org": org, "handle": handle(got["handle"]), "role": got["role"]}))
        if reply and reply.get("invited"):  # (issue 18: they join when they accept)
            self.notify(f"Invited {handle(got['handle'])} to {s.org_names.get(org, 'the organization')} as "
                        f"{reply['role']}: they join when they accept.")
        elif reply:
            self.notify(f"{handle(got['handle'])} is now {reply['role']} in {s.org_names.get(org, 'the organization')}.")
            await self._members_changed([w.id for w in s.workspaces.values() if w.org == org])

    @work(group="manage", exit_on_error=False)
    async def leave_org(self, org: str) -> None:
        """Leave an organization: its workspaces one reached through it go (one was added to directly stays)."""
        names = self.store.orgs_to_leave().get(org, [])
        if await self._sure(f"Leave the organization {self.store.org_names.get(org) or ''}?".replace(" ?", "?"),
                            f"You and your agents leave its workspaces ({', '.join(names)}), "
                            "except those you were added to directly.", "Leave"):
            await self._manage("leave_org", None, "Left the organization.", org=org)

    # --- workspaces ---

    @work(group="manage", exit_on_error=False)
    async def create_workspace(self) -> None:
        """A workspace in one's own organization, or in one whose owner or admin one is."""
        s = self.store
        fields = [Field("name", "Name", placeholder="e.g. design", required=True)]
        orgs = [(s.org_names.get(o, o), o) for o in sorted(s.orgs_run(), key=lambda o: s.org_names.get(o, o))]
        if orgs:
            own = next((w.org for w in s.workspaces.values() if w.personal), None)  # one's first organization
            fields.append(Field("org", "Organization", own if own in s.orgs_run() else orgs[0][1], choices=orgs))
        fields.append(Field("restricted", "Restricted: not open to the whole organization", False))
        got, reply = await self._form_op("New workspace", fields, "Create", "", lambda got: ("create_workspace", got))
        if reply:
            await self.app.session.add_workspace(reply["id"])
            self.refresh_all()
            self._open_default(reply["id"])
            self.notify(f"Created the workspace {reply['name']}.")

    @work(group="manage", exit_on_error=False)
    async def add_agent(self) -> None:
        """Seed 002: agents belong to a person, in every workspace of its owner unless pinned (seed 003 §19);
        its key is shown once, for `ygg-agent` or one's own program."""
        s, everywhere = self.store, "*"
        places = [("every workspace of mine", everywhere)] + [(f"only {w.name}", w.id) for w in s.workspaces.values()]

        def where(got: dict) -> dict:
            return {"workspace": got["workspace"]} if got["workspace"] != everywhere else {}

        got, reply = await self._form_op(
            "New agent", [Field("name", "Name", placeholder="e.g. researcher", required=True),
                          Field("workspace", "In", everywhere, choices=places)], "Create", "",
            lambda got: ("add_agent", {"name": got["name"], **where(got)}))
        if reply:
            await self._members_changed(list(where(got).values()) or list(s.workspaces))
            await self.app.session.load_my_agents()
            await self._show_key(reply)

    async def _show_key(self, reply: dict, why: str = "") -> None:
        """A new API key (`add_agent`, `rotate_key`), shown this once."""
        await self.app.push_screen_wait(ShownOnce(
            f"The API key of {reply['name']}", reply["api_key"], f"{why}Shown this once: keep it now (c copies it). "
            f"Run it with: {run_hint(reply['name'], self.app.url)} (docs/agents.md)."))

    def _agent_name(self, agent: str) -> str:
        """One's agent's name, though it be in no workspace one reaches (`my_agents`)."""
        return self.store.own_agents().get(agent, {}).get("name") or self.store.name(agent)

    @work(group="manage", exit_on_error=False)
    async def revoke_agent(self, agent: str) -> None:
        """Retire one's agent, or stop a leaked key: refused from now on, its open connections closed."""
        name = self._agent_name(agent)
        if await self._sure(f"Revoke the agent {name}?", "Its key stops working at once and its open connections "
                            "close; it leaves every workspace. Its messages stay, and so does its name (a new agent "
                            "needs another). This cannot be undone.", "Revoke"):
            if await self._ask("revoke_agent", agent=agent):
                self.notify(f"Revoked {name}: its key no longer works.")
                await self.app.session.load_my_agents()
                await self._members_changed([w.id for w in self.store.workspaces.values() if agent in w.members])

    @work(group="manage", exit_on_error=False)
    async def rotate_key(self, agent: str) -> None:
        """A new API key for one's agent, as any API-key page: the old key stops at once."""
        name = self._agent_name(agent)
        if await self._sure(f"A new API key for {name}?", "Its current key stops working at once and the "
                            "connections it opened close; give the agent the new key to connect again.", "New key"):
            reply = await self._ask("rotate_key", agent=agent)
            if reply:
                await self._show_key(reply, "The old key no longer works. ")

    @work(group="manage", exit_on_error=False)
    async def add_member(self, ws: str) -> None:
        """Seed 003 §66: owners and admins invite members and viewers; only the owner gives admin or owner."""
        w = self.store.workspaces[ws]
        roles = ["member", "viewer"] + (["admin", "owner"] if w.role == "owner" else [])
        got, reply = await self._form_op(
            f"Add a person to {w.name}", [Field("handle", "Handle", placeholder="@bob", required=True),
                                          Field("role", "Role", "member", choices=[(r, r) for r in roles])], "Add", "",
            lambda got: ("add_member", {"workspace": ws, "handle": handle(got["handle"]), "role": got["role"]}))
        if reply and reply.get("invited"):  # (issue 18: they join when they accept)
            self.notify(f"Invited {handle(got['handle'])} to {w.name} as {reply['role']}: they join when they accept.")
        elif reply:
            self.notify(f"{handle(got['handle'])} is now {reply['role']} in {w.name}.")
            await self._members_changed([ws])

    @work(group="manage", exit_on_error=False)
    async def set_restricted(self, ws: str, restricted: bool) -> None:
        """Seed 002: "A restricted workspace is open only to the organization's admins and the people added to
        it directly, not to every member"."""
        w = self.store.workspaces[ws]
        if restricted:
            sure = await self._sure(f"Restrict the workspace {w.name}?", "Only the organization's owner and admins "
                                    "and the people added to it directly keep it; the others lose it, with their "
                                    "agents.", "Restrict")
        else:
            sure = await self._sure(f"Lift the restriction on {w.name}?", "Every member of its organization reaches "
                                    "it, with their agents.", "Lift")
        reply = sure and await self._ask("set_restricted", workspace=ws, restricted=restricted)
        if reply:
            w.restricted = reply["restricted"]
            self.notify(f"{w.name} is {'restricted' if w.restricted else 'open to its organization'}.")
            await self._members_changed([ws])

    @work(group="manage", exit_on_error=False)
    async def set_permissions(self, ws: str, agent: str) -> None:
        """Seed 002's per-membership permissions of an agent; "Monitor: set by a workspace admin"."""
        s, w = self.store, self.store.workspaces[ws]
        m = w.members[agent]
        keys = [k for k in FLAGS if k != "monitor" or w.role in ("owner", "admin")]
        fields = [Field(k, FLAGS[k], bool(m.get(k))) for k in keys]
        fields += [Field(k, label, ", ".join(self._ref(w, p) for p in m.get(k, ())), placeholder=WHO)
                   for k, label in LISTS.items()]

        def changes(got: dict) -> tuple[str, dict]:
            return "set_permissions", {"workspace": ws, "agent": agent, **{k: got[k] for k in keys},
                                       **{k: [r.strip() for r in got[k].split(",") if r.strip()] for k in LISTS}}

        got, reply = await self._form_op(f"Permissions of {s.name(agent)} in {w.name}", fields, "Save", "", changes)
        if reply:
            m.update({k: reply[k] for k in (*FLAGS, *LISTS)})
            self.notify(f"Saved the permissions of {s.name(agent)} in {w.name}.")

    def _ref(self, w, pid: str) -> str:
        """How a participant is written in a permission list: @handle, or name@owner (unambiguous)."""
        m = w.members.get(pid) or {}
        if m.get("kind") == "human":
            return f"@{m['handle']}"
        return f"{m['name']}@{m['person']}" if m.get("person") else m.get("name") or pid

    @work(group="manage", exit_on_error=False)
    async def leave_workspace(self, ws: str) -> None:
        """Leave one workspace, as one leaves a channel; someone who runs it can add you again."""
        await self._workspace_goes(ws, "leave_workspace", "Leave", "Left", "You and your agents leave it: its "
                                   "conversations go from your list and nothing more of it reaches you, until "
                                   "someone adds you again.")

    @work(group="manage", exit_on_error=False)
    async def join_workspace(self, ws: str) -> None:
        """Join, by oneself, a workspace one's organization opens to one (`list_joinable`), as one joins a public
        channel: one left, or never reached; one's agents come too."""
        name = self.store.joinable.get(ws, {}).get("name", "")
        reply = await self._ask("join_workspace", workspace=ws)
        if reply is None:  # (no longer open to this person, say: the list is read again)
            await self.app.session.load_joinable()
            return
        await self.app.session.add_workspace(ws)  # (or `workspace_added` did it first)
        self.refresh_all()
        if ws in self.store.workspaces:
            self._open_default(ws)
        self.notify(f"Joined the workspace {name}.")

    @work(group="manage", exit_on_error=False)
    async def delete_workspace(self, ws: str) -> None:
        """Seed 003 §66: the owner keeps "deleting the workspace" (never a personal one, §65)."""
        await self._workspace_goes(ws, "delete_workspace", "Delete", "Deleted", "Everything in it goes, for "
                                   "everyone: conversations, topics, messages and credits. This cannot be undone.")

    async def _workspace_goes(self, ws: str, op: str, verb: str, done: str, why: str) -> None:
        w = self.store.workspaces.get(ws)
        if w is not None and await self._sure(f"{verb} the workspace {w.name}?", why, verb):
            await self._manage(op, [ws], f"{done} the workspace {w.name}.", workspace=ws)

    async def _manage(self, op: str, gone: list[str] | None, done: str, **fields) -> None:
        """Run a management op that takes workspaces away (`gone`, else the answer's `left`), and forget them."""
        reply = await self._ask(op, **fields)
        if reply is None:
            return
        gone = gone if gone is not None else reply.get("left", [])
        self.store.forget_workspaces(gone)
        await self.app.session.load_joinable()  # (a workspace left may be joined again)
        self.notify(done)
        if self.workspace in gone:
            self.workspace = self.conversation = self.topic = self.key = None
            self._open_default()
        self.refresh_all()

    # --- a topic's budget, a workspace's groups ---

    def budget_topic(self) -> dict | None:
        """The topic on screen, if this person may set its budget (the server's check, docs/protocol.md: a person
        in the topic who is not a viewer, or the workspace's owner or admin)."""
        t = self.store.topics.get(self.topic or "")
        w = self.store.workspaces.get(t.get("workspace", "")) if t else None
        if w is None:
            return None
        in_it = w.role != "viewer" and self.store.my_id in t.get("members", {})
        return t if w.role in ("owner", "admin") or in_it else None

    @work(group="manage", exit_on_error=False)
    async def set_budget(self, topic: str) -> None:
        """Seed 000: "The agent (or the topic's budget) is out of credits": the credits a topic may still spend,
        whoever pays; raised or removed, each agent it stopped is woken to resend."""
        t = self.store.topics[topic]
        now = t.get("budget")

        def budget_of(got: dict) -> int | None:
            try:
                return int(got["budget"]) if got["budget"] else None
            except ValueError:
                raise ValueError("A budget is a whole number of credits; leave it empty for none.") from None

        got, reply = await self._form_op(
            f"Budget of {t.get('title') or 'this topic'}",
            [Field("budget", "Credits it may still spend (empty: no budget)", "" if now is None else str(now),
                   placeholder="e.g. 200")], "Set",
            "Agents' messages here stop when it runs out, even with credits in their wallets.",
            lambda got: ("set_budget", {"workspace": t["workspace"], "topic": topic, "budget": budget_of(got)}))
        if reply:
            t["budget"] = reply["budget"]
            said = "no budget." if reply["budget"] is None else f"budget {reply['budget']} credits."
            self.notify(f"{t.get('title') or 'The topic'}: {said}")
            self.refresh_all()

    @work(group="manage", exit_on_error=False)
    async def edit_groups(self, ws: str) -> None:
        """Seed 000: "Agents can be gathered in groups (group:<name>) to address several at once": a workspace's
        owners and admins make one, add and remove members (each group's list, as written in a send's `to`), or
        remove a group (its list emptied, then a yes: `remove_group`)."""
        w = self.store.workspaces[ws]
        groups = await self._ask("list_groups", workspace=ws)
        if groups is None:
            return
        self.store.set_groups(ws, groups["groups"])
        shown = {f"g{i}": (g["name"], ", ".join(sorted(self._ref(w, p) for p in g["members"])))
                 for i, g in enumerate(groups["groups"])}
        fields = [Field(k, f"group:{name}", members, placeholder=WHO) for k, (name, members) in shown.items()]
        fields += [Field("new", "New group: its name", placeholder="e.g. reviewers"),
                   Field("new_members", "Its members", placeholder=WHO)]
        got = await self._form(f"Groups of {w.name}", fields, "Save", "Address a group as group:NAME; change a list "
                               "to add or remove members, empty it to remove the group.")
        if got is None:
            return
        changed = [(name, got[k]) for k, (name, members) in shown.items() if got[k] != members]
        if got["new"]:
            changed.append((got["new"], got["new_members"]))
        if not changed:
            self.notify("Nothing changed.", timeout=2)
        for name, members in changed:
            if not members.strip() and name in w.groups:
                await self._remove_group(w, name)
                continue
            reply = await self._ask("add_group", workspace=ws, name=name,
                                    members=[r.strip() for r in members.split(",") if r.strip()])
            if reply:
                w.groups[reply["name"]] = reply["members"]
                self.notify(f"Saved group:{name} in {w.name}: write to it as group:{name}.")

    async def _remove_group(self, w, name: str) -> None:
        if not await self._sure(f"Remove group:{name} from {w.name}?", f"group:{name} can no longer be written to "
                                "or addressed. A conversation already held there stays, with its members.", "Remove"):
            return
        if await self._ask("remove_group", workspace=w.id, name=name):
            w.groups.pop(name, None)
            self.notify(f"Removed group:{name} from {w.name}.")


def run_hint(name: str, url: str) -> str:
    """How to run a new agent, as written: the builtin backend with no personality of its own (`plain`: the name
    is not one), on the server this TUI is connected to (`./run` listens on a random port), from the checkout."""
    return f"YGG_KEY=… .venv/bin/ygg-agent run --name {name} --personality plain --url {url} --api-key-env YGG_KEY"
