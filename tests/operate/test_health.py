"""Health and metrics on the server's own port (issue 19): `/healthz` (alive), `/readyz` (store reachable, writer
running), Prometheus `/metrics` (off by default; on, only to loopback), scraped and parsed with prometheus_client's
own parser."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from ygg_server.net.conn import Limits
from ygg_server.ops import admin
from ygg_server.store import sqlite as db

from tests.backends import PW, serving

ON = Limits(auth_timeout=2.0, metrics=True)


async def _get(port: int, path: str, **headers) -> httpx.Response:
    async with httpx.AsyncClient(timeout=10) as h:
        return await h.get(f"http://127.0.0.1:{port}{path}", headers=headers)


def _scrape(text: str) -> dict[str, dict[tuple, float]]:
    """{sample name: {sorted labels: value}}, by the Prometheus client's parser."""
    out: dict[str, dict[tuple, float]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


async def test_healthz_and_readyz_answer_and_the_websocket_still_opens(tmp_path):
    async with serving("sqlite", db.db_path(tmp_path)) as s:
        port = s.gw.port
        r = await _get(port, "/healthz")
        assert r.status_code == 200 and r.text == "ok\n"
        r = await _get(port, "/readyz")
        assert r.status_code == 200 and r.text == "ready\n"
        s.admin(admin.add_person, "alice", PW)
        me = await s.person("alice")  # the same port still upgrades to WebSocket
        assert (await me.call("whoami"))["handle"] == "alice"


async def test_readyz_says_503_when_the_writer_does_not_commit(tmp_path):
    async with serving("sqlite", db.db_path(tmp_path)) as s:
        await asyncio.to_thread(s.gw.writer.stop)  # the writer's thread ends: nothing commits any more
        t0 = time.monotonic()
        r = await _get(s.gw.port, "/readyz")
        assert r.status_code == 503 and "writer" in r.text, r.text
        assert time.monotonic() - t0 < 5
        assert (await _get(s.gw.port, "/healthz")).status_code == 200  # alive, not ready


async def test_readyz_probes_cost_the_writer_at_most_one_batch_a_second(tmp_path):
    """`/readyz` needs no credential, so a flood of probes must not become a flood of writer batches: probes at
    once share one check, and its answer stands for a second."""
    async with serving("sqlite", db.db_path(tmp_path)) as s:
        submitted = []
        submit = s.gw.writer.submit

        def counting(op, *a, **kw):
            submitted.append(op)
            return submit(op, *a, **kw)

        s.gw.writer.submit = counting
        answers = await asyncio.gather(*(_get(s.gw.port, "/readyz") for _ in range(40)))
        assert {(r.status_code, r.text) for r in answers} == {(200, "ready\n")}
        assert submitted.count("sync") == 1, submitted
        await asyncio.sleep(1.1)  # once the answer is older than a second, the next probe checks again
        assert (await _get(s.gw.port, "/readyz")).status_code == 200
        assert submitted.count("sync") == 2, submitted


async def test_metrics_are_off_unless_turned_on(tmp_path):
    async with serving("sqlite", db.db_path(tmp_path)) as s:
        r = await _get(s.gw.port, "/metrics")
        assert r.status_code == 404 and "--metrics" in r.text


async def test_metrics_count_connections_messages_deliveries_refusals_batches_and_latency(tmp_path):
    async with serving("sqlite", db.db_path(tmp_path), ON) as s:
        s.admin(admin.add_person, "alice", PW)
        ws = s.admin(admin.add_workspace, "team", "alice")["id"]
        s.admin(admin.add_agent, "researcher", "alice")
        s.admin(admin.fund, "researcher", 1000)
        me = await s.person("alice")
        for i in range(5):
            r = await me.send(workspace=ws, conversation="general", topic="new", title=f"q{i}", type="request",
                              to=["researcher"], text=f"question {i}")
            assert r["op"] == "sent", r
        r = await me.send(workspace=ws, conversation="general", topic="new", title="x", type="request", to=["nobody"],
                          text="to no one")
        assert r["op"] == "refused" and r["reason"] == "unknown_recipient", r
        resp = await _get(s.gw.port, "/metrics")
        assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/plain")
        m = _scrape(resp.text)
    assert m["ygg_connections"][()] == 1 and m["ygg_connections_opened_total"][()] == 1
    assert m["ygg_messages_stored_total"][()] == 5 and m["ygg_sends_answered_sent_total"][()] == 5
    assert m["ygg_deliveries_made_total"][()] >= 5  # the researcher's wakes, at least
    assert m["ygg_deliveries_unacked"][()] >= 5  # the researcher never connected to ack them
    assert m["ygg_refusals_total"][(("reason", "unknown_recipient"),)] == 1
    committed = m["ygg_commit_seconds_count"][()]
    assert committed >= 6 and m["ygg_commit_seconds_sum"][()] > 0  # the six sends (and any acks)
    assert m["ygg_commit_seconds_bucket"][(("le", "+Inf"),)] == committed
    assert sum(m["ygg_batch_messages_bucket"].values()) > 0 and m["ygg_batch_messages_sum"][()] == 5
    assert m["ygg_writer_restarts"][()] == 0


async def test_metrics_are_not_served_to_a_client_a_proxy_forwards_from_elsewhere(tmp_path):
    limits = Limits(auth_timeout=2.0, metrics=True, trusted_proxies=("127.0.0.1/32",))
    async with serving("sqlite", db.db_path(tmp_path), limits) as s:
        r = await _get(s.gw.port, "/metrics", **{"X-Forwarded-For": "203.0.113.9"})
        assert r.status_code == 403
        assert (await _get(s.gw.port, "/metrics")).status_code == 200
    allowed = Limits(auth_timeout=2.0, metrics=True, trusted_proxies=("127.0.0.1/32",), metrics_from=("203.0.113.0/24",))
    async with serving("sqlite", db.db_path(tmp_path), allowed) as s:
        assert (await _get(s.gw.port, "/metrics", **{"X-Forwarded-For": "203.0.113.9"})).status_code == 200


@pytest.mark.backends("process")
async def test_a_writer_restart_is_counted(backend, database):
    async with serving(backend, database, ON) as s:
        os.kill(s.gw.writer._proc.pid, signal.SIGKILL)
        for _ in range(100):
            m = _scrape((await _get(s.gw.port, "/metrics")).text)
            if m["ygg_writer_restarts"][()] == 1:
                break
            await asyncio.sleep(0.1)
        assert m["ygg_writer_restarts"][()] == 1
        for _ in range(100):  # and ready again once the new one runs
            if (await _get(s.gw.port, "/readyz")).status_code == 200:
                break
            await asyncio.sleep(0.1)
        assert (await _get(s.gw.port, "/readyz")).status_code == 200
