"""Mixed into the main screen: the palette's exports (`ygg_server/export.py`): a conversation, or a workspace,
that one reads, written as Markdown and JSON lines into the exports folder of one's data dir."""

from __future__ import annotations

import asyncio

from textual import work

from ygg_server.client import Refused
from ygg_server.export import gather, stem_for, write


class ExportActions:
    @work(group="export", exit_on_error=False)
    async def export(self, ws: str, conversation: str | None = None) -> None:
        try:
            g = await gather(self.app.session.call, ws, conversation)
        except (Refused, LookupError, ConnectionError, asyncio.TimeoutError) as e:
            self.notify(f"Nothing was exported: {e}", severity="error", title="export")
            return
        paths = await asyncio.to_thread(write, g, self.app.config.exports_dir / stem_for(g))
        n = sum(len(c["messages"]) for c in g["conversations"])
        self.notify(f"{n} messages written to {paths[0]} and {paths[1].name}", title="exported")
