"""Connected accounts over the socket (issue 24; seed 003 §62-64), a mixin of `Gateway`: the OAuth flow's two
steps and revocation, whose HTTP exchanges with the provider run here, off any transaction; what is stored and
who may, in `ops/connected.py`; the exchanges themselves in `tools/oauth.py`.

1. `connect_account` {provider, redirect_uri, workspace?}: the server makes the state and the PKCE verifier (kept
   sealed, never sent), answers the provider's authorize URL with the S256 challenge; the TUI opens it and listens
   on its loopback redirect.
2. `finish_connect` {state, code}: the TUI relays what came back to its listener; the server checks the state is
   this person's flow under way (once, within ten minutes), exchanges the code with the verifier, the client id
   and secret and the same redirect URI, and keeps the tokens sealed. The tokens never reach the client.
3. `revoke_account` {account}: forgotten here, and the provider told (`revoked_at_provider` says if it agreed).
`list_accounts` adds the providers this server offers.
"""

from __future__ import annotations

import secrets

from ..ops import connected
from ..ops.connected import AccountRefusal as R
from ..ops.refusals import Refused
from .. import audit
from ..protocol import frames, replies
from ..tools import oauth, vault


class ConnectedAccounts:
    oauth_client: oauth.OAuthClient | None = None  # made on first use; tests put one over their fakes in its place

    def _oauth(self) -> oauth.OAuthClient:
        if self.oauth_client is None:
            self.oauth_client = oauth.OAuthClient()
        return self.oauth_client

    def _provider(self, name) -> oauth.Provider:
        p = self._oauth().provider(name)
        if p is None:
            offered = ", ".join(x["provider"] for x in self._oauth().offered()) or "none"
            raise Refused(R.UNKNOWN_PROVIDER, f"this server offers no such provider (offered: {offered})")
        return p

    async def _op_connect_account(self, conn, f: frames.ConnectAccount) -> dict:
        p = self._provider(f.provider)
        why = oauth.loopback_problem(f.redirect_uri)
        if why:
            raise Refused(R.BAD_REDIRECT, why)
        state = secrets.token_urlsafe(32)
        verifier, challenge = oauth.pkce_pair()
        out = await self.manage(connected.begin_flow, conn.participant, p.name, f.workspace, f.redirect_uri,
                                oauth.state_digest(state), vault.default().seal(verifier), self.clock())
        return replies.reply(f, {"provider": p.name, "authorize_url": oauth.authorize_url(p, state, challenge,
                                                                                          f.redirect_uri),
                                 "state": state, "expires_in": connected.FLOW_TTL_US // 1_000_000, **out})

    async def _op_finish_connect(self, conn, f: frames.FinishConnect) -> dict:
        if not isinstance(f.state, str) or not 0 < len(f.state) <= 200:
            raise Refused(R.BAD_STATE, "state is the text the provider redirected back with")
        now = self.clock()
        provider, owner, kind, redirect_uri, verifier_sealed = await self.manage(
            connected.take_flow, conn.participant, oauth.state_digest(f.state), now)
        p = self._provider(provider)
        if f.error is not None or not isinstance(f.code, str) or not 0 < len(f.code) <= 2000:
            raise Refused(R.PROVIDER_REFUSED, f"{p.label} gave no code ({str(f.error or 'none')[:100]}): "
                          "the account is not connected")
        verifier = vault.default().open(verifier_sealed)
        if verifier is None:
            raise Refused(R.BAD_STATE, "the server's key changed during the sign-in: connect again")
        try:
            tokens = await self._oauth().exchange(p, f.code, verifier, redirect_uri, now)
        except oauth.OAuthError as e:
            audit.record("account_connect", outcome="refused", participant=conn.participant, provider=p.name)
            raise Refused(R.PROVIDER_REFUSED, str(e)) from None
        login = await self._oauth().whoami(p, tokens.access)
        v = vault.default()
        account = await self.manage(connected.store_account, conn.participant, p.name, owner, kind, login,
                                    tokens.scope, v.seal(tokens.access), v.seal(tokens.refresh) if tokens.refresh
                                    else "", tokens.expires_at, self.clock())
        audit.record("account_connect", participant=conn.participant, provider=p.name, owner=owner,
                     account=account["id"])
        return replies.reply(f, {"account": account})

    async def _op_list_accounts(self, conn, f: frames.ListAccounts) -> dict:
        out = await self.read(connected.list_accounts, conn.participant, f)
        return replies.reply(f, {**out, "providers": self._oauth().offered()})

    async def _op_revoke_account(self, conn, f: frames.RevokeAccount) -> dict:
        provider, access_sealed, refresh_sealed, account = await self.manage(
            connected.remove_account, conn.participant, f.account)
        p, v = self._oauth().provider(provider), vault.default()
        access = v.open(access_sealed) or ""
        refresh = (v.open(refresh_sealed) or "") if refresh_sealed else ""
        told = bool(p and access) and await self._oauth().revoke(p, access, refresh)
        audit.record("account_revoke", participant=conn.participant, provider=provider, account=account["id"],
                     at_provider=told)
        return replies.reply(f, {"account": account, "revoked_at_provider": told})
