"""serve's options for running it for a team (issues 18 and 19): the client's address behind a trusted proxy,
the limits from flags and a TOML file, TLS, the log (a file, JSON lines, the address and participant on
connection lines, never a credential), and clients warning before credentials go over ws:// off this machine."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import subprocess
import sys
import time

import pytest
import websockets

from ygg_server.cli import main as cli_main
from ygg_server.client import Client, plaintext_warning
from ygg_server.net.conn import Limits
from ygg_server.net.proxy import client_address, networks
from ygg_server.ops import admin
from ygg_server.store import sqlite as db

from tests.backends import PW, serving
from tests.operate.certs import self_signed, trusting


def test_the_client_address_is_believed_only_from_a_trusted_proxy():
    proxies = networks(["10.0.0.0/8", "127.0.0.1"])
    assert client_address("198.51.100.7", ["203.0.113.1"], proxies) == "198.51.100.7"  # not a proxy: its own
    assert client_address("198.51.100.7", ["203.0.113.1"], ()) == "198.51.100.7"
    assert client_address("127.0.0.1", ["203.0.113.1"], proxies) == "203.0.113.1"
    # the rightmost hop that is not a trusted proxy: what the client put on the left is not believed
    assert client_address("127.0.0.1", ["6.6.6.6, 203.0.113.1, 10.1.2.3"], proxies) == "203.0.113.1"
    assert client_address("127.0.0.1", ["6.6.6.6", "203.0.113.1"], proxies) == "203.0.113.1"
    assert client_address("127.0.0.1", ["2001:db8::5"], proxies) == "2001:db8::5"
    assert client_address("127.0.0.1", ["not-an-address"], proxies) == "127.0.0.1"
    assert client_address("127.0.0.1", [], proxies) == "127.0.0.1"
    with pytest.raises(ValueError, match="--trusted-proxy"):
        networks(["10.0.0.0/33"])


async def _failed_then_right(url: str, spoofed: str, honest: str) -> dict:
    """Three wrong passwords said to come from `spoofed`, then alice's right one said to come from `honest`."""
    async def auth(fwd: str, password: str) -> dict:
        async with websockets.connect(url, additional_headers={"X-Forwarded-For": fwd}) as ws:
            await ws.send(json.dumps({"op": "auth", "ref": 1, "handle": "alice", "password": password}))
            return json.loads(await ws.recv())
    for i in range(3):
        assert (await auth(spoofed, f"wrong-{i}"))["op"] == "error"
    return await auth(honest, PW)


async def test_sign_in_failures_count_against_the_forwarded_client_behind_a_trusted_proxy(tmp_path):
    """Issue 18: "Behind a reverse proxy every client shares the proxy's address: ... locked out the right key and
    the right password"."""
    limits = dict(auth_timeout=2.0, auth_failures_per_address=3, auth_failures_per_key=100)
    async with serving("sqlite", db.db_path(tmp_path / "a"), Limits(**limits, trusted_proxies=("127.0.0.1",))) as s:
        s.admin(admin.add_person, "alice", PW)
        got = await _failed_then_right(s.url, "203.0.113.66", "198.51.100.7")
        assert got["op"] == "session", got  # the guesser's address is held back, not alice's
    async with serving("sqlite", db.db_path(tmp_path / "b"), Limits(**limits)) as s:  # no trusted proxy
        s.admin(admin.add_person, "alice", PW)
        got = await _failed_then_right(s.url, "203.0.113.66", "198.51.100.7")
        assert got["op"] == "error" and "retry_after" in got  # the header is not believed: one address for all


def _settled(argv: list[str]):
    """The options `serve` would run with (parsed and settled, not served)."""
    from ygg_server import cli

    seen = {}

    async def fake_serve(args):
        seen["args"] = args
        return 0

    orig = cli.serve
    cli.serve = fake_serve
    try:
        assert cli_main(["serve", *argv]) == 0
    finally:
        cli.serve = orig
    return seen["args"]


def test_every_limit_is_a_flag_and_a_config_key_and_flags_win(tmp_path, monkeypatch):
    from ygg_server import logs

    monkeypatch.setattr(logs, "setup", lambda *a, **kw: None)  # (the test process's logging stays pytest's)
    cfg = tmp_path / "ygg.toml"
    cfg.write_text('[serve]\nport = 9999\ndata_dir = "%s"\n[limits]\nmax_frame = 4096\nauth_timeout = 3.5\n'
                   'outgoing = 7\ntrusted_proxies = ["10.0.0.0/8"]\nmetrics = true\n' % tmp_path)
    args = _settled(["--config", str(cfg), "--max-frame", "2048", "--trusted-proxy", "127.0.0.1"])
    assert args.port == 9999 and args.data_dir == str(tmp_path)
    lim = args.limits
    assert (lim.max_frame, lim.auth_timeout, lim.outgoing, lim.metrics) == (2048, 3.5, 7, True)
    assert lim.trusted_proxies == ("127.0.0.1",)
    help_text = subprocess.run([sys.executable, "-m", "ygg_server.cli", "serve", "--help"], capture_output=True,
                               text=True).stdout
    from ygg_server.settings import flag

    for f in dataclasses.fields(Limits):  # a limit added to Limits is a flag at once
        assert f"--{flag(f.name)}" in help_text, f.name


