"""The registry itself (issue 23; seed 003 §51): registration rules and the seams left for artifacts and
approvals."""

from __future__ import annotations

import pytest

from ygg_server.ops.refusals import Refused
from ygg_server.ops.toolkit import Route
from ygg_server.tools import server_tools
from ygg_server.tools.registry import DEFAULT, REGISTRY, Registry, ToolSpec


async def _echo(env, route):
    return {"echo": route.arguments}


def test_every_tool_is_registered_once_with_its_schema_and_where_it_runs():
    assert set(DEFAULT) <= set(REGISTRY.names())
    assert not {"web_search", "fetch_page"} & set(DEFAULT)  # what reaches outside is attached deliberately
    for spec in REGISTRY.specs():
        assert spec.parameters["type"] == "object" and spec.runs in ("bridge", "server")
        assert (spec.handler is not None) == (spec.runs == "server")
    r = Registry()
    r.register(ToolSpec(name="make_pdf", description="A PDF of an artifact.", handler=_echo))
    for bad in (ToolSpec(name="make_pdf", description="again", handler=_echo),  # twice
                ToolSpec(name="api_crm", description="owners' connections only", handler=_echo),
                ToolSpec(name="Bad Name", description="", handler=_echo),
                ToolSpec(name="no_handler", description="a server tool without its handler")):
        with pytest.raises(ValueError):
            r.register(bad)
    assert r.check(r.get("make_pdf"), "make_pdf", {}) is None
    assert r.check(r.get("nope"), "nope", {}) == "there is no tool called nope"


async def test_a_tool_that_needs_approval_never_runs_unapproved():
    """The approvals seam (seed 003 §59: some calls need "a person to approve or deny that particular call before
    it runs"): refused while no approver is plugged in; run only when it says yes."""
    r = Registry()
    spec = r.register(ToolSpec(name="pay", description="Pay an invoice.", handler=_echo, approval=True))
    route = Route("agent.x", "human.y", "ws", spec, {"amount": 3})
    env = server_tools.Env(read=None, manage=None, clock=lambda: 0)
    with pytest.raises(Refused) as e:
        await server_tools.run(route, env, r)
    assert e.value.reason == "approval_unavailable"
    answers = [{"ok": False, "error": "pay was not approved"}, None]  # the hook's answer; None: it runs

    async def approver(route, env, approval):
        return answers.pop(0)

    r.set_approver(approver)
    assert await server_tools.run(route, env, r) == {"ok": False, "error": "pay was not approved"}
    assert await server_tools.run(route, env, r) == {"ok": True, "result": {"echo": {"amount": 3}}}
