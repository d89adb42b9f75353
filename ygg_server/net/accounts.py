"""A person's account over the socket (issue 18): their sessions (made, used, listed, ended), their password, and
what an op tells another participant's connections (an invitation). The operations decide (`ops.accounts`,
`ops.invitations`); this mixin of `Gateway` gives them the connection's session, address and clock.
"""

from __future__ import annotations

import asyncio
import secrets
import time

from msgspec import UNSET

from ..core import Kind
from ..ops import accounts, auth
from ..ops.refusals import AdminError
from .. import audit, protocol
from ..protocol import ErrorCode as E, frames, names, replies
from .signin import Full, bucket, handle_keys


def address(conn) -> str | None:
    """The client's address (behind a trusted proxy, the one it forwards for: net/proxy.py), not the socket's."""
    return conn.address or None


def device(frame: frames.Auth) -> str | None:
    """The device a sign-in names (`auth`'s `device`, shown by `list_sessions`), if it is a printable name."""
    try:
        return names.clean("device", frame.device) if frame.device is not UNSET else None
    except names.BadName:
        return None


class AccountHandlers:
    # --- sessions, as the gateway's sign-in makes and resumes a person's ---

    async def _person_session(self, conn, frame: frames.Auth, pid: str, token: str | None) -> tuple[str, int] | None:
        """A person's new session (`token` None: signed in with a password) or the one resumed, used now (its idle
        expiry moved on): (token, expires_at), or None when the resumed one ended meanwhile."""
        lim, now = self.limits, self.clock()
        if token is None:
            token = f"{auth.TOKEN_PREFIX}_{secrets.token_urlsafe(32)}"
            row = accounts.session_row(pid, token, now, lim.person_session_us, lim.person_idle_us, device(frame),
                                       address(conn))
            await self.writer.submit("session", *row, None)  # (the writer's: no rescan anywhere, ops.accounts)
            audit.record("session_opened", participant=pid, address=row[5], device=row[4])
            expires = row[2]
            self._touched()[token] = time.monotonic()  # (just used: the sweeper marks it again a quarter idle on)
            return token, expires
        expires = (await self.manage(accounts.touch, [token], now, lim.person_idle_us, address(conn))).get(token)
        self._touched()[token] = time.monotonic()
        return (token, expires) if expires is not None else None

    async def _rehash(self, conn, password: auth.Password, pid: str) -> None:
        """Seed 003 §68's argon2 parameters changed since this password was hashed: hash it again with them (in the
        password-check queue; when it is full, at a later sign-in)."""
        try:
            fresh = await self._hashing.run(bucket((conn.address,)), password.rehashed)
        except Full:
            return
        if fresh is not None:
            await self.manage(accounts.rehash, pid, password.row[1], fresh)

    def _touched(self) -> dict[str, float]:
        """When each connected person's session was last marked used (monotonic seconds), by token."""
        if not hasattr(self, "_touched_at"):
            self._touched_at: dict[str, float] = {}
        return self._touched_at

    async def _touch_people(self) -> None:
        """Sessions of people connected now are in use: marked so (a quarter of the idle expiry at a time), so an
        open TUI does not expire while it is used; each connection's clock takes the new expiry."""
        lim, seen, mono = self.limits, self._touched(), time.monotonic()
        due = {c.token: c for conns in self.conns.values() for c in conns
               if c.kind == Kind.HUMAN and c.token and mono - seen.get(c.token, 0.0) >= lim.person_idle / 4}
        if not due:
            return
        for token in due:
            seen[token] = mono
        fresh = await self.manage(accounts.touch, list(due), self.clock(), lim.person_idle_us)
        for token, c in due.items():
            if token in fresh:
                c.expires_at = fresh[token]
        live = {c.token for conns in self.conns.values() for c in conns}
        for token in [t for t in seen if t not in live]:
            del seen[token]

    # --- the ops ---

    async def _op_list_sessions(self, conn, frame: frames.ListSessions) -> dict:
        self._person(conn)
        found = await self.read(accounts.list_sessions, conn.participant, conn.token, self.clock())
        return replies.reply(frame, {"sessions": found})

    async def _op_end_session(self, conn, frame: frames.EndSession) -> dict:
        """End one of one's sessions, the others, or all (this one too: the connection then closes, 1008)."""
        self._person(conn)
        mine, was = frame.session in ("all", accounts.session_id(conn.token)), conn.ending
        conn.ending = was or mine  # (its own: answered first, then closed here, not by the rescan that follows)
        try:
            out = await self.manage(accounts.end_sessions, conn.participant, frame.session, conn.token, address(conn))
        except BaseException:
            conn.ending = was
            raise
        if not mine:
            return replies.reply(frame, out)
        conn.push(replies.reply(frame, out))
        asyncio.ensure_future(self._close(conn, 1008, "session ended"))
        return None

    async def _op_sign_out(self, conn, frame: frames.SignOut) -> dict:
        """The session of this connection ends on the server (its token is refused from now on); the connection is
        answered, then closed (1000 "signed out")."""
        self._person(conn)
        await self.manage(accounts.end_sessions, conn.participant, accounts.session_id(conn.token), None,
                          address(conn))
        conn.ending = True  # (the rescan that follows says nothing more to it)
        conn.push(replies.reply(frame, {"signed_out": True}))
        asyncio.ensure_future(self._close(conn, 1000, "signed out"))
        return None

    async def _op_change_password(self, conn, frame: frames.ChangePassword) -> dict:
        """A person's new password, given the current one (checked as a sign-in is: one hash at a time, and wrong
        guesses counted against the handle, `retry_after` past the limit); their other sessions end."""
        self._person(conn)
        keys = [handle_keys(conn.handle)]
        wait = self._limiter.retry_after(keys, time.monotonic())
        if wait > 0:
            raise AdminError(E.WRONG_PASSWORD, f"too many wrong passwords; try again in {int(wait) + 1} s")
        new = accounts.password_rule(frame.new_password)
        stored = await self.read(accounts.stored_hash, conn.participant)
        given = frame.password if isinstance(frame.password, str) else ""
        def check_then_hash() -> str | None:
            return auth.hash_password(new) if auth.check_password(stored, given) else None

        try:  # (queued as a sign-in's check is, by address: a session buys no place past the bound)
            hashed = await self._hashing.run(bucket((conn.address,)), check_then_hash)
        except Full as e:
            return {**protocol.error(frame.ref, E.BUSY, "too many passwords are being checked; try again later"),
                    "retry_after": e.retry_after}
        if hashed is None:
            self._limiter.failed(keys, time.monotonic())
            raise AdminError(E.WRONG_PASSWORD, "that is not your current password")
        out = await self.manage(accounts.change_password, conn.participant, hashed, conn.token, address(conn))
        return replies.reply(frame, out)

    @staticmethod
    def _person(conn) -> None:
        if conn.kind != Kind.HUMAN:
            raise AdminError("forbidden", "only a person has a password and sessions to manage")

    def _notify(self, pid: str, event: dict) -> None:
        """An event for `pid`'s connections, on this node and the others (an invitation that arrived)."""
        for c in self.conns.get(pid, ()):
            c.push(event)
        self.delivery.tell(pid, event)

