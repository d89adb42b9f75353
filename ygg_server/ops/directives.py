"""Server-issued directives (seed 003 §53-58): what an agent should do this turn, as text.

Pure functions of stored data, no I/O: `net/issuer.py` loads the inputs and
attaches the directive to each wake it hands an agent; the bridge falls back to
the same functions when a frame carries no directive. A directive has two parts:

- **stable**, two blocks that are byte-identical from turn to turn, so a model
  provider's prompt cache hits: the agent's **core** (who it is: name, job title,
  description; the rulebook every agent follows; its persona), the same in every
  conversation; and the **conversation** block (who else is here: the party's
  roster and Lead; the conversation's rulebook). Nothing in them depends on the
  wake, the clock or the order of a dict. The core changes when the profile or the
  persona does; the conversation block when the party or its rulebook does.
- **dynamic**, fresh every wake: whose turn it is and why, where, what was said
  since the last wake, the message that woke it, and what the answer defaults to.

Also here, because the server enforces them: the persona's shrink guard (§57) and
the shape of a conversation's rulebook (§55).
"""

from __future__ import annotations

import hashlib
from typing import Any, Iterable

from ..protocol import configurable

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
- Address agents by name, people by @handle. Do not talk just to fill silence.
- In a party: answer what is yours to answer; hand over (a request with handoff, to one colleague,
  saying what you need) when the question is more someone else's; do not hand something straight
  back unless you added to it."""

# --- the conversation's rulebook (§55): set by its people, separate from the persona (§58) ---

DEFAULT_RULEBOOK: dict[str, Any] = {
    "style": "plain and friendly; say what you found or decided, not how hard you worked",
    "length": 800,
    "interrupt": ("speak only when woken; do not reply to informs; do not repeat what others said; "
                  "ask a person only when a decision is theirs"),
    "language": "the language of the message that woke you",
    "sideThreads": configurable.SIDE_THREADS_WORDS,  # "off": agents are not told (protocol/configurable.py)
}
RULEBOOK_LABELS = {"style": "Reply style", "length": "Reply length", "interrupt": "When not to interrupt",
                   "language": "Language", "sideThreads": "Side threads"}
MAX_RULE = 1000  # characters in one text rule
MAX_LENGTH = 100_000  # the largest reply length a rulebook may ask for


def rulebook_problem(rb: Any) -> str | None:
    """Why `rb` is not a rulebook a conversation's people may set, or None."""
    if not isinstance(rb, dict):
        return "a rulebook is an object of style, length, interrupt, language, sideThreads"
    for key, value in rb.items():
        if key not in RULEBOOK_LABELS:
            return f"unknown rule {key!r}: a rulebook has {', '.join(RULEBOOK_LABELS)}"
        if key == "sideThreads":
            problem = configurable.side_threads_problem(value)
            if problem:
                return problem
        elif key == "length":
            if type(value) is not int or not 1 <= value <= MAX_LENGTH:
                return f"length is a whole number of characters from 1 to {MAX_LENGTH}"
        elif not isinstance(value, str) or not value.strip() or len(value) > MAX_RULE:
            return f"{key} is a text of 1 to {MAX_RULE} characters"
    return None


def rulebook_in_force(stored: dict[str, Any] | None) -> dict[str, Any]:
    """The defaults, overridden rule by rule by what the conversation's people set."""
    return {**DEFAULT_RULEBOOK, **(stored or {})}


def render_rulebook(rb: dict[str, Any]) -> str:
    lines = ["## This conversation's rulebook (set by its people)"]
    for key in sorted(rb):
        if key == "sideThreads":  # whether and in what words agents are told of side threads (seed 003 §6)
            value = configurable.side_threads_words(rb)
            if value is None:
                continue
        else:
            value = f"at most {rb[key]} characters" if key == "length" else rb[key]
        lines.append(f"- {RULEBOOK_LABELS.get(key, key)}: {value}")
    return "\n".join(lines)


# --- the persona (§56-57) ---

SHRINK_RATIO = 0.5
SHRINK_FLOOR = 200  # personas this short may be rewritten freely
MAX_PERSONA = 20_000


def persona_refusal(old: str, new: Any) -> tuple[str, str] | None:
    """(reason, detail) when `new` may not replace `old`, or None. A sudden large shrink (less than half of
    a persona over 200 characters) is refused, not applied: a deliberate shrink goes in steps."""
    if not isinstance(new, str) or not new.strip():
        return "persona_empty", "a persona cannot be empty"
    if len(new) > MAX_PERSONA:
        return "persona_too_long", f"a persona is at most {MAX_PERSONA} characters"
    if len(old) > SHRINK_FLOOR and len(new) < SHRINK_RATIO * len(old):
        return "persona_shrink", (
            f"the new persona ({len(new)} chars) is less than half the old one ({len(old)} chars); a sudden "
            "large shrink looks like an accident. Rewrite it keeping most of it, or shrink in steps.")
    return None


# --- who is here ---

MAX_ROSTER = 40


