"""GitHub tools (issue 24; seed 003 §63: "GitHub gives repository access: read files, open and merge pull requests,
create and delete branches, commit changes"), registered in the one registry and run on the server with the
GitHub account the conversation decides (account_api.py). GitHub's REST API v3 paths, under the provider's
configured `api_url` (https://api.github.com by default)."""

from __future__ import annotations

import base64
import re
from typing import Any
from urllib.parse import quote

from .account_api import call, clip
from .oauth import GITHUB_HEADERS
from .registry import REGISTRY, ToolSpec
from .web import WebError

_S = {"type": "string", "maxLength": 300}
_REPO = {"type": "string", "maxLength": 200, "description": "owner/name"}
REPO = re.compile(r"^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$")
HEADERS = GITHUB_HEADERS
TEXT_LIMIT = 100_000  # characters of a file read or committed


def _repo(a: dict) -> str:
    repo = a["repo"]
    if not REPO.match(repo) or ".." in repo:
        raise WebError("repo is owner/name")
    return repo


def _path(p: str) -> str:
    if ".." in p.split("/"):
        raise WebError("a path names no ..")
    return quote(p.strip("/"), safe="/")


async def _gh(env, r, method: str, path: str, **kw) -> Any:
    return await call(env, r, "github", method, path, headers=HEADERS, **kw)


async def _default_branch(env, r, repo: str) -> str:
    return str((await _gh(env, r, "GET", f"/repos/{repo}")).get("default_branch") or "main")


def _spec(name: str, description: str, props: dict, required: list[str], approval: bool = False) -> None:
    """A tool; `approval`: what cannot be taken back waits for a person's approval unless a standing rule says
    (seed 003 §59-61, the registry's approvals)."""
    REGISTRY.register(ToolSpec(name=name, group="github", handler=_pending, description=description, approval=approval,
                               parameters={"type": "object", "properties": props, "required": required}))


async def _pending(env, r):  # (replaced by the handlers below)
    raise RuntimeError("github tool without a handler")


_spec("github_read_file", "Read a file (or list a folder) of a GitHub repository, at a branch, tag or commit.",
      {"repo": _REPO, "path": {**_S, "maxLength": 1000}, "ref": _S}, ["repo", "path"])
_spec("github_commit_file", "Commit a file's new full text (or a new file) to a branch of a GitHub repository.",
      {"repo": _REPO, "branch": _S, "path": {**_S, "maxLength": 1000},
       "content": {"type": "string", "maxLength": TEXT_LIMIT}, "message": {**_S, "maxLength": 1000}},
      ["repo", "branch", "path", "content", "message"])
_spec("github_create_branch", "Create a branch in a GitHub repository, from another branch (default: its default one).",
      {"repo": _REPO, "branch": _S, "from": _S}, ["repo", "branch"])
_spec("github_delete_branch", "Delete a branch of a GitHub repository.", {"repo": _REPO, "branch": _S},
      ["repo", "branch"], approval=True)
_spec("github_open_pull_request", "Open a pull request from a branch (head) into another (base; default: the default one).",
      {"repo": _REPO, "head": _S, "base": _S, "title": _S, "body": {"type": "string", "maxLength": 20_000}},
      ["repo", "head", "title"])
_spec("github_merge_pull_request", "Merge a pull request of a GitHub repository.",
      {"repo": _REPO, "number": {"type": "integer", "minimum": 1},
       "method": {"type": "string", "enum": ["merge", "squash", "rebase"]}}, ["repo", "number"],
      approval=True)


@REGISTRY.handler("github_read_file")
async def read_file(env, r) -> Any:
    a, repo = r.arguments, _repo(r.arguments)
    data = await _gh(env, r, "GET", f"/repos/{repo}/contents/{_path(a['path'])}",
                     params={"ref": a["ref"]} if a.get("ref") else None)
    if isinstance(data, list):  # a folder
        return [{"name": e.get("name"), "type": e.get("type"), "path": e.get("path")} for e in data[:500]]
    if data.get("encoding") != "base64":
        raise WebError(f"{a['path']} is not a file whose text GitHub returns")
    text = base64.b64decode(data.get("content") or "").decode("utf-8", errors="replace")
    return {"path": data.get("path"), "sha": data.get("sha"), "text": text[:TEXT_LIMIT], "cut": len(text) > TEXT_LIMIT}


@REGISTRY.handler("github_commit_file")
async def commit_file(env, r) -> Any:
    a, repo = r.arguments, _repo(r.arguments)
    path = f"/repos/{repo}/contents/{_path(a['path'])}"
    body = {"message": a["message"], "branch": a["branch"],
            "content": base64.b64encode(a["content"].encode()).decode()}
    try:  # an existing file is updated by naming the blob it replaces
        old = await _gh(env, r, "GET", path, params={"ref": a["branch"]})
        if isinstance(old, dict) and old.get("sha"):
            body["sha"] = old["sha"]
    except WebError as e:
        if "answered 404" not in str(e):
            raise
    out = await _gh(env, r, "PUT", path, body=body)
    commit = out.get("commit") or {}
    return {"commit": commit.get("sha"), "url": commit.get("html_url"), "path": a["path"], "branch": a["branch"]}


@REGISTRY.handler("github_create_branch")
async def create_branch(env, r) -> Any:
    a, repo = r.arguments, _repo(r.arguments)
    source = a.get("from") or await _default_branch(env, r, repo)
    ref = await _gh(env, r, "GET", f"/repos/{repo}/git/ref/heads/{_path(source)}")
    sha = (ref.get("object") or {}).get("sha")
    if not sha:
        raise WebError(f"branch {source} has no commit GitHub names")
    await _gh(env, r, "POST", f"/repos/{repo}/git/refs", body={"ref": f"refs/heads/{a['branch']}", "sha": sha})
    return {"branch": a["branch"], "from": source, "sha": sha}


@REGISTRY.handler("github_delete_branch")
async def delete_branch(env, r) -> Any:
    a, repo = r.arguments, _repo(r.arguments)
    await _gh(env, r, "DELETE", f"/repos/{repo}/git/refs/heads/{_path(a['branch'])}")
    return {"deleted": a["branch"]}


@REGISTRY.handler("github_open_pull_request")
async def open_pull_request(env, r) -> Any:
    a, repo = r.arguments, _repo(r.arguments)
    base = a.get("base") or await _default_branch(env, r, repo)
    pr = await _gh(env, r, "POST", f"/repos/{repo}/pulls",
                   body={"title": a["title"], "head": a["head"], "base": base, "body": a.get("body", "")})
    return clip({"number": pr.get("number"), "url": pr.get("html_url"), "state": pr.get("state"), "base": base})


@REGISTRY.handler("github_merge_pull_request")
async def merge_pull_request(env, r) -> Any:
    a, repo = r.arguments, _repo(r.arguments)
    out = await _gh(env, r, "PUT", f"/repos/{repo}/pulls/{a['number']}/merge",
                    body={"merge_method": a.get("method", "merge")})
    return {"merged": bool(out.get("merged")), "sha": out.get("sha"), "message": out.get("message")}


TOOLS = ("github_read_file", "github_commit_file", "github_create_branch", "github_delete_branch",
         "github_open_pull_request", "github_merge_pull_request")
