"""The isolation matrix (issue 8): every op, from a session of workspace A, with every kind of id of
workspace B, gets the same answer as with an id that does not exist, and changes nothing.

tests/net/test_isolation.py checks the common cases one by one; this walks the whole matrix: for each
op and each place an id goes, the answer with B's id and the answer with a made-up id are compared
(without `ref`, and with the id itself replaced, since some details echo the reference written), the
database's row counts are compared before and after, and nobody in B (carol, her agent spy, her monitor
subscription) hears anything.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import re
import uuid

import pytest

from ygg_server.clock import now_us
from ygg_server.ops import guidance
from ygg_server.protocol import frames

from .conftest import counts

# not "process": the test lowers the core's TOPIC_LIMIT in this process, which a writer in its own would not see
pytestmark = pytest.mark.backends("sqlite", "postgres")

decide_module = importlib.import_module("ygg_server.core.decide")  # the module (core exports the function)

A = "$A"  # team A's workspace

# (op, fields): "$kind" is replaced by B's id of that kind, or by a made-up one; `$me_to` is whom the
# sender may address in A (so that only the id under test can make a send fail).
CASES: list[tuple[str, dict]] = [
    # send: B's workspace, conversations, topics, participants, messages
    ("send", {"workspace": "$ws", "topic": "new", "title": "T", "to": "$me_to", "text": "x"}),
    ("send", {"workspace": "$personal", "topic": "new", "title": "T", "to": "$me_to", "text": "x"}),
    *[("send", {"workspace": A, "conversation": c, "topic": "new", "title": "T", "to": "$me_to", "text": "x"})
      for c in ("$general", "$dm", "$group", "dm:$person", "dm:$agent", "dm:@$handle", "dm:$agent_name",
                "dm:$agent_name@$handle", "group:$group_name")],
    *[("send", {"workspace": A, "topic": t, "title": "T", "to": "$me_to", "text": "x"})
      for t in ("$topic", "$dm_topic", "$message", "$dm_message")],
    *[("send", {"workspace": A, "topic": "new", "title": "T", "to": [r], "text": "x"})
      for r in ("$person", "$agent", "@$handle", "$agent_name", "$agent_name@$handle", "group:$group_name")],
    *[("send", {"workspace": A, "topic": "new", "title": "T", "to": "$me_to", "state": "waiting", "waiting_for": [r],
                "text": "x"}) for r in ("$person", "$agent", "@$handle", "$agent_name@$handle")],
    ("send", {"workspace": A, "topic": "new", "title": "T", "to": "$me_to", "in_reply_to": "$message", "text": "x"}),
    ("send", {"workspace": A, "topic": "new", "title": "T", "to": "$me_to", "in_reply_to": "$dm_message", "text": "x"}),
    # fund
    ("fund", {"workspace": "$ws", "agent": "$agent", "amount": 5}),
    ("fund", {"workspace": "$ws", "pool": True, "amount": 5}),
    *[("fund", {"workspace": A, "agent": x, "amount": 5})
      for x in ("$agent", "$agent_name", "$agent_name@$handle", "$person")],
    # ack
    ("ack", {"ids": ["$delivery"]}),
    ("ack", {"ids": ["$delivery", "$delivery"]}),
    # queries
    *[(op, {"workspace": w}) for op in ("list_members", "list_agents", "list_conversations", "list_topics",
                                         "list_groups", "balances", "presence") for w in ("$ws", "$personal")],
    ("search_messages", {"workspace": "$ws", "query": "secret"}),
    *[("history", {"workspace": A, "conversation": c}) for c in ("$general", "$dm", "$group")],
    ("history", {"workspace": "$ws", "conversation": "general"}),
    ("history", {"workspace": "$ws", "conversation": "$general"}),
    *[("history", {"workspace": A, "conversation": "general", "topic": t}) for t in ("$topic", "$dm_topic")],
    *[("list_topics", {"workspace": A, "conversation": c}) for c in ("$general", "$dm", "$group")],
    *[("topic", {"workspace": w, "topic": t}) for w in (A, "$ws") for t in ("$topic", "$dm_topic", "$message")],
    # subscriptions
    ("subscribe", {"workspace": "$ws"}),
    ("subscribe", {"workspace": "$ws", "monitor": True}),
    ("subscribe", {"workspace": "$personal", "monitor": True}),
    # management
    *[("set_budget", {"workspace": w, "topic": t, "budget": 5}) for w in (A, "$ws") for t in ("$topic", "$dm_topic")],
    ("add_member", {"workspace": "$ws", "handle": "bob", "role": "member"}),
    ("add_member", {"workspace": "$ws", "handle": "alice", "role": "owner"}),
    ("add_member", {"workspace": A, "handle": "$person", "role": "member"}),
    ("add_member", {"workspace": A, "handle": "$agent", "role": "member"}),
    ("add_agent", {"name": "probe", "workspace": "$ws"}),
    ("add_agent", {"name": "probe", "workspace": "$personal"}),
    # parties, profiles, settings (docs/protocol.md, "Parties")
    *[(op, {"workspace": "$ws", "conversation": "$general", "participant": "$agent"})
      for op in ("add_participant", "remove_participant")],
    *[(op, {"workspace": A, "conversation": c, "participant": "researcher"})
      for op in ("add_participant", "remove_participant") for c in ("$general", "$dm", "$group", "dm:$agent")],
    *[("add_participant", {"workspace": A, "conversation": "general", "participant": p})
      for p in ("$person", "$agent", "@$handle", "$agent_name", "$agent_name@$handle")],
    ("set_lead", {"workspace": "$ws", "conversation": "$group", "lead": "$agent"}),
    *[("set_lead", {"workspace": A, "conversation": c, "lead": None}) for c in ("$general", "$dm", "$group")],
    ("set_profile", {"agent": "$agent", "title": "mine now"}),
    ("set_profile", {"agent": "$agent_name", "title": "mine now"}),
    ("set_setting", {"workspace": "$ws", "key": "party.maxHops", "value": 3}),
    ("set_setting", {"workspace": "$personal", "key": "party.maxHops", "value": 3}),
    # organizations, restricted workspaces, permissions, history cursors (seed 002)
    ("create_workspace", {"name": "probe", "org": "$org"}),
    ("add_org_member", {"org": "$org", "handle": "bob", "role": "member"}),
    ("add_org_member", {"org": "$org", "handle": "alice", "role": "admin"}),
    *[("set_restricted", {"workspace": w, "restricted": r}) for w in ("$ws", "$personal") for r in (True, False)],
    ("leave_org", {"org": "$org"}),
    *[("leave_workspace", {"workspace": w}) for w in ("$ws", "$personal")],
    *[("join_workspace", {"workspace": w}) for w in ("$ws", "$personal")],
    *[("delete_workspace", {"workspace": w}) for w in ("$ws", "$personal")],
    ("set_permissions", {"workspace": "$ws", "agent": "$agent", "send": False}),
    *[("set_permissions", {"workspace": A, "agent": x, "monitor": True})
      for x in ("$agent", "$agent_name", "$agent_name@$handle", "$person", "@$handle")],
    *[("set_permissions", {"workspace": A, "agent": "researcher", k: [x]})
      for k in ("can_message", "takes_from") for x in ("$agent", "$agent_name@$handle", "@$handle", "group:$group_name")],
    *[("history", {"workspace": A, "conversation": "general", "before": m}) for m in ("$message", "$dm_message")],
    # an agent's key (its owner's only), groups (a workspace's owners and admins)
    *[(op, {"agent": x}) for op in ("revoke_agent", "rotate_key") for x in ("$agent", "$agent_name")],
    ("add_group", {"workspace": "$ws", "name": "probe", "members": ["researcher"]}),
    ("add_group", {"workspace": "$ws", "name": "$group_name", "members": ["$agent"]}),
    *[("add_group", {"workspace": A, "name": "probe", "members": ["researcher", x]})
      for x in ("$agent", "$agent_name", "$agent_name@$handle", "@$handle", "$person", "group:$group_name")],
    *[("remove_group", {"workspace": w, "name": "$group_name"}) for w in ("$ws", A)],
    # directives: another's persona, another workspace's rulebook, its assignment scores (docs/protocol.md)
    *[("get_persona", {"agent": x}) for x in ("$agent", "$agent_name")],
    *[("set_persona", {"agent": x, "text": "Taken over. " * 10, "why": "probe"}) for x in ("$agent", "$agent_name")],
    *[(op, {"workspace": w, "conversation": c, **({"rulebook": {"length": 5}} if op == "set_rulebook" else {})})
      for op in ("get_rulebook", "set_rulebook")
      for w, c in (("$ws", "general"), ("$ws", "$general"), ("$ws", "$dm"), (A, "$general"), (A, "$dm"))],
    ("explain_assignment", {"workspace": "$ws", "capability": "research"}),
    # people's accounts and consent (issue 18): another's invitation, another's session, B's members
    *[(op, {"invitation": "$invitation"}) for op in ("accept_invitation", "decline_invitation")],
    ("accept_invitation", {"invitation": "$invitation", "agents": True}),
    ("end_session", {"session": "$session"}),
    *[("remove_member", {"workspace": w, "handle": h}) for w in ("$ws", "$personal") for h in ("$handle", "bob")],
    ("remove_member", {"workspace": A, "handle": "$handle"}),
    *[("remove_org_member", {"org": "$org", "handle": h}) for h in ("$handle", "bob", "alice")],
    ("add_org_member", {"org": "$org", "handle": "$handle", "role": "member"}),
    ("add_member", {"workspace": "$ws", "handle": "$handle", "role": "member"}),
    # issue 18's review: the ops merged with it (profiles, settings, pins, edits, versions, search)
    *[("get_profile", {"agent": x}) for x in ("$agent", "$agent_name")],
    *[("get_settings", {"workspace": w}) for w in ("$ws", "$personal")],
    *[("set_pins", {"agent": x, "workspaces": [A]}) for x in ("$agent", "$agent_name")],
    *[("set_pins", {"agent": x, "workspaces": None}) for x in ("$agent", "$agent_name")],
    ("set_pins", {"agent": "researcher", "workspaces": ["$ws"]}),
    *[(op, {"workspace": w, "message": m, **({"text": "taken over"} if op == "edit_message" else {})})
      for op in ("edit_message", "delete_message", "message_versions") for w in (A, "$ws")
      for m in ("$message", "$dm_message")],
    ("search_messages", {"workspace": "$personal", "query": "secret"}),
    # issue 21's work graph: B's workspaces, and B's participants as its agent filter in A
    *[("work_graph", {"workspace": w}) for w in ("$ws", "$personal")],
    *[("work_graph", {"workspace": A, "agent": x}) for x in ("$agent", "$agent_name", "$agent_name@$handle", "$person",
                                                            "@$handle")],
    # issue 21's files: B's uploads (one sent with B's message, one not), downloaded, sent in A, continued
    *[("download_file", {"workspace": w, "file": f}) for w in (A, "$ws") for f in ("$file", "$file_sent")],
    *[("send", {"workspace": A, "topic": "new", "title": "T", "to": "$me_to", "text": "x", "files": [f]})
      for f in ("$file", "$file_sent")],
    ("upload_file", {"workspace": A, "upload": "$file", "data": "eA=="}),
    ("upload_file", {"workspace": "$ws", "name": "a.txt", "size": 1, "data": "eA=="}),
]

KINDS = ("ws", "personal", "org", "general", "dm", "group", "topic", "dm_topic", "message", "dm_message", "person", "agent",
         "handle", "agent_name", "group_name", "delivery", "invitation", "session", "file", "file_sent")


def ghosts(team) -> dict:
    """Made-up ids of every kind, shaped like the real ones."""
    top = team.conn.execute("SELECT coalesce(max(id), 0) FROM deliveries").fetchone()[0]
    u = lambda: str(uuid.uuid4())  # noqa: E731
    return {"ws": u(), "personal": u(), "org": u(), "general": u(), "dm": u(), "group": u(), "topic": u(), "dm_topic": u(),
            "message": u(), "dm_message": u(), "person": f"human.{uuid.uuid4().hex}",
            "agent": f"agent.{uuid.uuid4().hex}", "handle": "zed9", "agent_name": "ghost7", "group_name": "nocell7",
            "delivery": top + 1_000_000, "invitation": u(), "session": uuid.uuid4().hex[:16], "file": u(),
            "file_sent": u()}


def fill(value, ids: dict, team, me_to):
    if isinstance(value, dict):
        return {k: fill(v, ids, team, me_to) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, ids, team, me_to) for v in value]
    if not isinstance(value, str):
        return value
    if value == "$me_to":
        return me_to
    if value == A:
        return team.ws
    if value == "$delivery":
        return ids["delivery"]
    return re.sub(r"\$([a-z_]+)", lambda m: str(ids[m.group(1)]), value)


def normal(reply: dict, ids: dict) -> str:
    """The answer without `ref`, what only a stored message makes unique, and the id under test."""
    r = {k: v for k, v in reply.items() if k != "ref"}
    if r.get("op") == "sent":
        r["message"] = {k: v for k, v in r["message"].items() if k not in ("id", "created_at", "topic")}
    long_ids = sorted((str(ids[k]) for k in KINDS if isinstance(ids[k], str) and len(ids[k]) > 8), key=len, reverse=True)
    short = [ids["handle"], ids["agent_name"], ids["group_name"]]

    def scrub(v, key=None):
        if isinstance(v, dict):
            return {k: scrub(x, k) for k, x in v.items()}
        if isinstance(v, list):
            return [scrub(x, key) for x in v]
        if key == "ids" and v == ids["delivery"]:
            return "<id>"
        if isinstance(v, str) and v in ids.values():
            return "<id>"
        if isinstance(v, str):
            for i in long_ids:
                v = v.replace(i, "<id>")
            for name in short:
                v = re.sub(rf"(?<![\w.-]){re.escape(name)}(?![\w.-])", "<id>", v)
        return v

    return json.dumps(scrub(r), sort_keys=True)


async def _accounts_of_b(team) -> dict:
    """B's invitation (carol invites bob, of A, into her workspace: not the asker's to answer) and carol's session."""
    from ygg_server.ops import invitations

    await asyncio.to_thread(invitations.invite, team.conn, "workspace", team.b["ws"], team.b["person"], "bob", "member",
                            now_us())
    inv = team.conn.execute("SELECT id FROM invitations WHERE place = ?", (team.b["ws"],)).fetchone()[0]
    digest = team.conn.execute("SELECT token_hash FROM sessions WHERE participant = ? LIMIT 1",
                               (team.b["person"],)).fetchone()[0]
    return {"invitation": inv, "session": digest[:16]}


