"""The protocol as an agent written in another language meets it: raw frames over a real socket, checked
against what docs/protocol.md promises (nothing but `websockets`, as examples/echo_agent.py)."""

from __future__ import annotations

import asyncio
import json

import pytest
import websockets

from ygg_server.ops import admin

pytestmark = pytest.mark.backends("sqlite", "postgres")


class Raw:
    """One raw connection: frames out as JSON, frames in kept until asked for."""

    ascii = True  # frames out with \u escapes (as json.dumps's default); False: as UTF-8

    def __init__(self, ws):
        self.ws, self.seen, self.n = ws, [], 0

    @classmethod
    async def open(cls, url: str, max_size: int | None = 2**24, **auth) -> "Raw":
        c = cls(await websockets.connect(url, max_size=max_size))  # docs/protocol.md: frames up to 16 MiB
        c.session = await c.call({"op": "auth", **auth})
        return c

    async def call(self, frame: dict, timeout: float = 5.0) -> dict:
        self.n += 1
        frame = {**frame, "ref": f"r{self.n}"}
        await self.ws.send(json.dumps(frame, ensure_ascii=self.ascii))
        while True:
            m = json.loads(await asyncio.wait_for(self.ws.recv(), timeout))
            if m.get("ref") == frame["ref"] and m["op"] not in ("deliver", "event"):
                return m
            self.seen.append(m)

    async def deliveries(self, quiet: float = 0.5) -> list[dict]:
        """The deliver frames that came, once none came for `quiet` seconds."""
        try:
            while True:
                self.seen.append(json.loads(await asyncio.wait_for(self.ws.recv(), quiet)))
        except TimeoutError:
            pass
        out = [m for m in self.seen if m["op"] == "deliver"]
        self.seen = [m for m in self.seen if m["op"] != "deliver"]
        return out


async def _requests(alice, ws: str, n: int, to: str = "researcher") -> list[str]:
    """`n` requests to `to`, each in its own topic: `n` wakes."""
    out = []
    for i in range(n):
        r = await alice.send(workspace=ws, topic="new", title=f"q{i}", to=[to], text=f"q{i}")
        out.append(r["message"]["id"])
    return out


async def test_a_wake_goes_to_a_connection_with_room_while_another_is_full(team):
    """Each wake is claimed by one connection, "at most `prefetch` per connection": a connection with room
    gets the next wake even when a connection holding fewer leases is full (before: the least-loaded one was
    chosen whether or not it had room, and the wakes waited for it while the other sat idle)."""
    small = await Raw.open(team.url, api_key=team.keys["researcher"], prefetch=1)
    alice = await team.person("alice")
    await _requests(alice, team.ws, 1)
    assert len(await small.deliveries()) == 1  # full
    big = await Raw.open(team.url, api_key=team.keys["researcher"], prefetch=8)
    await _requests(alice, team.ws, 4)
    got = await big.deliveries()
    assert len(got) == 4, [d["message"]["text"] for d in got]
    assert await small.deliveries() == []


async def test_auth_options_out_of_their_range_are_a_bad_frame_not_silently_replaced(team):
    """`prefetch` is 1..256 and `directives` false (docs/protocol.md, "Authentication"): anything else is
    answered `bad_frame` naming the option, and the connection may sign in again (before: `prefetch: 1000`
    signed in with 16, `directives: "no"` with directives, and the agent never knew)."""
    async with websockets.connect(team.url) as ws:
        c = Raw(ws)
        for bad in ({"prefetch": 1000}, {"prefetch": 0}, {"prefetch": "8"}, {"prefetch": True},
                    {"directives": "no"}, {"directives": 0}):
            err = await c.call({"op": "auth", "api_key": team.keys["researcher"], **bad})
            assert err["op"] == "error" and err["code"] == "bad_frame", (bad, err)
            assert next(iter(bad)) in err["detail"], err
        ok = await c.call({"op": "auth", "api_key": team.keys["researcher"], "prefetch": 256, "directives": True})
        assert ok["op"] == "session", ok


