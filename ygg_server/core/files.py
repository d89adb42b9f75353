"""Files (issue 21; docs/rules.md, "Files"): real attachments, stored by the server, paid by their stored size.

A file is uploaded first (`upload_file`, ops/files.py: the bytes stored content-addressed by their sha256, the size
measured by the server), then sent with a message: the send names the uploads (`files`), and the writer, with each
upload's row loaded, checks them here and stamps them into the message (`Message.files`). The message is charged by
the stored sizes (seed 000: "attached files cost by size"), never by a number the sender declares. An upload is the
uploader's alone until it is sent (one message per upload); then it is read by whoever reads the message. Pure.
"""

from __future__ import annotations

from msgspec import Struct

from .decision import Refusal
from .model import FileRef, plan_of
from .vocabulary import RefusalReason as R

MAX_FILES = 10  # files sent with one message
# the largest file each plan takes (seed 002's plans; bytes): a Team plan's file fits a database row on both stores
MAX_FILE_BYTES = {"free": 2 * 1024 * 1024, "team": 25 * 1024 * 1024}
MAX_NAME = 255  # characters of a file's name
UNSENT_PER_UPLOADER = 20  # uploads of one participant in one workspace not yet sent: past this, refused
UNSENT_TTL_US = 3600 * 1_000_000  # an upload not sent within an hour is swept (ops/files.py, `sweep`)


class Upload(Struct, frozen=True, gc=False):
    """An upload's row, as the writer loads it for a send that names it."""

    id: str
    workspace: str
    uploader: str
    name: str
    size: int
    type: str
    sha256: str
    message: str | None  # the message it was sent with; None: not sent yet


def max_bytes(plan: str | None, licensed: int | None = None) -> int:
    """The largest file an organization on `plan` may upload."""
    return MAX_FILE_BYTES.get(plan_of(plan, licensed).name, MAX_FILE_BYTES["team"])


def name_problem(name: object) -> str | None:
    """Why `name` is not a file's name (shown, and offered as the name it is saved under), or None."""
    if not isinstance(name, str) or not name.strip():
        return "a file has a name"
    if len(name) > MAX_NAME:
        return f"a file's name is at most {MAX_NAME} characters"
    if any(c in name for c in "/\\") or name in (".", ".."):
        return "a file's name is a name, not a path"
    if any(ord(c) < 32 or ord(c) == 127 or 0x202A <= ord(c) <= 0x202E or 0x2066 <= ord(c) <= 0x2069 for c in name):
        return "a file's name has no control characters or bidi overrides"
    return None


def attach(ids: list[str], uploads: dict[str, Upload], author: str, workspace: str,
           taken: set[str]) -> tuple[FileRef, ...] | Refusal:
    """The files a send names, as its message carries them; or why not (an unknown id, another's, another
    workspace's, or one already sent: all answered alike, no tenant learns of another's uploads). `taken`: the
    uploads this batch already sent."""
    if len(ids) > MAX_FILES:
        return Refusal(R.BAD_FILE, f"at most {MAX_FILES} files go with one message")
    if len(set(ids)) != len(ids):
        return Refusal(R.BAD_FILE, "a file is named twice")
    out = []
    for fid in ids:
        u = uploads.get(fid)
        if u is None or u.workspace != workspace or u.uploader != author or u.message is not None or fid in taken:
            return Refusal(R.UNKNOWN_FILE, f"no such upload of yours to send: {fid[:64]}")
        out.append(FileRef(u.id, u.name, u.size, u.type, u.sha256))
    return tuple(out)