def _files_of_b(team, b: dict) -> dict:
    """Two uploads of carol's in B: one sent with B's direct message, one not sent yet."""
    from ygg_server.ops import files
    from ygg_server.store.transactions import Tx

    made = [files.store(team.conn, b["person"], b["ws"], f"b{i}.txt", "text/plain", b"B's own bytes", "ab" * 32,
                        now_us())["id"] for i in range(2)]
    with Tx(team.conn):
        team.conn.execute("UPDATE files SET message = ? WHERE id = ?", (b["dm_message"], made[1]))
    return {"file": made[0], "file_sent": made[1]}


def b_rows(team) -> tuple:
    b, c = team.b, team.conn
    return (
        c.execute("SELECT count(*) FROM messages WHERE workspace IN (?, ?)", (b["ws"], b["personal"])).fetchone(),
        c.execute("SELECT count(*), count(acked_at) FROM deliveries WHERE recipient IN (?, ?)",
                  (b["agent"], b["person"])).fetchone(),
        c.execute("SELECT id, state FROM topics WHERE workspace = ? ORDER BY id", (b["ws"],)).fetchall(),
        c.execute("SELECT id, members FROM conversations WHERE workspace = ? ORDER BY id", (b["ws"],)).fetchall(),
        c.execute("SELECT * FROM wallets WHERE account = ? OR workspace = ? ORDER BY 1, 2", (b["agent"], b["ws"])).fetchall(),
        c.execute("SELECT * FROM memberships WHERE workspace IN (?, ?) ORDER BY 1, 2", (b["ws"], b["personal"])).fetchall(),
        c.execute("SELECT count(*) FROM ledger WHERE workspace = ? OR account = ?", (b["ws"], b["agent"])).fetchone(),
        c.execute("SELECT agent, version, text FROM personas WHERE agent = ? ORDER BY 2", (b["agent"],)).fetchall(),
        c.execute("SELECT * FROM rulebooks WHERE workspace IN (?, ?) ORDER BY 1", (b["ws"], b["personal"])).fetchall(),
        c.execute("SELECT revoked, key_id, key_hash FROM agents WHERE id = ?", (b["agent"],)).fetchall(),
        c.execute("SELECT count(*) FROM sessions WHERE participant = ?", (b["agent"],)).fetchone(),
        c.execute("SELECT name, members FROM groups WHERE workspace = ? ORDER BY 1", (b["ws"],)).fetchall(),
        c.execute("SELECT count(*) FROM sessions WHERE participant = ?", (b["person"],)).fetchone(),
        c.execute("SELECT id, invitee, role FROM invitations WHERE place = ? ORDER BY 1", (b["ws"],)).fetchall(),
        c.execute("SELECT id, text FROM messages WHERE workspace IN (?, ?) ORDER BY id", (b["ws"], b["personal"])).fetchall(),
        c.execute("SELECT count(*) FROM message_versions v JOIN messages m ON m.id = v.message WHERE m.workspace = ?",
                  (b["ws"],)).fetchone(),
        c.execute("SELECT pinned, profile FROM agents WHERE id = ?", (b["agent"],)).fetchall(),
        c.execute("SELECT id, message FROM files WHERE workspace = ? ORDER BY id", (b["ws"],)).fetchall(),
    )


