"""The bridge's side of a directive (seed 003 §53-55): the server's, plus what only the bridge knows.

The server issues a directive with every wake (`frame["directive"]`, built by
`ygg_server/directives.py`): stable blocks (the agent's core: identity, the
rulebook every agent follows, its persona; then the conversation's block: who is
here, the conversation's rulebook) and a dynamic part (whose turn, why, what was
just said). The bridge follows it and adds two things of its own:

- a stable **answer block** (how to answer so the bridge can send it, and the
  tools when the backend has no native tool calling), placed between the
  server's core and conversation blocks, so the agent-wide prefix stays shared
  across conversations and every block is byte-identical from turn to turn;
- its **memory** at the end of the dynamic part: the topic's recent transcript,
  the requests it owes and made, its notes.

A frame without a directive (a server that issues none, or one that could not
build it) gets the same shape from what the bridge knows: the same core and
rulebook text, with the config's role and `rulebook` layers
(`DEFAULT_RULEBOOK`, the agent's `[rulebook]`, then `[rulebooks."<conversation>"]`).
A turn the bridge runs for another message than the wake's (an owed request a
nudge or a poll brings back) keeps the server's stable part and describes that
message itself.
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from ..ops import directives as server
from . import recall
from .types import Directive, Tool

ANSWER_FORMAT = """\
## How to answer
Answer with one JSON object and nothing else:
{"text": "your message", "type": "response", "state": "done"}
Optional fields: "to" (a list of names or @handles; leave it out to answer whoever woke you),
"in_reply_to" (a message id; the bridge fills it in for the request that woke you), "waiting_for",
"topic" ("new" to open a topic, then also "title"). Use "text": null when there is nothing worth
saying this turn. Plain text is accepted too and is sent as the default answer to whatever woke you."""

TOOLS_IN_PROMPT = """\
## Your tools
To call tools, answer with {"tool_calls": [{"name": "...", "arguments": {...}}]} instead; you get
their results and then give your answer. Tools:"""

DEFAULT_RULEBOOK = server.DEFAULT_RULEBOOK


def rulebook_for(conversation: str | None, *, general: str | None = None,
                 default: dict | None = None, per_conversation: dict[str, dict] | None = None) -> dict[str, Any]:
    """The fallback rulebook in `conversation` (no directive from the server): defaults, then the config's."""
    rb = dict(DEFAULT_RULEBOOK)
    rb.update(default or {})
    per = per_conversation or {}
    if conversation is not None and conversation == general and "general" in per:
        rb.update(per["general"])
    if conversation in per:
        rb.update(per[conversation])
    return rb


def render_tools(tools: Iterable[Tool]) -> str:
    lines = [TOOLS_IN_PROMPT]
    for t in sorted(tools, key=lambda t: t.name):
        params = json.dumps(t.parameters, sort_keys=True, separators=(",", ":"))
        lines.append(f"- {t.name}: {t.description} Arguments (JSON Schema): {params}")
    return "\n".join(lines)


def answer_block(tools: Iterable[Tool] = (), tools_in_prompt: bool = False, skills: str = "") -> str:
    """The bridge's stable block: the answer format, the tools when the backend cannot call them natively, and
    the compact list of its skills (seed 003 §45: a name and one line each; load_skill reads the rest)."""
    tools = list(tools)
    if skills:
        return answer_block(tools, tools_in_prompt) + "\n\n" + skills
    if tools_in_prompt and tools:
        return ANSWER_FORMAT + "\n\n" + render_tools(tools)
    return ANSWER_FORMAT


# --- the dynamic part, when the bridge describes the turn itself ---

def _line(m: dict) -> str:
    return server.render_line(m, lambda pid: _names(m).get(pid, pid or "?"))


def _names(m: dict) -> dict:
    out = {m.get("author"): m.get("author_name") or m.get("author")}
    out.update(zip(m.get("to") or [], m.get("to_names") or m.get("to") or []))
    return out


def render_now(event: dict[str, Any]) -> str:
    """Whose turn, why, where, what was said: the server's dynamic part, as the bridge sees it."""
    me = event.get("me", {})
    msg = event.get("message", {})
    topic = event.get("topic") or {}
    out = ["## Now"]
    out.append(f"It is your turn, {me.get('name')}. "
               + server.WHY.get(event.get("why", "other"), server.WHY["other"]).format(
                   author=msg.get("author_name") or msg.get("author"), id=msg.get("id")))
    where = f"Conversation {topic.get('conversation')}"
    if topic.get("id"):
        where += f", topic {topic.get('id')}"
        if topic.get("title"):
            where += f" \"{topic['title']}\""
    out.append(where + ".")
    if event.get("roster"):
        out.append("Who is here: " + ", ".join(event["roster"]) + ".")
    if event.get("context"):
        out.append("\n## What was said since you were last woken")
        out += [_line(m) for m in event["context"]]
    out.append("\n## The message that woke you")
    out.append(_line(msg))
    exp = event.get("expect") or {}
    if exp:
        out.append("\n## Unless you decide otherwise")
        out.append("Your answer goes out as " + ", ".join(f"{k}={v}" for k, v in sorted(exp.items()) if v) + ".")
    return "\n".join(out)


def render_memory(event: dict[str, Any]) -> str:
    """The bridge's memory for this turn: the topic's earlier messages, what it owes and asked, its notes."""
    out: list[str] = []
    if event.get("transcript"):
        out.append("\n## Earlier on this topic (from your memory)")
        out += [_line(m) for m in event["transcript"]]
    if event.get("owed"):
        out.append("\n## Requests you still owe an answer (one response each, with in_reply_to)")
        out += [f"- [{o['id']}] from {o.get('author_name')}: {o.get('text', '')[:300]}" for o in event["owed"]]
    if event.get("asked"):
        out.append("\n## Requests you made here")
        for a in event["asked"]:
            got = "; ".join(f"{k}: {v[:300]}" for k, v in sorted((a.get("answers") or {}).items())) or "no answer yet"
            out.append(f"- [{a['id']}] to {', '.join(a.get('to') or [])}: {a.get('text', '')[:200]} → {got}")
    if event.get("notes"):
        out.append("\n## Your notes")
        out += [f"- {n}" for n in event["notes"]]
    if event.get("recalled"):
        out.append(recall.render(event["recalled"]))
    return "\n".join(x for x in out if x)


def compute(*, name: str, role: str, persona: str, rulebook: dict[str, Any], event: dict[str, Any],
            tools: Iterable[Tool] = (), tools_in_prompt: bool = False, issued: dict | None = None,
            own_turn: bool = True, skills: str = "") -> Directive:
    """The directive for one turn: the server's (`issued`) with the bridge's answer block and memory, or, when
    the frame carried none, the same shape from what the bridge knows. `own_turn` False: the turn answers
    another message than the wake's, so the server's dynamic part (about the wake) is replaced."""
    answer = answer_block(tools, tools_in_prompt, skills)
    memory = render_memory(event)
    if issued and isinstance(issued.get("stable"), list) and len(issued["stable"]) >= 2:
        core, *rest = issued["stable"]
        now = issued.get("dynamic") if own_turn and isinstance(issued.get("dynamic"), str) else render_now(event)
        return Directive(stable=(core, answer, *rest), dynamic=now + memory)
    core = server.core_block(name=name, title="", description=role, persona=persona)
    return Directive(stable=(core, answer, server.render_rulebook(rulebook)), dynamic=render_now(event) + memory)
