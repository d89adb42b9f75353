"""What the TUI says: refusal reasons in words, states and statuses as short marks; others' text made safe
to draw."""

from __future__ import annotations

import re

# What someone else wrote is drawn cell by cell: a control character would reach the terminal as it is (an escape
# sequence clears the screen, recolours it or retitles the window; a carriage return or a tab breaks the layout).
_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")
_PICTURE = ({c: chr(0x2400 + c) for c in range(0x20) if c != 0x0A} | {0x7F: "\u2421"}
            | {c: "\ufffd" for c in range(0x80, 0xA0)})


def printable(text: str, one_line: bool = False) -> str:
    """`text` as it can be drawn: line endings as newlines, tabs as spaces, any other control character as its
    visible picture (ESC as ␛); `one_line` (a title, a name) also turns newlines into spaces."""
    if _CONTROL.search(text):
        text = text.replace("\r\n", "\n").replace("\r", "\n").expandtabs(4).translate(_PICTURE)
    return text.replace("\n", " ") if one_line and "\n" in text else text


REFUSALS: dict[str, str] = {
    "topic_required": "The message named no topic. Pick a topic, or start a new one.",
    "title_required": "A new topic needs a title before anyone can be asked anything in it.",
    "topic_limit": "That agent already holds 3 open topics it opened; one of them must finish first.",
    "topic_closed": "This topic is closed: nothing in it can wake anyone again. Start a new topic to go on.",
    "credits_exhausted": "Out of credits: the agent (or the topic's budget) cannot pay for this message. Fund it to go on.",
    "unknown_recipient": "Nobody by that name or @handle is in this workspace.",
    "permission_denied": "Your role does not allow that here.",
    "plan_limit": "Your organization's plan limit is reached for this.",
    "unknown_conversation": "That conversation does not exist, or you cannot see it.",
    "unknown_topic": "That topic does not exist in this conversation.",
    "bad_amount": "A whole number of credits, please: a funding from 1, a budget from 0 (within the allowed maximum).",
    "bad_rulebook": "A rulebook sets style=, length= (characters), interrupt= and language=, or reset.",
    "last_participant": "A conversation keeps at least one participant besides you.",
    "bad_handoff": "A handoff is a request to exactly one agent.",
    "no_eligible_agent": "No agent in this workspace declares that capability, so nobody can take it.",
    "bad_file": "That file cannot be sent: too large for the plan, or not a file (see why).",
    "unknown_file": "That attached file is gone or already sent: attach it again (/attach PATH).",
    # management (docs/protocol.md, "Management")
    "last_owner": "You are its last owner: it cannot be left (a workspace can be deleted instead).",
    "personal_workspace": "Your personal workspace is yours alone: never left, deleted, shared or restricted.",
    "free_org_limit": "Everyone owns one Free organization; more need a Team plan, set by the operator.",
    "name_taken": "That name is taken here; pick another.",
    "unknown_person": "Nobody has that handle.",
    "owner_permanent": "An owner stays the owner: that role never changes.",
    "unknown_member": "Name agents, @handles or groups of this workspace (permissions are an agent's).",
    "empty_group": "A group keeps at least one member.",
    "bad_name": "That name cannot be used here.",
    "bad_role": "That role cannot be given there.",
    # transport-level answers
    "unauthenticated": "You are not signed in (or your session expired).",
    "not_found": "That does not exist, or you cannot see it.",
    "forbidden": "Your role does not allow that here.",
    "bad_frame": "The server could not understand that request.",
    "internal": "The server failed on this; nothing was changed.",
    "offline": "Not connected to the server; it will go out once the connection is back.",
}


def as_sentence(detail: str) -> str:
    """A server's detail ("a workspace's name is at most 80 characters") as a sentence: capitalised, ended."""
    detail = detail.strip()
    return detail[:1].upper() + detail[1:] + ("" if not detail or detail.endswith((".", "!", "?")) else ".")


def refused_in_words(e) -> str:
    """A management op's refusal (`client.Refused`): its reason in words, then the server's detail."""
    return f"{refusal_sentence(e.reason)} {as_sentence(e.frame.get('detail', ''))}".strip()


def refusal_sentence(reason: str | None) -> str:
    if not reason:
        return "The server refused this."
    return REFUSALS.get(reason, f"Refused: {reason.replace('_', ' ')}.")


NOTICE_WORDS = {  # how a system notice is headed in the transcript
    "hop_limit": "hop limit reached: agents stopped waking each other",
    "throttled": "throttled: agents wait for a person",
    "side_result": "result of a side task",
    "thread_settled": "side thread settled",
    "closure_poll": "asked whether they are done",
}


def assignment_line(a: dict, namer) -> str:
    """A message's assignment (seed 003 §14) in one line: the capability, then each candidate's total, best first."""
    scores = " > ".join(f"{namer(s['agent'])} {s['total']:g}" for s in a.get("scores") or [])
    return f"⚖ {a.get('capability')}: {scores}"


def assignment_text(a: dict, namer) -> str:
    """The whole breakdown: each candidate's parts (value × weight = points)."""
    lines = [f"Assigned by capability {a.get('capability')!r} to {namer(a.get('chosen'))}"]
    for s in a.get("scores") or []:
        lines.append(f"{namer(s['agent'])}: {s['total']:g}")
        lines += [f"  {p['name']}: {p['value']:g} × {p['weight']:g} = {p['points']:g}" for p in s.get("parts") or []]
    for x in a.get("left_out") or []:  # seed 002's permissions keep these from the sender's request
        lines.append(f"left out: {namer(x['agent'])} ({x['detail']})")
    return "\n".join(lines)


STATE_MARK = {
    None: "·",
    "working": "◐",
    "waiting": "◷",
    "needs_human": "⚑",
    "done": "✓",
}

STATE_WORD = {
    None: "—",
    "working": "working",
    "waiting": "waiting",
    "needs_human": "needs a person",
    "done": "done",
}


def topic_status(topic: dict) -> str:
    """open, paused (needs_human or credits), or closed: the word shown for a topic."""
    status = topic.get("status") or "open"
    if status == "paused":
        pause = topic.get("pause")
        return "needs_human" if pause == "needs_human" else f"paused:{pause}" if pause else "paused"
    return status


STATUS_MARK = {
    "open": "○",
    "needs_human": "⚑",
    "paused:credits": "$",
    "paused": "‖",
    "closed": "●",
}
