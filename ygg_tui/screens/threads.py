"""Side threads (and the artifact pane's opening, `a`) in the main screen (seed 003 §5-7; issue 21): a message's thread cards, expanded with `x` (the
thread's messages fetched), kept up to date as the thread moves; and settling a thread from its own conversation:

    /resolve SUMMARY    the summary posted back, the thread marked resolved (its card in the origin shows ✓)
    /abandon [WHY]      marked abandoned (✗)
    /reopen             ongoing again (◌)

A mixin of MainScreen (`store`, `messages`, `composer`, `workspace`, `conversation`).
"""

from __future__ import annotations

from textual import work

from ygg_server.client import Refused

from ..messages import ArtifactOpened, ThreadOpened
from .artifact import ArtifactScreen
from ..state import Change

COMMANDS = {"/resolve": "resolved", "/abandon": "abandoned", "/reopen": "ongoing"}


def settle_command(text: str) -> tuple[str, str | None] | None:
    """(state, summary) of a `/resolve`, `/abandon` or `/reopen` line, or None for any other text."""
    head, _, rest = text.strip().partition(" ")
    state = COMMANDS.get(head)
    return None if state is None else (state, rest.strip() or None)


class ThreadActions:
    def on_artifact_opened(self, event: ArtifactOpened) -> None:
        """a on a message with an artifact: its pane, at the version the message names."""
        event.stop()
        m, a = event.message, event.message["artifact"]
        self.app.push_screen(ArtifactScreen(m["workspace"], a["id"], a.get("version"), m.get("topic"),
                                            namer=self.store.name,
                                            clock=(lambda iso: iso[:16].replace("T", " ")) if self.show_clock else
                                            (lambda iso: "")))

    def on_thread_opened(self, event: ThreadOpened) -> None:
        event.stop()
        for tid in event.message.get("threads") or ():
            self.load_thread(event.message["workspace"], tid)

    @work(group="threads", exit_on_error=False)
    async def load_thread(self, ws: str, tid: str) -> None:
        """A thread's messages, for its expanded card."""
        reply = await self.app.session.call("history", workspace=ws, conversation=tid)
        page = self.store.take_page(list(reply.get("messages") or []))
        self.messages.previews[tid] = page[::-1]  # (a history page is newest first; the card reads down in time)
        self.messages.refresh_threads()

    def threads_moved(self, ch: Change) -> None:
        """Messages came in side threads: an expanded card shows them; a settled thread's state is read again."""
        ml, moved = self.messages, False
        for msgs in ch.threads.values():
            for m in msgs:
                tid = m.get("conversation")
                if tid in ml.previews and all(x["id"] != m["id"] for x in ml.previews[tid]):
                    ml.previews[tid].append(m)
                    moved = True
                if m.get("notice") == "thread_settled":
                    self._reload_conversations(m["workspace"])
        if moved:
            ml.refresh_threads()

    async def _settle(self, text: str) -> bool:
        """`/resolve …`, `/abandon …`, `/reopen` in a side thread's conversation."""
        c = self.composer
        state, summary = settle_command(text)
        conv = self.store.conversation(self.conversation or "")
        if conv is None or not conv.get("thread") or self.workspace is None:
            c.show_refusal("unknown_conversation", "open the side thread (under its origin in the list) to settle it")
            return False
        try:
            reply = await self.app.session.call("settle_thread", workspace=self.workspace, thread=conv["id"],
                                                state=state, summary=summary)
        except Refused as e:
            c.show_refusal(e.reason, e.frame.get("detail", ""))
            return False
        c.done()
        conv.update(thread=reply["state"], summary=reply.get("summary"))
        self.messages.refresh_threads()
        self.app.notify(f"Side thread {reply['state']}.", title="Side thread", timeout=4)
        return True
