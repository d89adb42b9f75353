"""The registry's approvals hook (seed 003 §59-61), set on `REGISTRY` when the server's tools are loaded: before a
server tool runs, the workspace's standing rules judge it (ops/approvals.gate: deny, then ask, then allow, the first
matching rule of each winning); an "ask" stores a pending approval that the people who may decide are told of
(the TUI's approval card). The call is then answered `pending`, with the approval: the bridge waits for the
decision (`get_approval`, free) and calls again naming it, and only an approved request runs its call, once. A
denied or expired one answers the call so; the bridge's failing-call guard (agents/tools.FailingCalls) counts it
as any failed call.
"""

from __future__ import annotations

from ..ops import approvals
from ..ops.toolkit import Route


async def gate(route: Route, env, approval: str | None) -> dict | None:
    """None: the call runs; else the call's answer (not run, or waiting for a person)."""
    spec = route.spec
    needs = spec.approval or (route.connection is not None and route.connection[1] != "GET")
    out = await env.manage(approvals.gate, route.agent, route.workspace, spec.name, route.arguments, needs,
                           approval, env.clock())
    for pid, event in out.pop("_notify", ()):
        env.notify(pid, event)
    decision = out["decision"]
    if decision == "allow":
        return None
    if decision == "pending":
        a = out["approval"]
        return {"ok": False, "pending": True, "approval": a,
                "error": f"{spec.name} waits for a person's approval (approval {a['id']}, until it expires); call "
                         "it again with this approval once it is decided"}
    why = {"deny": "a person denied it" if out.get("rule") is None else f"a standing rule denies it ({out['rule']})",
           "expired": "its approval expired before anyone decided"}.get(decision, decision)
    return {"ok": False, "error": f"{spec.name} was not run: {why}", "decision": decision}
