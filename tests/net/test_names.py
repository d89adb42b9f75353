"""Names and titles are one bounded line of printable text, and a place holds a name once (docs/protocol.md,
"Names and titles"): on the socket's ops, the admin functions the CLI runs, and a send's `title`."""

from __future__ import annotations

import pytest

from ygg_server.ops import admin

pytestmark = pytest.mark.backends("sqlite", "postgres")

PW = "pw-" + "x" * 8
ESC = "\x1b[2J"  # clears a terminal that prints it


async def test_names_and_titles_are_bounded_and_printable_on_every_op(team):
    """A 1 MB workspace name, or a title that clears the screen of whoever prints it, was stored as sent. Each
    is refused, naming the rule and the bound; at the bound a name goes through, stored trimmed."""
    alice = await team.person("alice")

    async def refused(op, **fields):
        r = await alice.request(op, **fields)
        assert r["op"] == "error", (op, fields, r)
        return r["code"], r["detail"]

    code, detail = await refused("create_workspace", name="w" * 81)
    assert code == "bad_name" and "a workspace's name is at most 80 characters (this one has 81)" in detail
    code, detail = await refused("create_workspace", name="x" * (1 << 19))  # (half a megabyte: under MAX_FRAME)
    assert code == "bad_name" and "at most 80" in detail
    code, detail = await refused("create_workspace", name="lab" + ESC)
    assert code == "bad_name" and "U+001B at character 4" in detail
    code, detail = await refused("create_org", name="acme\nwelcome")
    assert code == "bad_name" and "an organization's name has no control characters, line breaks" in detail
    code, detail = await refused("create_org", name="evil\u2028corp")
    assert code == "bad_name" and "U+2028" in detail
    code, detail = await refused("add_agent", name="a" * 65)
    assert code == "bad_name" and "an agent's name is at most 64 characters" in detail
    code, detail = await refused("add_agent", name=" scout")
    assert code == "bad_name" and "no spaces around it" in detail
    code, detail = await refused("add_group", workspace=team.ws, name="gpj.exe\u202e", members=["researcher"])
    assert code == "bad_name" and "bidi" in detail and "U+202E" in detail
    code, detail = await refused("add_group", workspace=team.ws, name="g" * 65, members=["researcher"])
    assert code == "bad_name" and "a group's name is at most 64 characters" in detail

    made = await alice.call("create_workspace", name="  " + "w" * 80 + " ")
    assert made["name"] == "w" * 80, "trimmed, then bounded"
    names = {w["id"]: w["name"] for w in (await alice.call("list_workspaces"))["workspaces"]}
    assert names[made["id"]] == "w" * 80
    assert (await alice.call("add_agent", name="s" * 64))["name"] == "s" * 64
    assert (await alice.call("add_group", workspace=team.ws, name="g" * 64, members=["researcher"]))["name"] == "g" * 64


async def test_a_topics_title_is_one_bounded_line(team):
    """A title is set at a topic's first message; a long one or one with a line break or an escape is refused
    `bad_frame`, naming `title` and the bound, and nothing is stored. Message text keeps its newlines."""
    alice = await team.person("alice")
    for title, words in (("t" * 101, "a topic's title is at most 100 characters (this one has 101)"),
                         ("Review\nthe patch", "U+000A at character 7"),
                         ("Review" + ESC, "U+001B")):
        r = await alice.request("send", workspace=team.ws, topic="new", title=title, to=["researcher"], text="hi")
        assert (r["op"], r["code"]) == ("error", "bad_frame") and words in r["detail"], r
    assert (await alice.call("list_topics", workspace=team.ws))["topics"] == [], "nothing stored"
    r = await alice.send(workspace=team.ws, topic="new", title=" " + "t" * 100 + " ", to=["researcher"],
                         text="line one\nline two")
    assert r["op"] == "sent" and r["message"]["title"] == "t" * 100
    assert r["message"]["text"] == "line one\nline two"


async def test_a_place_holds_a_name_once(team):
    """A second workspace "team" in alice's organization (or " TEAM ", which reads the same) is refused
    `name_taken`, as is one named as her personal workspace; another organization may use the name. One owner's
    organizations are told apart by name too; another person may name theirs alike."""
    alice, bob = await team.person("alice"), await team.person("bob")
    for name in ("team", " TEAM ", "Alice (Personal)"):
        r = await alice.request("create_workspace", name=name)
        assert (r["op"], r.get("code")) == ("error", "name_taken"), (name, r)
        assert "this organization has a workspace called" in r["detail"] and name.strip() in r["detail"]
    acme = team.admin(admin.add_org, "Acme", "alice")["id"]  # (a Team plan: room for workspaces)
    assert (await alice.call("create_workspace", name="team", org=acme))["org"] == acme, "another organization's"
    r = await alice.request("create_workspace", name="Team", org=acme)
    assert r.get("code") == "name_taken", r
    r = await alice.request("create_org", name=" ACME ")
    assert (r.get("code"), r.get("detail")) == ("name_taken", "this person owns an organization called 'ACME' "
                                                               "already; pick another name"), r
    assert (await bob.call("create_org", name="acme"))["name"] == "acme", "another owner's"


