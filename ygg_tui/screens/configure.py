"""Configuring agents and workspaces after they are made, from the command palette (issue 20: "Everything
configurable from the TUI"): an agent's profile (job title, description, capabilities, tools, cost: what
`capability:` assignment scores) and its pins, a party's participants and Lead, a workspace's settings
(`party.maxHops`, the throttles, the assignment weights).

Each reads what is there now (`get_profile`, `my_agents`, `list_conversations`, `get_settings`), asks with a form
(`dialogs.FormScreen`) and sends the changes; a refusal brings the form back with what was typed and the refusal in
words. `commands(store, main)` lists the palette's entries; each runs as a worker of the main screen (it uses the
main screen's `_ask`, `_ref` and `_members_changed`, `screens/manage.py`).
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

from .dialogs import Field, FormScreen
from .manage import FIXABLE, in_form

NEWLINE = " ⏎ "  # how a description's line breaks are written in its one-line field
WHOLE = {  # a form field's key: (the setting, its label)
    "max_hops": ("party.maxHops", "Hops: agent-to-agent messages one person's message buys"),
    "throttle_direct": ("party.throttleDirect", "Agent messages in a row without a person, in a direct conversation"),
    "throttle_group": ("party.throttleGroup", "The same, in any other conversation")}
WEIGHTS = "assign.weights"


def commands(store, main) -> list[tuple[str, object, str]]:
    """The palette's configuring entries this person may use: their agents' profiles and pins, the settings of
    the workspaces they run, and the participants and Lead of the conversation on screen."""
    out: list[tuple[str, object, str]] = []
    for agent, row in sorted(store.own_agents().items(), key=lambda a: a[1]["name"]):
        name = row["name"]
        out.append((f"Profile of {name}", partial(_run, main, edit_profile, agent),
                    "job title, description, capabilities (what capability: finds), tools, cost"))
        out.append((f"Pin {name} (where it goes)", partial(_run, main, edit_pins, agent),
                    f"{store.where_pinned(row)}which of your workspaces it is in"))
    for w in store.workspaces.values():
        if w.role in ("owner", "admin"):
            out.append((f"Settings of {w.name}", partial(_run, main, edit_settings, w.id),
                        "hops and throttles of its parties, assignment weights"))
    w = store.workspaces.get(main.workspace or "")
    conv = w.conversations.get(main.conversation or "") if w else None
    if conv and conv.get("kind") != "general" and w.role != "viewer":
        out.append((f"Participants and Lead of {store.conversation_name(conv)}",
                    partial(_run, main, edit_party, w.id, conv["id"]), "add or remove agents and people; its Lead"))
    return out


def _run(main, fn, *args) -> None:
    main.run_worker(fn(main, *args), group="configure", exit_on_error=False)


def _names(raw: str) -> list[str]:
    return [x.strip() for x in raw.split(",") if x.strip()]


async def _apply(main, title: str, fields: list[Field], submit: str, why: str, changes, prepare=None) -> dict | None:
    """A form whose answer is a list of ops (`changes(values)` -> [(op, fields)]; a ValueError is a value to fix),
    sent in order; one refused brings the form back with what was typed and the refusal in words (the ops before it
    are done, and said so). `prepare(values)`, when given, runs first (reading what the ops will send) and answers
    what went wrong ("" for nothing), which brings the form back too. Returns the values, or None when cancelled."""
    error = ""
    while True:
        got = await main.app.push_screen_wait(FormScreen(title, fields, submit, why, error))
        if got is None:
            return None
        fields = [replace(f, value=got[f.key]) for f in fields]
        problem = await prepare(got) if prepare is not None else ""
        if problem:
            error = f"✗ {problem}"
            continue
        done = 0
        try:
            for op, args in changes(got):
                await main.app.session.call(op, **args)
                done += 1
            return got
        except FIXABLE as e:
            error = in_form(e)
        if done:
            error += f" (The {done} change{'s' if done > 1 else ''} before it {'were' if done > 1 else 'was'} saved.)"


# --- an agent's profile ---

async def edit_profile(main, agent: str) -> None:
    """Seed 004: agents are told each other's job title and description; seed 003 §14: assignment scores their
    capabilities, tools and cost."""
    now = await main._ask("get_profile", agent=agent)
    if now is None:
        return
    p, name = now["profile"], now["name"]
    fields = [Field("title", "Job title", p["title"], placeholder="e.g. Translator"),
              Field("description", f"Description ({NEWLINE.strip()} starts a new line; colleagues see the first line)",
                    p["description"].replace("\n", NEWLINE), placeholder="What it does, for whom"),
              Field("capabilities", "Capabilities (comma-separated: capability:NAME finds it)",
                    ", ".join(p["capabilities"]), placeholder="e.g. translation, french"),
              Field("tools", "Tools (comma-separated)", ", ".join(p["tools"]), placeholder="e.g. search, python"),
              Field("cost", "Cost (0 to 1,000,000: cheaper scores higher)", str(p["cost"])),
              Field("generalist", "Generalist: takes questions spanning several domains first", p["generalist"])]

    def change(got: dict) -> list[tuple[str, dict]]:
        try:
            cost = int(got["cost"] or 0)
        except ValueError:
            raise ValueError("Cost is a whole number from 0 to 1,000,000.") from None
        return [("set_profile", {"agent": agent, "title": got["title"],
                                 "description": got["description"].replace(NEWLINE.strip(), "\n").replace(" \n ", "\n"),
                                 "capabilities": _names(got["capabilities"]), "tools": _names(got["tools"]),
                                 "generalist": got["generalist"], "cost": cost})]

    if await _apply(main, f"Profile of {name}", fields, "Save", "", change) is not None:
        main.notify(f"Saved the profile of {name}.")


# --- an agent's pins ---

async def edit_pins(main, agent: str) -> None:
    """Seed 003 §19: an agent goes with its owner into every workspace, or is pinned "to chosen workspaces"."""
    s = main.store
    await main.app.session.load_my_agents()
    row = s.own_agents().get(agent)
    if row is None:
        return
    pinned = None if row.get("pinned") is None else {p["id"] for p in row["pinned"]}
    spaces = sorted(s.workspaces.values(), key=lambda w: w.name.casefold())
    fields = [Field("everywhere", "Every workspace of mine (unpinned: it follows me into new ones)", pinned is None)]
    fields += [Field(f"w{i}", f"Pinned to {w.name}", pinned is not None and w.id in pinned)
               for i, w in enumerate(spaces)]

    def change(got: dict) -> list[tuple[str, dict]]:
        chosen = None if got["everywhere"] else [w.id for i, w in enumerate(spaces) if got[f"w{i}"]]
        return [("set_pins", {"agent": agent, "workspaces": chosen})]

    got = await _apply(main, f"Pins of {row['name']}", fields, "Save",
                       "It leaves the workspaces it is no longer pinned to (what their admins set for it is kept "
                       "for its coming back) and joins the others.", change)
    if got is not None:
        await main.app.session.load_my_agents()
        await main._members_changed(list(s.workspaces))
        main.notify(f"{row['name']}: {s.where_pinned(s.own_agents().get(agent, row)).rstrip('; ') or 'saved'}.")


# --- a workspace's settings ---

def _weights_text(weights: dict) -> str:
    return ", ".join(f"{k}={v:g}" for k, v in weights.items())


def _weights(raw: str) -> dict | None:
    """`capabilities=4, online=2` as a dict (empty: the defaults); the server checks the parts and the bounds."""
    out: dict[str, float] = {}
    for part in _names(raw):
        key, _, value = part.partition("=")
        try:
            number = float(value)
        except ValueError:
            raise ValueError(f"Weights are written part=number, e.g. online=2 (not {part!r}).") from None
        out[key.strip()] = int(number) if number.is_integer() else number
    return out or None


async def edit_settings(main, ws: str) -> None:
    """docs/rules.md, "Parties": the hop limit and throttles that keep agents from talking among themselves
    without end, and the weights of assignment scoring; a workspace's owners and admins set them."""
    w = main.store.workspaces[ws]
    now = await main._ask("get_settings", workspace=ws)
    if now is None:
        return
    in_force = now["settings"]
    fields = [Field(k, label, str(in_force[key])) for k, (key, label) in WHOLE.items()]
    fields.append(Field("weights", "Assignment weights (part=weight, 0 to 1000; empty: the defaults)",
                        _weights_text(in_force[WEIGHTS])))

    def change(got: dict) -> list[tuple[str, dict]]:
        out = []
        for k, (key, label) in WHOLE.items():
            if got[k] == str(in_force[key]):
                continue
            try:
                value = int(got[k]) if got[k] else None
            except ValueError:
                raise ValueError(f"{label}: a whole number (empty: the default).") from None
            out.append(("set_setting", {"workspace": ws, "key": key, "value": value}))
        if got["weights"] != _weights_text(in_force[WEIGHTS]):
            out.append(("set_setting", {"workspace": ws, "key": WEIGHTS, "value": _weights(got["weights"])}))
        return out

    got = await _apply(main, f"Settings of {w.name}", fields, "Save",
                       "Effective from the next message. Empty a field for its default.", change)
    if got is not None:
        main.notify(f"Saved the settings of {w.name}.")


