"""Connected accounts (issue 24; seed 003 §62-64), over loopback on both stores, against fake OAuth providers and
APIs on loopback HTTP servers (tests/tools/fake_oauth.py) that check every request: the client id and secret, the
PKCE verifier against its challenge, the redirect URI, the state, and a live bearer token on every API call."""

from __future__ import annotations

import asyncio
import base64
import os

import httpx
import pytest

from ygg_server.client import Refused
from ygg_server.tools import server_tools
from ygg_server.tools.oauth import OAuthClient
from ygg_tui import loopback

from tests.tools.fake_oauth import FakeProvider

pytestmark = pytest.mark.backends("sqlite", "postgres")


@pytest.fixture
def fakes():
    made = {"github": FakeProvider("github"), "google": FakeProvider("google")}
    yield made
    for f in made.values():
        f.close()


@pytest.fixture
def accounts(team, fakes):
    """The team's server with its providers pointed at the fakes (as an operator's settings would)."""
    oauth = OAuthClient(providers={k: f.provider() for k, f in fakes.items()})
    team.gw.oauth_client = oauth
    team.gw.tool_env = server_tools.Env(read=team.gw.read, manage=team.gw.manage, clock=team.gw.clock, oauth=oauth)
    return team


async def browser(url: str) -> None:
    """The person's browser: opens the authorize URL, signs in (the fake does), follows the redirect home."""
    async with httpx.AsyncClient(follow_redirects=True) as b:
        r = await b.get(url)
        assert r.status_code == 200 and "close this tab" in r.text


async def connect(person, provider: str, workspace: str | None = None) -> dict:
    """The TUI's flow (ygg_tui/loopback.py): its loopback listener, the URL opened, the code relayed."""
    opened = []
    out = await loopback.connect(person.call, provider, lambda url: opened.append(asyncio.create_task(browser(url))),
                                 workspace=workspace, timeout=10)
    await asyncio.gather(*opened)
    return out["account"]


def stored_bytes(team) -> bytes:
    """Everything the database holds: the SQLite file and its WAL; on PostgreSQL, the accounts' rows as stored."""
    if team.backend == "postgres":
        return repr(team.conn.execute("SELECT * FROM connected_accounts").fetchall()).encode()
    return b"".join(open(p, "rb").read() for p in (str(team.database), f"{team.database}-wal") if os.path.exists(p))


async def _agent(team, name="researcher"):
    return await team.client(api_key=team.keys[name])


async def test_the_oauth_flow_end_to_end_keeps_tokens_unreadable_in_the_database(accounts, fakes):
    """§62: "Once someone connects an account, an agent can act on a real Google or GitHub account, through the same
    per-user OAuth flow you would grant any other app, not a separate platform login. The returned token is stored
    encrypted and resolved automatically whenever an agent needs it." """
    team, gh = accounts, fakes["github"]
    alice = await team.person("alice")
    listed = await alice.call("list_accounts")
    assert listed["accounts"] == [] and {p["provider"] for p in listed["providers"]} == {"github", "google"}
    account = await connect(alice, "github")
    assert gh.problems == [] and account["login"] == "octo" and account["owner_kind"] == "person"
    form = gh.tokens_seen[0]  # the server sent the verifier, the client's secret and the same redirect
    assert form["grant_type"] == "authorization_code" and form["code_verifier"] and form["redirect_uri"].startswith(
        "http://127.0.0.1:")
    [access] = gh.access
    [refresh] = gh.refresh
    raw = stored_bytes(team)
    assert access.encode() not in raw and refresh.encode() not in raw and form["code_verifier"].encode() not in raw
    assert team.conn.execute("SELECT access_sealed FROM connected_accounts").fetchone()[0].startswith("gAAAA")
    listed = (await alice.call("list_accounts"))["accounts"]
    assert [a["id"] for a in listed] == [account["id"]] and access not in str(listed) and "token" not in str(listed)

    # the agent's tool gets it without ever seeing it
    agent = await _agent(team)
    await alice.call("attach_tool", agent="researcher", tool="github_read_file")
    personal = team.conn.execute("SELECT id FROM workspaces WHERE personal_of = ?", (team.alice,)).fetchone()[0]
    got = await agent.call("call_tool", workspace=personal, tool="github_read_file",
                           arguments={"repo": "acme/site", "path": "README.md"})
    assert got["ok"] and got["result"]["text"] == "hello from the fake (as octo)" and access not in str(got)
    assert gh.calls[-1][:3] == ("octo", "GET", "/repos/acme/site/contents/README.md") and gh.problems == []


