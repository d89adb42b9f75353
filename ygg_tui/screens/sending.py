"""Sending from the main screen: the composer's text as a message (its recipients, a new topic's title), or
a `/rulebook` command; a refusal or a lost connection gives the text back to the composer."""

from __future__ import annotations

from textual import work

from ygg_server.client import Refused

from .. import rulebook
from .threads import settle_command
from .files import attach_command
from ..widgets.composer import leading_mentions
from ..widgets.sidebar import Sidebar
from .dialogs import TitlePrompt


class SendActions:
    """Mixed into the main screen: `send` (a worker) and the composer's candidates for `@` completion."""

    def _candidates(self) -> list[tuple[str, str]]:
        s = self.store
        w = s.workspaces.get(self.workspace or "")
        if w is None:
            return []
        out = []
        for m in sorted(w.members.values(), key=lambda m: (m["kind"] != "agent", m["name"])):
            if m["id"] == s.my_id:
                continue
            out.append((f"@{m['name']}", "agent" if m["kind"] == "agent" else m.get("role", "person")))
        out += [(f"group:{g}", "group") for g in s.group_names(w.id)]
        return out

    def _recipients(self, text: str) -> list[str]:
        s = self.store
        w = s.workspaces.get(self.workspace or "")
        out = []
        for tok in leading_mentions(text):
            if tok.startswith("group:"):
                out.append(tok)
                continue
            name = tok[1:]
            hit = next((m for m in (w.members.values() if w else ()) if m["name"] == name), None)
            out.append(name if hit and hit["kind"] == "agent" else f"@{name}")
        return out

    async def _rulebook(self, text: str) -> None:
        """`/rulebook …`: show or set this conversation's rulebook (ygg_tui/rulebook.py)."""
        c = self.composer
        if self.conversation is None or self.workspace is None:
            c.show_refusal("unknown_conversation")
            return False
        try:
            change = rulebook.parse(text)
        except rulebook.Usage as e:
            c.show_refusal("bad_rulebook", str(e))
            return False
        where = {"workspace": self.workspace, "conversation": self.conversation}
        try:
            if change == "show":
                reply = await self.app.session.call("get_rulebook", **where)
            else:
                reply = await self.app.session.call("set_rulebook", rulebook=change, **where)
        except Refused as e:
            c.show_refusal(e.reason, e.frame.get("detail", ""))
            return False
        c.done()
        title = "This conversation's rulebook" + ("" if change == "show" else " (saved)")
        self.app.notify(rulebook.describe(reply), title=title, timeout=8)
        return True

    @work(group="send", exit_on_error=False)
    async def send(self, text: str) -> None:
        """`text` has left the composer (`Composer.submit`): a refusal, a cancelled title or a lost connection
        puts it back in front."""
        c = self.composer
        done = False
        try:
            done = await (self._rulebook(text) if rulebook.is_command(text) else
                          self._settle(text) if settle_command(text) else
                          self._attach_command(text) if attach_command(text) else self._send(text))
        finally:
            if not done:
                c.give_back(text)

    async def _send(self, text: str) -> bool:
        c = self.composer
        direct = self.pending_direct
        conversation = f"dm:{direct}" if direct else self.conversation
        if conversation is None or self.workspace is None:
            c.show_refusal("unknown_conversation")
            return False
        new = c.new_topic or self.topic is None or bool(direct)
        fields = {"workspace": self.workspace, "conversation": conversation, "type": c.mtype, "text": text}
        if new:
            first = text.strip().splitlines()[0] if text.strip() else ""
            words = [w for w in first.split() if not w.startswith(("@", "group:"))]
            title = await self.app.push_screen_wait(TitlePrompt(" ".join(words)[:60]))
            if title is None:
                c.area.focus()
                return False
            fields.update(topic="new", title=title)
        else:
            fields["topic"] = self.topic
        to = self._recipients(text)
        if to:
            fields["to"] = to
        if c.state:
            fields["state"] = c.state
        if c.reply_to is not None:
            fields["in_reply_to"] = c.reply_to["id"]
        if self.attached:  # (screens/files.py: uploaded already; sent with this message)
            fields["files"] = [f["id"] for f in self.attached]
        kept = {"reply_to": c.reply_to, "mtype": c.mtype, "state": c.state}  # (to put back if it is taken back)
        answered = c.sending(text)
        try:
            reply = await self.app.session.send(**fields)
        finally:
            answered()
        if reply.get("op") == "sent":
            self.attached = [f for f in self.attached if f["id"] not in fields.get("files", ())]
            ch = self.store.apply_sent(reply)
            c.done()
            cid = reply["message"]["conversation"]
            if self.store.conversation(cid) is None:
                await self.app.session.reload_conversations(self.workspace)
                self.query_one(Sidebar).rebuild()
            if new:
                self.open_conversation(cid, reply["message"]["topic"])
            self.app.apply_change(ch)
            c.area.focus()
            self.offer_undo("sent", reply["message"], text, kept)
            return True
        if reply.get("reason") == "unknown_file":  # (swept, or sent already: attached again if wanted)
            self.attached = []
        c.show_refusal(reply.get("reason") or reply.get("code"), reply.get("detail", ""))
        return False
