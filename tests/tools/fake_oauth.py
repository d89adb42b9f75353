"""A fake OAuth provider and API on a loopback HTTP server (a real socket, a thread of its own): GitHub-style or
Google-style. It checks every request as the real ones would and records what it saw; anything wrong is answered
as an error (400 invalid_grant, 401) and listed in `problems`, so a test asserts `problems == []`.

- /authorize (the "browser" GETs it): response_type=code, our client_id, an S256 code_challenge, a loopback
  redirect_uri, a state: then a 302 to the redirect with the code and the same state, signed in as `login`.
- /token: the client id and secret, and for a code: the same redirect_uri, SHA256(code_verifier) == the
  challenge, the code used once; for a refresh token: one it issued and not yet used (rotated) nor revoked.
- the API: a bearer token it issued, not expired, not revoked, on every call (GitHub's also the v3 Accept header).
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlsplit

from ygg_server.tools.oauth import Provider

CLIENT_ID, CLIENT_SECRET = "ygg-client-id", "ygg-client-secret"


class FakeProvider:
    def __init__(self, kind: str):
        assert kind in ("github", "google")
        self.kind = kind
        self.login = "octo" if kind == "github" else "ann@example.com"  # who signs in at /authorize next
        self.expires_in = 3600
        self.codes: dict[str, dict] = {}
        self.access: dict[str, dict] = {}  # token -> {login, expires, revoked}
        self.refresh: dict[str, str] = {}  # live refresh token -> login
        self.calls: list[tuple[str, str, str, dict]] = []  # (login, method, path, json body) of API calls
        self.tokens_seen: list[dict] = []  # the /token forms (grant_type ...)
        self.revoked: list[str] = []
        self.problems: list[str] = []
        self.files: dict[str, str] = {"README.md": "hello from the fake"}
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def provider(self) -> Provider:
        from ygg_server.tools.oauth import DEFAULTS
        from dataclasses import replace
        revoke = "/applications/{client_id}/grant" if self.kind == "github" else "/revoke"
        return replace(DEFAULTS[self.kind], client_id=CLIENT_ID, client_secret=CLIENT_SECRET,
                       authorize_url=self.url + "/authorize", token_url=self.url + "/token",
                       revoke_url=self.url + revoke, api_url=self.url)

    def bad(self, why: str) -> None:
        self.problems.append(why)

    # --- the endpoints ---

    def authorize(self, q: dict) -> tuple[int, dict, bytes]:
        redirect = q.get("redirect_uri", "")
        host = urlsplit(redirect).hostname
        checks = {"response_type": q.get("response_type") == "code", "client_id": q.get("client_id") == CLIENT_ID,
                  "code_challenge_method": q.get("code_challenge_method") == "S256",
                  "code_challenge": len(q.get("code_challenge", "")) == 43, "state": bool(q.get("state")),
                  "redirect_uri": redirect.startswith("http://") and host in ("127.0.0.1", "::1", "localhost")}
        if self.kind == "google":
            checks["access_type"] = q.get("access_type") == "offline"
        wrong = [k for k, ok in checks.items() if not ok]
        if wrong:
            self.bad(f"authorize: bad {wrong}")
            return 400, {}, b"bad request"
        code = secrets.token_urlsafe(16)
        self.codes[code] = {"challenge": q["code_challenge"], "redirect_uri": redirect, "login": self.login}
        return 302, {"Location": redirect + "?" + urlencode({"code": code, "state": q["state"]})}, b""

    def _issue(self, login: str) -> dict:
        access, refresh = "acc_" + secrets.token_hex(16), "ref_" + secrets.token_hex(16)
        self.access[access] = {"login": login, "expires": time.time() + self.expires_in, "revoked": False}
        self.refresh[refresh] = login
        return {"access_token": access, "refresh_token": refresh, "expires_in": self.expires_in,
                "token_type": "bearer", "scope": "repo" if self.kind == "github" else "email"}

    def token(self, form: dict) -> tuple[int, dict]:
        self.tokens_seen.append(form)
        if form.get("client_id") != CLIENT_ID or form.get("client_secret") != CLIENT_SECRET:
            self.bad("token: wrong client credentials")
            return 401, {"error": "invalid_client"}
        if form.get("grant_type") == "authorization_code":
            grant = self.codes.pop(form.get("code", ""), None)
            verifier = form.get("code_verifier", "")
            challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
            if grant is None or grant["challenge"] != challenge or grant["redirect_uri"] != form.get("redirect_uri"):
                self.bad("token: code, verifier or redirect_uri does not match")
                return 400, {"error": "invalid_grant"}
            return 200, self._issue(grant["login"])
        if form.get("grant_type") == "refresh_token":
            login = self.refresh.pop(form.get("refresh_token", ""), None)  # (rotated: each is good once)
            if login is None:
                self.bad("token: unknown refresh token")
                return 400, {"error": "invalid_grant"}
            return 200, self._issue(login)
        self.bad(f"token: grant_type {form.get('grant_type')}")
        return 400, {"error": "unsupported_grant_type"}

    def revoke(self, method: str, headers, body: bytes) -> int:
        if self.kind == "github":
            basic = "Basic " + base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
            token = json.loads(body or b"{}").get("access_token", "")
            if method != "DELETE" or headers.get("Authorization") != basic:
                self.bad("revoke: not the client's basic auth")
                return 401
        else:
            token = parse_qs(body.decode()).get("token", [""])[0]
        found = self.access.get(token) or (token in self.refresh and {"login": self.refresh[token]})
        if not found:
            self.bad("revoke: unknown token")
            return 400
        login = found["login"]
        for t in self.access.values():
            if t["login"] == login:
                t["revoked"] = True
        for r in [r for r, who in self.refresh.items() if who == login]:
            del self.refresh[r]
        self.revoked.append(login)
        return 204 if self.kind == "github" else 200

    def api(self, method: str, path: str, query: dict, headers, body: bytes) -> tuple[int, object]:
        auth = headers.get("Authorization", "")
        t = self.access.get(auth.removeprefix("Bearer ")) if auth.startswith("Bearer ") else None
        if t is None or t["revoked"] or t["expires"] < time.time():
            self.bad(f"api: {method} {path} without a live bearer token")
            return 401, {"message": "Bad credentials"}
        if self.kind == "github" and headers.get("Accept") != "application/vnd.github+json":
            self.bad(f"api: {path} without the v3 Accept header")
            return 415, {"message": "Unsupported Media Type"}
        data = json.loads(body) if body else {}
        self.calls.append((t["login"], method, path, data))
        return (self._github if self.kind == "github" else self._google)(method, path, query, data, t["login"])

    def _github(self, method, path, query, data, login):
        parts = path.strip("/").split("/")
        if path == "/user":
            return 200, {"login": login}
        if parts[:1] != ["repos"] or len(parts) < 3:
            return 404, {"message": "Not Found"}
        rest = parts[3:]
        if not rest:
            return 200, {"default_branch": "main"}
        if rest[0] == "contents":
            name = "/".join(rest[1:])
            if method == "GET":
                if name not in self.files:
                    return 404, {"message": "Not Found"}
                text = self.files[name] + f" (as {login})"
                return 200, {"path": name, "sha": "sha-" + name, "encoding": "base64",
                             "content": base64.b64encode(text.encode()).decode()}
            self.files[name] = base64.b64decode(data["content"]).decode()
            return 201, {"commit": {"sha": "c0ffee", "html_url": "https://github.test/c0ffee"}}
        if rest[:3] == ["git", "ref", "heads"]:
            return 200, {"object": {"sha": "base-sha"}}
        if rest[:2] == ["git", "refs"]:
            return (201, {"ref": data.get("ref")}) if method == "POST" else (204, None)
        if rest[0] == "pulls" and method == "POST":
            return 201, {"number": 7, "html_url": "https://github.test/pull/7", "state": "open"}
        if rest[0] == "pulls" and rest[-1] == "merge":
            return 200, {"merged": True, "sha": "m3rged", "message": "Pull Request successfully merged"}
        return 404, {"message": "Not Found"}

    def _google(self, method, path, query, data, login):
        if path == "/oauth2/v3/userinfo":
            return 200, {"email": login}
        if path == "/gmail/v1/users/me/messages":
            return 200, {"messages": [{"id": "m1"}]}
        if path == "/gmail/v1/users/me/messages/m1":
            text = base64.urlsafe_b64encode(f"hi {login}".encode()).decode()
            return 200, {"id": "m1", "snippet": "hi", "payload": {
                "headers": [{"name": "From", "value": "bob@example.com"}, {"name": "Subject", "value": "Plan"}],
                "mimeType": "text/plain", "body": {"data": text}}}
        if path == "/gmail/v1/users/me/drafts":
            return 200, {"id": "d1", "message": {"id": "m2"}}
        if path == "/gmail/v1/users/me/messages/send":
            return 200, {"id": "m3", "threadId": "t3"}
        if path == "/calendar/v3/calendars/primary/events":
            if method == "POST":
                return 200, {"id": "e2", "htmlLink": "https://cal.test/e2", "start": data["start"], "end": data["end"]}
            return 200, {"items": [{"id": "e1", "summary": "Standup", "start": {"dateTime": "2026-12-04T09:00:00Z"}}]}
        if path == "/drive/v3/files":
            return 200, {"files": [{"id": "f1", "name": "Plan", "mimeType": "application/vnd.google-apps.document"}]}
        if path == "/drive/v3/files/f1":
            return 200, {"id": "f1", "name": "Plan", "mimeType": "application/vnd.google-apps.document"}
        if path == "/drive/v3/files/f1/export":
            return 200, f"the plan, shared with {login}"
        return 404, {"error": {"code": 404, "message": "Not Found"}}

    def _handler(self):
        fake = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _answer(self, status: int, data=None, headers: dict | None = None):
                body = b"" if data is None else (data if isinstance(data, bytes) else
                                                 data.encode() if isinstance(data, str) else json.dumps(data).encode())
                self.send_response(status)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Type", "text/plain" if isinstance(data, str) else "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _any(self):
                parts = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if parts.path == "/authorize":
                    status, headers, out = fake.authorize(query)
                    return self._answer(status, out, headers)
                if parts.path == "/token":
                    form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
                    return self._answer(*fake.token(form))
                if parts.path in ("/revoke", f"/applications/{CLIENT_ID}/grant"):
                    return self._answer(fake.revoke(self.command, self.headers, body), None)
                self._answer(*fake.api(self.command, parts.path, query, self.headers, body))

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _any

        return H
