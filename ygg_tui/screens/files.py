"""Files in the main screen (issue 21; docs/protocol.md, "Files"): a message's files saved to a local path (`s` on
the message, or the palette), and files attached to the next message:

    /attach PATH    the file uploaded now, sent with the next message written here (its name, size and type said)
    /detach         the files attached and not sent yet are dropped (the server sweeps them)

A mixin of MainScreen (`store`, `messages`, `composer`, `workspace`).
"""

from __future__ import annotations

import mimetypes
from pathlib import Path

from textual import work

from ygg_server.client import Refused

from ..messages import FileSave
from ..widgets.thread_card import human_size
from .dialogs import Field, FormScreen


def attach_command(text: str) -> tuple[str, str] | None:
    """("attach", path) or ("detach", "") of an `/attach PATH` or `/detach` line, or None for any other text."""
    head, _, rest = text.strip().partition(" ")
    if head == "/attach" and rest.strip():
        return "attach", rest.strip()
    if head == "/detach":
        return "detach", ""
    return None


def default_path(name: str) -> str:
    """Where a file is offered to be saved: ~/Downloads if there is one, else the current folder."""
    folder = Path.home() / "Downloads"
    return str((folder if folder.is_dir() else Path.cwd()) / name)


class FileActions:
    _attached: list[dict]  # uploads waiting for the next message (their `file` objects)

    @property
    def attached(self) -> list[dict]:
        return self._attached

    @attached.setter
    def attached(self, files: list[dict]) -> None:
        """(the composer's meta line counts them)"""
        self._attached = files
        if self.is_mounted:
            self.composer.attached = tuple(f["name"] for f in files)

    def on_file_save(self, event: FileSave) -> None:
        event.stop()
        self.save_file(event.message)

    def save_selected_file(self) -> None:
        """The palette's "Save a file of the selected message"."""
        self.messages.action_save_file()

    @work(group="files", exit_on_error=False)
    async def save_file(self, m: dict) -> None:
        """Ask which file (when several) and where; fetch it (download_file) and write it there."""
        files = m.get("files") or []
        fields = [Field("path", "Save to", default_path(files[0]["name"]), required=True)]
        if len(files) > 1:
            fields.insert(0, Field("file", "File", files[0]["id"],
                                   choices=[(f"{f['name']} ({human_size(f['size'])})", f["id"]) for f in files]))
        got = await self.app.push_screen_wait(FormScreen("Save a file", fields, "Save",
                                                         why="the file sent with this message, to a path here"))
        if got is None:
            return
        fid = got.get("file") or files[0]["id"]
        path = Path(got["path"]).expanduser()
        try:
            meta, data = await self.app.session.client.download(m["workspace"], fid)
        except Refused as e:
            self.app.notify(f"{e.reason}: {e.frame.get('detail', '') or 'no such file you can read'}",
                            title="Save file", severity="error")
            return
        try:
            if path.is_dir():
                path = path / meta["name"]
            path.write_bytes(data)
        except OSError as e:
            self.app.notify(f"{path}: {e.strerror or e}", title="Save file", severity="error")
            return
        self.app.notify(f"{meta['name']} ({human_size(len(data))}) saved to {path}", title="Saved")

    def attach_prompt(self) -> None:
        """The palette's "Attach a file to the next message": asks for the path."""
        self._attach_prompt()

    @work(group="files", exit_on_error=False)
    async def _attach_prompt(self) -> None:
        got = await self.app.push_screen_wait(FormScreen("Attach a file", [Field("path", "File", "", required=True)],
                                                         "Attach", why="sent with the next message you write here"))
        if got is not None:
            await self._upload_attached(got["path"])

    async def _attach_command(self, text: str) -> bool:
        """`/attach PATH` or `/detach` typed in the composer."""
        what, path = attach_command(text)
        if what == "detach":
            n, self.attached = len(self.attached), []
            self.composer.done()
            self.app.notify(f"{n} attached file{'s' if n != 1 else ''} dropped", title="Detached")
            return True
        if await self._upload_attached(path):
            self.composer.done()
            return True
        return False

    async def _upload_attached(self, raw: str) -> bool:
        """Upload the file at `raw` (upload_file, in chunks): it goes with the next message."""
        c = self.composer
        if self.workspace is None:
            c.show_refusal("unknown_conversation")
            return False
        path = Path(raw).expanduser()
        try:
            data = path.read_bytes()
        except OSError as e:
            c.show_refusal("bad_file", f"{path}: {e.strerror or e}")
            return False
        mtype = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        try:
            f = await self.app.session.client.upload(self.workspace, path.name, data, mtype)
        except Refused as e:
            c.show_refusal(e.reason, e.frame.get("detail", ""))
            return False
        self.attached = [*self.attached, f]
        names = ", ".join(f"{x['name']} ({human_size(x['size'])}, {x['type']})" for x in self.attached)
        self.app.notify(f"goes with your next message: {names}", title="Attached")
        return True
