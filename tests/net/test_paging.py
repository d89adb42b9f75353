"""A long-away participant's backlog is paged: at most `inbox.PAGE` unacked deliveries in memory, in id order, the
next page read as acks make room (ygg_server/net/inbox.py; docs/architecture.md, "Delivery"). PAGE is made small
here so that a backlog of a few pages is quick to build."""

import asyncio

import pytest

from ygg_server.net import inbox
from ygg_server.net.gateway import Conn

pytestmark = pytest.mark.backends("sqlite", "postgres")

PAGE = 12


@pytest.fixture(autouse=True)
def small_pages(monkeypatch):
    monkeypatch.setattr(inbox, "PAGE", PAGE, raising=False)  # (raising: the tree before paging)
    monkeypatch.setattr(inbox, "LOW", PAGE // 2, raising=False)


async def _send(sender, n: int, ws: str, to: str, kind=lambda i: "inform", topic: str | None = None) -> tuple[str, list[str]]:
    """`sender` sends `n` messages to `to` (the type of the i-th: `kind(i)`); returns the topic and the message ids."""
    ids = []
    if topic is None:
        first = await sender.send(workspace=ws, topic="new", title="Backlog", type=kind(0), to=[to], text="0")
        assert first["op"] == "sent", first
        topic, ids, n = first["message"]["topic"], [first["message"]["id"]], n - 1
    for lo in range(0, n, 50):
        replies = await asyncio.gather(*(sender.send(workspace=ws, topic=topic, type=kind(len(ids) + i), to=[to],
                                                     text=f"m{len(ids) + i}") for i in range(min(50, n - lo))))
        assert all(r["op"] == "sent" for r in replies), replies
        ids += [r["message"]["id"] for r in replies]
    return topic, ids


@pytest.fixture
def queued(monkeypatch) -> dict[str, int]:
    """participant -> the most deliver frames ever queued at once for one of its connections on the server."""
    peak: dict[str, int] = {}
    push = Conn.push

    def counting(self, frame):
        push(self, frame)
        n = sum(1 for f in self.queue._queue if _is_deliver(f))
        peak[self.participant] = max(peak.get(self.participant, 0), n)

    monkeypatch.setattr(Conn, "push", counting)
    return peak


def _is_deliver(f: dict | bytes) -> bool:
    """A queued frame: a dict (an agent's wake, dressed as it is written) or its encoded bytes."""
    return f.get("op") == "deliver" if isinstance(f, dict) else f.startswith(b'{"op":"deliver"')


def in_memory(server, pid: str) -> int:
    """How many of agent `pid`'s deliveries its inbox holds in memory (on PostgreSQL they are claimed: none)."""
    ib = server.gw.inboxes.get(pid)
    return len(getattr(ib, "items", ()))


async def _take(client, n: int, seen: list[dict], ack: bool = True) -> None:
    """Receive `n` deliveries, acking each as it comes (when `ack`)."""
    for _ in range(n):
        d = await client.next_delivery(timeout=10)
        seen.append(d)
        if ack:
            assert (await client.ack([d["id"]]))["op"] == "acked"


async def test_a_person_with_more_waiting_than_a_page_gets_each_once_in_id_order(team, queued):
    """Acking as they come, the server queueing a page of them for the connection at most."""
    bob = await team.person("bob")
    _, sent = await _send(bob, 3 * PAGE + 5, team.ws, "@alice")
    alice = await team.person("alice")
    seen: list[dict] = []
    await _take(alice, len(sent), seen)
    ids = [d["id"] for d in seen]
    assert ids == sorted(set(ids)), "each once, in delivery id order"
    assert [d["message"]["id"] for d in seen] == sent
    assert queued[alice.me["id"]] <= PAGE
    with pytest.raises(asyncio.TimeoutError):
        await alice.next_delivery(timeout=0.3)


async def test_a_persons_first_page_comes_before_the_answer_to_her_first_frame(team):
    """The TUI counts what is unread from the deliveries there when its first queries are answered
    (`ygg_tui.session.Session.backlog`): a page of the backlog is queued before any answer."""
    bob = await team.person("bob")
    await _send(bob, 2 * PAGE + 1, team.ws, "@alice")
    alice = await team.person("alice")
    assert (await alice.call("whoami"))["op"] == "whoami"
    assert alice.pending_deliveries() >= PAGE


async def test_a_person_who_acks_nothing_still_gets_the_whole_backlog_and_what_comes_next(team, queued):
    """A person acks what they read (the TUI: when the topic is on screen): unread deliveries must not hold
    back the rest of the backlog, nor new ones; on a second device too."""
    bob = await team.person("bob")
    topic, sent = await _send(bob, 3 * PAGE + 5, team.ws, "@alice")
    phone, laptop = await team.person("alice"), await team.person("alice")
    got = {c: [] for c in (phone, laptop)}
    for c in got:
        await _take(c, len(sent), got[c], ack=False)
    _, more = await _send(bob, 2, team.ws, "@alice", topic=topic)
    for c in got:
        await _take(c, 2, got[c], ack=False)
        assert [d["message"]["id"] for d in got[c]] == sent + more
    assert queued[phone.me["id"]] <= PAGE


async def test_live_messages_while_a_backlog_is_paged_are_neither_lost_nor_duplicated_nor_out_of_order(team):
    bob = await team.person("bob")
    topic, sent = await _send(bob, 3 * PAGE, team.ws, "@alice")
    alice = await team.person("alice")
    seen: list[dict] = []
    live = asyncio.ensure_future(_send(bob, 3 * PAGE, team.ws, "@alice", topic=topic))
    await _take(alice, 6 * PAGE, seen)
    _, more = await live
    ids = [d["id"] for d in seen]
    assert ids == sorted(set(ids))
    assert [d["message"]["id"] for d in seen] == sent + more
    with pytest.raises(asyncio.TimeoutError):
        await alice.next_delivery(timeout=0.3)


async def test_a_disconnect_mid_backlog_and_a_reconnect_get_the_rest(team, queued):
    bob = await team.person("bob")
    _, sent = await _send(bob, 3 * PAGE + 2, team.ws, "@alice")
    first = await team.client(handle="alice", password="pw-" + "x" * 8, reconnect=False)
    seen: list[dict] = []
    await _take(first, PAGE + 3, seen)  # past the first page
    unacked = await first.next_delivery(timeout=10)  # taken, never acked: it comes again
    await first.close()
    again = await team.person("alice")
    rest: list[dict] = []
    await _take(again, len(sent) - len(seen), rest)
    assert queued[again.me["id"]] <= PAGE
    assert rest[0]["id"] == unacked["id"]
    assert [d["message"]["id"] for d in seen + rest] == sent
    with pytest.raises(asyncio.TimeoutError):
        await again.next_delivery(timeout=0.3)


def _wake_every(k: int):
    return lambda i: "request" if i % k == k - 1 else "inform"


async def test_three_connections_of_one_agent_with_a_backlog_of_pages_get_each_delivery_once(team):
    """Wakes with context between them, more than a page before the agent connects and more while it works:
    each delivery reaches exactly one of its connections, once (a wake, or in one wake's context), and each
    wake's context is the deliveries since the wake before it."""
    alice = await team.person("alice")
    topic, sent = await _send(alice, 4 * PAGE, team.ws, "researcher", _wake_every(3))
    conns = [await team.client(api_key=team.keys["researcher"]) for _ in range(3)]
    pid = conns[0].me["id"]
    frames: list[dict] = []
    stop = asyncio.Event()

    async def drain(c):
        while not stop.is_set():
            try:
                d = await c.next_delivery(timeout=0.2)
            except asyncio.TimeoutError:
                continue
            frames.append(d)
            assert in_memory(team, pid) <= PAGE
            await c.ack([d["id"]])

    tasks = [asyncio.ensure_future(drain(c)) for c in conns]
    _, more = await _send(alice, 2 * PAGE, team.ws, "researcher", _wake_every(3), topic=topic)
    for _ in range(200):
        if sum(1 + len(d["context_ids"]) for d in frames) >= len(sent + more):
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.3)
    stop.set()
    await asyncio.gather(*tasks)
    got = [m["id"] for d in frames for m in [*d["context"], d["message"]]]
    assert sorted(got) == sorted(sent + more) and len(set(got)) == len(got)
    assert all(d["wake"] and len(d["context"]) == 2 for d in frames), "two informs before each request"


