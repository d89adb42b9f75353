"""People's accounts (issue 18): passwords, sessions, sign-out, deactivation, removal, handles, over real sockets.

Issue 18, "Accounts": "change one's password (ends one's other sessions), an operator's reset; list one's sessions
(device, address, last seen) and end any or all; sign out from the TUI ends the session on the server; deactivate a
person (sessions end at once, sign-in refused, memberships and agents taken away); remove a member from a workspace
or an organization (owners and admins); configurable session lifetime and idle expiry; a minimum password length
…, rehash on sign-in when the parameters change."
"""

from __future__ import annotations

import asyncio
import json
import logging

import pytest
import websockets
from argon2 import PasswordHasher

from ygg_server.net.conn import Limits
from ygg_server.ops import accounts, admin
from ygg_server.store.transactions import Tx

from ..backends import serving
from .test_agent_keys import closed_within

pytestmark = pytest.mark.backends("sqlite", "postgres")

PW = "pw-" + "x" * 8
NEW = "a new password, long enough"


async def _auth(url: str, **creds) -> dict:
    async with websockets.connect(url) as ws:
        await ws.send(json.dumps({"op": "auth", "ref": 1, **creds}))
        return json.loads(await asyncio.wait_for(ws.recv(), 5))


async def _signed_in(url: str, handle: str, password: str = PW, device: str | None = None):
    ws = await websockets.connect(url)
    await ws.send(json.dumps({"op": "auth", "ref": 1, "handle": handle, "password": password,
                              **({"device": device} if device else {})}))
    reply = json.loads(await asyncio.wait_for(ws.recv(), 5))
    assert reply["op"] == "session", reply
    return ws, reply["token"]


async def _ask(ws, op: str, **fields) -> dict:
    await ws.send(json.dumps({"op": op, "ref": op, **fields}))
    while True:
        frame = json.loads(await asyncio.wait_for(ws.recv(), 5))
        if frame.get("ref") == op:
            return frame


async def test_changing_ones_password_ends_ones_other_sessions(team, caplog):
    """Issue 18: "change one's password (ends one's other sessions)"; "a minimum password length"; the audit log
    records it, never a credential."""
    caplog.set_level(logging.INFO, logger="ygg.audit")
    phone, phone_token = await _signed_in(team.url, "alice")
    laptop, laptop_token = await _signed_in(team.url, "alice")
    wrong = await _ask(phone, "change_password", password="not it", new_password=NEW)
    assert (wrong["op"], wrong["code"]) == ("error", "wrong_password"), wrong
    weak = await _ask(phone, "change_password", password=PW, new_password="short")
    assert weak["code"] == "weak_password" and str(accounts.MIN_PASSWORD) in weak["detail"]
    done = await _ask(phone, "change_password", password=PW, new_password=NEW)
    assert done["changed"] is True and done["sessions_ended"] == 1, done
    assert await closed_within(laptop) == 1008, "the other session's connection closes"
    assert (await _ask(phone, "ping"))["op"] == "pong", "this one stays"
    assert (await _auth(team.url, token=laptop_token))["code"] == "unauthenticated"
    assert (await _auth(team.url, handle="alice", password=PW))["code"] == "unauthenticated"
    assert (await _auth(team.url, handle="alice", password=NEW))["op"] == "session"
    await phone.close()
    logged = "\n".join(r.getMessage() for r in caplog.records if r.name == "ygg.audit")
    assert '"event":"password_changed"' in logged
    for secret in (PW, NEW, phone_token, laptop_token):
        assert secret not in logged


