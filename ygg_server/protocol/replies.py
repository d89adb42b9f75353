"""Server frames: replies, events and the objects in them, each field name written here once (docs/protocol.md)."""

from __future__ import annotations

from typing import Any

import msgspec

from . import results as r
from .results import ErrorCode
from .times import iso
from ..core import SYSTEM, Message, Profile
from ..core.assign import explain
from ..core.lifecycle import unfunded
from ..core.party import PartyView, roster_obj

_encoder = msgspec.json.Encoder()


def encode(frame: dict) -> str:
    return _encoder.encode(frame).decode()


def encode_utf8(frame: dict) -> bytes:
    """`encode` as the UTF-8 bytes a text frame carries (no str in between)."""
    return _encoder.encode(frame)


# --- objects ---

def message_obj(m: Message) -> dict:
    out = {
        "id": m.id, "workspace": m.workspace, "conversation": m.conversation, "topic": m.topic,
        "author": m.author, "type": m.type, "to": list(m.to), "state": m.state,
        "waiting_for": list(m.waiting_for), "in_reply_to": m.in_reply_to, "text": m.text,
        "created_at": iso(m.created_at), "cost": m.cost, "title": m.title,
    }
    if m.notice:
        out["notice"] = m.notice
    if m.malformed:
        out["malformed"] = True
    if m.handoff:
        out["handoff"] = True
    if m.assignment is not None:
        out["assignment"] = explain(m.assignment)
    if m.version:
        out["version"] = m.version
    if m.edited_at is not None:
        out["edited_at"] = iso(m.edited_at)
    if m.deleted:
        out["deleted"] = True
    if m.threads:
        out["threads"] = list(m.threads)
    if m.artifact is not None:
        a = m.artifact
        out["artifact"] = {"id": a.id, "version": a.version, "title": a.title, "kind": a.kind, "action": a.action}
    if m.files:  # references: the bytes are fetched with download_file
        out["files"] = [{"id": f.id, "name": f.name, "size": f.size, "type": f.type, "sha256": f.sha256}
                        for f in m.files]
    if m.card is not None:
        out["card"] = card_obj(m.card)
    if m.press is not None:
        out["press"] = msgspec.to_builtins(m.press)
    return out


def card_obj(c) -> dict:
    """A result card's stamped layout on the wire (docs/protocol.md, "Result cards")."""
    out = msgspec.to_builtins(c)  # (omit_defaults: only what the card has)
    for key, names in (("rows", ("label", "value")), ("callouts", ("tone", "text")),
                       ("sections", ("heading", "text")), ("indicators", ("label", "value", "change")),
                       ("trends", ("label", "points"))):
        if key in out:
            out[key] = [dict(zip(names, x)) for x in out[key]]
    if c.state_at is not None:
        out["state_at"] = iso(c.state_at)
    return out


def for_agent(obj: dict, pv: PartyView | None) -> dict:
    """A message object as an agent sees it (docs/rules.md, "What agents see"): in a party, an agent
    author's name rides along (`author_name`); an agent author no longer in the conversation loses its
    author (`author: null`, `author_removed: true`), its text kept. People's copies are never changed."""
    if pv is None:
        return obj
    author = obj.get("author")
    name = pv.names.get(author)
    if name is not None:
        return {**obj, "author_name": name} if pv.party else obj
    if author is not None and author != SYSTEM and not author.startswith("human."):  # an agent: removed
        return {**obj, "author": None, "author_removed": True}
    return obj


def roster_for(pv: PartyView | None, me: str) -> list[dict]:
    """The `roster` field of an agent's deliver frame: who else is in the party."""
    return [] if pv is None else roster_obj(tuple(e for e in pv.roster if e.id != me))


def topic_obj(t) -> dict:
    return {
        "id": t.id, "workspace": t.workspace, "conversation": t.conversation, "title": t.title, "opener": t.opener,
        "status": t.status, "pause": t.pause, "paused_by": t.paused_by, "budget": t.budget,
        "unfunded": dict(unfunded(t)),
        "created_at": iso(t.created_at), "closed_at": iso(t.closed_at) if t.closed_at else None,
        "members": {p: {"state": m.state, "waiting_for": list(m.waiting_for), "polled": m.polled_at is not None,
                        "nudges": m.nudges} for p, m in t.members.items()},
    }


def deliveries_obj(deliveries) -> list[dict]:
    """Who a message reached and how (a `sent` reply's, a monitored message's `deliveries`)."""
    return [{"to": x.recipient, "wake": x.wake, "reason": x.reason} for x in deliveries]


def profile_obj(p: Profile) -> dict:
    """An agent's profile, as `set_profile` answers it."""
    return {"title": p.title, "description": p.description, "capabilities": list(p.capabilities),
            "generalist": p.generalist, "tools": list(p.tools), "cost": p.cost}


# --- replies ---

def error(ref: Any, code: ErrorCode, detail: str = "") -> dict:
    return {"op": "error", "ref": ref, "code": code, "detail": detail}


def refused(ref: Any, reason: str, detail: str) -> dict:
    return {"op": "refused", "ref": ref, "reason": reason, "detail": detail}


def reply(frame, out: dict) -> dict:
    """An op's answer: the op's name and the frame's ref, then what the op returned (a `refused` of an op that
    refuses with a reason keeps its `op`)."""
    return {"op": frame.op, "ref": frame.ref, **out}


# --- the writer's results as frames (protocol/results.py) ---

def render(ref: Any, result: r.Result) -> dict:
    """The frame answering a command the writer decided: its result, with the client frame's `ref` (the one place a
    writer's result becomes a reply; wire forms as docs/protocol.md names them)."""
    return _RENDER[type(result)](ref, result)


