"""`ygg-server admin` commands that configure agents and workspaces after they are made (`ops/configure.py`):

    set-profile AGENT [--title T] [--description D] [--capabilities a,b] [--tools a,b] [--generalist on|off] [--cost N]
    show-profile AGENT
    set-setting WORKSPACE KEY VALUE        (VALUE as JSON: 4, {"online": 3}; null removes it)
    show-settings WORKSPACE
    add-participant | remove-participant WORKSPACE CONVERSATION PARTICIPANT
    set-lead WORKSPACE CONVERSATION (AGENT | none)
    set-pins AGENT (WORKSPACE… | --unpin)
    tools AGENT [--attach T…] [--detach T…]          (issue 23: the tools attached to it on the registry)
    skills AGENT [--import PATH|URL] [--attach S] [--detach S] [--export S --into DIR]
    memories AGENT WORKSPACE [--query Q] [--forget ID]
"""

from __future__ import annotations

import json

from .ops import admin, configure
from .store import loaders
from .protocol import configurable

CONFIGURE = frozenset({"set-profile", "show-profile", "set-setting", "show-settings", "add-participant",
                       "remove-participant", "set-lead", "set-pins", "tools", "skills", "memories"})
_WS = "an id, a name only one workspace has, or ORG/WORKSPACE"
_CONV = "general, dm:<participant>, group:<name> or a conversation id, as a send names it"


def configure_arguments(asub) -> None:
    x = asub.add_parser("set-profile", help="an agent's profile: job title, description, capabilities, tools, cost")
    x.add_argument("agent", help="name, name@owner, or id")
    x.add_argument("--title", default=None, help="its job title ('' for none)")
    x.add_argument("--description", default=None)
    x.add_argument("--capabilities", default=None, metavar="A,B", help="comma-separated ('' for none): what "
                                                                       "`capability:<name>` finds it by")
    x.add_argument("--tools", default=None, metavar="A,B", help="comma-separated ('' for none)")
    x.add_argument("--generalist", choices=["on", "off"], default=None)
    x.add_argument("--cost", type=int, default=None, help="0..1000000")
    x = asub.add_parser("show-profile", help="an agent's profile")
    x.add_argument("agent", help="name, name@owner, or id")
    x = asub.add_parser("set-setting", help="a workspace setting: " + ", ".join(configurable.SETTINGS))
    x.add_argument("workspace", help=_WS)
    x.add_argument("key", choices=configurable.SETTINGS)
    x.add_argument("value", help="JSON (a number, an object); null returns it to its default")
    x = asub.add_parser("show-settings", help="a workspace's settings in force")
    x.add_argument("workspace", help=_WS)
    for op, what in (("add-participant", "add to"), ("remove-participant", "remove from")):
        x = asub.add_parser(op, help=f"{what} a party (as the workspace's owner)")
        x.add_argument("workspace", help=_WS)
        x.add_argument("conversation", help=_CONV)
        x.add_argument("participant", help="an agent's name or id, or @handle")
    x = asub.add_parser("set-lead", help="a party's Lead (as the workspace's owner)")
    x.add_argument("workspace", help=_WS)
    x.add_argument("conversation", help=_CONV)
    x.add_argument("lead", help="an agent in the conversation, or none")
    x = asub.add_parser("set-pins", help="pin an agent to some of its owner's workspaces, or unpin it")
    x.add_argument("agent", help="name, name@owner, or id")
    x.add_argument("workspaces", nargs="*", help=_WS)
    x.add_argument("--unpin", action="store_true", help="into every workspace of its owner")
    x = asub.add_parser("tools", help="the tools attached to an agent (attach or detach some)")
    x.add_argument("agent", help="name, name@owner, or id")
    x.add_argument("--attach", nargs="*", default=[], metavar="TOOL")
    x.add_argument("--detach", nargs="*", default=[], metavar="TOOL")
    x = asub.add_parser("skills", help="an agent's skills (import one from a folder or URL, attach, detach, export)")
    x.add_argument("agent", help="name, name@owner, or id")
    x.add_argument("--import", dest="source", default=None, metavar="PATH|URL", help="a skill's folder, its SKILL.md "
                                                                                     "URL or a .zip of it")
    x.add_argument("--attach", default=None, metavar="SKILL", help="one of its owner's library or the platform's")
    x.add_argument("--detach", default=None, metavar="SKILL")
    x.add_argument("--export", default=None, metavar="SKILL")
    x.add_argument("--into", default=".", metavar="DIR", help="where --export makes the skill's folder")
    x = asub.add_parser("memories", help="an agent's memories in a workspace (search, forget one)")
    x.add_argument("agent", help="name, name@owner, or id")
    x.add_argument("workspace", help=_WS)
    x.add_argument("--query", default=None)
    x.add_argument("--forget", default=None, metavar="ID")


def _names(raw: str) -> list[str]:
    return [x.strip() for x in raw.split(",") if x.strip()]