async def test_a_flow_is_the_persons_once_and_bad_answers_are_refused(accounts, fakes):
    """The state binds the code to the person's flow, once; anything else is refused with its reason."""
    team, gh = accounts, fakes["github"]
    alice, bob = await team.person("alice"), await team.person("bob")
    for fields, reason in (({"provider": "gitlab", "redirect_uri": "http://127.0.0.1:5/cb"}, "unknown_provider"),
                           ({"provider": "github", "redirect_uri": "https://evil.test/cb"}, "bad_redirect"),
                           ({"provider": "github", "redirect_uri": "http://127.0.0.1/cb"}, "bad_redirect"),
                           ({"provider": "github", "redirect_uri": "http://127.0.0.1:5/cb", "workspace": team.ws},
                            "permission_denied")):  # (bob is a member, not an admin: §66)
        with pytest.raises(Refused) as e:
            await bob.call("connect_account", **fields)
        assert e.value.reason == reason, fields
    started = await alice.call("connect_account", provider="github", redirect_uri="http://127.0.0.1:5/cb")
    assert "verifier" not in str(started) and "code_challenge=" in started["authorize_url"]
    with pytest.raises(Refused) as e:  # another person cannot finish it
        await bob.call("finish_connect", state=started["state"], code="x")
    assert e.value.reason == "bad_state"
    with pytest.raises(Refused) as e:  # a code the provider never issued
        await alice.call("finish_connect", state=started["state"], code="forged")
    assert e.value.reason == "provider_refused" and gh.problems == ["token: code, verifier or redirect_uri does not match"]
    with pytest.raises(Refused) as e:  # used once
        await alice.call("finish_connect", state=started["state"], code="x")
    assert e.value.reason == "bad_state"
    started = await alice.call("connect_account", provider="github", redirect_uri="http://127.0.0.1:5/cb")
    with pytest.raises(Refused) as e:
        await alice.call("finish_connect", state=started["state"], error="access_denied")
    assert e.value.reason == "provider_refused" and "access_denied" in e.value.frame["detail"]
    states = [(await alice.call("connect_account", provider="github", redirect_uri="http://127.0.0.1:5/cb"))["state"]
              for _ in range(6)]  # five under way at most: the oldest is forgotten
    assert team.conn.execute("SELECT count(*) FROM oauth_flows").fetchone()[0] == 5
    with pytest.raises(Refused) as e:
        await alice.call("finish_connect", state=states[0], code="x")
    assert e.value.reason == "bad_state"
    agent = await _agent(team)
    with pytest.raises(Refused) as e:
        await agent.call("connect_account", provider="github", redirect_uri="http://127.0.0.1:5/cb")
    assert e.value.reason == "permission_denied"
    assert (await alice.call("list_accounts"))["accounts"] == []


async def test_the_conversation_decides_which_account_an_agent_uses(accounts, fakes):
    """§63: "A connection belongs to the person who made it, or to the whole workspace if added there, so agents
    share one connection instead of each needing its own." §64: "Which account is used is decided by the
    conversation the agent is acting in, not hard-coded in the agent, so one agent pinned to two workspaces picks
    the right connected account for wherever it is acting now." """
    team, gh = accounts, fakes["github"]
    alice, bob = await team.person("alice"), await team.person("bob")
    lab = (await alice.call("create_workspace", name="lab"))["id"]
    gh.login = "alice-own"
    await connect(alice, "github")
    gh.login = "team-bot"
    await connect(alice, "github", workspace=team.ws)
    gh.login = "lab-bot"
    await connect(alice, "github", workspace=lab)
    await alice.call("attach_tool", agent="researcher", tool="github_read_file")
    agent = await _agent(team)
    dm = await alice.send(workspace=team.ws, conversation="dm:researcher", topic="new", title="DM", type="inform",
                          to=["researcher"], text="psst")
    general = next(c["id"] for c in (await alice.call("list_conversations", workspace=team.ws))["conversations"]
                   if c["kind"] == "general")
    personal = team.conn.execute("SELECT id FROM workspaces WHERE personal_of = ?", (team.alice,)).fetchone()[0]
    read = {"repo": "acme/site", "path": "README.md"}
    for ws, conversation, login in ((team.ws, general, "team-bot"), (team.ws, None, "team-bot"),
                                    (team.ws, dm["message"]["conversation"], "alice-own"), (lab, None, "lab-bot"),
                                    (personal, None, "alice-own")):
        got = await agent.call("call_tool", workspace=ws, tool="github_read_file", arguments=read,
                               conversation=conversation)
        assert got["ok"] and got["result"]["text"].endswith(f"(as {login})"), (ws, conversation)
        assert gh.calls[-1][0] == login
    # a workspace with no account of its own never reaches a person's, nor another workspace's
    bare = (await alice.call("create_workspace", name="bare"))["id"]
    seen = len(gh.calls)
    got = await agent.call("call_tool", workspace=bare, tool="github_read_file", arguments=read)
    assert not got["ok"] and "no GitHub account is connected" in got["error"] and len(gh.calls) == seen
    # bob, a member of the team, sees that it has an account; not alice's own, nor lab's
    mine = (await bob.call("list_accounts"))["accounts"]
    assert [(a["login"], a["can_revoke"]) for a in mine] == [("team-bot", False)]
    with pytest.raises(Refused) as e:
        await bob.call("list_accounts", workspace=lab)
    assert e.value.reason == "not_found"
    assert gh.problems == []