async def test_a_null_content_field_is_as_if_left_out_and_a_handoff_is_a_bool(team):
    """docs/protocol.md, "Sending": a field that is null is as if left out (a serializer that writes its unset
    fields as null gets the defaults: `type` request, `text` empty), and `handoff` is a content field like the
    others: anything but true or false downgrades the message (before: `type: null` or `text: null` made a
    malformed inform while `title: null` was no title; `"handoff": "yes"` was dropped in silence, and the
    agent believed it had handed off)."""
    agent = await Raw.open(team.url, api_key=team.keys["researcher"])
    base = {"op": "send", "workspace": team.ws, "conversation": "general", "topic": "new", "title": "Nulls",
            "to": ["reviewer"], "text": "look", "state": None, "in_reply_to": None, "waiting_for": None}
    sent = await agent.call({**base, "type": None})
    assert sent["op"] == "sent" and "malformed" not in sent["message"], sent
    assert sent["message"]["type"] == "request" and sent["deliveries"][0]["wake"] is True
    topic = sent["message"]["topic"]
    empty = await agent.call({**base, "topic": topic, "type": "inform", "text": None})
    assert empty["op"] == "sent" and "malformed" not in empty["message"] and empty["message"]["text"] == ""
    for bad in ("yes", 1, [True]):
        odd = await agent.call({**base, "topic": topic, "handoff": bad})
        assert odd["op"] == "sent" and odd["message"].get("malformed") is True, (bad, odd)
        assert odd["message"]["type"] == "inform" and "handoff" not in odd["message"]
    plain = await agent.call({**base, "topic": topic, "handoff": False})
    assert plain["op"] == "sent" and "malformed" not in plain["message"] and "handoff" not in plain["message"]


async def test_acked_names_what_the_ack_retired_and_nothing_else(team):
    """docs/protocol.md, "Receiving": `acked.ids` are the deliveries this ack retired (the wake and the context
    it carried); an id that is not an unacked delivery of the acker (made up, already acked, another's) is
    left out, and nothing else happens. An id written as a string is a `bad_frame` that says ids are integers."""
    alice = await team.person("alice")
    agent = await Raw.open(team.url, api_key=team.keys["researcher"])
    other = await Raw.open(team.url, api_key=team.keys["reviewer"])
    first = await alice.send(workspace=team.ws, topic="new", title="Ack", to=["researcher"], text="q1")
    topic = first["message"]["topic"]
    await agent.call({"op": "ack", "ids": [d["id"] for d in await agent.deliveries()]})
    await alice.send(workspace=team.ws, topic=topic, type="inform", to=["researcher"], text="fyi")
    await alice.send(workspace=team.ws, topic=topic, to=["researcher", "reviewer"], text="q2")
    wake, = await agent.deliveries()
    theirs, = await other.deliveries()
    assert wake["context_reasons"] == ["context_inform"]
    acked = await agent.call({"op": "ack", "ids": [wake["id"], 10**12, theirs["id"]]})
    assert acked == {"op": "acked", "ref": acked["ref"], "ids": [wake["id"], *wake["context_ids"]]}
    again = await agent.call({"op": "ack", "ids": [wake["id"]]})
    assert again["op"] == "acked" and again["ids"] == []
    assert (await other.call({"op": "ack", "ids": [theirs["id"]]}))["ids"] == [theirs["id"]]
    as_text = await agent.call({"op": "ack", "ids": [str(wake["id"])]})  # PROTOCOL.md writes "<delivery id>"
    assert as_text["code"] == "bad_frame" and "integer" in as_text["detail"], as_text


