"""The bridge over the one tool registry (issue 23; seed 003 §51-52): the tools offered are those the server says
are attached; each call is checked against the registry's schema; the server's tools are routed there."""

from __future__ import annotations

from ygg_server.agents.backends import Backend
from ygg_server.agents.bridge import Bridge
from ygg_server.agents.types import ToolCall, TurnInput, TurnOutput
from ygg_server.ops import toolkit

from .conftest import until


class Scripted(Backend):
    """Calls the tools it is given, one round each, then answers; records what it was offered and told."""

    def __init__(self, rounds: list[list[ToolCall]]):
        self.rounds, self.inputs = rounds, []

    async def turn(self, inp: TurnInput) -> TurnOutput:
        self.inputs.append(inp)
        k = len(inp.steps)
        if k < len(self.rounds):
            return TurnOutput(tool_calls=self.rounds[k])
        return TurnOutput(text="done", type="response", state="done")


async def test_the_model_is_offered_the_attached_tools_and_calls_are_validated_then_routed(server):
    """§52: "An agent sees only the tools attached to it, not the whole catalog every turn." §51: "A directive or
    tool call is validated against this registry, which also routes the call to the right handler." """
    aid = server.agent("researcher")
    owner = server.conn.execute("SELECT owner FROM agents WHERE id = ?", (aid,)).fetchone()[0]
    server.admin(toolkit.set_tools, aid, owner, add=["remember", "memory_search"],
                 drop=["persona_write", "handoff", "send_message", "settle_thread", "search_corpus", "search_history",
                       "load_skill", "loop_verdict", "pulse_report", "file_read"])
    backend = Scripted([[ToolCall(id="a", name="remember", arguments={"note": "Alice prefers short answers"})],
                        [ToolCall(id="b", name="remember", arguments={"note": 5})],
                        [ToolCall(id="c", name="send_message", arguments={"text": "hi"})],
                        [ToolCall(id="d", name="memory_search", arguments={"query": "alice short"})]])
    b = await server.run(Bridge(server.config("researcher"), backend))
    alice = await server.person("alice")
    await alice.send(workspace=server.ws, conversation="general", topic="new", title="Q", type="request",
                     to=["researcher"], text="Remember how I like answers.")
    await until(lambda: b.stats["acked"] >= 1)
    offered = sorted(t.name for t in backend.inputs[0].tools)
    assert offered == ["memory_search", "persona_read", "remember"]
    results = [r for s in backend.inputs[-1].steps for r in s.results]
    assert [r.is_error for r in results] == [False, True, True, False]
    assert results[1].content == "remember: note must be a string"  # checked before it ran
    assert results[2].content == "you have no tool called send_message"
    assert "Alice prefers short answers" in results[3].content  # routed to the server: stored, then found there
    stored = server.conn.execute("SELECT text, workspace FROM memories WHERE agent = ?", (aid,)).fetchall()
    assert stored == [("Alice prefers short answers", server.ws)]


async def test_the_bridge_names_its_conversation_so_the_right_connected_account_is_used(server, tmp_path, monkeypatch):
    """Seed 003 §64: "Which account is used is decided by the conversation the agent is acting in, not hard-coded in
    the agent": the same agent, asked in General and then in its owner's direct conversation, reads a GitHub file
    as the workspace's account, then as its owner's (a fake GitHub on loopback, tests/tools/fake_oauth.py)."""
    import asyncio

    from ygg_server.tools import server_tools
    from ygg_server.tools.oauth import OAuthClient
    from ygg_tui import loopback

    from tests.tools.fake_oauth import FakeProvider
    from tests.tools.test_connected_accounts import browser

    monkeypatch.setenv("YGG_SECRET_KEY_FILE", str(tmp_path / "secret.key"))
    gh = FakeProvider("github")
    try:
        oauth = OAuthClient(providers={"github": gh.provider()})
        server.gw.oauth_client = oauth
        server.gw.tool_env = server_tools.Env(read=server.gw.read, manage=server.gw.manage, clock=server.gw.clock,
                                              oauth=oauth)
        aid = server.agent("researcher")
        server.admin(toolkit.set_tools, aid, server.conn.execute("SELECT owner FROM agents WHERE id = ?",
                                                                 (aid,)).fetchone()[0], add=["github_read_file"])
        alice = await server.person("alice")
        for login, ws in (("alice-own", None), ("team-bot", server.ws)):
            gh.login, opened = login, []
            await loopback.connect(alice.call, "github", lambda u: opened.append(asyncio.create_task(browser(u))),
                                   workspace=ws, timeout=10)
            await asyncio.gather(*opened)
        read = ToolCall(id="r", name="github_read_file", arguments={"repo": "acme/site", "path": "README.md"})
        backend = Scripted([[read]])
        b = await server.run(Bridge(server.config("researcher", tools=["github_read_file"]), backend))
        await alice.send(workspace=server.ws, conversation="general", topic="new", title="Q", type="request",
                         to=["researcher"], text="What does the README say?")
        await until(lambda: b.stats["acked"] >= 1)
        await alice.send(workspace=server.ws, conversation="dm:researcher", topic="new", title="Q", type="request",
                         to=["researcher"], text="And with my account?")
        await until(lambda: len(gh.calls) >= 4)  # (two /user at connecting, then one read per turn)
        assert [c[0] for c in gh.calls if c[2].startswith("/repos/")] == ["team-bot", "alice-own"]
        assert gh.problems == []
    finally:
        gh.close()