# --- a party's participants and Lead ---

async def edit_party(main, ws: str, cid: str) -> None:
    """Seed 004: a party's people add and remove participants and name its Lead, who gets every message nobody
    else is addressed in."""
    s = main.store
    await main.app.session.reload_conversations(ws)
    w = s.workspaces[ws]
    conv = w.conversations.get(cid)
    if conv is None:
        return
    members = sorted(conv.get("members", ()), key=s.name)
    refs = {p: main._ref(w, p) for p in members}
    agents = [p for p in members if (w.members.get(p) or {}).get("kind") == "agent"]
    fields = [Field("members", "Participants (comma-separated, as in a send's to)",
                    ", ".join(refs[p] for p in members if p != s.my_id), placeholder="e.g. reviewer, @bob"),
              Field("lead", "Lead (gets every message nobody else is addressed in)", conv.get("lead") or "",
                    choices=[("no Lead", "")] + [(s.name(p), p) for p in agents])]

    def change(got: dict) -> list[tuple[str, dict]]:
        wanted = _names(got["members"])
        had = [refs[p] for p in members if p != s.my_id]
        where = {"workspace": ws, "conversation": cid}
        out = [("add_participant", {**where, "participant": r}) for r in wanted if r not in had]
        out += [("remove_participant", {**where, "participant": r}) for r in had if r not in wanted]
        lead = got["lead"] or None
        if lead != conv.get("lead") and (lead is None or refs.get(lead) in wanted):
            out.append(("set_lead", {**where, "lead": lead}))
        return out

    got = await _apply(main, f"Participants and Lead of {s.conversation_name(conv)}", fields, "Save",
                       "You stay in it. A Lead must be one of its agents.", change)
    if got is not None:
        await main.app.session.reload_conversations(ws)
        main.refresh_all()
        main.notify(f"Saved {s.conversation_name(conv)}'s participants and Lead.")
