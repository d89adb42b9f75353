"""Directives: what an agent should do this turn, computed from the protocol (seed 003 §53-55).

The server does not (yet) ship a directive with each wake, so the bridge
computes it from what the protocol gives it: the wake, its context, the
agent's config, persona and memory. It has two parts:

- **stable** (byte-identical from turn to turn, so prompt caches hit):
  block 1, the agent's core: who it is (name, role), the rulebook every
  agent follows, how to answer, its tools when the backend has no native
  tool calling, and its persona; block 2, the conversation's rulebook (reply
  style, reply length, when not to interrupt). Nothing in them depends on
  the wake, the clock, or the order of a dict: same inputs, same bytes. They
  change only when the agent rewrites its persona or someone edits a rulebook.
- **dynamic** (fresh every turn): whose turn it is and why it was woken, what
  was just said (the wake and the context that piled up since the last one),
  what it owes and what it is owed, its notes.

The per-conversation rulebook is data: `DEFAULT_RULEBOOK`, overridden by the
agent's config (`[rulebook]`, then `[rulebooks."<conversation id or general>"]`),
then by a `rulebook` object on the deliver frame if the server ever sends one.
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from .types import Directive, Tool

RULES = """\
## The rulebook (Agent'Ygg): you follow it every turn
- Every message names its topic: the one it continues, or "new" to open one with a short title.
  You may hold at most 3 open topics that you opened.
- Message types. request: you need an answer or an action; the only type that wakes its recipient.
  response: you answer the request you were woken for; set in_reply_to to that request's id; it wakes
  the requester only, once. inform: a status, a result, a thanks; it never wakes anyone.
- A request gets exactly one answer from each recipient. Answer each request addressed to you once,
  with a response and in_reply_to. Never answer an inform.
- States. working: on it. waiting: you wait on someone (name them in waiting_for). needs_human: a
  person must decide; the topic pauses until one steps in. done: your part is finished. Say done as
  soon as it is true: a topic closes when everyone in it is done.
- Notices from system.ygg: a closure_poll asks whether you are done (answer with state done to
  system.ygg, or say what is left); a nudge means someone waits on you (answer what you owe); a
  resume means requests reached you while you were busy (answer them); credits_refilled means you may
  resend what was refused.
- Every message you send costs credits (1 per started 1,000 characters, per recipient); replies to
  system.ygg are free. If you are refused credits_exhausted, stop and wait for credits_refilled.
- Address agents by name, people by @handle. Do not talk just to fill silence."""

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

DEFAULT_RULEBOOK: dict[str, Any] = {
    "style": "plain and friendly; say what you found or decided, not how hard you worked",
    "length": 800,
    "interrupt": ("speak only when woken; do not reply to informs; do not repeat what others said; "
                  "ask a person only when a decision is theirs"),
    "language": "the language of the message that woke you",
}


def rulebook_for(conversation: str | None, *, general: str | None = None,
                 default: dict | None = None, per_conversation: dict[str, dict] | None = None,
                 frame: dict | None = None) -> dict[str, Any]:
    """The rulebook in force in `conversation`: defaults, then config, then the server's if it sent one."""
    rb = dict(DEFAULT_RULEBOOK)
    rb.update(default or {})
    per = per_conversation or {}
    if conversation is not None and conversation == general and "general" in per:
        rb.update(per["general"])
    if conversation in per:
        rb.update(per[conversation])
    sent = (frame or {}).get("rulebook")
    if isinstance(sent, dict):
        rb.update(sent)
    return rb


def render_rulebook(rb: dict[str, Any]) -> str:
    lines = ["## This conversation's rulebook"]
    labels = {"style": "Reply style", "length": "Reply length", "interrupt": "When not to interrupt",
              "language": "Language"}
    for key in sorted(rb):
        value = rb[key]
        if key == "length":
            value = f"at most {value} characters"
        lines.append(f"- {labels.get(key, key.replace('_', ' ').capitalize())}: {value}")
    return "\n".join(lines)


