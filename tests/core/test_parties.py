"""Seeds 003 (§14-18) and 004: parties, who answers, delegation, hops and the throttle (docs/rules.md, "Parties")."""

from hypothesis import HealthCheck, given, settings, strategies as st
from msgspec.structs import replace

from ygg_server.core import Kind, Profile, View
from ygg_server.core.party import change_members, named_at_start, set_lead, turn_queue
from ygg_server.core.rules import MAX_HOPS, THROTTLE_DIRECT, THROTTLE_GROUP

from .harness import World, assert_context, assert_refused, assert_woken, notices, woken

AGENTS = ("lead", "pike", "nova")


def party(**kw) -> tuple[World, str]:
    """alice in a group conversation with three agents; returns the world and the conversation id."""
    w = World(agents=AGENTS, party=True, **kw)
    w.set_group("crew", AGENTS)
    d = w.send("human.alice", "hello crew", type="inform", conversation="group:crew", to=list(AGENTS))
    return w, d.message.conversation


def conv_view(w: World, cid: str, author="human.alice") -> View:
    return View(w.directory, w.conversations[cid])


def test_a_conversation_is_a_party_from_the_start_and_adding_twice_does_nothing():
    """Seed 004: "Every Conversation is a Party from the moment it is created — it just starts with one member."

    Seed 004: "Adding one that is already in the Party does nothing rather than erroring." """
    w = World(agents=AGENTS, party=True)
    d = w.send("human.alice", "hi", to=["pike"], conversation="dm:pike")
    cid = d.message.conversation
    add = change_members(conv_view(w, cid), "human.alice", "add", "nova", w.now)
    assert add.refusal is None and add.conversation.members == {"human.alice", "pike", "nova"}
    w.apply(add)
    again = change_members(conv_view(w, cid), "human.alice", "add", "nova", w.now)
    assert again.refusal is None and again.conversation is None


def test_removing_the_last_participant_is_refused():
    """Seed 004: "You can remove a participant at any time, except the last one" """
    w = World(agents=AGENTS, party=True)
    cid = w.send("human.alice", "hi", to=["pike"], conversation="dm:pike").message.conversation
    w.apply(change_members(conv_view(w, cid), "human.alice", "add", "nova", w.now))
    d = change_members(conv_view(w, cid), "human.alice", "remove", "nova", w.now)
    assert d.refusal is None and d.conversation.members == {"human.alice", "pike"}
    w.apply(d)
    assert_refused(change_members(conv_view(w, cid), "human.alice", "remove", "pike", w.now), "last_participant")


def test_a_removed_agent_cannot_write_there_any_more():
    """Seed 004: "Removing an NPC leaves its earlier replies in the transcript." (the server hides their author
    from the remaining agents; here: the removed agent is out of the party)"""
    w, cid = party()
    w.apply(change_members(conv_view(w, cid), "human.alice", "remove", "nova", w.now))
    assert_refused(w.send("nova", "still here?", conversation=cid, to=["pike"]), "unknown_conversation")


def test_at_name_at_the_start_picks_the_agent():
    """Seed 004: "To pick someone else, start your message with @ and their name:"

    Seed 004: "The name has to be at the start of the message." The others get it as context."""
    w, cid = party()
    d = w.send("human.alice", "@Pike can you check whether that script still runs?", conversation=cid)
    assert d.message.to == ("pike",)
    assert_woken(d, "pike")
    assert_context(d, "lead", "not_addressed")
    assert_context(d, "nova", "not_addressed")


def test_a_name_mid_sentence_is_talk_about_someone():
    """Seed 004: "Mentioning an NPC in the middle of a sentence — "ask Pike about this" — is you talking about them, not to them" """
    w, cid = party()
    assert named_at_start(w.directory, "ask @pike about this") is None
    d = w.send("human.alice", "ask @pike about this", conversation=cid)
    assert len(d.message.to) == 1  # one agent has the turn, by the queue (not necessarily pike)
    assert woken(d) == set(d.message.to)


def test_the_lead_gets_every_message_nobody_else_is_addressed_in():
    """Seed 004: "A Party with a Lead sends it every message nobody else is addressed in" """
    w, cid = party()
    w.apply(set_lead(conv_view(w, cid), "human.alice", "lead"))
    d = w.send("human.alice", "plan the release", conversation=cid)
    assert d.message.to == ("lead",) and woken(d) == {"lead"}
    d = w.send("human.alice", "@nova translate this", conversation=cid)
    assert d.message.to == ("nova",)


