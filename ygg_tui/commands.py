"""The command palette (ctrl+p): open any conversation, start a topic or a direct conversation,
fund, search, the operator view, the needs_human queue, themes, help; and managing (seed 002): new
organizations, workspaces and agents, inviting people, restricting, agents' permissions, leaving, joining
an open workspace of one's organization again, deleting,
an agent's key (a new one, or revoked), a topic's budget, a workspace's groups; configuring (`screens/configure.py`):
agents' profiles and pins, a workspace's settings, a party's participants and Lead."""

from __future__ import annotations

import asyncio
from functools import partial

from textual import events
from textual.command import (CommandInput, CommandList, CommandPalette, DiscoveryHit, Hit, Hits, Provider,
                             SearchIcon)
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.fuzzy import Matcher
from textual.markup import escape  # help is read as markup: names in it are shown as they are
from textual.widgets import Button, LoadingIndicator

# What cannot be undone (or stops a key at once) ranks below what makes: "new" or "agent" offered Revoke first.
UNDOES = ("Revoke ", "Restrict ", "Delete ", "Leave ", "New API key ")
UNDOES_WEIGHT = 0.4


class InOrderInput(CommandInput):
    """The palette's input, with its own editing keys (backspace, delete, …) run as they come, in the order typed.
    Textual runs a widget's non-priority binding once the key has bubbled up to the screen, after the characters
    typed behind it: `fund`, 4 backspaces, `help` typed fast gave "fund" (the backspaces ate "help")."""

    async def _on_key(self, event: events.Key) -> None:
        binding = next((b for b in self._bindings.key_to_bindings.get(event.key, ()) if not b.priority), None)
        if binding is not None:
            event.stop()
            event.prevent_default()
            await self.run_action(binding.action)
            return
        await super()._on_key(event)


class Palette(CommandPalette):
    """Textual's command palette with `InOrderInput`."""

    def compose(self):
        with Vertical(id="--container"):
            with Horizontal(id="--input"):
                yield SearchIcon()
                yield InOrderInput(placeholder=self._placeholder, select_on_focus=False)
                if not self.run_on_select:
                    yield Button("\u25b6")
            with Vertical(id="--results"):
                yield CommandList()
                yield LoadingIndicator()

from .screens import configure, kit


# what each workspace offers in the palette: (title, the main screen's method given the workspace, what it does)
_PER_WORKSPACE = (
    ("Work graph of {}", "action_work_graph",
     "w: topics and what they wait on, threads, delegations, artifacts, agents"),
    ("Export workspace {}", "export", "every conversation you read in it, as Markdown and JSON lines"),
    ("Approvals to decide in {}", "approvals_in",
     "tool calls your agents (or, as owner or admin, this workspace's) wait to run"),
    ("Reminders and routines in {}", "schedules", "list, pause, resume, delete; n new reminder, r new routine"),
    ("New reminder in {}", "new_reminder", "an agent reminds you in your direct conversation, here"),
    ("New routine in {}", "new_routine", "a standing instruction for one of your agents, on a schedule"),
    ("Loops and pulses in {}", "loops",
     "goals your agents iterate on, their iterations and why each stopped; their pulses' reports"),
    ("New loop in {}", "new_loop", "a goal one of your agents iterates on, until done, stuck or a safeguard"),
    ("New pulse in {}", "new_pulse", "your agent's own checklist on its own schedule; it tells you only what matters"),
)


def _managing(store, main, w) -> list[tuple[str, object, str]]:
    """What this person may manage in workspace `w`, as their role allows (seed 002; seed 003 §65-66)."""
    out: list[tuple[str, object, str]] = []
    if w.manages:
        out.append((f"Add a person to {w.name}", partial(main.add_member, w.id), "by handle, with a role"))
        out.append((f"Lift the restriction on {w.name}", partial(main.set_restricted, w.id, False),
                    "open it to every member of its organization") if w.restricted else
                   (f"Restrict workspace {w.name}", partial(main.set_restricted, w.id, True),
                    "only the organization's owner and admins and people added to it"))
    if w.role in ("owner", "admin"):
        out.append((f"Groups of {w.name}", partial(main.edit_groups, w.id),
                    "make a group (group:name), add or remove its members"))
    for m in w.members.values():
        if m["kind"] != "agent" and m["id"] != store.my_id and w.role in ("owner", "admin") and \
                m.get("role") not in ("owner", *(("admin",) if w.role != "owner" else ())):
            out.append((f"Remove @{m.get('handle') or m.get('name')} from {w.name}", partial(main.remove_member, w.id, m["id"]),
                        "their agents there go too; they can be invited again"))
        if m["kind"] == "agent" and w.can_fund(m["id"], store.my_id):
            out.append((f"Permissions of {store.name(m['id'])} in {w.name}", partial(main.set_permissions, w.id, m["id"]),
                        "send, receive, monitor, whom it messages and hears from"))
    if w.can_leave:
        out.append((f"Leave workspace {w.name}", partial(main.leave_workspace, w.id), "you and your agents leave it"))
    if w.role == "owner" and not w.personal:
        out.append((f"Delete workspace {w.name}", partial(main.delete_workspace, w.id),
                    "its owner only; everything in it goes"))
    return out


