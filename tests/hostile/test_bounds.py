"""Bounds in bytes and time (issue 18): a reader that stops reading is dropped, holding at most `outgoing_bytes`
for at most `send_timeout`, and every close is bounded in time even when the peer's buffer is full.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from pathlib import Path

import websockets

from ygg_server.clock import now_us
from ygg_server.core import general_id
from ygg_server.ops import admin
from ygg_server.store import sqlite as db

from tests.net.test_sessions import serving

from .conftest import PW
from .test_transport import frame, rss_mb, server_process, upgraded

EMOJI = [chr(c) for c in range(0x1F300, 0x1F650)]


def big_text(n: int = 200_000) -> str:
    """The longest message (MAX_TEXT characters), 4 UTF-8 bytes each, random: about 800 KB that do not compress."""
    return "".join(random.choices(EMOJI, k=n))


def team_of_two(conn) -> str:
    """alice owns workspace `team`, bob is a member; its id."""
    now = now_us()
    admin.add_person(conn, "alice", PW, now=now)
    admin.add_person(conn, "bob", PW, now=now)
    ws = admin.add_workspace(conn, "team", "alice", now=now)["id"]
    admin.add_member(conn, ws, "bob", now=now)
    return ws


async def stalled_monitor(port: int, ws: str) -> asyncio.StreamWriter:
    """alice, signed in on a raw socket that monitors `ws`, then never reads again."""
    r, w, _ = await upgraded(port)
    w.write(frame(json.dumps({"op": "auth", "ref": 1, "handle": "alice", "password": PW}).encode()))
    w.write(frame(json.dumps({"op": "subscribe", "ref": 2, "workspace": ws, "monitor": True}).encode()))
    got = b""
    while b'"subscribed"' not in got:
        got += await asyncio.wait_for(r.read(65536), 10)
    return w


def is_open(w: asyncio.StreamWriter) -> bool:
    """Whether the server still holds its end of this socket (read from the kernel's table, nothing read here:
    a socket the server closed with data still unsent to a reader that does not read stays established, but
    belongs to no process any more, its inode 0)."""
    me = w.get_extra_info("sockname")[1]
    server = w.get_extra_info("peername")[1]
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        f = line.split()
        local, remote, inode = int(f[1].split(":")[1], 16), int(f[2].split(":")[1], 16), f[9]
        if local == server and remote == me:
            return inode != "0"
    return False


async def flood(url: str, ws: str, n: int, texts: list[str]) -> None:
    """alice sends `n` of the longest messages to bob in `ws`'s General, each answered before the next."""
    async with websockets.connect(url, max_size=2**24) as c:
        await c.send(json.dumps({"op": "auth", "ref": 0, "handle": "alice", "password": PW}))
        assert json.loads(await c.recv())["op"] == "session"
        for i in range(n):
            await c.send(json.dumps({"op": "send", "ref": i + 1, "workspace": ws, "conversation": "general",
                                     "topic": "new", "to": ["@bob"], "text": texts[i % len(texts)]}, ensure_ascii=False))
            while (reply := json.loads(await c.recv())).get("ref") != i + 1:
                pass
            assert reply["op"] == "sent", reply