def test_turn_queue_specialist_then_generalist():
    """Seed 003: "for a direct question confined to one domain, the best-matching specialist gets a chance before the generalist" """
    w = World(agents=AGENTS, party=True)
    w.profiles = {"lead": Profile(generalist=True), "pike": Profile(capabilities=("python", "scripts")),
                  "nova": Profile(capabilities=("translation", "french"))}
    w._rebuild()
    assert turn_queue(w.directory, AGENTS, "Does the python script run?")[:2] == ("pike", "lead")
    assert turn_queue(w.directory, AGENTS, "French translation please")[:2] == ("nova", "lead")


def test_turn_queue_several_domains_generalist_first_and_a_fallback():
    """Seed 003: "for something that spans several domains, the generalist comes first; and if nothing clearly matches there is a fallback order" """
    w = World(agents=AGENTS, party=True)
    w.profiles = {"lead": Profile(generalist=True), "pike": Profile(capabilities=("python",)),
                  "nova": Profile(capabilities=("translation",))}
    w._rebuild()
    assert turn_queue(w.directory, AGENTS, "python and translation")[0] == "lead"
    q = turn_queue(w.directory, AGENTS, "what's for lunch")
    assert q[0] == "lead" and set(q) == set(AGENTS)  # nothing left unanswered: everyone is in the order


def test_a_delegation_wakes_all_at_once_and_the_lead_once_at_the_end():
    """Seed 004: "the Lead can also split a job between the others with delegate, who then work on their parts at the same time before the Lead writes the reply" """
    w, cid = party()
    w.apply(set_lead(conv_view(w, cid), "human.alice", "lead"))
    d = w.send("human.alice", "research and translate", conversation=cid)
    tid = d.topics[0].id
    d = w.send("lead", "pike: research; nova: translate", topic=tid, conversation=cid, to=["pike", "nova"])
    assert woken(d) == {"pike", "nova"}
    rid = d.message.id
    first = w.send("pike", "research done", topic=tid, conversation=cid, type="response", in_reply_to=rid)
    assert_context(first, "lead", "wake_coalesced")
    last = w.send("nova", "translated", topic=tid, conversation=cid, type="response", in_reply_to=rid)
    assert_woken(last, "lead")


def test_hop_limit_ends_the_exchange_and_says_so_once():
    """Seed 004: "One of your messages buys a bounded number of NPC-to-NPC hops — six by default. When the limit ends an exchange, the transcript says so rather than going quiet." """
    w, cid = party()
    tid = w.send("human.alice", "@pike go", conversation=cid).topics[0].id
    pair = ("pike", "nova")
    for i in range(MAX_HOPS):
        d = w.send(pair[i % 2], f"hop {i}", topic=tid, conversation=cid, to=[pair[(i + 1) % 2]])
        assert_woken(d, pair[(i + 1) % 2])
    d = w.send(pair[MAX_HOPS % 2], "one more", topic=tid, conversation=cid, to=[pair[(MAX_HOPS + 1) % 2]])
    assert_context(d, pair[(MAX_HOPS + 1) % 2], "hop_limit")
    assert len(notices(d, "hop_limit")) == 1
    d = w.send("pike", "and more", topic=tid, conversation=cid, to=["lead"])
    assert_context(d, "lead", "hop_limit")
    assert notices(d, "hop_limit") == []  # once
    # a person writing buys a new set of hops
    w.send("human.alice", "@pike carry on", topic=tid, conversation=cid)
    assert_woken(w.send("pike", "ok nova", topic=tid, conversation=cid, to=["nova"]), "nova")


def test_hop_limit_is_a_workspace_setting():
    """Seed 004: "The limit is a Village-wide setting stored under the key party.maxHops." """
    w, cid = party()
    w.max_hops = 1
    tid = w.send("human.alice", "@pike go", conversation=cid).topics[0].id
    assert_woken(w.send("pike", "a", topic=tid, conversation=cid, to=["nova"]), "nova")
    assert_context(w.send("nova", "b", topic=tid, conversation=cid, to=["pike"]), "pike", "hop_limit")