def render_roster(*, agents: Iterable, people: Iterable[str], lead_is_me: bool, where: str) -> str:
    """The party (seed 004: "names, job titles and a short line from each description"): `agents` are
    core.party.roster's entries (the others, sorted), `people` the people's @handles."""
    lines = [f"## Where you are: {where}"]
    rows = [f"- {e.name}{' (Lead)' if e.lead else ''}, {e.title or 'an agent'}" + (f": {e.line}" if e.line else "")
            for e in agents]
    rows += [f"- {h}, a person" for h in sorted(people)]
    if not rows:
        lines.append("Nobody else is here.")
    else:
        lines.append("Who else is here:")
        lines += rows[:MAX_ROSTER]
        if len(rows) > MAX_ROSTER:
            lines.append(f"- and {len(rows) - MAX_ROSTER} more")
    if lead_is_me:
        lines.append("You are this party's Lead: messages nobody else is addressed in come to you; you may "
                     "split a job among the others and write the reply when their parts are in.")
    return "\n".join(lines)


def core_block(*, name: str, title: str, description: str, persona: str) -> str:
    parts = [f"You are {name}, an AI agent in Ygg, a chat where people and agents work side by side."]
    if title.strip():
        parts.append(f"Your job title: {title.strip()}")
    if description.strip():
        parts.append(f"Your role: {description.strip()}")
    parts.append(RULES)
    parts.append("## Your persona (yours to read and rewrite with your persona tools)\n"
                 + (persona.strip() or "(empty: write one with your persona tool)"))
    return "\n\n".join(parts)


def conversation_block(*, agents: Iterable, people: Iterable[str], lead_is_me: bool, where: str,
                       rulebook: dict[str, Any]) -> str:
    return render_roster(agents=agents, people=people, lead_is_me=lead_is_me, where=where) + "\n\n" + \
        render_rulebook(rulebook)


def fingerprint(stable: Iterable[str]) -> str:
    """A short hash of the stable blocks: equal exactly when their bytes are."""
    h = hashlib.sha256()
    for block in stable:
        h.update(block.encode())
        h.update(b"\x00")
    return h.hexdigest()[:16]


# --- the dynamic part ---

WHY = {
    "request": "{author} sent you a request. Answer it once: type response, in_reply_to {id}.",
    "person": "{author} (a person) wrote to you. Act on it; a person's request gets one response.",
    "response": "{author} answered a request of yours. Use the answer; say done when your part is finished.",
    "closure_poll": "system.ygg asks whether you are done on this topic (closure poll).",
    "nudge": "system.ygg nudges you: someone waits on you here. Answer what you owe.",
    "resume": "system.ygg resumes you: more requests reached you while you were busy.",
    "credits_refilled": "Your credits were refilled. Resend what did not go through.",
    "other": "You were woken by {author}.",
}


def why(message: dict, author_kind: str) -> str:
    """Why a wake woke its agent, from the message that woke it."""
    if message.get("notice"):
        return message["notice"] if message["notice"] in WHY else "other"
    if message.get("type") == "request":
        return "request" if author_kind != "human" else "person"
    if message.get("type") == "response" and message.get("in_reply_to"):
        return "response"
    return "person" if author_kind == "human" else "other"


def render_line(m: dict, name) -> str:
    """One message as the dynamic part shows it; `name(pid)` gives a display name."""
    to = ", ".join(name(t) for t in m.get("to") or []) or "(topic)"
    bits = [m.get("type") or "?"]
    if m.get("state"):
        bits.append(m["state"])
    if m.get("notice"):
        bits.append("notice " + m["notice"])
    if m.get("handoff"):
        bits.append("handoff")
    if m.get("in_reply_to"):
        bits.append("in reply to " + m["in_reply_to"])
    if m.get("deleted"):
        bits.append("deleted by its author")
    elif m.get("version"):
        bits.append(f"edited by its author, version {m['version']}: this text replaces the earlier one")
    line = f"- [{m.get('id')}] {name(m.get('author'))} → {to} ({', '.join(bits)}): " + (m.get("text") or "").strip()
    if m.get("files"):  # references only: the bytes are read with the file_read tool (download_file)
        line += " [files: " + "; ".join(f"{f['name']} ({f['type']}, {f['size']} bytes, id {f['id']})"
                                        for f in m["files"]) + "]"
    return line


def dynamic_part(*, me: str, my_name: str, reason: str, message: dict, context: list[dict], where: str,
                 topic_title: str | None, name) -> str:
    out = ["## Now", f"It is your turn, {my_name}. "
           + WHY[reason].format(author=name(message.get("author")), id=message.get("id"))]
    spot = f"In {where}"
    if message.get("topic"):
        spot += f", topic {message['topic']}" + (f" \"{topic_title}\"" if topic_title else "")
    out.append(spot + ".")
    if context:
        out.append("\n## What was said since you were last woken")
        out += [render_line(m, name) for m in context]
    out.append("\n## The message that woke you")
    out.append(render_line(message, name))
    if reason in ("request", "person") and me in (message.get("to") or []):
        out.append("\n## Unless you decide otherwise")
        out.append(f"Your answer goes out as type=response, in_reply_to={message.get('id')}, state=done.")
    return "\n".join(out)
