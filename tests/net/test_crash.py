"""Durability across a killed server (issue 3): "Nothing answered with `sent` is lost if the process is killed right after"."""

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys

import pytest

from ygg_server.clock import now_us
from ygg_server.ops import admin
from ygg_server.client import Client
from ygg_server.store import sqlite as db


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def start(data_dir, port) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-m", "ygg_server.cli", "serve", "--data-dir", str(data_dir), "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )
    line = await asyncio.to_thread(proc.stdout.readline)
    assert b"listening" in line, line
    return proc


async def test_sigkill_mid_stream_loses_nothing_sent_and_redelivers_nothing_acked(tmp_path):
    """Seed 003 §3: "If the channel is offline when the broadcast is sent, nothing is lost"."""
    conn = db.connect(db.db_path(tmp_path))
    admin.add_person(conn, "alice", "pw-" + "x" * 8, now=now_us())
    ws = admin.add_workspace(conn, "team", "alice", now=now_us())["id"]
    key = admin.add_agent(conn, "worker", "alice", now=now_us())["api_key"]
    conn.close()
    port = free_port()
    url = f"ws://127.0.0.1:{port}/"
    proc = await start(tmp_path, port)
    alice = Client(url, handle="alice", password="pw-" + "x" * 8)
    worker = Client(url, api_key=key)
    await alice.connect()
    await worker.connect()
    sent_ids: set[str] = set()
    acked: set[int] = set()
    received: list[tuple[int, str]] = []
    after_ack: list[int] = []
    stop = asyncio.Event()

    async def consume():
        while not stop.is_set():
            try:
                d = await worker.next_delivery(timeout=0.2)
            except asyncio.TimeoutError:
                continue
            if d["id"] in acked:
                after_ack.append(d["id"])
            received.append((d["id"], d["message"]["id"]))
            try:
                r = await worker.ack([d["id"]])
                acked.update(r["ids"])
            except (ConnectionError, asyncio.TimeoutError):
                pass

    async def produce(topic):
        for i in range(400):
            try:
                r = await alice.send(workspace=ws, topic=topic, to=["worker"], text=f"job {i}", client_id=f"job-{i}")
            except (ConnectionError, asyncio.TimeoutError):
                await asyncio.sleep(0.05)
                continue
            if r["op"] == "sent":
                sent_ids.add(r["message"]["id"])

    first = await alice.send(workspace=ws, topic="new", title="Jobs", to=["worker"], text="start")
    sent_ids.add(first["message"]["id"])
    consumer = asyncio.create_task(consume())
    producer = asyncio.create_task(produce(first["message"]["topic"]))
    await asyncio.sleep(0.5)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    await asyncio.sleep(0.3)
    proc = await start(tmp_path, port)
    try:
        await producer
        for _ in range(200):
            if sent_ids <= {m for _, m in received}:
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)
        stop.set()
        await consumer
        assert sent_ids <= {m for _, m in received}, f"lost {len(sent_ids - {m for _, m in received})} of {len(sent_ids)}"
        assert after_ack == [], "a delivery came again after its ack was confirmed"
        assert worker.reconnects >= 1 and alice.reconnects >= 1
    finally:
        await alice.close()
        await worker.close()
        proc.terminate()
        proc.wait()