async def test_every_github_and_google_tool_against_the_fake_apis(accounts, fakes):
    """§63: "Google gives the agent Gmail, Calendar and Drive: read, draft, send, schedule, and work on documents
    ... GitHub gives repository access: read files, open and merge pull requests, create and delete branches,
    commit changes." """
    team, gh, gg = accounts, fakes["github"], fakes["google"]
    alice = await team.person("alice")
    await connect(alice, "github", workspace=team.ws)
    account = await connect(alice, "google", workspace=team.ws)
    assert account["login"] == "ann@example.com"
    agent = await _agent(team)
    calls = {
        "github_create_branch": ({"repo": "acme/site", "branch": "fix"}, {"branch": "fix", "from": "main", "sha": "base-sha"}),
        "github_commit_file": ({"repo": "acme/site", "branch": "fix", "path": "docs/a.md", "content": "new text",
                                "message": "Add a"}, {"commit": "c0ffee"}),
        "github_open_pull_request": ({"repo": "acme/site", "head": "fix", "title": "Fix"}, {"number": 7, "base": "main"}),
        "github_merge_pull_request": ({"repo": "acme/site", "number": 7, "method": "squash"}, {"merged": True}),
        "github_delete_branch": ({"repo": "acme/site", "branch": "fix"}, {"deleted": "fix"}),
        "gmail_search": ({"query": "from:bob"}, None),
        "gmail_read": ({"id": "m1"}, {"from": "bob@example.com", "subject": "Plan", "text": "hi ann@example.com"}),
        "gmail_draft": ({"to": "bob@example.com", "subject": "Re: Plan", "body": "Draft"}, {"draft": "d1"}),
        "gmail_send": ({"to": "bob@example.com", "subject": "Re: Plan", "body": "Sent"}, {"sent": "m3"}),
        "calendar_list_events": ({}, None),
        "calendar_create_event": ({"summary": "Review", "start": "2026-12-04T10:00:00Z",
                                   "end": "2026-12-04T10:30:00Z", "attendees": ["bob@example.com"]}, {"id": "e2"}),
        "drive_search": ({"name": "Plan"}, None),
        "drive_read": ({"id": "f1"}, {"name": "Plan", "text": "the plan, shared with ann@example.com"}),
    }
    for tool in calls:
        await alice.call("attach_tool", agent="researcher", tool=tool)
    # seed 003 §59: "a person to approve or deny that particular call before it runs, especially riskier ones": a
    # merge, a deleted branch, a mail sent wait for one, unless a standing rule allows them
    held = await agent.call("call_tool", workspace=team.ws, tool="gmail_send", arguments=calls["gmail_send"][0])
    assert held["ok"] is False and held.get("pending") and held["approval"]["tool"] == "gmail_send", held
    assert not [c for c in gg.calls if c[2].endswith("/messages/send")], "sent before anyone approved"
    for tool in ("github_merge_pull_request", "github_delete_branch", "gmail_send"):
        await alice.call("set_tool_rule", workspace=team.ws, agent="researcher", rule=tool, effect="allow")
    for tool, (args, expect) in calls.items():
        got = await agent.call("call_tool", workspace=team.ws, tool=tool, arguments=args)
        assert got["ok"], (tool, got)
        if expect:
            assert {k: got["result"][k] for k in expect} == expect, tool
    assert gh.files["docs/a.md"] == "new text"
    assert ("octo", "PUT", "/repos/acme/site/pulls/7/merge", {"merge_method": "squash"}) in gh.calls
    sent = next(c for c in gg.calls if c[2] == "/gmail/v1/users/me/messages/send")
    assert b"Subject: Re: Plan" in base64.urlsafe_b64decode(sent[3]["raw"])
    assert gh.problems == [] and gg.problems == []
    with pytest.raises(Refused) as e:  # the registry's schema still holds
        await agent.call("call_tool", workspace=team.ws, tool="github_merge_pull_request",
                         arguments={"repo": "acme/site", "number": "7"})
    assert e.value.reason == "bad_arguments"