@pytest.mark.parametrize("toml, said", [
    ("[limits]\nmax_fram = 1\n", "max_fram"),
    ("[limits]\nmax_frame = \"big\"\n", "max_frame takes a int"),
    ("[limits]\ntrusted_proxies = [\"10.0.0.0/99\"]\n", "--trusted-proxy"),
    ("[serve]\nnope = 1\n", "nope"),
    ("not toml = = 1\n", "not valid TOML"),
])
def test_a_bad_config_file_is_refused_in_one_line(tmp_path, toml, said):
    cfg = tmp_path / "ygg.toml"
    cfg.write_text(toml)
    out = subprocess.run([sys.executable, "-m", "ygg_server.cli", "serve", "--data-dir", str(tmp_path), "--config",
                          str(cfg)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1 and said in out.stderr, out.stderr


def _serve(tmp_path, *extra: str) -> tuple[subprocess.Popen, str]:
    p = subprocess.Popen([sys.executable, "-m", "ygg_server.cli", "serve", "--data-dir", str(tmp_path / "data"),
                          "--port", "0", "--writer", "thread", *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    line = p.stdout.readline()
    assert line, p.stderr.read()
    return p, json.loads(line)["listening"]


def _stop(p: subprocess.Popen) -> None:
    p.terminate()
    try:
        p.wait(20)
    except subprocess.TimeoutExpired:
        p.kill()


async def test_serve_speaks_tls_with_its_certificate(tmp_path):
    cert, key = self_signed(tmp_path / "tls")
    assert cli_main(["admin", "--data-dir", str(tmp_path / "data"), "add-person", "alice", "--password", PW]) == 0
    p, url = _serve(tmp_path, "--tls-cert", str(cert), "--tls-key", str(key))
    try:
        assert url.startswith("wss://127.0.0.1:")
        async with Client(url, handle="alice", password=PW, ssl=trusting(cert), timeout=10) as me:
            assert (await me.call("whoami"))["handle"] == "alice"
        with pytest.raises(Exception):  # a certificate the client does not trust: no connection
            async with Client(url, handle="alice", password=PW, reconnect=False, timeout=5):
                pass
    finally:
        _stop(p)


def test_tls_with_a_missing_key_is_refused_in_one_line(tmp_path):
    cert, _ = self_signed(tmp_path / "tls")
    out = subprocess.run([sys.executable, "-m", "ygg_server.cli", "serve", "--data-dir", str(tmp_path),
                          "--tls-cert", str(cert), "--tls-key", str(tmp_path / "missing.pem")],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "missing.pem" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


async def test_the_log_file_in_json_has_who_and_from_where_and_never_a_credential(tmp_path):
    data = tmp_path / "data"
    assert cli_main(["admin", "--data-dir", str(data), "add-person", "alice", "--password", PW]) == 0
    log_file = tmp_path / "ygg.log"
    p, url = _serve(tmp_path, "--log-file", str(log_file), "--log-json", "--log-level", "DEBUG")
    try:
        async with Client(url, handle="alice", password=PW, timeout=10) as me:
            token = me.token
            await me.call("whoami")
        async with websockets.connect(url) as ws:  # a wrong password too
            await ws.send(json.dumps({"op": "auth", "ref": 1, "handle": "alice", "password": "wrong-guess-xyz"}))
            await ws.recv()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and "closed" not in log_file.read_text():
            await asyncio.sleep(0.1)
    finally:
        _stop(p)
    text = log_file.read_text()
    lines = [json.loads(line) for line in text.splitlines()]  # every line is JSON
    opened = [r for r in lines if r.get("handle") == "alice" and "signed in" in r["message"]]
    assert opened and opened[0]["address"] == "127.0.0.1" and opened[0]["participant"].startswith("human.")
    assert any("closed" in r["message"] and r.get("address") == "127.0.0.1" for r in lines)
    for secret in (PW, token, "wrong-guess-xyz"):
        assert secret not in text


def test_clients_warn_before_credentials_go_over_ws_to_another_host(caplog):
    assert plaintext_warning("ws://127.0.0.1:8765/") is None
    assert plaintext_warning("ws://localhost:8765/") is None
    assert plaintext_warning("ws://[::1]:8765/") is None
    assert plaintext_warning("wss://chat.example.com/") is None
    said = plaintext_warning("ws://chat.example.com:8765/")
    assert said and "chat.example.com" in said and "wss://" in said

    async def attempt():
        c = Client("ws://192.0.2.1:9/", handle="alice", password=PW, reconnect=False, timeout=0.5)
        with pytest.raises(Exception):
            await c.connect()
        await c.close()

    with caplog.at_level(logging.WARNING, logger="ygg.client"):
        asyncio.run(attempt())
    assert any("192.0.2.1" in r.getMessage() and "not encrypted" in r.getMessage() for r in caplog.records)


def test_a_limit_added_later_is_a_flag_and_a_key_whatever_its_type(monkeypatch):
    """(Another branch adds limits to Limits: an optional number, a list, a switch become flags as they are.)"""
    import argparse

    from ygg_server import settings

    @dataclasses.dataclass
    class More(Limits):
        outgoing_bytes: int | None = None
        send_deadline: float = 30.0
        blocked: tuple[str, ...] = ()
        strict: bool = False

    monkeypatch.setattr(settings, "Limits", More)
    p = argparse.ArgumentParser()
    settings.add_limit_flags(p)
    args = p.parse_args(["--outgoing-bytes", "1000", "--blocked", "10.0.0.0/8", "--strict"])
    lim = settings.limits_from(args, {"limits": {"send_deadline": 5}}, "test.toml")
    assert (lim.outgoing_bytes, lim.send_deadline, lim.blocked, lim.strict) == (1000, 5.0, ("10.0.0.0/8",), True)