async def test_readers_that_stop_reading_are_dropped_within_the_deadline_holding_at_most_the_byte_bound(tmp_path):
    """docs/protocol.md: "so is one with 16 MiB queued for it (its queue and the server's send buffer), and one that has not taken a write within 30 s is cut off". Issue 18: "200 messages of 200,000 emoji to three non-reading monitor sockets took the server from 43 to 209
    MiB, and those sockets stayed open for 150 s": three such sockets, 40 of those messages (32 MB each socket is
    owed), the default byte bound (16 MiB) and a 5 s send deadline. Each socket is dropped, and the server's
    memory grows by less than the three bounds (over what 40 such messages cost it without them)."""
    conn = db.connect(db.db_path(tmp_path))
    ws = team_of_two(conn)
    conn.close()
    texts = [big_text() for _ in range(4)]
    deadline = 5.0
    async with server_process(tmp_path, more={"send_timeout": deadline}) as proc:
        start = rss_mb(proc.pid)
        await flood(proc.url, ws, 40, texts)  # without them first: what the messages cost the server anyway
        before = peak = rss_mb(proc.pid)
        monitors = [await stalled_monitor(proc.port, ws) for _ in range(3)]
        started = time.monotonic()
        sending = asyncio.ensure_future(flood(proc.url, ws, 40, texts))
        closed_at: dict[int, float] = {}
        while len(closed_at) < 3 and time.monotonic() - started < 60:
            peak = max(peak, rss_mb(proc.pid))
            for i, w in enumerate(monitors):
                if i not in closed_at and not is_open(w):
                    closed_at[i] = time.monotonic() - started
            await asyncio.sleep(0.1)
        await sending
        sent = time.monotonic() - started
        after = rss_mb(proc.pid)
        for w in monitors:
            w.transport.abort()
    took = sorted(closed_at.values())
    print(f"\n3 stalled monitors, 40 messages of 200,000 emoji (sent in {sent:.1f} s): server RSS {start:.1f} MB "
          f"at first, {before:.1f} MB after 40 without them, {peak:.1f} MB peak (+{peak - before:.1f}), {after:.1f} MB after; dropped after "
          + ", ".join(f"{t:.1f} s" for t in took))
    assert len(took) == 3, f"still open after 60 s: {3 - len(took)} of 3"
    assert took[-1] < sent + deadline + 5, "each is dropped within the send deadline of its last write"
    assert peak - before < 3 * 16 + 40, "each stalled reader holds at most its byte bound"


async def test_a_stalled_reader_over_the_byte_bound_is_dropped_at_once(tmp_path):
    """docs/protocol.md: "so is one with 16 MiB queued for it". Issue 18: "the outgoing bound counts frames (10,000), not bytes ... about 8 GB for one stalled connection":
    with a 2 MiB bound and a deadline too long to matter (60 s), a monitor that does not read is dropped within
    a few seconds of being owed more than 2 MiB, while one that reads keeps its connection and every event."""
    async with serving(tmp_path, outgoing_bytes=2 << 20, send_timeout=60.0) as s:
        ws = s.admin(team_of_two)
        stalled = await stalled_monitor(s.gw.port, ws)
        reading = await websockets.connect(s.url, max_size=2**24)
        await reading.send(json.dumps({"op": "auth", "ref": 1, "handle": "alice", "password": PW}))
        await reading.send(json.dumps({"op": "subscribe", "ref": 2, "workspace": ws, "monitor": True}))

        async def read_events() -> int:
            events = 0
            while events < 12:
                events += json.loads(await asyncio.wait_for(reading.recv(), 20)).get("kind") == "message"
            return events
        got = asyncio.ensure_future(read_events())
        started = time.monotonic()
        await flood(s.url, ws, 12, [big_text() for _ in range(3)])
        while is_open(stalled) and time.monotonic() - started < 30:
            await asyncio.sleep(0.05)
        took = time.monotonic() - started
        stalled.transport.abort()
        assert await got == 12, "the monitor that reads gets every event"
        await reading.close()
    assert took < 15, f"dropped after {took:.1f} s"


async def test_the_idle_close_does_not_wait_on_a_full_send_buffer(tmp_path):
    """docs/protocol.md: "Every close the server starts is cut off after `close_timeout` (10 s) if the peer does not take the close frame". Issue 18: "those sockets stayed open for 150 s because the ping and the idle close both wait on a full send
    buffer": an 8 s idle timeout, a 1 s close timeout, and byte bound and deadline too large to act; the monitor's
    buffer is full (about 10 MB owed: more than loopback's buffers) before it has been idle that long, and it is
    closed within idle + close timeout (and slack), not when its buffer drains (never)."""
    idle, close = 8.0, 1.0
    async with serving(tmp_path, idle_timeout=idle, close_timeout=close, send_timeout=600.0,
                       outgoing_bytes=1 << 30, ping_interval=600.0) as s:
        ws = s.admin(team_of_two)
        stalled = await stalled_monitor(s.gw.port, ws)
        started = time.monotonic()
        await flood(s.url, ws, 12, [big_text() for _ in range(3)])
        flooded = time.monotonic() - started
        while is_open(stalled) and time.monotonic() - started < 30:
            await asyncio.sleep(0.05)
        took = time.monotonic() - started
        stalled.transport.abort()
    assert flooded < idle, f"the flood took {flooded:.1f} s: the idle close came before the buffer was full"
    assert took < idle + close + 3.0, f"closed after {took:.1f} s"