async def test_a_conversation_one_may_not_write_in_is_refused_saying_what_one_may(team):
    """An agent writing in a group's conversation it is not in is refused `unknown_conversation` (exactly as a
    made-up one: nothing is told of conversations one is not in), and the detail says where it may write
    (before: "no such conversation", for a group `list_groups` had just shown it)."""
    team.admin(admin.add_group, team.ws, "reviewers", ["reviewer"])
    agent = await Raw.open(team.url, api_key=team.keys["researcher"])
    base = {"op": "send", "workspace": team.ws, "topic": "new", "title": "Hi", "text": "hi"}
    group = await agent.call({**base, "conversation": "group:reviewers"})
    made_up = await agent.call({**base, "conversation": "group:nobody"})
    assert group["reason"] == made_up["reason"] == "unknown_conversation"
    assert group["detail"] == made_up["detail"] and "member" in group["detail"], group


async def test_an_agent_renews_its_session_on_the_open_connection_and_keeps_its_wakes(team, monkeypatch):
    """An agent's session lasts an hour; `auth` again on the open connection renews it (a new `session`),
    the connection and the wakes it holds staying as they are, so a long-running agent is not cut off each
    hour (before: `bad_frame` "already authenticated"; the connection closed at the hour, 1008, and its
    wakes went back). Another's credentials are refused, the connection staying who it was."""
    from ygg_server.ops import auth

    monkeypatch.setattr(auth, "AGENT_SESSION", 3_000_000)  # 3 s
    alice = await team.person("alice")
    agent = await Raw.open(team.url, api_key=team.keys["researcher"])
    await alice.send(workspace=team.ws, topic="new", title="Long", to=["researcher"], text="take your time")
    held, = await agent.deliveries()
    await asyncio.sleep(1.5)
    renewed = await agent.call({"op": "auth", "api_key": team.keys["researcher"]})
    assert renewed["op"] == "session" and renewed["me"] == agent.session["me"], renewed
    assert renewed["expires_at"] > agent.session["expires_at"] and renewed["token"] != agent.session["token"]
    other = await agent.call({"op": "auth", "api_key": team.keys["reviewer"]})
    assert other["op"] == "error" and other["code"] == "bad_frame" and "researcher" in other["detail"], other
    wrong = await agent.call({"op": "auth", "api_key": team.keys["researcher"][:-1] + "x"})
    assert wrong["code"] == "unauthenticated" and "stays signed in as researcher" in wrong["detail"], wrong
    await asyncio.sleep(2.0)  # past the first session's end
    assert (await agent.call({"op": "whoami"}))["id"] == agent.session["me"]["id"]
    assert await agent.deliveries(0.3) == []  # the wake was not offered again
    assert (await agent.call({"op": "ack", "ids": [held["id"]]}))["ids"] == [held["id"]]
    resumed = await Raw.open(team.url, token=renewed["token"])
    assert resumed.session["op"] == "session"


async def test_history_and_rulebooks_name_a_conversation_as_a_send_does(team):
    """A conversation named in a send as `dm:<participant>` or `group:<name>` is named so in `history`,
    `list_topics` and `get_rulebook` too (before: only `general` or an id; `dm:reviewer` was `not_found`
    right after a send there had been `sent`)."""
    team.admin(admin.add_group, team.ws, "reviewers", ["reviewer"])
    agent = await Raw.open(team.url, api_key=team.keys["researcher"])
    dm = await agent.call({"op": "send", "workspace": team.ws, "conversation": "dm:reviewer", "topic": "new",
                           "title": "Between us", "text": "psst"})
    assert dm["op"] == "sent", dm
    page = await agent.call({"op": "history", "workspace": team.ws, "conversation": "dm:reviewer"})
    assert [m["id"] for m in page.get("messages", [])] == [dm["message"]["id"]], page
    topics = await agent.call({"op": "list_topics", "workspace": team.ws, "conversation": "dm:reviewer"})
    assert [t["id"] for t in topics["topics"]] == [dm["message"]["topic"]], topics
    rules = await agent.call({"op": "get_rulebook", "workspace": team.ws, "conversation": "dm:reviewer"})
    assert rules["op"] == "get_rulebook" and rules["conversation"] == dm["message"]["conversation"], rules
    alice = await Raw.open(team.url, handle="alice", password="pw-" + "x" * 8)
    g = await alice.call({"op": "send", "workspace": team.ws, "conversation": "group:reviewers", "topic": "new",
                          "title": "Group", "to": ["group:reviewers"], "text": "all of you"})
    page = await alice.call({"op": "history", "workspace": team.ws, "conversation": "group:reviewers"})
    assert [m["id"] for m in page.get("messages", [])] == [g["message"]["id"]], page
    for ref in ("dm:nobody", "group:nobody", "dm:researcher"):  # no such one, or one's own self
        assert (await agent.call({"op": "history", "workspace": team.ws, "conversation": ref}))["code"] == "not_found"


