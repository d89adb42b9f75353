"""Issue 19: "a test that runs nginx (Debian's package ...) with a self-signed certificate in front of two nodes, a
client connecting over wss://, and the nodes seeing the client's own address through the trusted-proxy setting".

The nginx configuration is docs/deploy.md's own (its ```nginx block), with the test's certificate, ports and
nodes put in. The clients connect from 127.0.0.2 and 127.0.0.3 (loopback addresses other than nginx's), so
what the nodes log as the client's address can only have come from X-Forwarded-For."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import websockets

from tests.backends import PW
from tests.operate.certs import self_signed, trusting

ROOT = Path(__file__).resolve().parents[2]
NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)
pytestmark = pytest.mark.skipif(NGINX is None, reason="nginx is not installed (Debian: apt-get install nginx; "
                                                       ".ci/run installs it)")


def deploy_nginx_conf() -> str:
    text = (ROOT / "docs" / "deploy.md").read_text()
    (block,) = re.findall(r"```nginx\n(.*?)```", text, re.S)
    return block


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def nginx_conf(tmp: Path, nodes: list[int], port: int, cert: Path, key: Path) -> Path:
    conf = deploy_nginx_conf()
    conf = re.sub(r"upstream ygg_nodes \{.*?\}", "upstream ygg_nodes {\n" + "".join(
        f"    server 127.0.0.1:{p};\n" for p in nodes) + "}", conf, flags=re.S)
    conf = conf.replace("listen 443 ssl;", f"listen 127.0.0.1:{port} ssl;")
    conf = re.sub(r"ssl_certificate .*?;", f"ssl_certificate {cert};", conf)
    conf = re.sub(r"ssl_certificate_key .*?;", f"ssl_certificate_key {key};", conf)
    temp = "".join(f"    {k}_temp_path {tmp / k};\n" for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    main = (("user root;\n" if os.geteuid() == 0 else "") +
            f"worker_processes 1;\ndaemon off;\npid {tmp / 'nginx.pid'};\nerror_log {tmp / 'error.log'} warn;\n"
            "events { worker_connections 64; }\n"
            f"http {{\n    access_log off;\n{temp}{conf}\n}}\n")
    path = tmp / "nginx.conf"
    path.write_text(main)
    return path


def _node(tmp: Path, url: str, n: int) -> tuple[subprocess.Popen, int]:
    p = subprocess.Popen([sys.executable, "-m", "ygg_server.cli", "serve", "--db", url, "--port", "0",
                          "--node-id", f"node{n}", "--trusted-proxy", "127.0.0.1", "--log-level", "INFO",
                          "--log-json", "--log-file", str(tmp / f"node{n}.log")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    assert line, p.stderr.read()
    return p, int(json.loads(line)["listening"].rsplit(":", 1)[1].strip("/"))


async def _sign_in(url: str, ctx, source: str, handle: str):
    ws = await websockets.connect(url, ssl=ctx, local_addr=(source, 0), open_timeout=10)
    await ws.send(json.dumps({"op": "auth", "ref": 1, "handle": handle, "password": PW}))
    reply = json.loads(await ws.recv())
    assert reply["op"] == "session", reply
    return ws


async def _answer(ws, ref: int) -> str:
    while True:
        raw = await asyncio.wait_for(ws.recv(), 10)
        if json.loads(raw).get("ref") == ref:
            return raw


def _connection_lines(tmp: Path, n: int) -> list[dict]:
    path = tmp / f"node{n}.log"
    if not path.exists():
        return []
    return [r for r in map(json.loads, path.read_text().splitlines()) if "signed in" in r.get("message", "")]


async def test_nginx_terminates_tls_in_front_of_two_nodes_that_see_the_clients_address(pg_url, tmp_path):
    from ygg_server.cli import main as cli

    for handle in ("alice", "bob"):
        assert cli(["admin", "--db", pg_url, "add-person", handle, "--password", PW]) == 0
    assert cli(["admin", "--db", pg_url, "add-workspace", "team", "--owner", "alice"]) == 0
    assert cli(["admin", "--db", pg_url, "add-member", "team", "bob"]) == 0
    cert, key = self_signed(tmp_path / "tls")
    procs = []
    try:
        nodes = []
        for n in (1, 2):
            p, port = _node(tmp_path, pg_url, n)
            procs.append(p)
            nodes.append(port)
        port = _free_port()
        conf = nginx_conf(tmp_path, nodes, port, cert, key)
        check = subprocess.run([NGINX, "-t", "-c", str(conf)], capture_output=True, text=True)
        assert check.returncode == 0, check.stderr
        nginx = subprocess.Popen([NGINX, "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        procs.append(nginx)
        url = f"wss://127.0.0.1:{port}/"
        ctx = trusting(cert)
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline and nginx.poll() is None, (tmp_path / "error.log").read_text()
                await asyncio.sleep(0.1)

        a = await _sign_in(url, ctx, "127.0.0.2", "alice")
        b = await _sign_in(url, ctx, "127.0.0.3", "bob")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and len(_connection_lines(tmp_path, 1) + _connection_lines(tmp_path, 2)) < 2:
            await asyncio.sleep(0.1)
        one, two = _connection_lines(tmp_path, 1), _connection_lines(tmp_path, 2)
        assert one and two, "nginx spread the two connections over the two nodes"
        seen = {r["handle"]: r["address"] for r in one + two}
        assert seen == {"alice": "127.0.0.2", "bob": "127.0.0.3"}, seen  # not nginx's 127.0.0.1

        # and through the proxy the two nodes work as one: alice's message, on one, reaches bob on the other
        await a.send(json.dumps({"op": "list_workspaces", "ref": 2}))
        ws_id = next(w["id"] for w in json.loads(await _answer(a, 2))["workspaces"] if w["name"] == "team")
        await a.send(json.dumps({"op": "send", "ref": 3, "workspace": ws_id, "conversation": "general",
                                 "topic": "new", "title": "hello", "type": "info", "text": "across two nodes"}))
        assert json.loads(await _answer(a, 3))["op"] == "sent"
        deadline = time.monotonic() + 15
        got = None
        while got is None and time.monotonic() < deadline:
            frame = json.loads(await asyncio.wait_for(b.recv(), max(0.1, deadline - time.monotonic())))
            if frame.get("op") == "deliver" and frame.get("message", {}).get("text") == "across two nodes":
                got = frame
        assert got is not None, "bob, on the other node, got alice's message"
        await a.close()
        await b.close()
        health = subprocess.run(["curl", "-sk", f"https://127.0.0.1:{port}/healthz"], capture_output=True, text=True) \
            if shutil.which("curl") else None
        if health is not None:
            assert health.stdout == "ok\n"
    finally:
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