async def test_an_expired_token_is_refreshed_before_it_is_used(accounts, fakes):
    """§62: the token is "resolved automatically whenever an agent needs it": an expired one is refreshed first."""
    team, gg = accounts, fakes["google"]
    alice = await team.person("alice")
    gg.expires_in = 30  # under the server's one-minute margin: expired as far as it is concerned
    await connect(alice, "google", workspace=team.ws)
    [first] = gg.access
    sealed = team.conn.execute("SELECT access_sealed FROM connected_accounts").fetchone()[0]
    gg.expires_in = 3600
    await alice.call("attach_tool", agent="researcher", tool="gmail_read")
    agent = await _agent(team)
    got = await asyncio.gather(*(agent.call("call_tool", workspace=team.ws, tool="gmail_read", arguments={"id": "m1"})
                                 for _ in range(3)))
    assert all(g["ok"] for g in got)
    refreshes = [f for f in gg.tokens_seen if f["grant_type"] == "refresh_token"]
    assert len(refreshes) == 1 and refreshes[0]["client_secret"]  # once, however many calls needed it
    assert team.conn.execute("SELECT access_sealed FROM connected_accounts").fetchone()[0] != sealed
    assert len(gg.access) == 2 and all(c[0] == "ann@example.com" for c in gg.calls)
    gg.access[first]["revoked"] = True  # the old token would be refused: the new one is what is used
    assert (await agent.call("call_tool", workspace=team.ws, tool="gmail_read", arguments={"id": "m1"}))["ok"]
    assert gg.problems == [] and len([f for f in gg.tokens_seen if f["grant_type"] == "refresh_token"]) == 1
    # a refresh the provider refuses (the grant was withdrawn there) tells the model to have it connected again
    team.conn.execute("UPDATE connected_accounts SET expires_at = 1")
    team.conn.commit() if team.backend != "postgres" else None
    gg.refresh.clear()
    got = await agent.call("call_tool", workspace=team.ws, tool="gmail_read", arguments={"id": "m1"})
    assert not got["ok"] and "Google refused" in got["error"]


async def test_revocation_forgets_the_account_and_tells_the_provider(accounts, fakes):
    """§62-63: a connection its owner (or its workspace's admins) can take back; the provider is told."""
    team, gh, gg = accounts, fakes["github"], fakes["google"]
    alice, bob = await team.person("alice"), await team.person("bob")
    own = await connect(alice, "google")
    shared = await connect(alice, "github", workspace=team.ws)
    for ref, reason in ((own["id"], "not_found"), (shared["id"], "permission_denied"), ("nope", "not_found")):
        with pytest.raises(Refused) as e:
            await bob.call("revoke_account", account=ref)
        assert e.value.reason == reason
    await alice.call("attach_tool", agent="researcher", tool="github_read_file")
    agent = await _agent(team)
    out = await alice.call("revoke_account", account=shared["id"])
    assert out["revoked_at_provider"] is True and gh.revoked == ["octo"] and gh.problems == []
    got = await agent.call("call_tool", workspace=team.ws, tool="github_read_file",
                           arguments={"repo": "acme/site", "path": "README.md"})
    assert not got["ok"] and "no GitHub account is connected" in got["error"]
    out = await alice.call("revoke_account", account=own["id"])
    assert out["revoked_at_provider"] is True and gg.revoked == ["ann@example.com"] and gg.problems == []
    assert (await alice.call("list_accounts"))["accounts"] == []
    assert team.conn.execute("SELECT count(*) FROM connected_accounts").fetchone()[0] == 0


async def test_a_deleted_workspace_takes_its_accounts_with_it(accounts, fakes):
    """§63: a workspace's connection is the workspace's: deleting it (its owner's, §66) deletes its accounts; the
    owner's own account stays."""
    team = accounts
    alice = await team.person("alice")
    lab = (await alice.call("create_workspace", name="lab"))["id"]
    await connect(alice, "github", workspace=lab)
    own = await connect(alice, "github")
    await alice.call("delete_workspace", workspace=lab)
    assert [a["id"] for a in (await alice.call("list_accounts"))["accounts"]] == [own["id"]]
    assert team.conn.execute("SELECT count(*) FROM connected_accounts WHERE owner = ?", (lab,)).fetchone()[0] == 0
