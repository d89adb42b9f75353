"""The registry's task, routine and document tools (seed 003 §35, §41, §52; issue 23): handlers over the same
operations the socket's ops run (ops/schedules.py, ops/queries.py, ops/artifacts.py), as the calling agent, so an
agent manages its own routines and reminders under exactly the rules a person's client meets (its owner's standing
permission for routines, at most ten), and a task it opens is a message of its own through the one send path.

What an operation refuses comes back to the model as the tool's error (`ToolError`), naming the reason.
"""

from __future__ import annotations

import base64
import hashlib
from datetime import datetime, timezone
from typing import Any

from ..ops import artifacts, queries, schedules
from ..ops.refusals import NotFound, Refused
from ..ops.toolkit import Route
from ..protocol import frames
from . import pdf
from .registry import REGISTRY

PDF_INLINE = 256 * 1024  # a PDF's bytes given back in base64 up to this size
TASKS_SHOWN = 30


class ToolError(Exception):
    """What the model is told went wrong (server_tools.run answers it as the call's error)."""


async def _op(call, fn, *args) -> Any:
    try:
        return await call(fn, *args)
    except Refused as e:
        raise ToolError(f"{e.reason}: {e.detail}") from None
    except NotFound:
        raise ToolError("not found (or not yours to see)") from None


def _schedule(s: dict) -> dict:
    keep = ("id", "kind", "name", "text", "every", "cron", "tz", "paused", "runs", "last_result", "may_manage")
    out = {k: s[k] for k in keep if s.get(k) not in (None, "")}
    if s.get("next_at"):
        out["next_at"] = datetime.fromtimestamp(s["next_at"] / 1e6, tz=timezone.utc).isoformat()
    return out


@REGISTRY.handler("schedules_list")
async def schedules_list(env, r: Route) -> Any:
    out = await _op(env.read, schedules.list_schedules, r.agent, frames.ListSchedules(workspace=r.workspace))
    return {"schedules": [_schedule(s) for s in out["schedules"]], "max_routines": out["max_routines"]}


@REGISTRY.handler("routine_create")
async def routine_create(env, r: Route) -> Any:
    a = r.arguments
    f = frames.AddRoutine(workspace=r.workspace, text=a["text"], name=a.get("name", ""), cron=a.get("cron"),
                          every=a.get("every"), tz=a.get("tz", "UTC"))
    return _schedule((await _op(env.manage, schedules.add_routine, r.agent, f, env.clock()))["schedule"])


def _when(a: dict, now: int) -> int:
    if ("at" in a) == ("in_minutes" in a):
        raise ToolError("give one of at (an ISO 8601 time) and in_minutes")
    if "in_minutes" in a:
        return now + a["in_minutes"] * 60_000_000
    try:
        at = datetime.fromisoformat(a["at"].replace("Z", "+00:00"))
    except ValueError:
        raise ToolError(f"at {a['at']!r} is not an ISO 8601 time (2026-12-03T09:00:00+01:00)") from None
    return int((at if at.tzinfo else at.replace(tzinfo=timezone.utc)).timestamp() * 1_000_000)


@REGISTRY.handler("reminder_create")
async def reminder_create(env, r: Route) -> Any:
    now = env.clock()
    f = frames.AddReminder(workspace=r.workspace, text=r.arguments["text"], at=_when(r.arguments, now),
                           person=r.arguments.get("person"))
    return _schedule((await _op(env.manage, schedules.add_reminder, r.agent, f, now))["schedule"])


@REGISTRY.handler("schedule_pause")
async def schedule_pause(env, r: Route) -> Any:
    f = frames.PauseSchedule(workspace=r.workspace, id=r.arguments["id"], paused=r.arguments.get("paused", True))
    return _schedule((await _op(env.manage, schedules.pause_schedule, r.agent, f, env.clock()))["schedule"])


@REGISTRY.handler("schedule_delete")
async def schedule_delete(env, r: Route) -> Any:
    f = frames.DeleteSchedule(workspace=r.workspace, id=r.arguments["id"])
    return await _op(env.manage, schedules.delete_schedule, r.agent, f)


@REGISTRY.handler("task_create")
async def task_create(env, r: Route) -> Any:
    """A request in a new topic, sent as the agent's own message (core `decide` judges whom it may address)."""
    a, ref = r.arguments, r.arguments["to"].strip().removeprefix("@")
    here = await _op(env.read, queries.members, r.agent, r.workspace)
    target = next((m for m in here if ref in (m["id"], m["name"], m["handle"])), None)
    if target is None:
        raise ToolError(f"unknown_recipient: nobody called {ref!r} in this workspace")
    if target["id"] == r.agent:
        raise ToolError("unknown_recipient: a task goes to someone else")
    text = a["text"].strip()
    title = (a.get("title") or "").strip() or text.splitlines()[0][:60] if text else ""
    send = frames.Send(workspace=r.workspace, conversation=a.get("conversation") or f"dm:{target['id']}",
                       topic="new", title=title, type="request", to=[target["id"]], text=text)
    out = await env.send(r.agent, send)
    if out.get("op") != "sent":
        raise ToolError(f"{out.get('reason') or out.get('code')}: {out.get('detail', '')}")
    m = out["message"]
    return {"task": m["topic"], "message": m["id"], "conversation": m["conversation"], "to": target["name"],
            "cost": out.get("cost", m.get("cost", 0))}


@REGISTRY.handler("task_list")
async def task_list(env, r: Route) -> Any:
    status = r.arguments.get("status", "open")
    f = frames.ListTopics(workspace=r.workspace, status=None if status == "all" else status)
    topics = (await _op(env.read, queries.list_topics, r.agent, f))["topics"]
    mine = [t for t in topics if t["opener"] == r.agent or r.agent in t["members"]][:TASKS_SHOWN]
    return [{"task": t["id"], "title": t["title"], "status": t["status"], "conversation": t["conversation"],
             "opened_by_me": t["opener"] == r.agent, "created_at": t["created_at"],
             "states": {p: m["state"] for p, m in t["members"].items()}} for t in mine]


@REGISTRY.handler("artifact_pdf")
async def artifact_pdf(env, r: Route) -> Any:
    f = frames.GetArtifact(workspace=r.workspace, artifact=r.arguments["artifact"], version=r.arguments.get("version"))
    got = await _op(env.read, artifacts.get_artifact, r.agent, f)
    data = pdf.of_artifact(got)
    out = {"artifact": got["artifact"]["id"], "version": got["version"], "filename": pdf.filename(got["title"]),
           "pages": pdf.pages(data), "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    if len(data) <= PDF_INLINE:
        out["pdf_base64"] = base64.b64encode(data).decode()
    return out