def _sent(ref: Any, s: r.Sent) -> dict:
    m = s.message
    out = {"op": "sent", "ref": ref, "message": message_obj(m), "deliveries": deliveries_obj(s.deliveries),
           "cost": m.cost + s.threads_cost}
    if s.threads_refused:  # `<dm>` parts not sent (docs/protocol.md, "Side threads")
        out["threads_refused"] = [{"thread": t, "reason": why} for t, why in s.threads_refused]
    return out


def _duplicate(ref: Any, dup: r.Duplicate) -> dict:
    """The first answer again, with this frame's ref and `duplicate: true` (after the other fields, as always)."""
    s = r.kept(dup.kept)
    if s is None:  # a row written before answers were kept typed: the `sent` reply's JSON, without its ref
        return {**msgspec.json.decode(bytes(dup.kept)), "ref": ref, "duplicate": True}
    m = s.message
    return {"op": "sent", "message": message_obj(m), "deliveries": deliveries_obj(s.deliveries),
            "cost": m.cost + s.threads_cost,
            "ref": ref, "duplicate": True}


_RENDER = {
    r.Sent: _sent,
    r.Duplicate: _duplicate,
    r.Refused: lambda ref, x: refused(ref, x.reason, x.detail),
    r.Failed: lambda ref, x: error(ref, x.code, x.detail),
    r.Funded: lambda ref, x: {"op": "funded", "ref": ref, "account": x.account, "balance": x.balance},
    r.BudgetSet: lambda ref, x: {"op": "set_budget", "ref": ref, "topic": x.topic, "budget": x.budget},
    r.PartyChanged: lambda ref, x: {"op": x.op, "ref": ref, "conversation": x.conversation, "members": x.members,
                                    "lead": x.lead, "changed": x.changed},
    r.ProfileSet: lambda ref, x: {"op": "set_profile", "ref": ref, "agent": x.agent, "profile": profile_obj(x.profile)},
    r.SettingSet: lambda ref, x: {"op": "set_setting", "ref": ref, "workspace": x.workspace, "key": x.key,
                                  "value": x.value},
    r.ArtifactSaved: lambda ref, x: {"op": x.op, "ref": ref, "artifact": {"id": x.artifact, "version": x.version,
                                     "title": x.title, "kind": x.kind},
                                     "message": message_obj(x.message) if x.message is not None else None,
                                     "deliveries": deliveries_obj(x.deliveries),
                                     "cost": x.message.cost if x.message is not None else 0,
                                     **({"unchanged": True} if x.unchanged else {})},
    r.ThreadSettled: lambda ref, x: {"op": "settle_thread", "ref": ref, "thread": x.thread, "state": x.state,
                                     "summary": x.summary},
    r.Revised: lambda ref, x: {"op": x.op, "ref": ref, "message": message_obj(x.message),
                               "deliveries": deliveries_obj(x.deliveries)},
    r.CardPressed: lambda ref, x: {"op": "press_card", "ref": ref, "card": x.card, "action": x.action,
                                   "in_place": x.in_place, "message": message_obj(x.message),
                                   "deliveries": deliveries_obj(x.deliveries)},
    r.Acked: lambda ref, x: {"op": "acked", "ref": ref, "ids": x.ids},
}


def session(ref: Any, token: str, expires_at: int, pid: str, handle: str, kind: str) -> dict:
    return {"op": "session", "ref": ref, "token": token, "expires_at": iso(expires_at),
            "me": {"id": pid, "handle": handle, "kind": kind}}


def whoami(ref: Any, pid: str, handle: str, kind: str) -> dict:
    return {"op": "whoami", "ref": ref, "id": pid, "handle": handle, "kind": kind}


def pong(ref: Any) -> dict:
    return {"op": "pong", "ref": ref}


def presence(ref: Any, online: dict[str, bool]) -> dict:
    return {"op": "presence", "ref": ref, "online": online}


def subscribed(ref: Any, ws: str, monitor: bool) -> dict:
    return {"op": "subscribed", "ref": ref, "workspace": ws, "monitor": monitor}


def unsubscribed(ref: Any, ws: str) -> dict:
    return {"op": "unsubscribed", "ref": ref, "workspace": ws}


# --- live events (docs/protocol.md, "Live events") ---

def _event(kind: str, **fields) -> dict:
    return {"op": "event", "kind": kind, **fields}


def topic_event(t) -> dict:
    return _event("topic", topic=topic_obj(t))


def balance_event(ws: str, account: str, balance: int) -> dict:
    return _event("balance", workspace=ws, account=account, balance=balance)


def message_event(m: Message, deliveries: list[dict]) -> dict:
    return _event("message", message=message_obj(m), deliveries=deliveries)


def presence_event(ws: str, pid: str, online: bool) -> dict:
    return _event("presence", workspace=ws, participant=pid, online=online)


def workspace_gone(ws: str) -> dict:
    return _event("workspace_gone", workspace=ws)


def workspace_added(ws: str) -> dict:
    return _event("workspace_added", workspace=ws)


def narrowed(ws: str, following: bool, reason: str) -> dict:
    """A subscriber's following of `ws` (still its workspace) narrowed: monitor taken away (it follows on without
    it), or receive (nothing more of it follows)."""
    return _event("subscription", workspace=ws, following=following, monitor=False, reason=reason)


def members_event(ws: str, joined: list[str], left: list[str], changed: list[str]) -> dict:
    return _event("members", workspace=ws, joined=joined, left=left, **({"changed": changed} if changed else {}))


def groups_event(ws: str, groups: list[dict]) -> dict:
    return _event("groups", workspace=ws, groups=groups)
