"""The operator's configuring commands, run as processes (issue 20: "Everything configurable from the TUI and the
admin CLI": profiles, a party's participants and Lead, workspace settings, pins)."""

from __future__ import annotations

from .test_admin_cli import PW, cli, served  # noqa: F401 (a fixture)


async def test_profiles_settings_pins_and_parties_from_the_command_line(tmp_path):
    """docs/protocol.md, "Operator commands": each prints its result as JSON on its last line, errors as
    `{"error":…,"detail":…}` with exit code 1."""
    d = tmp_path
    await cli(d, "add-person", "alice", "--password", PW)
    team = (await cli(d, "add-workspace", "team", "--owner", "alice"))["id"]
    lab = (await cli(d, "add-workspace", "lab", "--owner", "alice"))["id"]
    pike = (await cli(d, "add-agent", "pike", "--owner", "alice"))["id"]
    await cli(d, "add-agent", "nova", "--owner", "alice")

    out = await cli(d, "set-profile", "pike", "--title", "Reviewer", "--capabilities", "review, python", "--cost", "3",
                    "--generalist", "on")
    assert out["profile"] == {"title": "Reviewer", "description": "", "capabilities": ["review", "python"],
                              "generalist": True, "tools": [], "cost": 3}
    await cli(d, "set-profile", "pike", "--description", "Reads diffs.")  # one field: the others stay
    assert (await cli(d, "show-profile", "pike"))["profile"]["capabilities"] == ["review", "python"]
    bad = await cli(d, "set-profile", "pike", "--title", "a\x07b", ok=False)
    assert bad["error"] == "bad_name" and "U+0007" in bad["detail"]

    s = await cli(d, "set-setting", "team", "party.maxHops", "3")
    assert s["value"] == 3 and s["settings"]["party.maxHops"] == 3
    assert (await cli(d, "set-setting", "team", "party.maxHops", "-2", ok=False))["error"] == "bad_amount"
    assert (await cli(d, "set-setting", "team", "party.maxHops", "three", ok=False))["error"] == "bad_amount"
    await cli(d, "set-setting", "team", "assign.weights", '{"online": 0}')
    shown = await cli(d, "show-settings", "team")
    assert shown["set"] == {"party.maxHops": 3, "assign.weights": {"online": 0}}
    assert shown["settings"]["party.throttleDirect"] == 8
    await cli(d, "set-setting", "team", "party.maxHops", "null")
    assert "party.maxHops" not in (await cli(d, "show-settings", "team"))["set"]

    pinned = await cli(d, "set-pins", "pike", "team")
    assert pinned["pinned"] == [team] and pinned["workspaces"] == [team]
    assert (await cli(d, "set-pins", "pike", ok=False))["error"] == "bad_args"
    back = await cli(d, "set-pins", "pike", "--unpin")
    assert back["pinned"] is None and {team, lab} <= set(back["workspaces"])

    # General is everyone's: no party to change (a party's own conversation: tests/net/test_configure.py)
    no = await cli(d, "add-participant", "team", "general", "pike", ok=False)
    assert no["error"] == "unknown_conversation"


async def test_a_party_s_participants_and_lead_from_the_command_line_reach_a_running_server(served):
    """Seed 004: "A Party with a Lead sends it every message nobody else is addressed in"; the operator sets the
    Lead (as the workspace's owner) while the server runs, and the next message goes to it."""
    d = served.dir
    await cli(d, "add-person", "alice", "--password", PW)
    team = (await cli(d, "add-workspace", "team", "--owner", "alice"))["id"]
    await cli(d, "add-agent", "pike", "--owner", "alice")
    nova = (await cli(d, "add-agent", "nova", "--owner", "alice"))["id"]
    await cli(d, "fund", "pike", "100")
    await cli(d, "fund", "nova", "100")
    alice = await served.person("alice", PW)
    first = await alice.send(workspace=team, conversation="dm:pike", topic="new", title="Hi", type="inform",
                             to=["pike"], text="hello")
    cid = first["message"]["conversation"]
    added = await cli(d, "add-participant", "team", cid, "nova")
    assert added["changed"] and nova in added["members"]
    assert (await cli(d, "set-lead", "team", cid, "nova"))["lead"] == nova
    assert (await cli(d, "set-lead", "team", cid, "alice", ok=False))["error"] == "unknown_recipient"  # an agent only
    sent = await alice.send(workspace=team, conversation=cid, topic=first["message"]["topic"], type="request",
                            text="who takes this?")
    assert sent["op"] == "sent" and [x["to"] for x in sent["deliveries"] if x["wake"]] == [nova], sent
    assert (await cli(d, "set-lead", "team", cid, "none"))["lead"] is None
    removed = await cli(d, "remove-participant", "team", cid, "nova")
    assert removed["changed"] and nova not in removed["members"]