async def test_an_agent_connection_dropped_mid_backlog_returns_its_wakes_to_the_next(team):
    alice = await team.person("alice")
    _, sent = await _send(alice, 2 * PAGE + 3, team.ws, "reviewer", lambda i: "request")
    a = await team.client(api_key=team.keys["reviewer"], prefetch=4, reconnect=False)
    held = [await a.next_delivery(timeout=10) for _ in range(4)]  # leased, never acked
    await a.close()
    b = await team.client(api_key=team.keys["reviewer"])
    seen: list[dict] = []
    for _ in sent:
        await _take(b, 1, seen)
        assert in_memory(team, b.me["id"]) <= PAGE
    assert [d["id"] for d in seen[:4]] == [d["id"] for d in held]
    assert [d["message"]["id"] for d in seen] == sent
    with pytest.raises(asyncio.TimeoutError):
        await b.next_delivery(timeout=0.3)


async def test_a_wake_carries_at_most_a_page_of_context_and_the_rest_rides_with_the_next_wakes(team):
    """More context piled up before a wake than a page holds: the wake carries the oldest page of it; the rest
    comes, oldest first, with the wakes after it; none twice, none lost."""
    alice = await team.person("alice")
    topic, informs = await _send(alice, 2 * PAGE + 3, team.ws, "researcher")
    _, wake = await _send(alice, 1, team.ws, "researcher", lambda i: "request", topic=topic)
    agent = await team.client(api_key=team.keys["researcher"])
    carried = []
    for n in range(3):
        if n:
            _, wake = await _send(alice, 1, team.ws, "researcher", lambda i: "request", topic=topic)
        d = await agent.next_delivery(timeout=10)
        assert d["message"]["id"] == wake[0] and d["wake"]
        carried.append([m["id"] for m in d["context"]])
        assert in_memory(team, agent.me["id"]) <= PAGE + 1  # (the page, and the wake read ahead of it)
        await agent.ack([d["id"]])
    assert carried == [informs[:PAGE], informs[PAGE:2 * PAGE], informs[2 * PAGE:]]
    with pytest.raises(asyncio.TimeoutError):
        await agent.next_delivery(timeout=0.3)