async def test_sessions_are_listed_with_device_and_address_and_ended_one_or_all(team):
    """Issue 18: "list one's sessions (device, address, last seen) and end any or all"; another's session id is
    answered as a made-up one."""
    phone, _ = await _signed_in(team.url, "alice", device="phone")
    laptop, laptop_token = await _signed_in(team.url, "alice", device="laptop")
    bob, _ = await _signed_in(team.url, "bob", device="bob's")
    listed = (await _ask(phone, "list_sessions"))["sessions"]
    assert sorted(s["device"] for s in listed) == ["laptop", "phone"], listed
    assert {s["address"] for s in listed} == {"127.0.0.1"} and all(s["last_seen"] for s in listed)
    assert [s["current"] for s in listed if s["device"] == "phone"] == [True]
    bobs = (await _ask(bob, "list_sessions"))["sessions"][0]["id"]
    made_up = await _ask(phone, "end_session", session="0" * accounts.SESSION_ID)
    theirs = await _ask(phone, "end_session", session=bobs)
    assert theirs["code"] == "not_found" and {**theirs, "ref": 0} == {**made_up, "ref": 0}
    assert (await _ask(bob, "ping"))["op"] == "pong"

    laptops = next(s["id"] for s in listed if s["device"] == "laptop")
    assert (await _ask(phone, "end_session", session=laptops))["ended"] == 1
    assert await closed_within(laptop) == 1008
    assert (await _auth(team.url, token=laptop_token))["code"] == "unauthenticated"
    assert [s["device"] for s in (await _ask(phone, "list_sessions"))["sessions"]] == ["phone"]
    assert (await _ask(phone, "end_session", session="all"))["ended"] == 1
    assert await closed_within(phone) == 1008, "all: this one too"
    await bob.close()


async def test_sign_out_ends_the_session_on_the_server(team):
    """Issue 18: "sign out from the TUI ends the session on the server": its token is refused afterwards."""
    ws, token = await _signed_in(team.url, "alice")
    assert (await _ask(ws, "sign_out"))["signed_out"] is True
    assert await closed_within(ws) == 1000
    assert (await _auth(team.url, token=token))["code"] == "unauthenticated"


async def test_a_persons_session_ends_when_unused_and_after_its_lifetime(backend, database):
    """Issue 18: "configurable session lifetime and idle expiry"."""
    limits = Limits(auth_timeout=5.0, person_idle=1.0, person_session=2.5, session_sweep=0.2)
    async with serving(backend, database, limits) as s:
        s.admin(admin.add_person, "alice", PW)
        open_ws, _ = await _signed_in(s.url, "alice")
        await asyncio.sleep(1.6)
        assert (await _ask(open_ws, "ping"))["op"] == "pong", "an open connection is use: not idle"
        await open_ws.close()
        ws, token = await _signed_in(s.url, "alice")
        await ws.close()
        await asyncio.sleep(0.5)
        assert (await _auth(s.url, token=token))["op"] == "session", "used within the idle time: it lives on"
        await asyncio.sleep(0.6)
        assert (await _auth(s.url, token=token))["op"] == "session"
        await asyncio.sleep(1.3)
        assert (await _auth(s.url, token=token))["code"] == "unauthenticated", "unused for longer than 1 s"
        ws, token = await _signed_in(s.url, "alice")
        for _ in range(6):  # used every 0.5 s: never idle, yet over after 2.5 s
            await asyncio.sleep(0.5)
            reply = await _auth(s.url, token=token)
        assert reply["code"] == "unauthenticated", reply
        await ws.close()


async def test_a_deactivated_person_is_signed_out_refused_and_taken_out_of_everything(team):
    """Issue 18: "deactivate a person (sessions end at once, sign-in refused, memberships and agents taken
    away)"; refused exactly as a wrong password (a deactivated handle is not told apart)."""
    scout = team.admin(admin.add_agent, "scout", "bob")
    ws, token = await _signed_in(team.url, "bob")
    out = team.admin(accounts.deactivate, "bob")
    assert out["deactivated"] is True and out["agents_revoked"] == [scout["id"]]
    assert await closed_within(ws) == 1008
    refused = await _auth(team.url, handle="bob", password=PW)
    wrong = await _auth(team.url, handle="bob", password="not it")
    assert refused["code"] == "unauthenticated" and refused == wrong
    assert (await _auth(team.url, token=token))["code"] == "unauthenticated"
    assert (await _auth(team.url, api_key=scout["api_key"]))["code"] == "unauthenticated"
    bob = out["id"]
    left = team.conn.execute("SELECT count(*) FROM memberships WHERE participant IN (?, ?)", (bob, scout["id"]))
    assert left.fetchone()[0] == 0
    assert team.conn.execute("SELECT count(*) FROM org_members WHERE person = ?", (bob,)).fetchone()[0] == 0
    alice = await team.person("alice")
    assert (await alice.call("add_member", workspace=team.ws, handle="bob"))["invited"] is True
    assert team.conn.execute("SELECT count(*) FROM invitations").fetchone()[0] == 0, "nobody to invite"


