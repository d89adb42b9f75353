"""What an agent can do and remember, set by its owner from the command palette (issue 23: "an agent's tools,
skills and memories visible and editable by its owner; skills importable from a path or URL"): its tools (the
registry's catalog and the owner's API connections, ticked when attached), its skills (the library's, ticked when
attached to it; which are active and which lack a tool; import from a folder or URL, export to a folder), its
memories in the workspace on screen (ticked ones forgotten), and the owner's API connections (one added, ticked
ones removed; a secret is sent once and never shown again).

Each form is `configure._apply`'s: a refusal brings it back with what was typed and the refusal in words.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from ygg_server.skills.format import SkillError, write_folder
from ygg_server.skills.source import read_source

from .configure import _apply, _run
from .dialogs import Field


def commands(store, main) -> list[tuple[str, object, str]]:
    out: list[tuple[str, object, str]] = []
    for agent, row in sorted(store.own_agents().items(), key=lambda a: a[1]["name"]):
        name = row["name"]
        out.append((f"Tools of {name}", partial(_run, main, edit_tools, agent),
                    "attach or detach: web search, page fetch, memory, your API connections…"))
        out.append((f"Skills of {name}", partial(_run, main, edit_skills, agent),
                    "attach, import from a folder or URL, export"))
        if main.workspace:
            out.append((f"Memories of {name}", partial(_run, main, edit_memories, agent, main.workspace),
                        "what it keeps in this workspace; forget some, share it into another"))
    if store.own_agents():
        out.append(("API connections", partial(_run, main, edit_connections), "set up the APIs your agents may call"))
    return out


async def edit_tools(main, agent: str) -> None:
    """Seed 003 §52: "An agent sees only the tools attached to it, not the whole catalog every turn." """
    now = await main._ask("list_tools", agent=agent)
    if now is None:
        return
    had = {t["name"] for t in now["tools"]}
    catalog = sorted(now["catalog"], key=lambda t: (t["group"], t["name"]))
    fields = [Field(f"t{i}", f"{t['name']} ({t['group']}): {t['description'][:90]}", t["name"] in had)
              for i, t in enumerate(catalog)]

    def change(got: dict) -> list[tuple[str, dict]]:
        out = []
        for i, t in enumerate(catalog):
            if got[f"t{i}"] and t["name"] not in had:
                out.append(("attach_tool", {"agent": agent, "tool": t["name"]}))
            elif not got[f"t{i}"] and t["name"] in had:
                out.append(("detach_tool", {"agent": agent, "tool": t["name"]}))
        return out

    why = "" if now["configured"] else "Never chosen: it has the defaults (its bridge's config may narrow them)."
    if await _apply(main, f"Tools of {_name(main, agent)}", fields, "Save", why, change) is not None:
        main.notify(f"Saved the tools of {_name(main, agent)}; they apply from its next turn.")


async def edit_skills(main, agent: str) -> None:
    """Seed 003 §43-45: skills in layers, switched on only with the tools they need; attaching one brings its
    tools; imported from a folder or a URL in the open format."""
    mine = await main._ask("list_skills", agent=agent)
    library = await main._ask("list_skills")
    if mine is None or library is None:
        return
    attached = {s["name"] for s in mine["skills"] + mine["inactive"] if s["layer"] == "agent"}
    lib = sorted({s["name"]: s for s in library["skills"] + mine["skills"] + mine["inactive"]}.values(),
                 key=lambda s: s["name"])
    off = {s["name"]: s["missing"] for s in mine["inactive"]}
    fields = [Field(f"s{i}", f"{s['name']} ({s['layer']}{'; off: needs ' + ', '.join(off[s['name']]) if s['name'] in off else ''})"
                    f": {s['description'][:80]}", s["name"] in attached) for i, s in enumerate(lib)]
    fields += [Field("source", "Import a skill into it from a folder or an http(s) URL", placeholder="path or URL"),
               Field("export", "Export one of its skills (name) …", placeholder="skill name"),
               Field("into", "… into this folder (the skill's folder is made inside)", placeholder="a folder")]
    picked: dict = {}

    def change(got: dict) -> list[tuple[str, dict]]:
        out = []
        for i, s in enumerate(lib):
            if got[f"s{i}"] and s["name"] not in attached:
                out.append(("attach_skill", {"agent": agent, "skill": s["name"]}))
            elif not got[f"s{i}"] and s["name"] in attached:
                out.append(("detach_skill", {"agent": agent, "skill": s["name"]}))
        if got["source"] in picked:  # (read by _apply_reading before these are sent)
            folder, files = picked[got["source"]]
            out.append(("import_skill", {"agent": agent, "folder": folder, "files": files}))
        return out

    async def read(got: dict) -> str:
        """An import's folder or URL read before the ops are sent (a bad one comes back in the form)."""
        if not got["source"]:
            return ""
        try:
            picked[got["source"]] = await read_source(got["source"])
        except SkillError as e:
            return str(e)
        return ""

    title = f"Skills of {_name(main, agent)}"
    why = "Ticked: attached to it (with the tools each needs). Its prompt lists only names and one line."
    got = await _apply(main, title, fields, "Save", why, change, prepare=read)
    if got is None:
        return
    if got["export"]:
        out = await main._ask("export_skill", agent=agent, skill=got["export"])
        if out is not None:
            target = Path(got["into"] or ".").expanduser() / out["skill"]
            write_folder(out["files"], target)
            main.notify(f"Exported {out['skill']} to {target}.")
    main.notify(f"Saved the skills of {_name(main, agent)}.")


