"""OAuth 2.0 for connected accounts (issue 24; seed 003 §62: "the same per-user OAuth flow you would grant any other
app"): the authorization-code grant with PKCE (RFC 7636, S256 only, which GitHub and Google both take), a
loopback redirect for the TUI (RFC 8252 §7.3), the code exchanged and the tokens refreshed and revoked by the
server, so the client secret, the verifier and the tokens never leave it (the TUI relays only the code).

Each provider's endpoints and client are settings: the real ones by default, `$YGG_OAUTH_<PROVIDER>_<FIELD>`
(`CLIENT_ID`, `CLIENT_SECRET`, `AUTHORIZE_URL`, `TOKEN_URL`, `REVOKE_URL`, `API_URL`, `SCOPE`) or a config
file's `[oauth.<provider>]` over them; a provider without a client id is not offered. Tests point them at fakes.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import os
import secrets
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlencode, urlsplit

import httpx

from .web import WebError

FIELDS = ("client_id", "client_secret", "authorize_url", "token_url", "revoke_url", "api_url", "scope")
REFRESH_MARGIN_US = 60_000_000  # a token this close to its expiry is refreshed before it is used


class OAuthError(WebError):
    """A provider refused or failed: the person (or the model) is told why, never a token."""


@dataclass(frozen=True)
class Provider:
    name: str
    label: str
    authorize_url: str
    token_url: str
    revoke_url: str
    api_url: str
    scope: str
    client_id: str = ""
    client_secret: str = ""
    extra: tuple[tuple[str, str], ...] = ()  # more authorize parameters (Google: offline access, consent)

    def wire(self) -> dict:
        return {"provider": self.name, "label": self.label, "scope": self.scope}


GITHUB = Provider("github", "GitHub", "https://github.com/login/oauth/authorize",
                  "https://github.com/login/oauth/access_token",
                  "https://api.github.com/applications/{client_id}/grant", "https://api.github.com", "repo")
GOOGLE = Provider("google", "Google", "https://accounts.google.com/o/oauth2/v2/auth", "https://oauth2.googleapis.com/token",
                  "https://oauth2.googleapis.com/revoke", "https://www.googleapis.com",
                  "openid email https://www.googleapis.com/auth/gmail.modify https://www.googleapis.com/auth/calendar "
                  "https://www.googleapis.com/auth/drive",
                  extra=(("access_type", "offline"), ("prompt", "consent")))
DEFAULTS = {p.name: p for p in (GITHUB, GOOGLE)}
GITHUB_HEADERS = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}  # REST v3


def providers(env: dict[str, str] | None = None, file: dict | None = None) -> dict[str, Provider]:
    """Each provider as configured: its defaults, then the config file's `[oauth.<name>]`, then the environment."""
    env = os.environ if env is None else env
    out = {}
    for name, p in DEFAULTS.items():
        values = {k: v for k, v in ((file or {}).get(name) or {}).items() if k in FIELDS and isinstance(v, str)}
        values.update({k: env[f"YGG_OAUTH_{name.upper()}_{k.upper()}"] for k in FIELDS
                       if env.get(f"YGG_OAUTH_{name.upper()}_{k.upper()}")})
        out[name] = replace(p, **values)
    return out


def pkce_pair() -> tuple[str, str]:
    """(verifier, challenge): 64 characters of base64url (RFC 7636 §4.1: 43 to 128 unreserved characters), and
    BASE64URL(SHA256(verifier)) without padding (§4.2, S256)."""
    verifier = secrets.token_urlsafe(48)
    return verifier, challenge_of(verifier)


def challenge_of(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode("ascii")).digest()).rstrip(b"=").decode()


def state_digest(state: str) -> str:
    return hashlib.sha256(state.encode()).hexdigest()


def loopback_problem(uri: Any) -> str | None:
    """Why `uri` is not a loopback redirect (RFC 8252 §7.3: http, a loopback address, any port), or None."""
    if not isinstance(uri, str) or len(uri) > 300:
        return "redirect_uri is text"
    parts = urlsplit(uri)
    try:
        loopback = parts.hostname == "localhost" or ipaddress.ip_address(parts.hostname or "").is_loopback
        port = parts.port
    except ValueError:
        return "redirect_uri is http://127.0.0.1:<port>/<path>"
    if parts.scheme != "http" or not loopback or not port or parts.query or parts.fragment:
        return "redirect_uri is a loopback address with a port (http://127.0.0.1:<port>/<path>)"
    return None