class YggCommands(Provider):
    async def startup(self) -> None:
        """What one may join, and one's agents, change elsewhere too (one leaves a workspace or makes an agent from
        another device): asked again as the palette opens, briefly (a server away keeps what was known)."""
        session = getattr(self.app, "session", None)
        if session is not None and getattr(self.app, "connected", False):
            try:
                await asyncio.wait_for(asyncio.gather(session.load_joinable(), session.load_my_agents()), 2)
            except Exception:  # (away, or slow: the list as it was)
                pass

    def _commands(self) -> list[tuple[str, object, str]]:
        app = self.app
        store = getattr(app, "store", None)
        main = getattr(app, "main", None)
        if store is None or main is None:
            return []
        out: list[tuple[str, object, str]] = []
        for w in store.workspaces.values():
            for c in w.conversations.values():
                out.append((f"Open {w.name} › {store.conversation_name(c)}", partial(main.open_conversation, c["id"]),
                            "show this conversation"))
            for m in w.members.values():
                if m["id"] != store.my_id:
                    out.append((f"Direct conversation with {store.name(m['id'])} ({w.name})",
                                partial(app.open_direct, w.id, m["id"]), "start or open a direct conversation"))
            out += [(title.format(w.name), partial(getattr(main, method), w.id), what)
                    for title, method, what in _PER_WORKSPACE]
            if w.monitor:
                out.append((f"Operator view of {w.name}", partial(app.open_operator, w.id),
                            "every topic, message, wake and credit, live"))
            out += _managing(store, main, w)
        for agent in store.own_agents():
            name = store.name(agent)
            out.append((f"Let {name} make its own routines", partial(main.allow_routines, agent, True),
                        "your standing permission: it makes, pauses and deletes its routines"))
            out.append((f"Stop {name} making its own routines", partial(main.allow_routines, agent, False),
                        "its routines are yours alone to change again"))
        for aid, a in getattr(store, "approvals", {}).items():
            w = store.workspaces.get(a["workspace"])
            out.append((f"Approval: {a.get('agent_name')} wants {a.get('tool')}({a.get('arg')})"[:90]
                        + (f" in {w.name}" if w else ""), partial(main.decide_approval, aid),
                        "approve, deny, always allow or always deny"))
        for inv_id, inv in getattr(store, "invitations", {}).items():
            where = f"{inv['name']} (from {inv['inviter']}, as {inv['role']})"
            out.append((f"Accept the invitation to {where}", partial(main.answer_invitation, inv_id, True),
                        "you join it; your agents stay out"))
            out.append((f"Accept the invitation to {where} with my agents",
                        partial(main.answer_invitation, inv_id, True, True), "you join it, and your agents follow you"))
            out.append((f"Decline the invitation to {where}", partial(main.answer_invitation, inv_id, False),
                        "nothing changes"))
        for ws, row in store.joinable.items():
            out.append((f"Join workspace {row['name']}", partial(main.join_workspace, ws),
                        "your organization opens it to you: you and your agents join it"))
        for org in sorted(store.orgs_run(), key=lambda o: store.org_names.get(o, o)):
            out.append((f"Invite a person to the organization {store.org_names.get(org, '')}",
                        partial(main.add_org_member, org), "they reach its workspaces that are not restricted"))
        for org, names in store.orgs_to_leave().items():
            name = store.org_names.get(org, "")
            out.append((f"Leave the organization {name} ({', '.join(names)})".replace("  ", " "),
                        partial(main.leave_org, org), "you and your agents leave its workspaces"))
        for agent, row in sorted(store.own_agents().items(), key=lambda a: a[1]["name"]):
            name, where = row["name"], store.where_pinned(row)
            out.append((f"New API key for {name}", partial(main.rotate_key, agent),
                        f"{where}shown once; the old key stops working at once"))
            out.append((f"Revoke agent {name}", partial(main.revoke_agent, agent),
                        f"{where}retired, or its key leaked: its key stops working, its connections close"))
            out.append((f"Where {name} runs (local or hosted)", partial(main.set_runtime, agent),
                        "on your machine, or on a host of yours that starts it when it has work"))
            out.append((f"Publish {name} to the directory", partial(main.publish_agent, agent),
                        "anyone may copy its profile and persona; not while pinned to a shared workspace"))
        if main.conversation and main.workspace:
            out.append(("Export this conversation", partial(main.export, main.workspace, main.conversation),
                        "as Markdown and JSON lines, into your data dir's exports folder"))
        topic = main.budget_topic()
        if topic is not None:
            budget = "none" if topic.get("budget") is None else f"{topic['budget']} credits left"
            out.append((f"Budget of this topic ({topic.get('title') or 'untitled'})",
                        partial(main.set_budget, topic["id"]), f"now: {budget}; what its agents may still spend"))
        for t in store.needs_human():
            out.append((f"Needs a person: {t.get('title') or '(untitled)'}",
                        partial(main.open_conversation, t["conversation"], t["id"]), "answer to resume it"))
        out += [
            ("New workspace", main.create_workspace, "in your organization, or one you run; restricted or open"),
            ("New organization", main.create_org, "you own it (Free plan)"),
            ("New agent", main.add_agent, "yours, in every workspace of yours or pinned to one; its key shown once"),
            ("New host", main.add_host, "a machine that runs your hosted agents (ygg-agent host); its key shown once"),
            ("Copy an agent from the directory", main.copy_agent, "a new agent of yours from a published one"),
            ("Connected accounts", main.connected_accounts,
             "GitHub and Google accounts your agents act on: connect (your browser signs in), list, revoke"),
            ("New topic in this conversation", main.action_new_topic, "asks for a title"),
            ("All topics of this conversation", main.action_all_topics, "T: their states, participants, last message"),
            ("Next unread topic", main.action_next_unread, "n"),
            ("Next topic waiting on a person", main.action_next_needs_human, "h"),
            ("Search messages", main.action_search, "/"),
            ("Save a file of the selected message", main.save_selected_file, "s: to a local path"),
            ("Attach a file to the next message", main.attach_prompt, "/attach PATH in the composer"),
            ("Why this assignment? (selected message)", main.action_explain_assignment,
             "the score breakdown of a request sent to a capability"),
            ("Fund an agent or the pool", main.action_fund, "f"),
            ("Keys and help", main.action_help, "?"),
            ("Change your password", main.change_password, "your other sessions end"),
            ("Sign out", main.sign_out, "this session ends on the server; the saved token is forgotten"),
        ]
        out += configure.commands(store, main)  # profiles, pins, settings, a party's participants and Lead
        out += kit.commands(store, main)  # an agent's tools, skills and memories; API connections (issue 23)
        for name in sorted(app.available_themes):
            out.append((f"Theme: {name}", partial(app.set_theme, name), "saved in your config"))
        return out

    async def discover(self) -> Hits:
        for hit in _discovered(self._commands()):
            yield hit

    async def search(self, query: str) -> Hits:
        for hit in _found(self.matcher(query), self._commands()):
            yield hit


