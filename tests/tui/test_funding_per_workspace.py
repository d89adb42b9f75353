"""The TUI's funding requests, per workspace (issue 17): an agent has a wallet in each workspace it works in."""

from ygg_tui.state import Store, Workspace


def _request(ws: str, n: int) -> dict:
    return {"message": {"id": f"m{n}", "workspace": ws, "conversation": f"general-{ws}", "topic": f"t{n}",
                        "author": "system.ygg", "type": "inform", "notice": "funding_request", "agent": "agent.r",
                        "text": "roamer is out of credits (needs 1, wallet 0, pool 0). Fund it to let it go on.",
                        "created_at": "2026-01-01T00:00:00Z"}, "id": n, "wake": False}


def test_a_funding_in_one_workspace_leaves_the_request_of_another_standing():
    """Seed 000: "Workspaces are isolated from each other." and "the people who can fund it see a request".
    Before: requests were kept by agent alone, so an agent out of credits in two workspaces showed once, and a
    funding in either cleared the other's request from the waiting banner."""
    s = Store()
    for ws in ("A", "B"):
        s.workspaces[ws] = Workspace(ws, ws, role="owner")
    s.apply_deliveries([_request("A", 1), _request("B", 2)])
    assert set(s.funding) == {("A", "agent.r"), ("B", "agent.r")}
    s.apply_event({"kind": "balance", "workspace": "B", "account": "agent.r", "balance": 5})
    assert set(s.funding) == {("A", "agent.r")}
