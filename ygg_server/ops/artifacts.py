"""Reading artifacts (core/artifacts.py; docs/protocol.md, "Artifacts"): an artifact is read by whoever reads its
conversation (seed 003 §10), answered `not_found` otherwise, as one that does not exist.

    get_artifact    one version (the latest by default) with the list of versions and that version's comments
    list_artifacts  the artifacts of a conversation (or of every conversation the asker reads)
    artifact_diff   a unified diff between two versions (difflib)
"""

from __future__ import annotations

from typing import Any

from .. import protocol
from ..core import artifacts as core
from ..protocol import frames
from .queries import _member, _visible
from .refusals import NotFound

_HEAD = "SELECT id, workspace, conversation, title, kind, language, version, author, created_at, updated_at " \
        "FROM artifacts"


def _head(conn, pid: str, ws: str, aid: str) -> tuple:
    _, monitor = _member(conn, ws, pid)
    row = conn.execute(_HEAD + " WHERE id = ? AND workspace = ?", (aid, ws)).fetchone()
    visible = _visible(conn, ws, pid, monitor) if row is not None else None
    if row is None or (visible is not None and row[2] not in visible):
        raise NotFound
    return row


def _obj(row: tuple) -> dict:
    aid, ws, conv, title, kind, language, version, author, created, updated = row
    return {"id": aid, "workspace": ws, "conversation": conv, "title": title, "kind": kind, "language": language,
            "version": version, "author": author, "created_at": protocol.iso(created),
            "updated_at": protocol.iso(updated)}


def _version(v: Any, latest: int) -> int:
    if v is None:
        return latest
    if type(v) is not int or not 1 <= v <= latest:
        raise NotFound
    return v


def get_artifact(conn, pid: str, f: frames.GetArtifact) -> dict:
    row = _head(conn, pid, f.workspace, f.artifact)
    n = _version(f.version, row[6])
    versions = conn.execute("SELECT version, title, author, message, created_at, length(body) FROM artifact_versions "
                            "WHERE artifact = ? ORDER BY version", (row[0],)).fetchall()
    body, title = conn.execute("SELECT body, title FROM artifact_versions WHERE artifact = ? AND version = ?",
                               (row[0], n)).fetchone()
    comments = conn.execute("SELECT author, text, message, created_at FROM artifact_comments WHERE artifact = ? AND "
                            "version = ? ORDER BY id", (row[0], n)).fetchall()
    return {"artifact": _obj(row), "version": n, "title": title, "body": body,
            "versions": [{"version": v, "title": t, "author": a, "message": m, "at": protocol.iso(at), "chars": c}
                         for v, t, a, m, at, c in versions],
            "comments": [{"author": a, "text": t, "message": m, "at": protocol.iso(at)} for a, t, m, at in comments]}


def list_artifacts(conn, pid: str, f: frames.ListArtifacts) -> dict:
    ws = f.workspace
    _, monitor = _member(conn, ws, pid)
    visible = _visible(conn, ws, pid, monitor)
    sql, args = _HEAD + " WHERE workspace = ?", [ws]
    if isinstance(f.conversation, str):
        sql += " AND conversation = ?"
        args.append(f.conversation)
    rows = conn.execute(sql + " ORDER BY updated_at DESC LIMIT 200", args).fetchall()
    return {"artifacts": [_obj(r) for r in rows if visible is None or r[2] in visible]}


def artifact_diff(conn, pid: str, f: frames.ArtifactDiff) -> dict:
    row = _head(conn, pid, f.workspace, f.artifact)
    new = _version(f.new, row[6])
    old = _version(f.old, row[6]) if f.old is not None else max(new - 1, 1)
    bodies = dict(conn.execute("SELECT version, body FROM artifact_versions WHERE artifact = ? AND version IN (?, ?)",
                               (row[0], old, new)).fetchall())
    return {"artifact": row[0], "old": old, "new": new,
            "diff": core.diff(bodies[old], bodies[new], f"version {old}", f"version {new}")}


QUERIES = {"get_artifact": get_artifact, "list_artifacts": list_artifacts, "artifact_diff": artifact_diff}