async def test_a_query_without_its_workspace_is_a_bad_frame_naming_it_as_for_a_send(team):
    """A missing or non-string `workspace` is a `bad_frame` in a send (docs/protocol.md, "Sending"); a query
    or a rulebook without one is too, its detail naming the field (before: `not_found` "no such thing", as if
    the workspace had been named and was not the agent's, for a typo such as `workpsace`)."""
    agent = await Raw.open(team.url, api_key=team.keys["researcher"])
    for frame in ({"op": "history", "workpsace": team.ws}, {"op": "list_topics", "workspace": 5},
                  {"op": "presence"}, {"op": "get_rulebook", "workspace": None, "conversation": "general"},
                  {"op": "get_rulebook", "workspace": team.ws}):
        err = await agent.call(frame)
        assert err["op"] == "error" and err["code"] == "bad_frame", (frame, err)
        assert ("conversation" if "workspace" in frame and frame["workspace"] == team.ws else "workspace") \
            in err["detail"], (frame, err)
    made_up = await agent.call({"op": "history", "workspace": "made-up"})
    assert made_up["code"] == "not_found"


async def test_a_wake_carries_a_bounded_context_and_the_rest_comes_with_the_next(team):
    """A person can pile context on an agent (informs of up to 200,000 characters each): one wake carries at
    most 400,000 characters of it, oldest first, and what did not fit comes with the next wake, so a deliver
    frame stays within the 16 MiB docs/protocol.md tells clients to accept (before: every piece rode on the
    one wake, a frame of any size: a client's limit closed the connection, 1009, and the same frame came
    again after each reconnect, the agent wedged for good)."""
    alice = await team.person("alice")
    first = await alice.send(workspace=team.ws, topic="new", title="Pile", to=["researcher"], text="start")
    topic = first["message"]["topic"]
    agent = await Raw.open(team.url, api_key=team.keys["researcher"])
    await agent.call({"op": "ack", "ids": [d["id"] for d in await agent.deliveries()]})
    await agent.ws.close()
    piled = []
    for i in range(5):
        r = await alice.send(workspace=team.ws, topic=topic, type="inform", to=["researcher"], text=f"{i}" * 150_000)
        piled.append(r["message"]["id"])
    await alice.send(workspace=team.ws, topic=topic, to=["researcher"], text="now answer")
    agent = await Raw.open(team.url, api_key=team.keys["researcher"])
    carried = []
    for turn in range(4):
        wake, = await agent.deliveries()
        assert sum(len(m["text"]) for m in wake["context"]) <= 400_000, [len(m["text"]) for m in wake["context"]]
        carried += [m["id"] for m in wake["context"]]
        await agent.call({"op": "ack", "ids": [wake["id"]]})
        if len(carried) == len(piled):
            break
        await alice.send(workspace=team.ws, topic=topic, to=["researcher"], text=f"and again {turn}")
    assert carried == piled


