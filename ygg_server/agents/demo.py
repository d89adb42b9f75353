"""The offline demo team: four built-in agents created on a data dir and run in-process.

    demo = await start_demo("ws://127.0.0.1:8765/", data_dir=DIR, workspace="team", owner="alice")
    ...
    await demo.stop()

The agents are made with `ygg_server.ops.admin` directly on the data dir's
database (this works whether or not a server is serving it), pinned to the
workspace, funded once when created, and their keys kept in
`DIR/agents/demo-keys.json` (mode 0600) so a second start reuses them. Each
agent's own files (persona, memory, journal, turn log) live in
`DIR/agents/<name>/`. The bridges start one at a time, each connected before
the next, as asyncio tasks of the caller's loop.
"""

from __future__ import annotations

import asyncio
import json
import os
from importlib import resources
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..clock import now_us
from ..ops import admin, configure, goals, schedules, skills, toolkit
from ..protocol import frames
from ..store import sqlite as db
from .bridge import Bridge, Supervisor
from .config import AgentConfig, BackendConfig

DEMO_AGENTS: dict[str, dict[str, Any]] = {
    "lead": {
        "title": "Lead",
        "role": "Coordinator. Takes a person's request, delegates the parts to the team, and answers with what "
                "comes back.",
        "persona": "Calm and organised. Says who is doing what, never does a colleague's part, and closes what "
                   "it opens.",
        "capabilities": ["coordination", "planning", "delegation"], "generalist": True, "cost": 2,
        "personality": "lead", "fund": 200,
        "tools": ["send_message", "handoff", "settle_thread", "work_graph", "persona_read", "persona_write",
                  "remember",
                  "pulse_report"],
    },
    "researcher": {
        "title": "Researcher",
        "role": "Answers questions from the Ygg handbook, quoting it.",
        "persona": "Curious and precise. Quotes its source and says so when the handbook has nothing.",
        "capabilities": ["research", "handbook", "questions"], "generalist": False, "cost": 1,
        "personality": "researcher", "fund": 200,
        "tools": ["search_corpus", "artifact_create", "handoff", "persona_read", "persona_write", "remember",
                  "memory_search", "load_skill", "reminder_create", "schedules_list", "artifact_pdf", "loop_verdict"],
        "skills": ["handbook-answers"],  # agents/data/skills/: it loads it on demand, and keeps what it learns
    },
    "reviewer": {
        "title": "Reviewer",
        "role": "Reviews plans and changes; anything risky goes to a person first.",
        "persona": "Careful and brief. Flags risk plainly and asks a person before approving anything that "
                   "deploys, deletes, pays or touches secrets.",
        "capabilities": ["review", "risk", "approval"], "generalist": False, "cost": 1,
        "personality": "reviewer", "fund": 200,
        "tools": ["send_message", "handoff", "persona_read", "persona_write", "remember", "file_read"],
    },
    "eager": {
        "title": "Helper",
        "role": "An enthusiastic helper that keeps everyone posted.",
        "persona": "Enthusiastic, thorough to a fault, and chatty: posts a status for every step and answers "
                   "at length.",
        "capabilities": ["status", "summaries"], "generalist": False, "cost": 1,
        "personality": "eager", "fund": 5,
        "tools": ["send_message", "search_corpus", "persona_read", "persona_write"],
    },
    "ops": {
        "title": "Ops",
        "role": "Deploys changes when asked; each deploy waits for a person's approval unless a rule allows it.",
        "persona": "Terse and careful. Never deploys without the approval it asked for.",
        "capabilities": ["deploy", "operations"], "generalist": False, "cost": 1,
        "personality": "ops", "fund": 50,
        "tools": ["deploy", "persona_read", "persona_write"],
    },
}


def profile_of(spec: dict[str, Any]) -> dict[str, Any]:
    """The profile the directives, the party roster and `capability:` assignment read (seed 003 §14)."""
    return {"title": spec.get("title", ""), "description": spec.get("role", ""),
            "capabilities": list(spec.get("capabilities", ())), "generalist": bool(spec.get("generalist")),
            "tools": list(spec.get("tools", ())), "cost": int(spec.get("cost", 0))}


