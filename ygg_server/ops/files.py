"""Files (core/files.py; docs/protocol.md, "Files"): uploads stored, read back by who may, swept when never sent.

The bytes are kept in the database (`file_blobs`, once per workspace and sha256), not on a node's disk: every node of
several reads what another stored, a backup holds them, and deleting a workspace deletes them. A workspace's bytes are
never shared with another's (a hash another tenant uploaded tells nothing). Each upload is a `files` row naming its
bytes; the writer marks it sent with its message (store/writes.FILE_SENT).

    allowance      the largest file the asker may upload in a workspace (its organization's plan), or a refusal
    store          a complete upload's row and bytes
    download_file  a chunk of a file, to whoever may read its message (as `history`), or to its uploader before
                   it is sent; anyone else is answered `not_found`, as for an id that does not exist
    sweep          uploads never sent, after core.files.UNSENT_TTL_US, and bytes no upload names
"""

from __future__ import annotations

import base64
from typing import Any

from .. import protocol
from ..core import files as core
from ..core.vocabulary import RefusalReason as R
from ..protocol import frames
from ..store.transactions import Tx, serialized
from .queries import _history_floor, _member, _visible
from .refusals import NotFound, Refused

CHUNK = 512 * 1024  # bytes a download answer carries (base64: about 700 kB, under a client's 1 MiB frame)
_ROW = "SELECT id, workspace, uploader, name, type, size, sha256, message, created_at FROM files"


def allowance(conn, pid: str, ws: str) -> int:
    """The largest file `pid` may upload in `ws`; NotFound if not a member, Refused if it may not send there or
    has too many uploads not yet sent."""
    row = conn.execute("SELECT m.send, o.plan, o.licensed FROM memberships m JOIN workspaces w ON w.id = m.workspace "
                       "LEFT JOIN orgs o ON o.id = w.org WHERE m.workspace = ? AND m.participant = ?",
                       (ws, pid)).fetchone()
    if row is None:
        raise NotFound
    if not row[0]:
        raise Refused(R.PERMISSION_DENIED, "this membership may not send here, nor upload")
    unsent = conn.execute("SELECT count(*) FROM files WHERE workspace = ? AND uploader = ? AND message IS NULL",
                          (ws, pid)).fetchone()[0]
    if unsent >= core.UNSENT_PER_UPLOADER:
        raise Refused(R.BAD_FILE, f"{unsent} uploads of yours here are not sent yet: send them with a message, "
                      "or wait until they are swept")
    return core.max_bytes(row[1], row[2])


def store(conn, pid: str, ws: str, name: str, mtype: str, data: bytes, sha256: str, now: int) -> dict:
    """Keep a complete upload: its bytes once per (workspace, sha256), and its row. Answers its `file` object."""
    fid = protocol.new_id()
    with Tx(conn):
        serialized(conn, f"files:{ws}")  # (uploads not yet sent counted, bytes kept or swept: one at a time)
        allowance(conn, pid, ws)  # (checked again: a membership may have gone while the chunks came)
        if conn.execute("SELECT 1 FROM file_blobs WHERE workspace = ? AND sha256 = ?", (ws, sha256)).fetchone() is None:
            conn.execute("INSERT INTO file_blobs (workspace, sha256, size, data) VALUES (?,?,?,?) "
                         "ON CONFLICT (workspace, sha256) DO NOTHING", (ws, sha256, len(data), data))
        conn.execute("INSERT INTO files (id, workspace, uploader, name, type, size, sha256, message, created_at) "
                     "VALUES (?,?,?,?,?,?,?,NULL,?)", (fid, ws, pid, name, mtype, len(data), sha256, now))
    return _obj((fid, ws, pid, name, mtype, len(data), sha256, None, now))


def _obj(row: tuple) -> dict:
    fid, ws, uploader, name, mtype, size, sha, message, created = row
    return {"id": fid, "workspace": ws, "uploader": uploader, "name": name, "type": mtype, "size": size,
            "sha256": sha, "message": message, "created_at": protocol.iso(created)}


def readable(conn, pid: str, ws: str, fid: str, now: int) -> tuple:
    """The row of a file `pid` may read, or NotFound: its uploader's before it is sent; then whoever reads its
    message as `history` does (a member who sees its conversation, within the plan's history window)."""
    row = conn.execute(_ROW + " WHERE id = ? AND workspace = ?", (fid, ws)).fetchone()
    _, monitor = _member(conn, ws, pid)
    if row is None:
        raise NotFound
    if row[7] is None:
        if row[2] != pid:
            raise NotFound
        return row
    msg = conn.execute("SELECT conversation, created_at FROM messages WHERE id = ? AND workspace = ?",
                       (row[7], ws)).fetchone()
    visible = _visible(conn, ws, pid, monitor) if msg is not None else None
    if msg is None or (visible is not None and msg[0] not in visible) or msg[1] < _history_floor(conn, ws, now):
        raise NotFound
    return row


def download_file(conn, pid: str, f: frames.DownloadFile, now: int) -> dict:
    offset = f.offset if f.offset is not None else 0
    row = readable(conn, pid, f.workspace, f.file, now)
    if type(offset) is not int or not 0 <= offset <= row[5]:
        raise Refused(R.BAD_FILE, f"offset is a whole number from 0 to the file's size ({row[5]})")
    data = conn.execute("SELECT substr(data, ?, ?) FROM file_blobs WHERE workspace = ? AND sha256 = ?",
                        (offset + 1, CHUNK, f.workspace, row[6])).fetchone()
    chunk = bytes(data[0]) if data is not None and data[0] is not None else b""
    end = offset + len(chunk)
    return {"file": _obj(row), "offset": offset, "data": base64.b64encode(chunk).decode("ascii"),
            "done": end >= row[5]}


def sweep(conn, now: int) -> int:
    """Delete the uploads never sent within core.UNSENT_TTL_US, then the bytes no upload names; how many uploads."""
    with Tx(conn, quiet=True):
        cur = conn.execute("DELETE FROM files WHERE message IS NULL AND created_at < ?", (now - core.UNSENT_TTL_US,))
        n = max(cur.rowcount or 0, 0)
        spaces = [ws for (ws,) in conn.execute("SELECT DISTINCT workspace FROM file_blobs WHERE " + _ORPHAN).fetchall()]
    for ws in spaces:  # (each in turn with that workspace's uploads: bytes an upload is storing are not swept)
        with Tx(conn, quiet=True):
            serialized(conn, f"files:{ws}")
            conn.execute("DELETE FROM file_blobs WHERE workspace = ? AND " + _ORPHAN, (ws,))
    return n


_ORPHAN = ("NOT EXISTS (SELECT 1 FROM files f WHERE f.workspace = file_blobs.workspace "
           "AND f.sha256 = file_blobs.sha256)")


QUERIES: dict[str, Any] = {"download_file": download_file}
