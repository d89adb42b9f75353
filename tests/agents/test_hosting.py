"""Hosted agents (seed 003 §21-25, §29, §69): the host supervisor over loopback, with the built-in backend."""

from __future__ import annotations

import asyncio
import json

import pytest

from ygg_server.agents.hosting import HostRefused, HostSupervisor
from ygg_server.client import Client, Refused
from ygg_server.ops import hosting

from .conftest import history, until


@pytest.fixture
def host(server):
    """alice's host, with its key."""
    return server.admin(hosting.add_host, "alice", "vm-1")


async def supervise(server, host, root, **kw) -> HostSupervisor:
    sup = await HostSupervisor(server.url, host["host_key"], root, **kw).start()
    server.supervisors = getattr(server, "supervisors", []) + [sup]
    return sup


@pytest.fixture(autouse=True)
async def _stop_supervisors(server):
    yield
    for sup in getattr(server, "supervisors", []):
        await sup.stop()


async def test_a_wake_starts_the_bridge_of_a_hosted_agent_that_is_not_running(server, host, tmp_path):
    """Seed 003 §29: "the same wake broadcast reaches the host machine, which then starts the agent process to
    handle the work"; §21: "each with its own private working directory"."""
    rid = server.agent("researcher")
    server.agent("reviewer")
    for name in ("researcher", "reviewer"):
        server.admin(hosting.set_runtime, name, "hosted", host["id"])
    sup = await supervise(server, host, tmp_path / "host")
    assert sup.running == {} and sorted(a["name"] for a in sup.agents.values()) == ["researcher", "reviewer"]
    alice = await server.person("alice")
    sent = await alice.send(workspace=server.ws, conversation="general", topic="new", title="Credits",
                            type="request", to=["researcher"], text="How do credits work?")
    q = sent["message"]

    async def answered():
        msgs = await history(alice, server.ws, q["topic"])
        return next((m for m in msgs if m["type"] == "response" and m["in_reply_to"] == q["id"]), None)

    answer = await until(answered)
    assert answer["author"] == rid
    assert list(sup.running) == [rid]  # only the agent with work was started
    assert (tmp_path / "host" / "agents" / rid / "state.json").exists()  # in its own working directory


async def test_after_the_host_comes_back_its_agents_restart_one_at_a_time(server, host, tmp_path):
    """Seed 003 §25: "a worker restarts them one at a time, waiting for each to become reachable again before
    moving to the next"."""
    names = ["lead", "researcher", "reviewer", "eager"]
    for name in names:
        server.agent(name)
        server.admin(hosting.set_runtime, name, "hosted", "vm-1")
    first = await supervise(server, host, tmp_path / "host")
    for aid in list(first.agents):
        first._enqueue(aid)
    await first.idle()
    assert len(first.running) == 4
    await first.stop()  # the host goes away…
    again = await supervise(server, host, tmp_path / "host")  # …and comes back
    await again.idle()
    starts = again.starts
    assert [s["name"] for s in starts] == [s["name"] for s in first.starts]  # all four, in the order they ran
    assert all(s["reachable"] is not None for s in starts)
    for before, after in zip(starts, starts[1:]):  # each asked for only once the one before was reachable
        assert after["asked"] >= before["reachable"]
    t0 = starts[0]["asked"]
    timings = [(s["name"], round(s["asked"] - t0, 3), round(s["reachable"] - t0, 3)) for s in starts]
    print("restart timings (name, asked, reachable; seconds):", json.dumps(timings))


