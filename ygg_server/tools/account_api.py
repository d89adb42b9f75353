"""What the GitHub and Google tools share (issue 24; seed 003 §62: the token "resolved automatically whenever an
agent needs it"): the account the conversation decides (`ops.connected.resolve`), its access token opened from
the vault and refreshed first when it is about to expire, and the provider's API called with it, over httpx.

A token is refreshed once however many calls need it at the same moment (a lock per account in this process);
the refreshed tokens are sealed and stored before they are used.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx

from ..ops import connected
from . import vault
from .oauth import REFRESH_MARGIN_US, OAuthClient, OAuthError, Provider, bearer
from .web import WebError

RESULT_LIMIT = 20_000  # characters of an API's answer given back to the model
_LOCKS: dict[str, asyncio.Lock] = {}


async def access_token(env, r, provider: str) -> tuple[str, Provider]:
    """(a fresh access token, the provider) of the account `r`'s agent uses where it acts, or WebError saying why."""
    oauth: OAuthClient = env.oauth
    p = oauth.provider(provider)
    if p is None:
        raise WebError(f"this server has no {provider} client configured; its operator registers one")
    row = await env.read(connected.resolve, r.agent, r.owner, r.workspace, r.conversation, provider)
    if row is None:
        raise WebError(f"no {p.label} account is connected for this conversation: a workspace admin connects one "
                       f"for the workspace, or your owner connects theirs and asks you in a direct conversation")
    account, access_sealed, refresh_sealed, expires_at, _, _ = row
    if expires_at is not None and expires_at - REFRESH_MARGIN_US <= env.clock():
        async with _LOCKS.setdefault(account, asyncio.Lock()):
            row = await env.read(connected.resolve, r.agent, r.owner, r.workspace, r.conversation, provider)
            if row is None or row[0] != account:
                raise WebError(f"the {p.label} account was revoked meanwhile")
            _, access_sealed, refresh_sealed, expires_at, _, _ = row
            if expires_at is not None and expires_at - REFRESH_MARGIN_US <= env.clock():
                return await _refreshed(env, p, account, refresh_sealed), p
    access = vault.default().open(access_sealed)
    if access is None:
        raise WebError(f"the {p.label} token cannot be read (the server's key changed): connect the account again")
    return access, p


async def _refreshed(env, p: Provider, account: str, refresh_sealed: str) -> str:
    v = vault.default()
    refresh = v.open(refresh_sealed) if refresh_sealed else ""
    if refresh is None:
        raise WebError(f"the {p.label} token cannot be read (the server's key changed): connect the account again")
    tokens = await env.oauth.refresh(p, refresh, env.clock())
    kept = await env.manage(connected.save_refreshed, account, v.seal(tokens.access),
                            v.seal(tokens.refresh) if tokens.refresh else "", tokens.expires_at, env.clock())
    if not kept:
        raise OAuthError(f"the {p.label} account was revoked meanwhile")
    return tokens.access


async def call(env, r, provider: str, method: str, path: str, *, params: dict | None = None, body: Any = None,
               headers: dict | None = None, raw: bool = False) -> Any:
    """The provider's API at `path` (under its configured base) with the account's token: its JSON (or its text,
    `raw`), or WebError naming the status and the API's own message."""
    access, p = await access_token(env, r, provider)
    url = p.api_url.rstrip("/") + path
    try:
        resp = await env.oauth.client.request(method, url, params=params or None, json=body,
                                              headers={**bearer(access), **(headers or {})}, follow_redirects=False)
    except httpx.HTTPError as e:
        raise WebError(f"{p.label} did not answer: {type(e).__name__}") from None
    if resp.status_code >= 400:
        try:
            detail = resp.json()
            detail = detail.get("message") or (detail.get("error") or {}).get("message") or detail
        except (ValueError, AttributeError):
            detail = resp.text
        raise WebError(f"{p.label} answered {resp.status_code}: {str(detail)[:300]}")
    if raw:
        return resp.text[:RESULT_LIMIT]
    if resp.status_code == 204 or not resp.content:
        return {}
    try:
        return resp.json()
    except ValueError:
        return {"text": resp.text[:RESULT_LIMIT]}


def clip(data: Any) -> Any:
    """An answer the model can read: as it is, or its JSON cut at RESULT_LIMIT characters."""
    text = json.dumps(data, ensure_ascii=False)
    return data if len(text) <= RESULT_LIMIT else {"cut": True, "text": text[:RESULT_LIMIT]}