async def test_owners_and_admins_remove_members_with_their_agents(team):
    """Issue 18: "remove a member from a workspace or an organization (owners and admins)"; seed 003 §66: the
    owner is never removed. Someone not in it and a handle nobody has are answered alike."""
    scout = team.admin(admin.add_agent, "scout", "bob")["id"]
    team.admin(admin.add_person, "carol", PW)
    team.admin(admin.add_member, team.ws, "carol", "admin")
    alice, bob, carol = [await team.person(h) for h in ("alice", "bob", "carol")]
    assert (await bob.request("remove_member", workspace=team.ws, handle="carol"))["code"] == "forbidden"
    assert (await carol.request("remove_member", workspace=team.ws, handle="alice"))["code"] == "owner_permanent"
    nobody = await carol.request("remove_member", workspace=team.ws, handle="nobody")
    outside = await carol.request("remove_member", workspace=team.ws, handle="system")
    assert nobody["code"] == "not_a_member" and {**nobody, "ref": 0} == {**outside, "ref": 0}
    assert (await carol.call("remove_member", workspace=team.ws, handle="@bob"))["removed"] is True
    for pid in (bob.me["id"], scout):
        assert team.conn.execute("SELECT 1 FROM memberships WHERE workspace = ? AND participant = ?",
                                 (team.ws, pid)).fetchone() is None
    assert (await bob.request("list_members", workspace=team.ws))["code"] == "not_found"
    assert (await alice.call("remove_member", workspace=team.ws, handle="carol"))["removed"] is True

    org = (await alice.call("list_orgs"))["orgs"][0]["id"]
    team.admin(admin.add_org_member, org, "bob")
    assert team.conn.execute("SELECT 1 FROM memberships WHERE workspace = ? AND participant = ?",
                             (team.ws, bob.me["id"])).fetchone() is not None, "the organization opens team"
    assert (await alice.call("remove_org_member", org=org, handle="bob"))["removed"] is True
    assert team.conn.execute("SELECT 1 FROM memberships WHERE workspace = ? AND participant = ?",
                             (team.ws, bob.me["id"])).fetchone() is None


async def test_a_password_hashed_with_older_parameters_is_hashed_again_at_sign_in(team):
    """Issue 18: "rehash on sign-in when the parameters change"."""
    old = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1).hash(PW)
    with Tx(team.conn):
        team.conn.execute("UPDATE people SET password_hash = ? WHERE handle = 'alice'", (old,))
    assert (await _auth(team.url, handle="alice", password=PW))["op"] == "session"
    stored = team.conn.execute("SELECT password_hash FROM people WHERE handle = 'alice'").fetchone()[0]
    assert stored != old and not PasswordHasher().check_needs_rehash(stored)
    assert (await _auth(team.url, handle="alice", password=PW))["op"] == "session"


def test_handles_are_one_after_folding_and_look_alikes_are_refused(server):
    """Issue 18, "Names": "handles unique after NFKC case-folding; mixed-script look-alikes and format characters
    (zero-width, direction marks) refused"; "a minimum password length (an empty password is accepted today)"."""
    server.admin(admin.add_person, "alice", PW)
    for handle, code in (("Alice", "handle_taken"), ("ＡＬＩＣＥ", "handle_taken"), ("\u0430\u04cf\u0456\u0441\u0435", "handle_taken"),
                         ("\u0430lice", "bad_handle"), ("al\u200bice", "bad_handle"), ("al\u200eice", "bad_handle")):
        with pytest.raises(admin.AdminError) as e:
            server.admin(admin.add_person, handle, PW)
        assert e.value.code == code, (handle, e.value.detail)
    for pw in ("", "short"):
        with pytest.raises(admin.AdminError) as e:
            server.admin(admin.add_person, "bob", pw)
        assert e.value.code == "weak_password"
    with pytest.raises(admin.AdminError) as e:
        server.admin(admin.add_agent, "re\u200bsearcher", "alice")
    assert e.value.code == "bad_name"


