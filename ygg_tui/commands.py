"""The command palette (ctrl+p): open any conversation, start a topic or a direct conversation,
fund, search, the operator view, the needs_human queue, delete a workspace, leave an organization,
themes, help."""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider


class YggCommands(Provider):
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
            if w.monitor:
                out.append((f"Operator view of {w.name}", partial(app.open_operator, w.id),
                            "every topic, message, wake and credit, live"))
            if w.role == "owner" and not w.personal:
                out.append((f"Delete workspace {w.name}", partial(main.delete_workspace, w.id),
                            "its owner only; everything in it goes"))
        for org, names in store.orgs_to_leave().items():
            name = store.org_names.get(org, "")
            out.append((f"Leave the organization {name} ({', '.join(names)})".replace("  ", " "),
                        partial(main.leave_org, org), "you and your agents leave its workspaces"))
        for t in store.needs_human():
            out.append((f"Needs a person: {t.get('title') or '(untitled)'}",
                        partial(main.open_conversation, t["conversation"], t["id"]), "answer to resume it"))
        out += [
            ("New topic in this conversation", main.action_new_topic, "asks for a title"),
            ("Next unread topic", main.action_next_unread, "n"),
            ("Next topic waiting on a person", main.action_next_needs_human, "h"),
            ("Search messages", main.action_search, "/"),
            ("Why this assignment? (selected message)", main.action_explain_assignment,
             "the score breakdown of a request sent to a capability"),
            ("Fund an agent or the pool", main.action_fund, "f"),
            ("Keys and help", main.action_help, "?"),
        ]
        for name in sorted(app.available_themes):
            out.append((f"Theme: {name}", partial(app.set_theme, name), "saved in your config"))
        return out

    async def discover(self) -> Hits:
        for title, cb, help in self._commands():
            yield DiscoveryHit(title, cb, help=help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, cb, help in self._commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), cb, help=help)
