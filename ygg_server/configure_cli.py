"""`ygg-server admin` commands that configure agents and workspaces after they are made (`ops/configure.py`):

    set-profile AGENT [--title T] [--description D] [--capabilities a,b] [--tools a,b] [--generalist on|off] [--cost N]
    show-profile AGENT
    set-setting WORKSPACE KEY VALUE        (VALUE as JSON: 4, {"online": 3}; null removes it)
    show-settings WORKSPACE
    add-participant | remove-participant WORKSPACE CONVERSATION PARTICIPANT
    set-lead WORKSPACE CONVERSATION (AGENT | none)
    set-pins AGENT (WORKSPACE… | --unpin)
"""

from __future__ import annotations

import json

from .ops import admin, configure
from .store import loaders
from .protocol import configurable

CONFIGURE = frozenset({"set-profile", "show-profile", "set-setting", "show-settings", "add-participant",
                       "remove-participant", "set-lead", "set-pins"})
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
    op = act.replace("-", "_")
    target = args.lead if act == "set-lead" else args.participant
    return configure.party(conn, op, args.workspace, args.conversation,
                           None if act == "set-lead" and target == "none" else target, now=now)
