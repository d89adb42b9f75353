"""Joining by invitation (issue 18) in tests: the invitee accepts what a person invited them to over the socket."""

from __future__ import annotations


async def accepted(server, handle: str, place: str | None = None, agents: bool = True) -> dict:
    """@`handle` (signed in anew) accepts its invitation into `place` (a workspace or an organization id; None: the
    newest), letting its agents follow (as before invitations, when adding brought them) unless `agents` is False."""
    client = await server.person(handle)
    found = (await client.call("list_invitations"))["invitations"]
    inv = next(i for i in found if place is None or i[i["kind"]] == place)
    return await client.call("accept_invitation", invitation=inv["id"], agents=agents)
