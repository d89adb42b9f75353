"""Crashes (issue 8): a load through a server that is SIGKILLed at random moments, 20 times in one run, checked
like a Jepsen history.

alice (a person) sends requests to the agent `worker` and to bob (a person), each with a unique text and a
client_id, retrying a send whose answer was lost; worker and bob take every delivery and ack it. The history
records every send attempted, every `sent`, every delivery and every confirmed ack (`acked`). Then:

- every message answered `sent` was delivered, to each recipient, at least once;
- no delivery came again after its ack was confirmed;
- nothing unexpected: every delivered message is one that was sent (attempted), with the id the `sent`
  answer gave when there was one, and one message per client_id however often its send was retried.

The server runs at DEBUG, and its log never holds worker's key.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field

from ygg_server.clock import now_us
from ygg_server.ops import admin
from ygg_server.client import Client
from ygg_server.store import sqlite as db

from tests.net.test_crash import free_port

from .conftest import PW

KILLS = 20


@dataclass
class History:
    attempted: dict[int, int] = field(default_factory=dict)  # job -> attempts
    sent: dict[int, str] = field(default_factory=dict)  # job -> message id answered `sent`
    duplicates: int = 0
    delivered: dict[str, list[tuple[int, str, str]]] = field(default_factory=dict)  # who -> (delivery, message, text)
    acked: dict[str, set[int]] = field(default_factory=dict)  # who -> deliveries whose ack was confirmed
    after_ack: list[tuple[str, int]] = field(default_factory=list)


async def start(data_dir, port, log) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-m", "ygg_server.cli", "serve", "--data-dir", str(data_dir), "--port", str(port),
         "--log-level", "DEBUG"], stdout=subprocess.PIPE, stderr=log)
    line = await asyncio.to_thread(proc.stdout.readline)
    assert b"listening" in line, line
    return proc


async def test_sigkill_at_random_moments_twenty_times_keeps_the_history_sound(tmp_path):
    """PROTOCOL.md: "A delivery not acked is offered again after a reconnect": and nothing answered `sent` is lost, through 20 kills."""
    conn = db.connect(db.db_path(tmp_path))
    admin.add_person(conn, "alice", PW, now=now_us())
    admin.add_person(conn, "bob", PW, now=now_us())
    ws = admin.add_workspace(conn, "team", "alice", now=now_us())["id"]
    admin.add_member(conn, ws, "bob", now=now_us())
    key = admin.add_agent(conn, "worker", "alice", now=now_us())["api_key"]
    conn.close()
    port = free_port()
    url = f"ws://127.0.0.1:{port}/"
    log_path = tmp_path / "server.log"
    log = open(log_path, "ab")
    rng = random.Random(int(os.environ.get("YGG_CRASH_SEED", "0")) or None)
    h = History()
    proc = await start(tmp_path, port, log)
    clients = {"alice": Client(url, handle="alice", password=PW, timeout=5),
               "worker": Client(url, api_key=key, timeout=5), "bob": Client(url, handle="bob", password=PW, timeout=5)}
    for c in clients.values():
        await c.connect()
    first = await clients["alice"].send(workspace=ws, topic="new", title="Jobs", to=["worker", "@bob"], text="job-0",
                                        client_id="job-0")
    h.attempted[0], h.sent[0] = 1, first["message"]["id"]
    topic = first["message"]["topic"]
    stop, done = asyncio.Event(), asyncio.Event()  # the producer stops first; the consumers once all is drained

    async def consume(who: str):
        c = clients[who]
        got, acked = h.delivered.setdefault(who, []), h.acked.setdefault(who, set())
        while not done.is_set():
            try:
                d = await c.next_delivery(timeout=0.2)
            except asyncio.TimeoutError:
                continue
            if d["id"] in acked:
                h.after_ack.append((who, d["id"]))
            got.append((d["id"], d["message"]["id"], d["message"]["text"]))
            for ctx_id, m in zip(d.get("context_ids", ()), d.get("context", ())):
                got.append((ctx_id, m["id"], m["text"]))
            try:
                r = await c.ack([d["id"]])
                acked.update(r["ids"])
            except (ConnectionError, asyncio.TimeoutError):
                pass

    async def produce():
        job = 1
        while not stop.is_set():
            h.attempted[job] = h.attempted.get(job, 0) + 1
            try:
                r = await clients["alice"].send(workspace=ws, topic=topic, to=["worker", "@bob"], text=f"job-{job}",
                                                client_id=f"job-{job}")
            except (ConnectionError, asyncio.TimeoutError):
                await asyncio.sleep(0.05)
                continue  # the answer was lost: the same job again, with the same client_id
            assert r["op"] == "sent", r
            h.sent[job] = r["message"]["id"]
            h.duplicates += bool(r.get("duplicate"))
            job += 1

    tasks = [asyncio.create_task(consume("worker")), asyncio.create_task(consume("bob")),
             asyncio.create_task(produce())]
    started = time.monotonic()
    try:
        for kill in range(KILLS):
            for c in clients.values():  # everyone back before the next kill, so that each round has load
                await asyncio.wait_for(c.connected.wait(), 20)
            await asyncio.sleep(rng.uniform(0.1, 0.9))
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            await asyncio.sleep(rng.uniform(0.0, 0.3))
            proc = await start(tmp_path, port, log)
        for c in clients.values():
            await asyncio.wait_for(c.connected.wait(), 20)
        await asyncio.sleep(0.5)
        stop.set()  # the producer stops; drain until every `sent` message reached both recipients
        await tasks[2]
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if all(set(h.sent.values()) <= {m for _, m, _ in h.delivered[w]} for w in ("worker", "bob")):
                break
            await asyncio.sleep(0.1)
        done.set()
        await asyncio.gather(*tasks[:2])
    finally:
        stop.set()
        done.set()
        for c in clients.values():
            await c.close()
        proc.send_signal(signal.SIGTERM)
        proc.wait()
        log.close()
    elapsed = time.monotonic() - started
    deliveries = sum(len(v) for v in h.delivered.values())
    print(f"\n{KILLS} SIGKILLs in {elapsed:.0f} s: {len(h.attempted)} jobs, {len(h.sent)} answered sent "
          f"({sum(h.attempted.values()) - len(h.attempted)} retries, {h.duplicates} answered as duplicates), "
          f"{deliveries} deliveries, {sum(map(len, h.acked.values()))} acks confirmed")

    # 1. every `sent` delivered at least once, to each recipient
    for who in ("worker", "bob"):
        got = {m for _, m, _ in h.delivered[who]}
        lost = [j for j, m in h.sent.items() if m not in got]
        assert not lost, f"{who} never got jobs {lost[:10]} ({len(lost)} of {len(h.sent)})"
    # 2. none after its confirmed ack
    assert h.after_ack == [], f"delivered again after a confirmed ack: {h.after_ack[:10]}"
    # 3. nothing unexpected: only messages sent, with the id answered, one per client_id
    for who, got in h.delivered.items():
        ids_by_job: dict[int, set[str]] = {}
        for _, mid, text in got:
            assert text.startswith("job-"), f"{who} got a message nobody sent: {text!r}"
            job = int(text[4:])
            assert job in h.attempted, f"{who} got job {job}, never attempted"
            if job in h.sent:
                assert mid == h.sent[job], f"{who} got job {job} as {mid}, answered as {h.sent[job]}"
            ids_by_job.setdefault(job, set()).add(mid)
        twice = {j: m for j, m in ids_by_job.items() if len(m) > 1}
        assert not twice, f"a retried send was stored twice: {twice}"
    log_text = log_path.read_bytes()
    assert key.encode() not in log_text and key.split("_", 2)[2][-12:].encode() not in log_text, \
        "the key is in the server's log"
    assert elapsed < 90
