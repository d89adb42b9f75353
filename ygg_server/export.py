"""Export what one can read: a conversation, or a whole workspace, as a Markdown transcript and as JSON lines.

Client-side, over the socket with the person's own session (`ygg export`, the TUI's palette), so it holds
exactly what `history` lets that person read and nothing else. `gather` pages each conversation's history to
its start; `markdown` and `jsonl` render what it gathered, oldest message first.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Awaitable, Callable

Call = Callable[..., Awaitable[dict]]  # Client.call: (op, **fields) -> the answer; raises on an error
PAGE = 200


async def gather(call: Call, workspace: str, conversation: str | None = None) -> dict:
    """The workspace's conversations (or the one named, as a send names it) and their messages, oldest first."""
    spaces = (await call("list_workspaces"))["workspaces"]
    ws = next((w for w in spaces if workspace in (w["id"], w["name"])), None)
    if ws is None:
        raise LookupError(f"no workspace {workspace!r} among yours")
    members = (await call("list_members", workspace=ws["id"]))["members"]
    names = {m["id"]: m.get("handle") or m.get("name") or m["id"] for m in members}
    convs = (await call("list_conversations", workspace=ws["id"]))["conversations"]
    wanted = [conversation] if conversation else [c["id"] for c in convs]
    titles = {t["id"]: t.get("title") or "" for t in (await call("list_topics", workspace=ws["id"]))["topics"]}
    out = []
    for conv in wanted:
        messages, before, cid = [], None, conv
        while True:
            page = await call("history", workspace=ws["id"], conversation=conv, limit=PAGE,
                              **({"before": before} if before else {}))
            cid = page.get("conversation", cid)
            messages.extend(page["messages"])
            if not page.get("more") or not page["messages"]:
                break
            before = page["cursor"]
        row = next((c for c in convs if c["id"] == cid), {"id": cid, "name": conv, "kind": ""})
        out.append({"id": cid, "name": row.get("name") or conv, "kind": row.get("kind", ""),
                    "messages": messages[::-1]})
    return {"workspace": {"id": ws["id"], "name": ws["name"]}, "names": names, "topics": titles,
            "conversations": out, "whole": conversation is None}


def jsonl(g: dict) -> str:
    """One JSON object a line: each message as the socket gave it, with its conversation's name and the
    author's handle beside the ids."""
    lines = []
    for c in g["conversations"]:
        for m in c["messages"]:
            lines.append(json.dumps({**m, "conversation_name": c["name"],
                                     "author_handle": g["names"].get(m.get("author"), m.get("author"))},
                                    ensure_ascii=False))
    return "".join(line + "\n" for line in lines)


def markdown(g: dict) -> str:
    out = [f"# {g['workspace']['name']}", ""]
    for c in g["conversations"]:
        out += [f"## {c['name']}", ""]
        topic = None
        for m in c["messages"]:
            if m.get("topic") != topic:
                topic = m.get("topic")
                out += [f"### {g['topics'].get(topic) or m.get('title') or 'untitled topic'}", ""]
            who = g["names"].get(m.get("author"), m.get("author") or "(removed)")
            out.append(f"**{who}** · {m.get('created_at', '')} · {m.get('type', '')}")
            out += ["", *(f"> {line}" if line else ">" for line in (m.get("text") or "").splitlines()), ""]
            out += [f"- file: {f['name']} ({f['size']} bytes, {f['type']}, sha256 {f['sha256']})"
                    for f in m.get("files") or ()] + ([""] if m.get("files") else [])
    return "\n".join(out)


def write(g: dict, stem: Path) -> list[Path]:
    """`<stem>.md` and `<stem>.jsonl` (0600: what one reads is not everyone's on this machine)."""
    paths = []
    for suffix, text in ((".md", markdown(g)), (".jsonl", jsonl(g))):
        p = stem.with_name(stem.name + suffix)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.touch(mode=0o600)
        p.write_text(text, encoding="utf-8")
        paths.append(p)
    return paths


def stem_for(g: dict) -> str:
    """A file name for an export: the workspace's name, and the conversation's when it is one."""
    parts = [g["workspace"]["name"], *([] if g["whole"] else [g["conversations"][0]["name"]])]
    return "-".join("".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in p) for p in parts) or "export"
