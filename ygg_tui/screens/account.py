"""A person's account and consent from the command palette (issue 18): answering invitations (accept, with or
without one's agents, or decline), removing a member (owners and admins), changing one's password, signing out
(the session ends on the server, the saved token is forgotten)."""

from __future__ import annotations

from textual import work

from .dialogs import Field


class AccountActions:
    """Mixed into the main screen, beside `ManageActions` (whose `_ask`, `_sure` and `_form_op` it uses)."""

    @work(group="account", exit_on_error=False)
    async def answer_invitation(self, invitation: str, accept: bool, agents: bool = False) -> None:
        inv = self.store.invitations.get(invitation)
        if inv is None:
            return
        op = "accept_invitation" if accept else "decline_invitation"
        fields = {"invitation": invitation, **({"agents": agents} if accept else {})}
        reply = await self._ask(op, **fields)
        self.store.invitations.pop(invitation, None)  # (answered, or no longer good: either way not offered again)
        if reply is None:
            return
        if not accept:
            self.notify(f"Declined the invitation to {inv['name']}.")
            return
        if inv["kind"] == "workspace":
            await self.app.session.add_workspace(inv["workspace"])  # (or `workspace_added` did it first)
        # (an organization's workspaces come as `workspace_added` events, as the server's rescan tells them)
        self.refresh_all()
        self.notify(f"You joined {inv['name']} as {reply['role']}" + (", with your agents." if agents else "."))

    @work(group="account", exit_on_error=False)
    async def remove_member(self, ws: str, pid: str) -> None:
        """Issue 18: a workspace's owners and admins remove a person (their agents there go with them)."""
        w = self.store.workspaces[ws]
        m = w.members.get(pid) or {}
        who = f"@{m.get('handle') or m.get('name') or pid}"
        if await self._sure(f"Remove {who} from {w.name}?", "Their agents there go with them; they can be invited "
                            "again.", "Remove") and await self._ask("remove_member", workspace=ws, handle=who):
            w.members.pop(pid, None)
            self.notify(f"Removed {who} from {w.name}.")
            await self._members_changed([ws])

    @work(group="account", exit_on_error=False)
    async def change_password(self) -> None:
        """Issue 18: one's own password; one's other sessions end (their devices sign in again)."""
        fields = [Field("password", "Current password", required=True, password=True),
                  Field("new_password", "New password (8 characters or more)", required=True, password=True)]
        got, reply = await self._form_op("Change your password", fields, "Change", "Your other sessions end.",
                                         lambda got: ("change_password", dict(got)))
        if reply:
            self.notify(f"Password changed; {reply['sessions_ended']} other session(s) ended.")

    @work(group="account", exit_on_error=False)
    async def sign_out(self) -> None:
        """Issue 18: signing out ends this session on the server (its token no longer works anywhere) and forgets
        the token saved on this machine."""
        if not await self._sure("Sign out?", "This session ends on the server; you sign in again with your "
                                "password.", "Sign out"):
            return
        app = self.app
        await self._ask("sign_out")
        me = app.store.me or {}
        try:
            app.config.store_token(app.url, me.get("handle") or app.handle or "", None)
        except OSError:
            pass
        app.exit(message="Signed out.")
