"""Seed 003 §14: assigning work to the best-scoring agent (docs/rules.md, "Assignment scoring")."""

from hypothesis import given, settings, strategies as st

from ygg_server.core import Profile
from ygg_server.core.assign import WEIGHTS, assign, eligible, explain, rank, weights_of
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