@pytest.mark.parametrize("who", ["alice", "researcher"])
async def test_every_op_with_every_kind_of_foreign_id_answers_as_for_no_such_id(teams, who, monkeypatch):
    """docs/protocol.md: "an id the asker may not see gets `{"op":"error","code":"not_found"}`, exactly as an id that does not exist"; "`unknown_conversation`, `unknown_topic`, `unknown_workspace` | no such thing (another workspace's ids get exactly this answer)"."""
    # the sends answered `sent` open four topics; as an agent that is one past the topic limit, which is not
    # what this test is about (the writer counts the topics it opened itself since they are counted right)
    monkeypatch.setattr(decide_module, "TOPIC_LIMIT", 10)
    team = teams
    b = dict(team.b, handle="carol", group_name="cell", **await _accounts_of_b(team))
    b.update(_files_of_b(team, b))
    sender = await (team.person("alice") if who == "alice" else team.client(api_key=team.keys["researcher"]))
    me_to = ["researcher"] if who == "alice" else ["@alice"]
    spy = await team.client(api_key=b["key"])
    while True:  # spy's own backlog, before anything here
        try:
            await spy.next_delivery(timeout=0.3)
        except asyncio.TimeoutError:
            break
    # B's agent has a persona and B's conversations a rulebook: something to leak, or to change
    guidance.set_persona(team.conn, b["agent"], frames.SetPersona(text="B's own persona, not for anyone in A. " * 3),
                         now_us())
    for cid in (b["general"], b["dm"]):
        guidance.set_rulebook(team.conn, b["person"], frames.SetRulebook(workspace=b["ws"], conversation=cid,
                                                                      rulebook={"style": "B's style"}), now_us())
    assert team.conn.execute("SELECT count(*) FROM rulebooks WHERE workspace = ?", (b["ws"],)).fetchone()[0] == 2
    await team.carol.subscribe(b["ws"], monitor=True)
    while team.carol.pending_deliveries():
        await team.carol.next_delivery(timeout=1)
    seen_codes = set()
    for op, fields in CASES:
        ghost = ghosts(team)
        before, before_b = counts(team), b_rows(team)
        foreign = await sender.request(op, **fill(fields, b, team, me_to))
        mid, mid_b = counts(team), b_rows(team)
        missing = await sender.request(op, **fill(fields, ghost, team, me_to))
        after, after_b = counts(team), b_rows(team)
        assert normal(foreign, b) == normal(missing, ghost), (op, fields, foreign, missing)
        assert before_b == mid_b == after_b, ("team B's rows moved", op, fields)
        if foreign["op"] == "sent":  # in_reply_to someone else's message: stored like any other reference
            assert {k: mid[k] - before[k] for k in mid if k not in ("topic_states", "usage")} == \
                   {k: after[k] - mid[k] for k in mid if k not in ("topic_states", "usage")}, (op, fields)
        else:
            assert before == mid == after, ("rows moved", op, fields, foreign)
        seen_codes.add(foreign.get("code") or foreign.get("reason") or foreign["op"])
    with pytest.raises(asyncio.TimeoutError):
        d = await spy.next_delivery(timeout=0.3)
        raise AssertionError(f"spy got {d}")
    assert team.carol.pending_deliveries() == 0, "carol got nothing"
    events = [e for e in team.carol.pending_events() if e.get("kind") in ("message", "topic", "balance")]
    assert events == [], events
    assert {"not_found", "unknown_workspace", "unknown_conversation", "unknown_topic", "unknown_recipient"} <= seen_codes
    if who == "alice":  # the lists without an id to pass: nothing of B's in them (carol's invitation is bob's)
        listed = json.dumps([await sender.request("list_invitations"), await sender.request("list_sessions")])
        assert b["invitation"] not in listed and b["session"] not in listed, listed