def authorize_url(p: Provider, state: str, challenge: str, redirect_uri: str) -> str:
    query = {"response_type": "code", "client_id": p.client_id, "redirect_uri": redirect_uri, "scope": p.scope,
             "state": state, "code_challenge": challenge, "code_challenge_method": "S256", **dict(p.extra)}
    return p.authorize_url + ("&" if "?" in p.authorize_url else "?") + urlencode(query)


@dataclass(frozen=True)
class Tokens:
    access: str
    refresh: str
    expires_at: int | None  # microseconds; None: the token does not expire
    scope: str


@dataclass
class OAuthClient:
    """The providers and the HTTP client every request to them goes through."""

    providers: dict[str, Provider] = field(default_factory=providers)
    client: httpx.AsyncClient = field(default_factory=lambda: httpx.AsyncClient(timeout=15.0))

    def provider(self, name: Any) -> Provider | None:
        p = self.providers.get(name) if isinstance(name, str) else None
        return p if p is not None and p.client_id else None

    def offered(self) -> list[dict]:
        return [p.wire() for p in self.providers.values() if p.client_id]

    async def _token(self, p: Provider, form: dict, now: int, old_refresh: str = "") -> Tokens:
        form = {**form, "client_id": p.client_id, **({"client_secret": p.client_secret} if p.client_secret else {})}
        try:
            r = await self.client.post(p.token_url, data=form, headers={"Accept": "application/json"})
            data = r.json()
        except (httpx.HTTPError, ValueError) as e:
            raise OAuthError(f"{p.label} did not answer the token request ({type(e).__name__})") from None
        if not isinstance(data, dict) or "error" in data or r.status_code >= 400 or not data.get("access_token"):
            why = data.get("error_description") or data.get("error") if isinstance(data, dict) else None
            raise OAuthError(f"{p.label} refused: {str(why or r.status_code)[:200]}")
        expires = data.get("expires_in")
        return Tokens(str(data["access_token"]), str(data.get("refresh_token") or old_refresh),
                      now + int(expires) * 1_000_000 if isinstance(expires, int) and expires > 0 else None,
                      str(data.get("scope") or p.scope))

    async def exchange(self, p: Provider, code: str, verifier: str, redirect_uri: str, now: int) -> Tokens:
        """RFC 6749 §4.1.3 with RFC 7636 §4.5's code_verifier."""
        return await self._token(p, {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri,
                                     "code_verifier": verifier}, now)

    async def refresh(self, p: Provider, refresh_token: str, now: int) -> Tokens:
        """RFC 6749 §6 (a provider that rotates refresh tokens sends a new one; else the old one stays)."""
        if not refresh_token:
            raise OAuthError(f"the {p.label} token expired and there is no refresh token: connect the account again")
        return await self._token(p, {"grant_type": "refresh_token", "refresh_token": refresh_token}, now,
                                 old_refresh=refresh_token)

    async def revoke(self, p: Provider, access: str, refresh: str) -> bool:
        """Tell the provider the grant is gone (GitHub: DELETE the app's grant, basic auth by the client; Google:
        RFC 7009 at its revoke endpoint). Whether it said yes; the account is forgotten here either way."""
        try:
            if p.name == "github":
                r = await self.client.request("DELETE", p.revoke_url.format(client_id=p.client_id),
                                              auth=(p.client_id, p.client_secret), json={"access_token": access},
                                              headers={"Accept": "application/vnd.github+json"})
            else:
                r = await self.client.post(p.revoke_url, data={"token": refresh or access})
        except httpx.HTTPError:
            return False
        return r.status_code < 300

    async def whoami(self, p: Provider, access: str) -> str:
        """The account's login (GitHub) or email (Google), shown in the list of accounts."""
        path, headers = ("/user", GITHUB_HEADERS) if p.name == "github" else ("/oauth2/v3/userinfo", {})
        try:
            r = await self.client.get(p.api_url.rstrip("/") + path, headers={**bearer(access), **headers})
            data = r.json() if r.status_code < 400 else {}
        except (httpx.HTTPError, ValueError):
            data = {}
        return str(data.get("login") or data.get("email") or "") if isinstance(data, dict) else ""


def bearer(access: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {access}"}