@dataclass
class Demo:
    supervisor: Supervisor
    agents: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> {"id", "api_key", "data_dir"}

    @property
    def bridges(self) -> dict[str, Bridge]:
        return {b.cfg.name: b for b in self.supervisor.bridges}

    async def stop(self) -> None:
        await self.supervisor.stop()


def _provision(data_dir: Path, workspace: str, owner: str, agents: dict[str, dict[str, Any]]) -> dict[str, dict]:
    keys_path = data_dir / "agents" / "demo-keys.json"
    keys: dict[str, dict] = json.loads(keys_path.read_text()) if keys_path.exists() else {}
    conn = db.connect(db.db_path(data_dir))
    try:
        ws = admin.workspace(conn, workspace)
        for name, spec in agents.items():
            known = keys.get(name)
            if known and known.get("workspace") == ws and conn.execute(
                    "SELECT 1 FROM agents WHERE id = ? AND revoked = 0", (known["id"],)).fetchone():
                continue
            made = admin.add_agent(conn, name, owner, ws, now=now_us())
            keys[name] = {"id": made["id"], "api_key": made["api_key"], "workspace": ws}
            if spec.get("fund"):
                admin.fund(conn, made["id"], int(spec["fund"]), now=now_us())
        for name, spec in agents.items():  # every start: a data dir made by an older version gets them too
            configure.set_profile(conn, keys[name]["id"], profile_of(spec))
            _equip(conn, keys[name]["id"], spec)
        _schedules(conn, ws, owner, keys)
        _goals(conn, ws, owner, keys)
    finally:
        conn.close()
    keys_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = keys_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(keys, indent=2))
    os.chmod(tmp, 0o600)
    os.replace(tmp, keys_path)
    return keys


def _equip(conn, agent: str, spec: dict[str, Any]) -> None:
    """Its tools attached on the server's registry as the demo names them, and its skills in its own layer."""
    owner = conn.execute("SELECT owner FROM agents WHERE id = ?", (agent,)).fetchone()[0]
    _, now_attached = toolkit.attached(conn, agent, owner)
    toolkit.set_tools(conn, agent, owner, add=list(spec["tools"]),
                      drop=[t.name for t in now_attached if t.name not in spec["tools"]], by=owner, now=now_us())
    for name in spec.get("skills", ()):
        folder = resources.files("ygg_server.agents").joinpath("data", "skills", name)
        files = {"SKILL.md": folder.joinpath("SKILL.md").read_text(encoding="utf-8")}
        skills.attach_files(conn, agent, files, name, now_us())
# issue 22: the lead's morning routine (its first run a minute after the demo starts, then every morning at 8 UTC), ops's
# nightly deploy (which waits for the owner's approval: a card in the TUI), and a reminder the researcher brings the
# owner two minutes after the demo starts
MORNING = {"name": "morning digest", "cron": "0 8 * * *", "tz": "UTC",
           "text": "Good morning: say which topics are open and who is waiting on whom."}
NIGHTLY = {"name": "nightly deploy", "cron": "0 2 * * *", "tz": "UTC", "text": "deploy staging"}
REMINDER = "Look at your reminders and routines: ctrl+p, then \"Reminders and routines in team\"."


def _schedules(conn, ws: str, owner: str, keys: dict[str, dict]) -> None:
    """Once per workspace: the demo's routine and reminder (ops.schedules, as the owner makes them in the TUI)."""
    if "lead" not in keys or "researcher" not in keys:
        return
    lead = keys["lead"]["id"]
    if conn.execute("SELECT 1 FROM schedules WHERE agent = ? AND workspace = ?", (lead, ws)).fetchone():
        return
    person = conn.execute("SELECT id FROM people WHERE handle = ?", (owner.lstrip("@"),)).fetchone()
    if person is None:
        return
    now = now_us()
    made = schedules.add_routine(conn, person[0], frames.AddRoutine(workspace=ws, agent=lead, **MORNING), now)
    conn.execute("UPDATE schedules SET next_at = ? WHERE id = ?", (now + 60 * 1_000_000, made["schedule"]["id"]))
    if "ops" in keys:  # its first run a minute and a half after the start: the deploy asks the owner's approval
        nightly = schedules.add_routine(conn, person[0], frames.AddRoutine(workspace=ws, agent=keys["ops"]["id"],
                                                                          **NIGHTLY), now)
        conn.execute("UPDATE schedules SET next_at = ? WHERE id = ?", (now + 90 * 1_000_000, nightly["schedule"]["id"]))
    schedules.add_reminder(conn, person[0], frames.AddReminder(
        workspace=ws, agent=keys["researcher"]["id"], at=now + 120 * 1_000_000, text=REMINDER), now)