def _discovered(entries: list[tuple[str, object, str]]):
    for title, cb, help in entries:
        yield DiscoveryHit(Content(title), cb, text=title, help=escape(help))


def _found(matcher: Matcher, entries: list[tuple[str, object, str]]):
    """The entries `matcher` finds, what cannot be undone ranked down (`UNDOES`)."""
    for title, cb, help in entries:
        score = matcher.match(title) * (UNDOES_WEIGHT if title.startswith(UNDOES) else 1.0)
        if score > 0:
            yield Hit(score, _highlight(matcher, title), cb, text=title, help=escape(help))


class Conversations(Provider):
    """ctrl+k: every conversation, by name (`Workspace › name`); with nothing typed, the list's order with the ones
    with unread messages or waiting on a person first."""

    def _conversations(self) -> list[tuple[str, object, str]]:
        store, main = getattr(self.app, "store", None), getattr(self.app, "main", None)
        if store is None or main is None:
            return []
        from .widgets.sidebar import Sidebar

        listed = main.query_one(Sidebar).order
        out = []
        for w in store.workspaces.values():
            for c in w.conversations.values():
                unread, att = store.unread_by_conv.get(c["id"], 0), store.attention(c["id"])
                said = ", ".join(x for x in (f"{unread} unread" if unread else "",
                                              f"{att['needs_human']} waiting on a person" if att["needs_human"] else "")
                                 if x)
                place = listed.index(c["id"]) if c["id"] in listed else len(listed)
                key = (not (unread or att["needs_human"]), place)
                out.append((key, f"{w.name} › {store.conversation_name(c)}", partial(main.open_conversation, c["id"]),
                            said or (f"alt+{place + 1}" if place < 9 else "")))
        return [(title, cb, help) for _, title, cb, help in sorted(out, key=lambda r: r[0])]

    async def discover(self) -> Hits:
        for hit in _discovered(self._conversations()):
            yield hit

    async def search(self, query: str) -> Hits:
        for hit in _found(self.matcher(query), self._conversations()):
            yield hit


def _highlight(matcher: Matcher, title: str) -> Content:
    """`Matcher.highlight` without reading the title as markup: names people chose ("Q[1]", "x [/draft]") are
    shown as they are (a stray closing tag stopped the app as the palette opened)."""
    content = Content(title)
    for offset in matcher.fuzzy_search.match(matcher.query, title)[1]:
        if not title[offset].isspace():
            content = content.stylize(matcher.match_style, offset, offset + 1)
    return content