def test_the_admin_functions_refuse_what_the_socket_refuses(team):
    """The admin CLI runs these functions: a handle is bounded too (`bad_handle`), and a workspace the operator
    names is checked as one a person names."""
    with pytest.raises(admin.AdminError, match="a handle is at most 40 characters") as e:
        team.admin(admin.add_person, "h" * 41, PW)
    assert e.value.code == "bad_handle"
    assert team.admin(admin.add_person, "h" * 40, PW)["handle"] == "h" * 40
    with pytest.raises(admin.AdminError, match="U\\+0007") as e:
        team.admin(admin.add_workspace, "ding\a", "alice")
    assert e.value.code == "bad_name"
    with pytest.raises(admin.AdminError, match="a workspace called 'Team' already") as e:
        team.admin(admin.add_workspace, "Team", "alice")
    assert e.value.code == "name_taken"


async def test_an_agents_job_title_is_checked_as_every_title_is(team):
    """Seed 004: "Each NPC is told who else is in the Party — names, job titles and a short line from each": the
    job title `set_profile` stores is shown in rosters and lists as a name is, so it is one printable line of at
    most 100 characters, refused `bad_name` naming the rule, nothing stored; blank, it is no title."""
    alice = await team.person("alice")

    async def refused(title):
        r = await alice.request("set_profile", agent="researcher", title=title, description="kept?")
        assert r["op"] == "error" and r["code"] == "bad_name", (title, r)
        return r["detail"]

    assert "an agent's job title is at most 100 characters (this one has 101)" in await refused("t" * 101)
    assert "U+001B at character 4" in await refused("Lib" + ESC)
    assert "an agent's job title has no control characters, line breaks" in await refused("Librarian\nand more")
    assert "U+202E" in await refused("Librarian\u202e")
    assert "is text" in await refused(7)
    stored = team.conn.execute("SELECT profile FROM agents WHERE name = 'researcher'").fetchone()[0]
    assert "kept?" not in stored, "a refused profile changes nothing"

    ok = await alice.call("set_profile", agent="researcher", title="  " + "T" * 100 + " ")
    assert ok["profile"]["title"] == "T" * 100, "at the bound, stored trimmed"
    blank = await alice.call("set_profile", agent="researcher", title="   ")
    assert blank["profile"]["title"] == ""


async def test_an_agents_description_capabilities_and_tools_are_printable_text(team):
    """Seed 004: "Each NPC is told who else is in the Party — names, job titles and a short line from each": the
    rest of a profile is read by other agents and people too (the description's first line in rosters), so it
    is checked as names are (names.py), refused `bad_name` naming the field and the rule, nothing of the profile
    stored. A description may hold newlines and tabs (it is several lines); capabilities and tools are names."""
    alice = await team.person("alice")
    before = team.conn.execute("SELECT profile FROM agents WHERE name = 'researcher'").fetchone()[0]

    async def refused(**fields):
        r = await alice.request("set_profile", agent="researcher", title="Changed?", **fields)
        assert r["op"] == "error" and r["code"] == "bad_name", (fields, r)
        return r["detail"]

    d = await refused(description="Finds things." + ESC)
    assert "an agent's description has no control characters other than newlines and tabs" in d, d
    assert "U+001B at character 14" in d, d
    assert "U+000D" in await refused(description="Finds\rthings")
    assert "U+202E" in await refused(description="Finds \u202ethings")
    assert "U+2028" in await refused(description="Finds\u2028things")
    assert "an agent's description is at most 2000 characters (this one has 2001)" in await refused(
        description="d" * 2001)
    d = await refused(capabilities=["translation", "re\x07view"])
    assert d.startswith("capabilities[1]: an agent's capability has no control characters"), d
    assert "U+0007 at character 3" in d, d
    assert "capabilities[0]: an agent's capability is not empty" in await refused(capabilities=["  "])
    d = await refused(tools=["search", "t" * 101])
    assert d.startswith("tools[1]: an agent's tool is at most 100 characters (this one has 101)"), d
    assert "tools[0]: an agent's tool has no control characters" in await refused(tools=["run\u2066me"])
    assert team.conn.execute("SELECT profile FROM agents WHERE name = 'researcher'").fetchone()[0] == before, \
        "a refused profile changes nothing, its title included"

    ok = await alice.call("set_profile", agent="researcher", description="Finds things.\n\tAnd more.",
                          capabilities=[" translation "], tools=["search"])
    assert ok["profile"]["description"] == "Finds things.\n\tAnd more.", "newlines and tabs are a description's"
    assert ok["profile"]["capabilities"] == ["translation"], "a capability is stored trimmed, as a name is"
    assert ok["profile"]["tools"] == ["search"]
    assert (await alice.call("set_profile", agent="researcher", description=""))["profile"]["description"] == ""


async def test_a_profile_stored_before_the_checks_can_still_be_changed_field_by_field(team):
    """docs/protocol.md, `set_profile`: the fields it is given are checked (names.py); a description stored
    before the checks, with a control character in it, does not block a change of the agent's cost."""
    alice = await team.person("alice")
    team.conn.execute("UPDATE agents SET profile = ? WHERE name = ?",
                      ('{"title": "Old", "description": "old\\u0007text", "capabilities": ["x\\u0007"]}', "researcher"))
    ok = await alice.call("set_profile", agent="researcher", cost=7)
    assert ok["profile"]["cost"] == 7 and ok["profile"]["description"] == "old\x07text", ok
    r = await alice.request("set_profile", agent="researcher", description="new\x07text")
    assert r["op"] == "error" and r["code"] == "bad_name", r