async def test_a_recipient_written_almost_right_is_refused_with_the_right_spelling(team):
    """`unknown_recipient`'s detail says what to write when someone here goes by that name written otherwise:
    an agent with `@` (people are `@handle`, agents bare names), another case (before: "nobody by '@researcher'
    in this workspace", whatever the agent developer had meant)."""
    agent = await Raw.open(team.url, api_key=team.keys["reviewer"])
    base = {"op": "send", "workspace": team.ws, "conversation": "general", "topic": "new", "title": "Hi", "text": "hi"}
    for wrote, meant in (("@researcher", "researcher"), ("Researcher", "researcher"), ("@Alice", "@alice"),
                         ("ALICE", "@alice")):
        r = await agent.call({**base, "to": [wrote]})
        assert r["reason"] == "unknown_recipient" and r["detail"].endswith(f"did you mean {meant}?"), (wrote, r)
    r = await agent.call({**base, "to": ["@nobody"]})
    assert r["detail"] == "nobody by '@nobody' in this workspace", r


async def test_whoami_answers_who_the_session_says(team):
    """`whoami` answers the fields of the session's `me` (`id`, `handle`, `kind`): an agent asks it for its name
    too (before: `id` and `kind` only, so the name was known from `auth`'s answer alone)."""
    agent = await Raw.open(team.url, api_key=team.keys["researcher"])
    me = await agent.call({"op": "whoami"})
    assert {k: me[k] for k in ("id", "handle", "kind")} == agent.session["me"], me


async def test_credits_exhausted_says_what_comes_next(team):
    """`credits_exhausted`'s detail says what the agent waits for: its funders were asked, and a
    `credits_refilled` notice wakes it to send again (before: "needs 1, wallet 0, pool 0", and nothing of what
    to do, which is the one thing an agent must get right here: stay quiet until then)."""
    key = team.admin(admin.add_agent, "poor", "alice")["api_key"]
    team.admin(admin.fund, "poor", 1)
    agent = await Raw.open(team.url, api_key=key)
    base = {"op": "send", "workspace": team.ws, "conversation": "general", "type": "inform", "text": "x"}
    first = await agent.call({**base, "topic": "new", "title": "Spending"})
    assert first["op"] == "sent", first
    broke = await agent.call({**base, "topic": first["message"]["topic"]})
    assert broke["reason"] == "credits_exhausted", broke
    assert broke["detail"].startswith("needs 1, wallet 0, pool 0;") and "credits_refilled" in broke["detail"], broke


async def test_topic_limit_says_what_frees_a_slot(team):
    """`topic_limit`'s detail says what frees a slot and how the agent hears of it (docs/rules.md: a topic it
    opened closes, and a `resume` notice wakes it), not only "finish one first"."""
    agent = await Raw.open(team.url, api_key=team.keys["researcher"])
    base = {"op": "send", "workspace": team.ws, "conversation": "general", "topic": "new", "type": "inform",
            "text": "x"}
    for i in range(3):
        assert (await agent.call({**base, "title": f"T{i}"}))["op"] == "sent"
    full = await agent.call({**base, "title": "T3"})
    assert full["reason"] == "topic_limit" and "resume" in full["detail"] and "closes" in full["detail"], full


async def test_the_client_library_renews_an_agents_session_before_it_ends(team, monkeypatch):
    """`ygg_server.client` (the bridge's) renews an agent's session on its open connection before `expires_at`
    (before: the server closed it at the hour, 1008, and the client reconnected, its held wakes offered
    again)."""
    from ygg_server.ops import auth

    monkeypatch.setattr(auth, "AGENT_SESSION", 2_000_000)  # 2 s
    agent = await team.client(api_key=team.keys["researcher"])
    first = agent.token
    await asyncio.sleep(6.0)  # past the server's sweep of expired sessions (every 5 s)
    assert agent.reconnects == 0 and agent.token != first
    assert (await agent.call("whoami"))["handle"] == "researcher"