def test_throttle_after_consecutive_agent_messages_stricter_one_to_one():
    """Seed 003: "if too many consecutive messages come from agents with no human input in between, the conversation is throttled until a human joins in again; the limit is a little stricter in a one-to-one conversation than in a group" """
    assert THROTTLE_DIRECT < THROTTLE_GROUP
    for kind, limit in (("direct", 3), ("group", 5)):
        w, cid = party()
        w.max_hops, w.throttle = 10**6, (3, 5)
        if kind == "direct":
            cid = w.send("human.alice", "hi", to=["pike"], conversation="dm:pike").message.conversation
        tid = w.open("human.alice", "go", to=["pike"], conversation=cid)
        for i in range(limit):
            assert_woken(w.send("pike", f"note {i}", topic=tid, conversation=cid, to=["human.alice"]), "human.alice")
        d = w.send("pike", "again", topic=tid, conversation=cid, to=["human.alice"])
        assert_context(d, "human.alice", "throttled")
        said = notices(d, "throttled")  # the transcript says so, once per run, as context for the people
        assert len(said) == 1 and said[0].to == ("human.alice",) and "until a person writes" in said[0].text
        assert not notices(w.send("pike", "more", topic=tid, conversation=cid, to=["human.alice"]), "throttled")
        w.send("human.alice", "I am here", topic=tid, conversation=cid, to=["pike"])
        assert_woken(w.send("pike", "thanks", topic=tid, conversation=cid, to=["human.alice"]), "human.alice")


def test_done_agent_is_not_rewoken_by_its_own_output():
    """Seed 003: "an agent can explicitly signal that it is done, which stops its own re-waking until something new happens, so it cannot restart itself from its own output" """
    w, cid = party()
    tid = w.send("human.alice", "@pike go", conversation=cid).topics[0].id
    w.send("pike", "finished", topic=tid, conversation=cid, to=["nova"], state="done", type="inform")
    d = w.send("nova", "are you sure?", topic=tid, conversation=cid, to=["pike"])
    assert_context(d, "pike", "recipient_done")


def test_a_handoff_is_a_request_to_exactly_one_colleague():
    """Seed 004: "An NPC hands the Conversation to a colleague by calling the message_npc Tool, naming who it wants and saying what it needs from them." """
    w, cid = party()
    tid = w.send("human.alice", "@pike go", conversation=cid).topics[0].id
    d = w.send("pike", "nova, please translate this", topic=tid, conversation=cid, to=["nova"], handoff=True)
    assert d.message.handoff and woken(d) == {"nova"}
    assert_refused(w.send("pike", "both of you", topic=tid, conversation=cid, to=["nova", "lead"], handoff=True),
                   "bad_handoff")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(AGENTS), st.lists(st.sampled_from(AGENTS + ("human.alice",)), max_size=3),
                          st.sampled_from(["request", "response", "inform"]), st.booleans()), max_size=40),
       st.integers(0, 8))
def test_no_persons_message_buys_more_than_max_hops(actions, max_hops):
    """Seed 004: "One of your messages buys a bounded number of NPC-to-NPC hops" — whatever the agents do.

    Core decision (docs/rules.md, "Parties"): per topic: the person's topic gets `max_hops`, and the topics
    only agents wrote in share their conversation's `max_hops` (which no person's message elsewhere refills)."""
    w, cid = party()
    w.max_hops = max_hops
    tid = w.send("human.alice", "start", conversation=cid).topics[0].id
    hops = {"person's topic": 0, "agents' topics": 0}
    for author, to, mtype, new_topic in actions:
        last = next((m for m in reversed(w.messages) if m.author != author and m.author in AGENTS), None)
        d = w.send(author, None, topic="new" if new_topic else tid, conversation=cid, to=to, type=mtype,
                   in_reply_to=last.id if last and mtype == "response" else None, title="t")
        if d.refusal is None and any(x.wake and w.directory.participants[x.recipient].kind == Kind.AGENT
                                     for x in d.routed[0].deliveries):
            hops["person's topic" if d.message.topic == tid else "agents' topics"] += 1
    assert max(hops.values()) <= max_hops


def test_each_agent_is_told_who_else_is_in_the_party():
    """Seed 004: "Each NPC is told who else is in the Party — names, job titles and a short line from each description"

    The roster leaves out the agent it is for, and people; the Lead is marked; only the first line of a
    description is told."""
    from ygg_server.core.party import first_line, roster, roster_obj

    w, cid = party()
    w.profiles["pike"] = Profile(title="Engineer", description="Runs scripts in a sandbox.\nSecond line.")
    w.profiles["nova"] = Profile(title="Researcher", description="x" * 500)
    w._rebuild()
    w.apply(set_lead(conv_view(w, cid), "human.alice", "lead"))
    r = roster(w.directory, w.conversations[cid], "lead")
    assert [(e.name, e.title, e.lead) for e in r] == [("nova", "Researcher", False), ("pike", "Engineer", False)]
    assert r[1].line == "Runs scripts in a sandbox."
    assert len(r[0].line) == 160 and r[0].line.endswith("\u2026")
    assert [e.name for e in roster(w.directory, w.conversations[cid], "pike")] == ["lead", "nova"]
    assert roster(w.directory, w.conversations[cid], "pike")[0].lead is True
    assert roster_obj(r)[1] == {"id": "pike", "name": "pike", "title": "Engineer",
                                "description": "Runs scripts in a sandbox.", "lead": False}
    assert first_line("\n\n  hi  \nthere") == "hi"
    solo = w.send("human.alice", "hi", to=["pike"], conversation="dm:pike").message.conversation
    assert roster(w.directory, w.conversations[solo], "pike") == ()