async def test_switching_to_local_clears_the_host_assignment_completely(server, host, tmp_path):
    """Seed 003 §24: "Switching an agent's runtime from hosted back to local clears its host assignment
    completely; there is no in-between state"."""
    rid = server.agent("researcher")
    server.admin(hosting.set_runtime, "researcher", "hosted", "vm-1")
    sup = await supervise(server, host, tmp_path / "host")
    sup._enqueue(rid)
    await sup.idle()
    bridge, task = sup.running[rid]
    token = bridge.cfg.api_key
    assert token.startswith("yggx_")
    out = server.admin(hosting.set_runtime, "researcher", "local")
    assert out == {"agent": rid, "runtime": "local", "host": None}
    assert server.conn.execute("SELECT COUNT(*) FROM agent_hosts").fetchone()[0] == 0
    assert server.conn.execute("SELECT COUNT(*) FROM host_tokens").fetchone()[0] == 0
    assert server.admin(hosting.hosted_agents, host["id"]) == []
    # its hosted bridge's session ended: its connection closes, and its token no longer signs it in again
    await until(lambda: not bridge.client.connected.is_set())
    with pytest.raises(Refused):
        await Client(server.url, api_key=token).connect()
    # and a wake for it no longer goes to the host: nothing is started there
    alice = await server.person("alice")
    await alice.send(workspace=server.ws, conversation="general", topic="new", title="Local now", type="request",
                     to=["researcher"], text="Are you there?")
    assert await asyncio.wait_for(sup._call({"op": "agents"}), 5) == {"op": "agents", "ref": sup._ref, "agents": []}
    assert sup._queue.empty()
    # hosted again: its next wake starts a new bridge (the one whose token was refused is stopped)
    server.admin(hosting.set_runtime, "researcher", "hosted", "vm-1")
    await asyncio.wait_for(sup._call({"op": "agents"}), 5)  # (the server read the assignment again)
    q = (await alice.send(workspace=server.ws, conversation="general", topic="new", title="Hosted again",
                          type="request", to=["researcher"], text="And now?"))["message"]

    async def answered():
        return any(m["in_reply_to"] == q["id"] for m in await history(alice, server.ws, q["topic"]))

    await until(answered)
    assert len(sup.starts) == 2 and sup.running[rid][0] is not bridge


async def test_a_host_key_only_opens_the_hosts_connection_and_tokens_only_sign_in(server, host, tmp_path):
    """Seed 003 §69: "a narrower token issued by the host, good only for that exchange step, not for acting as
    the agent directly"."""
    rid = server.agent("researcher")
    server.admin(hosting.set_runtime, "researcher", "hosted", "vm-1")
    with pytest.raises(Refused):  # the host key is no agent's credential
        await Client(server.url, api_key=host["host_key"]).connect()
    with pytest.raises(HostRefused):  # and the agent's key is no host's
        await HostSupervisor(server.url, server.keys["researcher"], tmp_path).start()
    sup = await supervise(server, host, tmp_path / "host")
    token = (await sup._call({"op": "token", "agent": rid}))["token"]
    with pytest.raises(Refused):  # a narrow token is not a session token
        await Client(server.url, token=token).connect()
    me = Client(server.url, api_key=token)  # it is exchanged for the agent's session
    await me.connect()
    server.clients.append(me)
    assert me.me["id"] == rid and me.token.startswith("yggs_")
    other = server.agent("reviewer")  # not on this host: no token for it
    assert (await sup._call({"op": "token", "agent": other}))["code"] == "not_found"


def test_the_operator_adds_a_host_and_moves_an_agent_by_the_admin_cli(server, capsys):
    """`ygg-server admin add-host` prints the host key once; `set-runtime` assigns an agent and takes it back."""
    from ygg_server.cli import main

    rid = server.agent("researcher", fund=0)
    data = str(server.tmp)

    def admin_cli(*args) -> dict:
        assert main(["admin", "--data-dir", data, *args]) == 0
        return json.loads(capsys.readouterr().out.strip().splitlines()[-1])

    made = admin_cli("add-host", "vm-2", "--owner", "alice")
    assert made["host_key"].startswith("yggh_") and made["name"] == "vm-2"
    assert admin_cli("set-runtime", "researcher", "hosted", "--host", "vm-2") == {
        "agent": rid, "runtime": "hosted", "host": made["id"]}
    assert admin_cli("set-runtime", "researcher", "local") == {"agent": rid, "runtime": "local", "host": None}