def render_tools(tools: Iterable[Tool]) -> str:
    lines = [TOOLS_IN_PROMPT]
    for t in sorted(tools, key=lambda t: t.name):
        params = json.dumps(t.parameters, sort_keys=True, separators=(",", ":"))
        lines.append(f"- {t.name}: {t.description} Arguments (JSON Schema): {params}")
    return "\n".join(lines)


def stable_core(*, name: str, role: str, persona: str, tools: Iterable[Tool] = (), tools_in_prompt: bool = False) -> str:
    parts = [
        f"You are {name}, an AI agent in Ygg, a chat where people and agents work side by side.",
        f"Your role: {role.strip()}" if role.strip() else "",
        RULES,
        ANSWER_FORMAT,
    ]
    tools = list(tools)
    if tools_in_prompt and tools:
        parts.append(render_tools(tools))
    parts.append("## Your persona (yours to read and rewrite with your persona tools)\n" + (persona.strip() or "(empty)"))
    return "\n\n".join(p for p in parts if p)


# --- the dynamic part ---

WHY = {
    "request": "{author} sent you a request. Answer it once: type response, in_reply_to {id}.",
    "person": "{author} (a person) wrote to you. Act on it; a person's request gets one response.",
    "response": "{author} answered a request you made. Use the answer; say done when your part is finished.",
    "closure_poll": "system.ygg asks whether you are done on this topic (closure poll).",
    "nudge": "system.ygg nudges you: someone waits on you here. Answer what you owe.",
    "resume": "system.ygg resumes you: more requests reached you while you were busy.",
    "credits_refilled": "Your credits were refilled. Resend what did not go through.",
    "other": "You were woken by {author}.",
}


def _line(m: dict) -> str:
    to = ", ".join(m.get("to_names") or m.get("to") or []) or "(topic)"
    bits = [m.get("type") or "?"]
    if m.get("state"):
        bits.append(m["state"])
    if m.get("notice"):
        bits.append("notice " + m["notice"])
    if m.get("in_reply_to"):
        bits.append("in reply to " + m["in_reply_to"])
    head = f"- [{m.get('id')}] {m.get('author_name') or m.get('author')} → {to} ({', '.join(bits)})"
    return head + ": " + (m.get("text") or "").strip()


def render_dynamic(event: dict[str, Any]) -> str:
    me = event.get("me", {})
    msg = event.get("message", {})
    topic = event.get("topic") or {}
    out = ["## Now"]
    out.append(f"It is your turn, {me.get('name')}. "
               + WHY.get(event.get("why", "other"), WHY["other"]).format(
                   author=msg.get("author_name") or msg.get("author"), id=msg.get("id")))
    where = f"Conversation {topic.get('conversation')}"
    if topic.get("id"):
        where += f", topic {topic.get('id')}"
        if topic.get("title"):
            where += f" \"{topic['title']}\""
    out.append(where + ".")
    if event.get("roster"):
        out.append("Who is here: " + ", ".join(event["roster"]) + ".")
    earlier = event.get("transcript") or []
    if earlier:
        out.append("\n## Earlier on this topic")
        out += [_line(m) for m in earlier]
    if event.get("context"):
        out.append("\n## What was said since you were last woken")
        out += [_line(m) for m in event["context"]]
    out.append("\n## The message that woke you")
    out.append(_line(msg))
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
    exp = event.get("expect") or {}
    if exp:
        out.append("\n## Unless you decide otherwise")
        out.append("Your answer goes out as " + ", ".join(f"{k}={v}" for k, v in sorted(exp.items()) if v) + ".")
    return "\n".join(out)


def compute(*, name: str, role: str, persona: str, rulebook: dict[str, Any], event: dict[str, Any],
            tools: Iterable[Tool] = (), tools_in_prompt: bool = False) -> Directive:
    """The directive for one wake: the stable blocks and the dynamic part."""
    core = stable_core(name=name, role=role, persona=persona, tools=tools, tools_in_prompt=tools_in_prompt)
    return Directive(stable=(core, render_rulebook(rulebook)), dynamic=render_dynamic(event))