def test_removed_authors_lose_their_name_for_agents_and_names_ride_along_in_a_party():
    """Seed 004: "Those keep their text but stop carrying an author into what the remaining NPCs see, because naming
    somebody who is no longer here would invite a handoff that cannot work."

    Seed 004: "In a Party, replies carry their author's name into the history the others see, so an NPC can tell
    three colleagues apart. Solo Conversations are left exactly as they were." """
    from ygg_server.core.party import party_view
    from ygg_server.protocol import for_agent, message_obj

    w, cid = party()
    said = message_obj(w.send("nova", "my part", conversation=cid, to=["pike"], title="t").message)
    person = message_obj(w.send("human.alice", "thanks", conversation=cid, to=["pike"]).message)
    pv = party_view(w.directory, w.conversations[cid])
    assert pv.party and for_agent(said, pv)["author_name"] == "nova" and for_agent(person, pv) == person
    w.apply(change_members(conv_view(w, cid), "human.alice", "remove", "nova", w.now))
    pv = party_view(w.directory, w.conversations[cid])
    shown = for_agent(said, pv)
    assert shown["author"] is None and shown["author_removed"] is True and shown["text"] == "my part"
    assert said["author"] == "nova"  # the stored message (what people see) is unchanged
    solo = w.send("human.alice", "hi", to=["pike"], conversation="dm:pike").message
    reply = message_obj(w.send("pike", "hello", conversation=solo.conversation, to=["human.alice"], title="t").message)
    assert for_agent(reply, party_view(w.directory, w.conversations[solo.conversation])) == reply


def test_hops_are_counted_per_topic_a_persons_message_buys_its_own():
    """Seed 004: "One of your messages buys a bounded number of NPC-to-NPC hops" (issue 17: two independent tasks
    in General shared one budget, and an unrelated message in another topic gave a runaway exchange more hops).

    Core decision (docs/rules.md, "Parties"): a person's message in a topic buys that topic `party.maxHops`; work
    in another topic neither spends nor refills it."""
    w = World(agents=("pike", "nova"), party=True)
    w.max_hops = 2
    one = w.open("human.alice", "task one", to=["pike"], type="inform")
    two = w.open("human.alice", "task two", to=["nova"], type="inform")
    for tid in (one, two):  # each task has its own two hops
        assert_woken(w.send("pike", "a", topic=tid, to=["nova"]), "nova")
        assert_woken(w.send("nova", "b", topic=tid, to=["pike"]), "pike")
    d = w.send("pike", "c", topic=one, to=["nova"])
    assert_context(d, "nova", "hop_limit")
    said = notices(d, "hop_limit")
    assert len(said) == 1 and said[0].topic == one  # the transcript says so, in the topic
    w.send("human.alice", "anyone for lunch?", topic=two, to=["nova"])  # elsewhere: refills nothing in `one`
    assert_context(w.send("nova", "d", topic=one, to=["pike"]), "pike", "hop_limit")
    w.send("human.alice", "go on", topic=one, to=["pike"])
    assert_woken(w.send("pike", "e", topic=one, to=["nova"]), "nova")


def test_the_throttle_counts_per_topic():
    """Seed 003 §16: "if too many consecutive messages come from agents with no human input in between, the
    conversation is throttled until a human joins in again" (Core decision: counted per topic, as hops are)."""
    w = World(agents=("pike", "nova"), party=True)
    w.max_hops, w.throttle = 10**6, (2, 3)
    one = w.open("human.alice", "task one", to=["pike"])
    two = w.open("human.alice", "task two", to=["nova"])
    for i in range(3):
        assert_woken(w.send("pike", f"x{i}", topic=one, to=["human.alice"]), "human.alice")
    assert_context(w.send("pike", "more", topic=one, to=["human.alice"]), "human.alice", "throttled")
    assert_woken(w.send("nova", "y", topic=two, to=["human.alice"]), "human.alice")
