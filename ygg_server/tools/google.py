"""Google tools (issue 24; seed 003 §63: "Google gives the agent Gmail, Calendar and Drive: read, draft, send,
schedule, and work on documents and spreadsheets"), registered in the one registry and run on the server with
the Google account the conversation decides (account_api.py). Google's API paths (Gmail v1, Calendar v3, Drive v3)
under the provider's configured `api_url` (https://www.googleapis.com by default, which serves all three)."""

from __future__ import annotations

import base64
from email.message import EmailMessage
from typing import Any
from urllib.parse import quote

from ..protocol.times import iso
from .account_api import call, clip
from .registry import REGISTRY, ToolSpec
from .web import WebError

_S = {"type": "string", "maxLength": 300}
_ID = {"type": "string", "maxLength": 200}
_LIMIT = {"type": "integer", "minimum": 1, "maximum": 25}
TEXT_LIMIT = 20_000
GMAIL = "/gmail/v1/users/me"
CALENDAR = "/calendar/v3/calendars/primary/events"
DRIVE = "/drive/v3/files"
EXPORTS = {"application/vnd.google-apps.document": "text/plain", "application/vnd.google-apps.spreadsheet": "text/csv",
           "application/vnd.google-apps.presentation": "text/plain"}


async def _pending(env, r):  # (replaced by the handlers below)
    raise RuntimeError("google tool without a handler")


def _spec(name: str, description: str, props: dict, required: list[str], approval: bool = False) -> None:
    """A tool; `approval`: what cannot be taken back waits for a person's approval unless a standing rule says
    (seed 003 §59-61, the registry's approvals)."""
    REGISTRY.register(ToolSpec(name=name, group="google", handler=_pending, description=description, approval=approval,
                               parameters={"type": "object", "properties": props, "required": required}))


_MAIL = {"to": {**_S, "description": "addresses, comma separated"}, "subject": _S,
         "body": {"type": "string", "maxLength": TEXT_LIMIT}, "cc": _S}
_spec("gmail_search", "Search the Gmail inbox (Gmail's search syntax: from:, subject:, is:unread ...).",
      {"query": _S, "limit": _LIMIT}, ["query"])
_spec("gmail_read", "Read one Gmail message: its sender, subject, date and text.", {"id": _ID}, ["id"])
_spec("gmail_draft", "Save an email as a Gmail draft (not sent).", _MAIL, ["to", "subject", "body"])
_spec("gmail_send", "Send an email from the connected Gmail account.", _MAIL, ["to", "subject", "body"], approval=True)
_spec("calendar_list_events", "List events of the primary Google Calendar (RFC 3339 times; default: from now).",
      {"time_min": _S, "time_max": _S, "limit": _LIMIT}, [])
_spec("calendar_create_event", "Schedule an event on the primary Google Calendar (RFC 3339 start and end).",
      {"summary": _S, "start": _S, "end": _S, "description": {"type": "string", "maxLength": 5000},
       "attendees": {"type": "array", "items": _S}}, ["summary", "start", "end"])
_spec("drive_search", "Find Google Drive files whose name contains the words given.",
      {"name": _S, "limit": _LIMIT}, ["name"])
_spec("drive_read", "Read a Google Drive file's text (a document as text, a spreadsheet as CSV).", {"id": _ID}, ["id"])


def _raw(a: dict) -> str:
    if any(c in a[k] for k in ("to", "subject", "cc") if k in a for c in "\r\n"):
        raise WebError("to, cc and subject are one line each")
    m = EmailMessage()
    m["To"], m["Subject"] = a["to"], a["subject"]
    if a.get("cc"):
        m["Cc"] = a["cc"]
    m.set_content(a["body"])
    return base64.urlsafe_b64encode(m.as_bytes()).decode()


def _id(value: str) -> str:
    return quote(value, safe="")


@REGISTRY.handler("gmail_search")
async def gmail_search(env, r) -> Any:
    a = r.arguments
    found = await call(env, r, "google", "GET", f"{GMAIL}/messages", params={"q": a["query"],
                                                                             "maxResults": a.get("limit", 10)})
    out = []
    for m in (found.get("messages") or [])[: a.get("limit", 10)]:
        meta = await call(env, r, "google", "GET", f"{GMAIL}/messages/{_id(m['id'])}",
                          params={"format": "metadata", "metadataHeaders": ["From", "Subject", "Date"]})
        out.append({"id": m["id"], **_headers(meta), "snippet": meta.get("snippet", "")})
    return out


