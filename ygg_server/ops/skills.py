"""Skills in layers (seed 003 §43-45): the platform's (bundled, `ygg_server/skills/platform/`, and rows with
owner '' and agent ''), an owner's (agent '': all of its agents) and one agent's; on a name clash the most
specific wins. A skill is active for an agent only when the agent has every tool it names (`allowed-tools`);
attaching a skill to an agent copies it into the agent's layer and attaches those tools. The agent's prompt
holds only the active skills' names and one line each (`compact`); the `load_skill` tool reads a body on demand.

Socket ops (docs/protocol.md, "Tools, skills and memory"): `list_skills`, `import_skill` (files of a folder,
checked against the format: a malformed skill is refused `bad_skill` saying what breaks it), `attach_skill`,
`detach_skill`, `export_skill` (the folder's files, as imported), `remove_skill` (from the owner's library).
A skill's row keeps its SKILL.md as written (`body`), so an export gives back what was imported.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import msgspec

from ..protocol import frames
from ..skills.format import Skill, SkillError, from_files
from ..store.transactions import Tx
from . import toolkit
from .refusals import NotFound, Refused

PLATFORM, OWNER, AGENT = "platform", "owner", "agent"
ORDER = {PLATFORM: 0, OWNER: 1, AGENT: 2}  # the most specific wins


@dataclass(frozen=True)
class Layered:
    skill: Skill
    layer: str


@lru_cache(maxsize=1)
def bundled() -> tuple[Skill, ...]:
    """The platform skills that ship with Ygg."""
    root = resources.files("ygg_server.skills").joinpath("platform")
    out = []
    for folder in sorted(root.iterdir(), key=lambda p: p.name):
        md = folder.joinpath("SKILL.md")
        if md.is_file():
            out.append(from_files({"SKILL.md": md.read_text(encoding="utf-8")}, folder.name))
    return tuple(out)


def _row_skill(body: str, files: str, name: str) -> Skill:
    return from_files({"SKILL.md": body, **msgspec.json.decode(files)}, name)


def resolve(conn: sqlite3.Connection, agent: str | None, owner: str) -> dict[str, Layered]:
    """Every skill that applies to `agent` of `owner` (or, agent None, to all of the owner's), by name, each from
    its most specific layer."""
    found: dict[str, Layered] = {s.name: Layered(s, PLATFORM) for s in bundled()}
    rows = conn.execute("""SELECT owner, agent, name, body, files FROM skills
                           WHERE (owner = '' AND agent = '') OR (owner = ? AND (agent = '' OR agent = ?))""",
                        (owner, agent or "")).fetchall()
    for o, a, name, body, files in sorted(rows, key=lambda r: (bool(r[0]), bool(r[1]))):
        layer = AGENT if a else OWNER if o else PLATFORM
        try:
            found[name] = Layered(_row_skill(body, files, name), layer)
        except SkillError:  # (stored only once checked: a row that no longer parses is skipped, not fatal)
            continue
    return found


def active(conn: sqlite3.Connection, agent: str, owner: str, tools: set[str] | None = None
           ) -> tuple[list[Layered], list[tuple[Layered, list[str]]]]:
    """(the skills switched on for `agent`, those off with the tools each lacks): §44's activation rules."""
    if tools is None:
        tools = {t.name for t in toolkit.attached(conn, agent, owner)[1]}
    on, off = [], []
    for _, lay in sorted(resolve(conn, agent, owner).items()):
        missing = [t for t in lay.skill.tools if t not in tools]
        (off.append((lay, missing)) if missing else on.append(lay))
    return on, off


def compact(skills: list[Layered]) -> str:
    """The prompt's list (§45): a name and one line each, and how to read the rest."""
    if not skills:
        return ""
    lines = [f"- {s.skill.name}: {s.skill.line}" for s in skills]
    return ("## Your skills\nLoad a skill's full instructions with load_skill before doing what it covers.\n"
            + "\n".join(lines))


def load(conn: sqlite3.Connection, agent: str, owner: str, name: str, file: str | None = None) -> dict:
    """An active skill's body (or one of its files) for the `load_skill` tool."""
    on, off = active(conn, agent, owner)
    lay = next((s for s in on if s.skill.name == name), None)
    if lay is None:
        missing = next((m for s, m in off if s.skill.name == name), None)
        if missing:
            raise SkillError(f"skill {name} is not active for you: it needs {', '.join(missing)}")
        raise SkillError(f"you have no skill called {name}; your skills: {', '.join(s.skill.name for s in on)}")
    if file:
        if file not in lay.skill.files:
            raise SkillError(f"skill {name} has no file {file}; its files: {', '.join(sorted(lay.skill.files)) or 'none'}")
        return {"name": name, "file": file, "text": lay.skill.files[file]}
    return {"name": name, "instructions": lay.skill.body, "files": sorted(lay.skill.files)}


def _wire(lay: Layered, missing: list[str] | None = None) -> dict:
    out = {"name": lay.skill.name, "description": lay.skill.line, "layer": lay.layer, "tools": list(lay.skill.tools)}
    if missing is not None:
        out["missing"] = missing
    return out


def list_skills(conn: sqlite3.Connection, who: str, f: frames.ListSkills) -> dict:
    if f.agent is None and who.startswith("human."):  # a person's library: the platform's and its own
        return {"skills": [_wire(s) for _, s in sorted(resolve(conn, None, who).items())]}
    agent, owner = toolkit.owned_agent(conn, who, f.agent)
    on, off = active(conn, agent, owner)
    return {"agent": agent, "skills": [_wire(s) for s in on], "inactive": [_wire(s, m) for s, m in off],
            "prompt": compact(on)}


def _store(conn: sqlite3.Connection, owner: str, agent: str, skill: Skill, source: str, now: int) -> None:
    conn.execute("DELETE FROM skills WHERE owner = ? AND agent = ? AND name = ?", (owner, agent, skill.name))
    conn.execute("""INSERT INTO skills (owner, agent, name, description, body, files, tools, source, created_at)
                    VALUES (?,?,?,?,?,?,?,?,?)""",
                 (owner, agent, skill.name, skill.description, skill.skill_md(), msgspec.json.encode(skill.files).decode(),
                  msgspec.json.encode(list(skill.tools)).decode(), source[:500], now))


def _attach(conn: sqlite3.Connection, who: str, agent: str, owner: str, skill: Skill, source: str, now: int) -> list[str]:
    """Into the agent's layer, with the tools it depends on (§43: "assigning a skill also brings along the tools")."""
    known = toolkit.catalog(conn, owner)
    unknown = [t for t in skill.tools if t not in known]
    if unknown:
        raise Refused("bad_skill", f"skill {skill.name} needs tools this server has not: {', '.join(unknown)}")
    with Tx(conn):
        _store(conn, owner, agent, skill, source, now)
    return toolkit.set_tools(conn, agent, owner, add=list(skill.tools), by=who, now=now)


def attach_files(conn: sqlite3.Connection, agent: str, files: dict[str, str], folder: str, now: int) -> list[str]:
    """A skill's folder put in `agent`'s layer by its owner, with its tools (the demo's provisioning, the CLI)."""
    owner = conn.execute("SELECT owner FROM agents WHERE id = ?", (agent,)).fetchone()[0]
    return _attach(conn, owner, agent, owner, from_files(files, folder), folder, now)


def import_skill(conn: sqlite3.Connection, who: str, f: frames.ImportSkill, now: int) -> dict:
    if not who.startswith("human."):
        raise Refused("permission_denied", "skills are imported by people")
    folder = f.folder if isinstance(f.folder, str) and f.folder else None
    try:
        skill = from_files(f.files, folder)
    except SkillError as e:
        raise Refused("bad_skill", str(e)) from None
    source = folder or ""
    if f.agent is not None:
        agent, owner = toolkit.owned_agent(conn, who, f.agent)
        tools = _attach(conn, who, agent, owner, skill, source, now)
        return {"skill": skill.name, "layer": AGENT, "agent": agent, "tools": tools}
    with Tx(conn):
        _store(conn, who, "", skill, source, now)
    return {"skill": skill.name, "layer": OWNER}


def _library(conn: sqlite3.Connection, owner: str, name: str) -> Skill:
    lay = resolve(conn, None, owner).get(name)
    if lay is None:
        raise NotFound
    return lay.skill


def attach_skill(conn: sqlite3.Connection, who: str, f: frames.AttachSkill, now: int) -> dict:
    agent, owner = toolkit.owned_agent(conn, who, f.agent)
    toolkit._owner_only(who, owner)
    skill = _library(conn, owner, f.skill)
    tools = _attach(conn, who, agent, owner, skill, "attached", now)
    return {"agent": agent, "skill": skill.name, "tools": tools}


def detach_skill(conn: sqlite3.Connection, who: str, f: frames.DetachSkill) -> dict:
    agent, owner = toolkit.owned_agent(conn, who, f.agent)
    toolkit._owner_only(who, owner)
    if conn.execute("DELETE FROM skills WHERE owner = ? AND agent = ? AND name = ?",
                    (owner, agent, f.skill)).rowcount == 0:
        raise NotFound
    return {"agent": agent, "skill": f.skill}


def export_skill(conn: sqlite3.Connection, who: str, f: frames.ExportSkill) -> dict:
    if f.agent is None:
        if not who.startswith("human."):
            raise NotFound
        skill = _library(conn, who, f.skill)
    else:
        agent, owner = toolkit.owned_agent(conn, who, f.agent)
        lay = resolve(conn, agent, owner).get(f.skill)
        if lay is None:
            raise NotFound
        skill = lay.skill
    return {"skill": skill.name, "files": {"SKILL.md": skill.skill_md(), **skill.files}}


def remove_skill(conn: sqlite3.Connection, who: str, f: frames.RemoveSkill) -> dict:
    if not who.startswith("human.") or conn.execute("DELETE FROM skills WHERE owner = ? AND agent = '' AND name = ?",
                                                    (who, f.skill)).rowcount == 0:
        raise NotFound
    return {"skill": f.skill}


OPS = {"list_skills": (list_skills, False), "import_skill": (import_skill, True), "attach_skill": (attach_skill, True),
       "detach_skill": (detach_skill, True), "export_skill": (export_skill, False), "remove_skill": (remove_skill, True)}
TIMED = frozenset({"import_skill", "attach_skill"})
