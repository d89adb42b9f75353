"""Seed 003 §14: assigning work to the best-scoring agent (docs/rules.md, "Assignment scoring")."""

from hypothesis import given, settings, strategies as st

from ygg_server.core import Profile
from ygg_server.core.assign import WEIGHTS, assign, eligible, explain, left_out, rank, weights_of
from ygg_server.core.model import Fitness

from .harness import World, assert_refused, assert_woken

AGENTS = ("ana", "bo", "cy", "dee")


def world(**kw) -> World:
    w = World(agents=AGENTS, **kw)
    w.profiles.update({
        "ana": Profile(title="Translator", capabilities=("translation", "french"), tools=("deepl",)),
        "bo": Profile(title="Engineer", capabilities=("python", "translation"), cost=5),
        "cy": Profile(title="Writer", capabilities=("copywriting",)),
        "dee": Profile(title="Translator", capabilities=("translation",), tools=("deepl", "glossary")),
    })
    w._rebuild()
    return w


def test_a_request_to_a_capability_goes_to_the_highest_score():
    """Seed 003 §14: "When a task needs an owner, a weighted score is computed for every eligible agent" and
    "The highest score gets the task."

    Only agents declaring the capability are eligible; the chosen one is the sole recipient and is woken;
    the message keeps the whole ranking."""
    w = world()
    w.fitness = {"ana": Fitness(online=True), "dee": Fitness(online=False), "bo": Fitness(online=True)}
    d = w.send("human.alice", "please translate this into French", to=["capability:translation"])
    assert d.message.to == ("ana",)
    assert_woken(d, "ana")
    a = d.message.assignment
    assert a.capability == "translation" and a.chosen == "ana"
    assert [s.agent for s in a.scores][0] == "ana" and {s.agent for s in a.scores} == {"ana", "bo", "dee"}
    assert [p.name for p in a.scores[0].parts] == list(WEIGHTS)
    assert a.scores[0].total == max(s.total for s in a.scores)


def test_every_part_of_the_score_counts():
    """Seed 003 §14: "how well its declared capabilities match the work, how well its role fits, whether it is
    really online now, how much load it already carries, how much trust it has earned over time, cost, its usual
    response time, and how connected it already is to the tools the task needs"

    Two otherwise equal translators; each part alone tips the choice."""
    w = world()
    slow_bo = Fitness(load=9, trust=0.0, response_us=10**10)  # bo (an engineer who also translates) loses on those
    d, fit = w.directory, lambda **k: {"ana": Fitness(**k.get("ana", {})), "dee": Fitness(**k.get("dee", {})),
                                       "bo": slow_bo}
    only = lambda part: {k: (1.0 if k == part else 0.0) for k in WEIGHTS}  # noqa: E731
    top = lambda part, text="translate", f=None: rank(d, "translation", text, f or fit(), only(part))[0].agent  # noqa: E731
    assert top("capabilities", "translate to french") == "ana"  # ana also declares french
    assert top("online", f=fit(dee={"online": True})) == "dee"
    assert top("load", f=fit(ana={"load": 3})) == "dee"
    assert top("trust", f=fit(ana={"trust": 0.2}, dee={"trust": 0.9})) == "dee"
    assert top("speed", f=fit(ana={"response_us": 9_000_000}, dee={"response_us": 1_000_000})) == "dee"
    assert top("tools", "translate with the glossary") == "dee"
    scores = {s.agent: s for s in rank(d, "translation", "x", fit(), only("cost"))}
    assert scores["bo"].total < scores["ana"].total  # bo declares a cost of 5
    roles = {s.agent: s.total for s in rank(d, "translation", "x", fit(), only("role"))}
    assert roles["bo"] < roles["ana"] == roles["dee"]  # Engineer vs Translator for translation


def test_weights_are_the_workspaces():
    """Seed 003 §14: "a weighted score is computed for every eligible agent" (Core decision: the weights are
    the workspace setting assign.weights, over the defaults; unknown parts and negative numbers are ignored)."""
    w = world()
    w.fitness = {"ana": Fitness(online=True), "dee": Fitness(online=False, trust=1.0)}
    assert w.send("human.alice", "translate", to=["capability:translation"]).message.to == ("ana",)
    w.weights = weights_of({"online": 0, "trust": 10, "bogus": 3, "load": -1})
    assert w.weights["load"] == WEIGHTS["load"] and "bogus" not in w.weights
    assert w.send("human.alice", "translate", to=["capability:translation"]).message.to == ("dee",)


def test_no_eligible_agent_is_refused_with_a_reason():
    """Seed 003 §14: "a weighted score is computed for every eligible agent" (Core decision: when none is
    eligible the send is refused no_eligible_agent, and an agent is never assigned its own request)."""
    w = world()
    assert_refused(w.send("human.alice", "hi", to=["capability:astrology"]), "no_eligible_agent")
    assert_refused(w.send("cy", "hi", to=["capability:copywriting"]), "no_eligible_agent")
    assert_refused(w.send("human.alice", "hi", to=["capability:"]), "unknown_recipient")
    assert_refused(w.send("human.alice", "hi", to=["capability:python", "capability:translation"]), "unknown_recipient")
    w.member("bo", receive=False)
    assert eligible(w.directory, "python") == ()