def _headers(msg: dict) -> dict:
    wanted = {"from", "to", "subject", "date"}
    return {h["name"].lower(): h.get("value", "") for h in (msg.get("payload") or {}).get("headers") or []
            if isinstance(h, dict) and str(h.get("name", "")).lower() in wanted}


def _text(part: dict) -> str:
    """The first text/plain body of a message's MIME tree (base64url, as Gmail gives it)."""
    if part.get("mimeType") == "text/plain" and (part.get("body") or {}).get("data"):
        data = part["body"]["data"]
        return base64.urlsafe_b64decode(data + "=" * (-len(data) % 4)).decode("utf-8", errors="replace")
    for child in part.get("parts") or []:
        found = _text(child)
        if found:
            return found
    return ""


@REGISTRY.handler("gmail_read")
async def gmail_read(env, r) -> Any:
    msg = await call(env, r, "google", "GET", f"{GMAIL}/messages/{_id(r.arguments['id'])}", params={"format": "full"})
    return {"id": msg.get("id"), **_headers(msg), "text": _text(msg.get("payload") or {})[:TEXT_LIMIT]}


@REGISTRY.handler("gmail_draft")
async def gmail_draft(env, r) -> Any:
    out = await call(env, r, "google", "POST", f"{GMAIL}/drafts", body={"message": {"raw": _raw(r.arguments)}})
    return {"draft": out.get("id"), "message": (out.get("message") or {}).get("id")}


@REGISTRY.handler("gmail_send")
async def gmail_send(env, r) -> Any:
    out = await call(env, r, "google", "POST", f"{GMAIL}/messages/send", body={"raw": _raw(r.arguments)})
    return {"sent": out.get("id"), "thread": out.get("threadId")}


@REGISTRY.handler("calendar_list_events")
async def calendar_list_events(env, r) -> Any:
    a = r.arguments
    params = {"singleEvents": "true", "orderBy": "startTime", "maxResults": a.get("limit", 10),
              "timeMin": a.get("time_min") or _now_rfc3339(env)}
    if a.get("time_max"):
        params["timeMax"] = a["time_max"]
    data = await call(env, r, "google", "GET", CALENDAR, params=params)
    return [{"id": e.get("id"), "summary": e.get("summary", ""), "start": (e.get("start") or {}),
             "end": (e.get("end") or {}), "link": e.get("htmlLink")} for e in data.get("items") or []]


def _now_rfc3339(env) -> str:
    return iso(env.clock())


@REGISTRY.handler("calendar_create_event")
async def calendar_create_event(env, r) -> Any:
    a = r.arguments
    body = {"summary": a["summary"], "start": {"dateTime": a["start"]}, "end": {"dateTime": a["end"]},
            **({"description": a["description"]} if a.get("description") else {}),
            **({"attendees": [{"email": x} for x in a["attendees"]]} if a.get("attendees") else {})}
    e = await call(env, r, "google", "POST", CALENDAR, body=body)
    return {"id": e.get("id"), "link": e.get("htmlLink"), "start": e.get("start"), "end": e.get("end")}


@REGISTRY.handler("drive_search")
async def drive_search(env, r) -> Any:
    a = r.arguments
    name = a["name"].replace("\\", "\\\\").replace("'", "\\'")
    data = await call(env, r, "google", "GET", DRIVE, params={
        "q": f"name contains '{name}' and trashed = false", "pageSize": a.get("limit", 10),
        "fields": "files(id,name,mimeType,modifiedTime)"})
    return clip(data.get("files") or [])


@REGISTRY.handler("drive_read")
async def drive_read(env, r) -> Any:
    fid = _id(r.arguments["id"])
    meta = await call(env, r, "google", "GET", f"{DRIVE}/{fid}", params={"fields": "id,name,mimeType"})
    kind = meta.get("mimeType", "")
    if kind in EXPORTS:
        text = await call(env, r, "google", "GET", f"{DRIVE}/{fid}/export", params={"mimeType": EXPORTS[kind]}, raw=True)
    elif kind.startswith("text/") or kind.endswith("json"):
        text = await call(env, r, "google", "GET", f"{DRIVE}/{fid}", params={"alt": "media"}, raw=True)
    else:
        raise WebError(f"{meta.get('name')} is {kind or 'of no stated type'}, not text a model can read")
    return {"id": meta.get("id"), "name": meta.get("name"), "type": kind, "text": text[:TEXT_LIMIT]}


TOOLS = ("gmail_search", "gmail_read", "gmail_draft", "gmail_send", "calendar_list_events", "calendar_create_event",
         "drive_search", "drive_read")