# --- responses within the client's frame limit ---

async def test_a_history_or_search_page_of_the_longest_messages_fits_the_clients_frame_limit(tmp_path):
    """docs/protocol.md: "No answer is larger than 16 MiB (what clients must accept): `history` and `search_messages` pages stop at 8 MiB of messages (at least one), with `more` set". Issue 18: "about 21 maximum-size messages make a `history` page larger than the client's frame limit, so
    everyone who opens that conversation is disconnected in a loop": 24 of them in General; through the client
    library (its frame limit, protocol.MAX_RESPONSE) a history page and a search page each come whole, with
    `more`, and the pages after the cursor bring all 24, each once."""
    from ygg_server import protocol
    from ygg_server.ops import queries

    assert queries.PAGE_BYTES * 2 <= protocol.MAX_RESPONSE
    async with serving(tmp_path) as s:
        ws = s.admin(team_of_two)
        texts = ["needle " + big_text(199_990) for _ in range(3)]
        await flood(s.url, ws, 24, texts)
        alice = await s.person("alice")
        assert alice._ws.protocol.max_message_size == protocol.MAX_RESPONSE, "the client library accepts MAX_RESPONSE"
        seen, before, pages = [], None, 0
        while True:
            page = await alice.request("history", workspace=ws, conversation="general", limit=50,
                                       **({"before": before} if before else {}))
            assert page["op"] != "error", page
            pages += 1
            seen += [m["id"] for m in page["messages"]]
            if not page["more"]:
                break
            before = page["cursor"]
        found = await alice.request("search_messages", workspace=ws, query="needle", limit=50)
        assert found["op"] != "error", found
        assert found["more"] and 1 <= len(found["messages"]) < 24
        assert (await alice.request("whoami"))["op"] == "whoami", "still connected"
    assert len(seen) == len(set(seen)) == 24 and pages >= 3, (len(seen), pages)


# --- a participant's send rate ---

async def test_a_participant_sending_too_fast_is_answered_rate_limited_with_retry_after_and_nothing_is_stored(tmp_path):
    """docs/protocol.md: "a `send` over the participant's rate (100 a second in bursts of 1,000, all its connections together; a send costs one, and one more per 16,384 characters of text): not stored". Issue 18: "a per-participant send rate": 5 a second in bursts of 20, across two connections of one person:
    of 40 sends at once, 20 are sent and 20 answered `rate_limited` with `retry_after` (nothing stored for them);
    the longest messages cost 13 each; another person is not affected; the client library waits retry_after out and sends again."""
    async with serving(tmp_path, send_rate=5.0, send_burst=20.0) as s:
        ws = s.admin(team_of_two)
        a1, a2, bob = await s.person("alice"), await s.person("alice"), await s.person("bob")
        replies = await asyncio.gather(*(c.request("send", workspace=ws, conversation="general", topic="new",
                                                   to=["@bob"], text=f"m{i}") for i, c in enumerate([a1, a2] * 20)))
        sent = [r for r in replies if r["op"] == "sent"]
        limited = [r for r in replies if r.get("code") == "rate_limited"]
        assert len(sent) == 20 and len(limited) == 20, [r["op"] for r in replies]
        assert all(r["op"] == "error" and r["retry_after"] >= 1 for r in limited)
        stored = s.conn.execute("SELECT count(*) FROM messages WHERE author = (SELECT id FROM people WHERE "
                                "handle = 'alice')").fetchone()[0]
        assert stored == 20
        assert (await bob.send(workspace=ws, conversation="general", topic="new", to=["@alice"], text="hi"))["op"] == "sent"
        # the client library waits the retry_after out and sends again
        assert (await a1.send(workspace=ws, conversation="general", topic="new", to=["@bob"], text="again"))["op"] == "sent"
        await asyncio.sleep(20 / 5.0)  # a full bucket again: one longest message costs 13 of its 20
        long = big_text()
        assert (await a1.send(workspace=ws, conversation="general", topic="new", to=["@bob"], text=long))["op"] == "sent"
        assert (await a1.request("send", workspace=ws, conversation="general", topic="new", to=["@bob"],
                                 text=long))["code"] == "rate_limited"