def run_configure(conn, args, now: int) -> dict:
    act = args.action
    if act == "set-profile":
        changes = {k: v for k in ("title", "description", "cost") if (v := getattr(args, k)) is not None}
        changes |= {k: _names(v) for k in ("capabilities", "tools") if (v := getattr(args, k)) is not None}
        if args.generalist is not None:
            changes["generalist"] = args.generalist == "on"
        return configure.set_profile(conn, args.agent, changes)
    if act == "show-profile":
        return configure.agent_profile(conn, admin.agent(conn, args.agent))
    if act == "set-setting":
        try:
            value = json.loads(args.value)
        except json.JSONDecodeError:
            raise admin.AdminError("bad_amount", f"{args.key}'s value is JSON (4, or {{\"online\": 3}}), not "
                                                 f"{args.value!r}") from None
        return configure.set_setting(conn, args.workspace, args.key, value)
    if act == "show-settings":
        ws = admin.workspace(conn, args.workspace)
        stored = loaders.settings(conn, ws)
        return {"workspace": ws, "set": stored, "settings": configurable.settings_in_force(stored)}
    if act == "set-pins":
        if args.unpin == bool(args.workspaces):
            raise admin.AdminError("bad_args", "set-pins takes WORKSPACE… or --unpin")
        return configure.set_pins_admin(conn, args.agent, None if args.unpin else args.workspaces, now=now)
    if act in ("tools", "skills", "memories"):
        return _kit(conn, args, now)
    op = act.replace("-", "_")
    target = args.lead if act == "set-lead" else args.participant
    return configure.party(conn, op, args.workspace, args.conversation,
                           None if act == "set-lead" and target == "none" else target, now=now)


def _kit(conn, args, now: int) -> dict:
    """An agent's tools, skills and memories (issue 23), as its owner would set them from the TUI."""
    from .ops import memory, skills, toolkit

    agent = admin.agent(conn, args.agent)
    owner = conn.execute("SELECT owner FROM agents WHERE id = ?", (agent,)).fetchone()[0]
    if args.action == "tools":
        for t in args.attach:
            if t not in toolkit.catalog(conn, owner):
                raise admin.AdminError("unknown_tool", f"there is no tool {t!r}")
        if args.attach or args.detach:
            toolkit.set_tools(conn, agent, owner, add=args.attach, drop=args.detach, by=owner, now=now)
        configured, tools = toolkit.attached(conn, agent, owner)
        return {"agent": agent, "configured": configured, "tools": [t.name for t in tools],
                "catalog": sorted(toolkit.catalog(conn, owner))}
    if args.action == "skills":
        return _skills(conn, args, agent, owner, now, skills)
    ws = admin.workspace(conn, args.workspace)
    if args.forget:
        gone = conn.execute("DELETE FROM memories WHERE id = ? AND workspace = ? AND agent = ?",
                            (args.forget, ws, agent)).rowcount
        return {"forgotten": gone}
    found = memory.search(conn, agent, ws, args.query) if args.query else memory.recent(conn, agent, ws)
    return {"agent": agent, "workspace": ws, "memories": found}


def _skills(conn, args, agent: str, owner: str, now: int, skills) -> dict:
    import asyncio

    from .ops.refusals import Refused
    from .skills.format import SkillError, from_files, write_folder
    from .skills.source import read_source

    try:
        if args.source:
            folder, files = asyncio.run(read_source(args.source))
            skills.attach_files(conn, agent, files, folder, now)
        if args.attach:
            lay = skills.resolve(conn, None, owner).get(args.attach)
            if lay is None:
                raise admin.AdminError("not_found", f"no skill {args.attach!r} in its owner's library")
            skills.attach_files(conn, agent, {"SKILL.md": lay.skill.skill_md(), **lay.skill.files}, lay.skill.name, now)
        if args.detach:
            conn.execute("DELETE FROM skills WHERE owner = ? AND agent = ? AND name = ?", (owner, agent, args.detach))
        if args.export:
            lay = skills.resolve(conn, agent, owner).get(args.export)
            if lay is None:
                raise admin.AdminError("not_found", f"no skill {args.export!r} for this agent")
            from pathlib import Path

            target = Path(args.into) / lay.skill.name
            write_folder({"SKILL.md": lay.skill.skill_md(), **lay.skill.files}, target)
            from_files({"SKILL.md": lay.skill.skill_md(), **lay.skill.files}, target.name)  # (what was written reads)
    except SkillError as e:
        raise admin.AdminError("bad_skill", str(e)) from None
    except Refused as e:
        raise admin.AdminError(e.reason, e.detail) from None
    on, off = skills.active(conn, agent, owner)
    return {"agent": agent, "skills": [{"name": s.skill.name, "layer": s.layer} for s in on],
            "inactive": [{"name": s.skill.name, "layer": s.layer, "missing": m} for s, m in off]}