async def _receives(server, pid: str, ws: str, on: bool) -> None:
    """Give `pid` receive in `ws`, or take it away, through another connection; wait for the server's rescan."""
    server.conn.execute("UPDATE memberships SET receive = ? WHERE workspace = ? AND participant = ?", (int(on), ws, pid))
    for _ in range(100):
        if (ws in server.gw._receives.get(pid, ())) == on:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("no rescan")


async def test_a_receive_given_back_sends_each_device_what_it_was_held_back_once(team, queued):
    """A rescan (another connection changed the database) reads a person's backlog again from the start: each
    device is sent what was held back from it meanwhile, and nothing it already had."""
    bob = await team.person("bob")
    _, sent = await _send(bob, 3 * PAGE + 3, team.ws, "@alice")
    phone = await team.person("alice")
    seen: list[dict] = []
    await _take(phone, len(sent), seen, ack=False)
    await _receives(team, phone.me["id"], team.ws, False)
    laptop = await team.person("alice")  # its pages pass over all of them: held back
    with pytest.raises(asyncio.TimeoutError):
        await laptop.next_delivery(timeout=0.3)
    await _receives(team, phone.me["id"], team.ws, True)
    later: list[dict] = []
    await _take(laptop, len(sent), later, ack=False)
    assert [d["message"]["id"] for d in later] == sent
    for device in (phone, laptop):
        with pytest.raises(asyncio.TimeoutError):
            await device.next_delivery(timeout=0.3)