def test_older_clashing_handles_still_work_and_block_new_clashes(server):
    """Issue 18: existing databases with clashing handles must still migrate: the oldest keeps the key, the others
    keep their handle (NULL key), and no new handle may clash with either (docs/security.md)."""
    server.admin(admin.add_person, "alice", PW)
    with Tx(server.conn):  # (as migration 13 leaves an older database)
        server.conn.execute("UPDATE people SET handle_key = NULL")
        server.conn.execute("INSERT INTO people (id, handle, password_hash, created_at) VALUES ('human.x', 'Alice', NULL, 1)")
    with pytest.raises(admin.AdminError) as e:
        server.admin(admin.add_person, "ALICE", PW)
    assert e.value.code == "handle_taken"
    assert server.admin(admin.add_person, "bob", PW)["handle"] == "bob"
    keys = dict(server.conn.execute("SELECT handle, handle_key FROM people").fetchall())
    assert keys == {"Alice": "alice", "alice": None, "bob": "bob"}, "the older of the two keeps the key"
    with pytest.raises(admin.AdminError) as e:
        server.admin(admin.add_person, "aLice", PW)
    assert e.value.code == "handle_taken"


@pytest.mark.backends("sqlite")
async def test_the_operators_commands_ask_for_passwords_reset_them_deactivate_and_remove(served_dir, monkeypatch, capsys):
    """Issue 18: "an operator's reset (admin CLI)", "deactivate a person (admin CLI …)", "remove a member … (the admin
    CLI)", "the admin CLI prompts for a password instead of requiring it on the command line (keep `--password`
    working for scripts and tests)"."""
    import getpass

    from ygg_server import cli

    s, d = served_dir
    typed = iter([PW, PW, "other", "else", NEW, NEW])
    monkeypatch.setattr(getpass, "getpass", lambda prompt="": next(typed))

    def run(*args) -> tuple[int, dict]:
        code = cli.main(["admin", "--data-dir", str(d), *args])
        return code, json.loads(capsys.readouterr().out.strip().splitlines()[-1])

    assert run("add-person", "carol")[1]["handle"] == "carol", "asked twice, not on the command line"
    code, out = run("add-person", "dave")
    assert code == 1 and out["error"] == "password_mismatch"
    ws, token = await _signed_in(s.url, "carol")
    code, out = run("reset-password", "carol")
    assert code == 0 and out["sessions_ended"] == 1
    assert await closed_within(ws) == 1008
    assert (await _auth(s.url, handle="carol", password=NEW))["op"] == "session"
    assert run("reset-password", "carol", "--password", "x")[1]["error"] == "weak_password"
    run("add-person", "erin", "--password", PW)
    team = run("add-workspace", "lab", "--owner", "carol")[1]["id"]
    run("add-member", team, "erin")
    assert run("remove-member", team, "erin")[1]["removed"] is True
    assert run("remove-member", team, "carol")[1]["error"] == "owner_permanent"
    out = run("deactivate-person", "carol")[1]
    assert out["deactivated"] is True and team in out["ownerless"] and len(out["ownerless"]) == 2, "lab and her organization"
    assert (await _auth(s.url, handle="carol", password=NEW))["code"] == "unauthenticated"


@pytest.fixture
async def served_dir(tmp_path):
    from ygg_server.store import sqlite as db

    from ..backends import start_server, stop_server

    s = await start_server("sqlite", db.db_path(tmp_path), Limits(auth_timeout=5.0))
    yield s, tmp_path
    await stop_server(s)