# issue 22: the researcher's loop (an iteration every 20 s from half a minute after the start; what it finds does not
# change, so the server ends it for want of progress after three), and the lead's pulse (its checklist every ten
# minutes, the first a minute and a quarter after the start): see them with ctrl+p, "Loops and pulses in team"
LOOP = {"name": "credits notes", "goal": "Collect what the handbook says about credits and budgets", "every": 20,
        "max_iterations": 6, "stall_after": 3, "hours": 2}
PULSE = {"name": "team check", "every": 600,
         "checklist": "- topics waiting on a person\n- colleagues low on credits\n- reminders due today"}


def _goals(conn, ws: str, owner: str, keys: dict[str, dict]) -> None:
    """Once per workspace: the demo's loop and pulse (ops.goals, as the owner makes them in the TUI)."""
    if "researcher" not in keys or "lead" not in keys:
        return
    person = conn.execute("SELECT id FROM people WHERE handle = ?", (owner.lstrip("@"),)).fetchone()
    if person is None or conn.execute("SELECT 1 FROM schedules WHERE workspace = ? AND kind IN ('loop', 'pulse') "
                                      "AND agent IN (?, ?)", (ws, keys["researcher"]["id"], keys["lead"]["id"])
                                      ).fetchone():
        return
    now = now_us()
    made = goals.add_loop(conn, person[0], frames.AddLoop(workspace=ws, agent=keys["researcher"]["id"], **LOOP), now)
    conn.execute("UPDATE schedules SET next_at = ? WHERE id = ?", (now + 30 * 1_000_000, made["loop"]["id"]))
    pulse = goals.add_pulse(conn, person[0], frames.AddPulse(workspace=ws, agent=keys["lead"]["id"], **PULSE), now)
    conn.execute("UPDATE schedules SET next_at = ? WHERE id = ?", (now + 75 * 1_000_000, pulse["pulse"]["id"]))


def demo_configs(url: str, data_dir: str | os.PathLike, keys: dict[str, dict],
                 agents: dict[str, dict[str, Any]] | None = None) -> list[AgentConfig]:
    agents = agents or DEMO_AGENTS
    out = []
    for name, spec in agents.items():
        out.append(AgentConfig(
            name=name, url=url, api_key=keys[name]["api_key"], data_dir=str(Path(data_dir) / "agents" / name),
            role=spec["role"], persona=spec["persona"], tools=list(spec["tools"]),
            backend=BackendConfig(kind="builtin", personality=spec["personality"], options=spec.get("options", {})),
            max_steps=6,
        ))
    return out


async def start_demo(url: str, *, data_dir: str | os.PathLike, workspace: str, owner: str,
                     agents: dict[str, dict[str, Any]] | None = None, connect_timeout: float = 30.0) -> Demo:
    """Create (once) and start the demo agents of `owner` in `workspace` on the server at `url`.

    `data_dir` is the server's data dir (its SQLite database is used directly);
    `workspace` is a workspace id or name `owner` (a person's handle) belongs to.
    Returns once every bridge is connected (or timed out); `await demo.stop()` ends them.
    """
    agents = agents or DEMO_AGENTS
    data_dir = Path(data_dir)
    keys = await asyncio.to_thread(_provision, data_dir, workspace, owner, agents)
    bridges = [Bridge(cfg) for cfg in demo_configs(url, data_dir, keys, agents)]
    sup = Supervisor(bridges, connect_timeout=connect_timeout)
    await sup.start()
    return Demo(sup, {n: {**keys[n], "data_dir": str(data_dir / "agents" / n)} for n in agents})
