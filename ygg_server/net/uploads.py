"""`upload_file` (docs/protocol.md, "Files"): a file uploaded in chunks of base64 on the open connection.

The first chunk names the file (`name`, `size`, optional `type` and `sha256`); the server checks the size against
the organization's plan at once (ops.files.allowance) and answers an `upload` id while bytes are missing; each next
chunk names that id. The chunks of an upload in progress are held by its connection only (at most `MAX_PENDING` at
once, none past the plan's size), so a node of several needs nothing shared until the last chunk: then the bytes are
hashed (sha256, compared with the declared one), stored (ops.files.store) and the file answered. A connection that
closes drops what it held; all of a node's together hold at most `MAX_HELD` bytes (past it, `busy`). A mixin of
`Gateway`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import time
from dataclasses import dataclass, field

from .. import protocol
from ..core import files as core
from ..core.vocabulary import RefusalReason as R
from ..ops import files as ops
from ..ops.refusals import AdminError, Refused
from ..protocol import ErrorCode as E, frames, replies

MAX_PENDING = 2  # uploads in progress on one connection
MAX_HELD = 256 * 1024 * 1024  # bytes held by every upload in progress on this node: past it, `busy`
STALE_S = 300.0  # an upload whose next chunk is this late is dropped
_HEX = re.compile(r"[0-9a-f]{64}")
_MEDIA = re.compile(r"[A-Za-z0-9][\w.+-]*/[A-Za-z0-9][\w.+-]*")


@dataclass
class Pending:
    workspace: str
    name: str
    type: str
    size: int
    sha256: str | None
    parts: list[bytes] = field(default_factory=list)
    received: int = 0
    touched: float = 0.0


def _bad(detail: str):
    return Refused(R.BAD_FILE, detail)


def _chunk(data: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise _bad("data is a chunk in base64") from None


class Uploads:
    async def _op_upload_file(self, conn, f: frames.UploadFile) -> dict:
        now = time.monotonic()
        pending = conn.uploads
        for uid in [u for u, p in pending.items() if now - p.touched > STALE_S]:
            del pending[uid]
        if f.upload is not None:
            p = pending.get(f.upload)
            if p is None or p.workspace != f.workspace:
                raise Refused(R.UNKNOWN_FILE, "no such upload in progress on this connection")
        else:
            p = self._begin(f)
            if len(pending) >= MAX_PENDING:
                raise _bad(f"at most {MAX_PENDING} uploads at once on one connection")
            most = await self.read(ops.allowance, conn.participant, f.workspace)
            if p.size > most:
                raise _bad(f"this organization's plan takes files up to {most} bytes; this one is {p.size}")
        chunk = _chunk(f.data)
        if len(chunk) > self._room():
            pending.pop(f.upload, None)
            raise AdminError(E.BUSY, "this server holds too many uploads in progress: try again later")
        if p.received + len(chunk) > p.size:
            pending.pop(f.upload, None)
            raise _bad(f"more bytes than the declared size ({p.size}): the upload is dropped")
        p.parts.append(chunk)
        p.received += len(chunk)
        p.touched = now
        if p.received < p.size:
            uid = f.upload or protocol.new_id()
            pending[uid] = p
            return replies.reply(f, {"upload": uid, "received": p.received, "size": p.size})
        pending.pop(f.upload, None)
        data = b"".join(p.parts)
        digest = hashlib.sha256(data).hexdigest()
        if p.sha256 is not None and digest != p.sha256:
            raise _bad(f"the bytes' sha256 is {digest}, not the declared {p.sha256}: nothing stored")
        stored = await self.manage(ops.store, conn.participant, p.workspace, p.name, p.type, data, digest,
                                   self.clock())
        return replies.reply(f, {"file": stored})

    def _room(self) -> int:
        """Bytes more the uploads in progress on this node may hold (`MAX_HELD`)."""
        return MAX_HELD - sum(p.received for cs in self.conns.values() for c in cs for p in c.uploads.values())

    @staticmethod
    def _begin(f: frames.UploadFile) -> Pending:
        """A new upload from its first chunk's fields, or the refusal naming the field that is wrong."""
        why = core.name_problem(f.name)
        if why:
            raise _bad(why)
        size = f.size
        if type(size) is not int or size < 0:
            raise _bad("size is the whole file's bytes, a whole number")
        mtype = f.type if f.type is not None else "application/octet-stream"
        if not isinstance(mtype, str) or len(mtype) > 100 or not _MEDIA.fullmatch(mtype):
            raise _bad("type is a media type, such as text/plain")
        sha = f.sha256
        if sha is not None and (not isinstance(sha, str) or not _HEX.fullmatch(sha.lower())):
            raise _bad("sha256 is the file's hash in 64 hex digits")
        return Pending(f.workspace, f.name.strip(), mtype.lower(), size, sha.lower() if sha else None)