@pytest.mark.parametrize("who", ["alice", "researcher"])
async def test_an_invitation_answers_the_same_for_bs_person_and_for_no_one_and_gives_nothing_of_b(teams, who):
    """docs/protocol.md: "The inviter is answered alike whether the handle is a person's, a deactivated person's, nobody's, or already invited (no enumeration)". Issue 18: "an invite to an unknown handle is answered exactly as one to a known handle";
    the invitee joins only by accepting, so B's person invited into A is still in nothing of A, and B is untouched."""
    team = teams
    b = team.b
    sender = await (team.person("alice") if who == "alice" else team.client(api_key=team.keys["researcher"]))
    org = team.conn.execute("SELECT org FROM workspaces WHERE id = ?", (team.ws,)).fetchone()[0]
    for op, fields in (("add_member", {"workspace": team.ws, "role": "member"}),
                       ("add_org_member", {"org": org, "role": "member"})):
        before_b = b_rows(team)
        known = await sender.request(op, handle="carol", **fields)
        unknown = await sender.request(op, handle="zed9", **fields)
        same = lambda r, h: json.dumps({k: v for k, v in r.items() if k != "ref"}).replace(h, "<h>")  # noqa: E731
        assert same(known, "carol") == same(unknown, "zed9"), (op, known, unknown)
        assert b_rows(team) == before_b
        assert team.conn.execute("SELECT count(*) FROM memberships WHERE participant = ? AND workspace = ?",
                                 (b["person"], team.ws)).fetchone()[0] == 0, "not in before accepting"
    invited = team.conn.execute("SELECT count(*) FROM invitations WHERE invitee = ?", (b["person"],)).fetchone()[0]
    assert invited == (2 if who == "alice" else 0), "a person invites; an agent is refused alike for both handles"