async def edit_memories(main, agent: str, ws: str) -> None:
    """Seed 003 §46-48: an agent's long-term memory, per workspace; its owner sees it and forgets what is wrong, and
    may share what it keeps here into another workspace of the owner's (issue 23: "memory is per workspace unless
    its owner shares it"), taken back by unticking."""
    now = await main._ask("list_memories", workspace=ws, agent=agent)
    shares = await main._ask("list_memory_shares", agent=agent)
    if now is None or shares is None:
        return
    mems = [m for m in now["memories"] if "shared_from" not in m][:30]
    into = {s["into"] for s in shares["shares"] if s["workspace"] == ws}
    others = sorted((w for w in main.store.workspaces.values() if w.id != ws), key=lambda w: w.name)
    here = main.store.workspaces[ws].name if ws in main.store.workspaces else ws
    fields = [Field(f"m{i}", f"forget: {m['text'][:110]}", False) for i, m in enumerate(mems)]
    fields += [Field(f"w{i}", f"share its memory of {here} into {w.name}", w.id in into) for i, w in enumerate(others)]
    came = sorted({m["shared_from"] for m in now["memories"] if "shared_from" in m})
    if not fields:
        main.notify(f"{_name(main, agent)} keeps no memory in this workspace yet.")
        return

    def change(got: dict) -> list[tuple[str, dict]]:
        out = [("forget", {"workspace": ws, "agent": agent, "id": m["id"]}) for i, m in enumerate(mems) if got[f"m{i}"]]
        for i, w in enumerate(others):
            if got[f"w{i}"] != (w.id in into):
                out.append(("share_memory", {"workspace": ws, "agent": agent, "into": w.id, "share": got[f"w{i}"]}))
        return out

    why = "Only this workspace's, unless you share it: a shared memory is recalled there too, never by anyone else."
    if came:
        why += " Also recalled here: " + ", ".join(main.store.workspaces[c].name if c in main.store.workspaces else c
                                                   for c in came) + "'s (shared)."
    if await _apply(main, f"Memories of {_name(main, agent)} here", fields, "Save", why, change) is not None:
        main.notify("Done.")


async def edit_connections(main) -> None:
    """Issue 23: "custom HTTP API connections an owner sets up (URL, method, auth header kept encrypted)"."""
    now = await main._ask("list_connections")
    if now is None:
        return
    conns = now["connections"]
    fields = [Field(f"c{i}", f"remove {c['name']} ({c['method']} {c['url']}{', with a secret' if c['has_secret'] else ''})",
                    False) for i, c in enumerate(conns)]
    fields += [Field("name", "New connection's name (its tool is api_<name>)", placeholder="e.g. crm"),
               Field("url", "URL", placeholder="https://api.example.com/v1"),
               Field("method", "Method", "GET", choices=[(m, m) for m in ("GET", "POST", "PUT", "PATCH", "DELETE")]),
               Field("header_name", "Auth header's name", placeholder="e.g. Authorization"),
               Field("header_value", "Auth header's value (kept encrypted, never shown again)", password=True),
               Field("description", "What it is for (agents read this)")]

    def change(got: dict) -> list[tuple[str, dict]]:
        out = [("remove_connection", {"name": c["name"]}) for i, c in enumerate(conns) if got[f"c{i}"]]
        if got["name"]:
            out.append(("add_connection", {k: got[k] for k in ("name", "url", "method", "header_name",
                                                                "header_value", "description")}))
        return out

    if await _apply(main, "API connections", fields, "Save",
                    "Attach a connection to an agent from Tools of <agent>.", change) is not None:
        main.notify("Saved your API connections.")


def _name(main, agent: str) -> str:
    return (main.store.own_agents().get(agent) or {}).get("name", agent)