def test_the_breakdown_is_explained():
    """Seed 003 §14: "The highest score gets the task." (Core decision: the ranking travels with the message
    as `assignment`, each part with its value, weight and points, for the workspace's people to see.)"""
    w = world()
    a = assign(w.directory, "translation", "translate", {}, WEIGHTS)
    out = explain(a)
    assert out["chosen"] == a.chosen and out["scores"][0]["agent"] == a.chosen
    first = out["scores"][0]
    assert abs(first["total"] - sum(p["points"] for p in first["parts"])) < 1e-3
    assert all(p["points"] == round(p["value"] * p["weight"], 4) for p in first["parts"])


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.sampled_from(("ana", "bo", "dee")),
                       st.builds(Fitness, st.booleans(), st.integers(0, 20), st.none() | st.floats(0, 1),
                                 st.none() | st.integers(0, 10**8)), max_size=3),
       st.dictionaries(st.sampled_from(sorted(WEIGHTS)), st.floats(0, 10), max_size=8))
def test_the_chosen_agent_always_has_the_top_score(fitness, weights):
    """Seed 003 §14: "The highest score gets the task." whatever the data and the weights."""
    w = world()
    a = assign(w.directory, "translation", "translate this", fitness, weights_of(weights))
    assert a.chosen == a.scores[0].agent and all(a.scores[0].total >= s.total for s in a.scores)
    assert all(0 <= p.value <= 1 for s in a.scores for p in s.parts)


def test_assignment_leaves_out_agents_the_sender_may_not_send_to():
    """Seed 002: "Can message: the agents it may send to. Empty means anyone in the workspace." and
    "Takes messages from: the agents that may send to it"

    Seed 003 §14: "a weighted score is computed for every eligible agent": an agent the sender may not
    message, or one that does not take messages from it, is not eligible, so the request goes to the best
    agent that can take it (instead of being refused by the top scorer); the assignment names who was left
    out and why; with nobody left the send is refused no_eligible_agent, naming each agent's reason."""
    w = world()
    w.fitness = {"ana": Fitness(online=True), "bo": Fitness(online=False), "dee": Fitness(online=False)}
    first = w.send("cy", "translate this", to=["capability:translation"]).message
    assert first.to == ("ana",)
    again = lambda: w.send("cy", "translate this", topic=first.topic, title=None, to=["capability:translation"])  # noqa: E731
    w.member("cy", can_message=frozenset({"bo", "dee"}))  # cy may not message ana, the top scorer
    d = again()
    assert d.message.to == ("dee",) and ("ana", "can_message") in {(x.agent, x.reason) for x in d.message.assignment.left_out}
    assert_woken(d, "dee")
    assert [x["detail"] for x in explain(d.message.assignment)["left_out"]] == ["you may not message ana"]
    w.member("dee", takes_from=frozenset({"human.alice"}))  # and dee does not take messages from cy
    d = again()
    assert d.message.to == ("bo",)
    assert {(x.agent, x.reason) for x in d.message.assignment.left_out} == {("ana", "can_message"), ("dee", "takes_from")}
    w.member("bo", receive=False)
    r = again()
    assert_refused(r, "no_eligible_agent")
    r = r.refusal
    assert "you may not message ana" in r.detail and "dee does not take messages from you" in r.detail
    assert "bo does not receive messages here" in r.detail
    # alice, whom dee takes messages from and who may message anyone, still gets dee or ana
    assert w.send("human.alice", "translate this", to=["capability:translation"]).message.to[0] in ("ana", "dee")


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(("human.alice",) + AGENTS),
       st.dictionaries(st.sampled_from(AGENTS), st.none() | st.frozensets(st.sampled_from(("human.alice",) + AGENTS))),
       st.dictionaries(st.sampled_from(AGENTS), st.none() | st.frozensets(st.sampled_from(("human.alice",) + AGENTS))),
       st.dictionaries(st.sampled_from(AGENTS), st.booleans()),
       st.dictionaries(st.sampled_from(("ana", "bo", "dee")), st.builds(Fitness, st.booleans(), st.integers(0, 20))))
def test_the_chosen_agent_is_always_one_the_sender_may_send_to(sender, can, takes, receive, fitness):
    """Seed 002: "Can message: the agents it may send to. Empty means anyone in the workspace." and
    "Takes messages from: the agents that may send to it"

    Whatever the permissions: an assigned request goes to an agent the sender may message and that takes
    messages from it (so the send is never then refused permission_denied), and it is refused
    no_eligible_agent only when every agent that declares the capability is left out."""
    w = world()
    w.fitness = fitness
    for a in AGENTS:
        w.member(a, can_message=can.get(a), takes_from=takes.get(a), receive=receive.get(a, True))
    if sender != "human.alice":
        w.member("human.alice", can_message=None)
    d = w.send(sender, "translate this", to=["capability:translation"])
    declaring = {"ana", "bo", "dee"} - {sender}
    if d.refusal is not None:
        assert d.refusal.reason == "no_eligible_agent", d.refusal
        assert all(w.directory.barred(sender, a) is not None for a in declaring)
        assert {x.agent for x in left_out(w.directory, "translation", sender, frozenset((sender,)))} == declaring
    else:
        (chosen,) = d.message.to
        m = w.directory.memberships
        assert chosen in declaring and m[chosen].receive
        assert m[sender].can_message is None or chosen in m[sender].can_message
        assert m[chosen].takes_from is None or sender in m[chosen].takes_from
        a = d.message.assignment
        assert {s.agent for s in a.scores} | {x.agent for x in a.left_out} == declaring
