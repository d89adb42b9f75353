"""Hosted agents under OS users of their own (seed 003 §21), with the built-in backend over loopback.

The end-to-end test runs as root only (it makes system users with useradd and removes them after); the refusals
run anywhere."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from ygg_server.agents import host_users
from ygg_server.agents.hosting import HostSupervisor
from ygg_server.ops import hosting

from .conftest import history, until


def _bridge_python() -> str | None:
    """An interpreter an unprivileged user can run with Ygg importable: this one, else the system's of the same
    version (this one may live under /root, 0700)."""
    for py in (sys.executable, f"/usr/bin/python{sys.version_info[0]}.{sys.version_info[1]}"):
        if os.path.exists(py):
            try:
                host_users.probe(py)
                return py
            except host_users.OsUsersRefused:
                continue
    return None


def _uids(pid: int) -> tuple[list[int], str]:
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    uid = next(x for x in status if x.startswith("Uid:")).split()[1:]
    groups = next(x for x in status if x.startswith("Groups:")).split()[1:]
    return [int(u) for u in uid], " ".join(groups)


def _as(uid: int, *cmd: str) -> subprocess.CompletedProcess:
    return subprocess.run(list(cmd), user=uid, group=pwd.getpwuid(uid).pw_gid, extra_groups=[], cwd="/",
                          capture_output=True, text=True, timeout=30)


@pytest.fixture
def host_root():
    """The host's directory, outside pytest's own (0700) so the agents' users can reach theirs."""
    root = Path(tempfile.mkdtemp(prefix="ygg-host-", dir="/tmp"))
    yield root
    shutil.rmtree(root, ignore_errors=True)


async def test_each_hosted_bridge_runs_as_its_own_os_user(server, host_root):
    """Seed 003 §21: "many agents (sometimes from different companies) run side by side on one host VM, each with
    its own private working directory and, on multi-tenant hosts, its own OS user"."""
    if os.geteuid() != 0 or shutil.which("useradd") is None:
        pytest.skip("needs root and useradd: the supervisor makes the agents' OS users")
    py = _bridge_python()
    if py is None:
        pytest.skip("no interpreter an unprivileged user can run with Ygg importable")
    host = server.admin(hosting.add_host, "alice", "vm-1")
    ids = {name: server.agent(name) for name in ("researcher", "reviewer")}
    for name in ids:
        server.admin(hosting.set_runtime, name, "hosted", "vm-1")
    key_file = host_root / "host.key"
    key_file.write_text(host["host_key"])
    key_file.chmod(0o600)
    host_users.check_key_file(key_file)
    sup = await HostSupervisor(server.url, key_file.read_text(), host_root, os_users=True, bridge_python=py).start()
    try:
        alice = await server.person("alice")
        asked = {}
        for name in ids:  # a wake each: each bridge is started by its own
            asked[name] = (await alice.send(workspace=server.ws, conversation="general", topic="new", title=name,
                                            type="request", to=[name], text="How do credits work?"))["message"]
        for name, q in asked.items():
            async def answered(q=q):
                return next((m for m in await history(alice, server.ws, q["topic"]) if m["in_reply_to"] == q["id"]),
                            None)

            assert (await until(answered, timeout=60))["author"] == ids[name]
        await sup.idle()
        runs = {name: sup.running[aid][0] for name, aid in ids.items()}
        uids = {}
        for name, run in runs.items():
            (real, effective, saved, fs), groups = _uids(run.proc.pid)
            assert real == effective == saved == fs == pwd.getpwnam(host_users.user_name(ids[name])).pw_uid != 0
            assert groups == ""  # extra_groups=[]: not even root's
            uids[name] = real
            env = Path(f"/proc/{run.proc.pid}/environ").read_bytes().split(b"\0")
            assert f"{host_users.TOKEN_ENV}={run.token}".encode() in env
            others = [r.token for n, r in runs.items() if n != name] + [host["host_key"]]
            assert not any(secret.encode() in b"".join(env) for secret in others)
            home = host_root / "agents" / ids[name]
            assert (home.stat().st_uid, home.stat().st_mode & 0o777) == (real, 0o700)
        assert uids["researcher"] != uids["reviewer"]
        for name, other in (("researcher", "reviewer"), ("reviewer", "researcher")):
            uid = uids[name]
            assert _as(uid, "ls", str(host_root / "agents" / ids[name])).returncode == 0  # (the control: its own)
            for probe in (("ls", str(host_root / "agents" / ids[other])),
                          ("cat", str(host_root / "agents" / ids[other] / "bridge.json")),
                          ("cat", str(key_file)), ("ls", str(host_root / "agents"))):
                done = _as(uid, *probe)
                assert done.returncode != 0 and "Permission denied" in done.stderr, (name, probe, done)
        # back to local (§24): the hosted bridge's token is refused, its process ends; the other runs on
        server.admin(hosting.set_runtime, "researcher", "local")
        await until(lambda: runs["researcher"].proc.returncode is not None, timeout=30)
        assert not sup._alive(ids["researcher"]) and sup._alive(ids["reviewer"])
    finally:
        await sup.stop()
        for aid in ids.values():
            subprocess.run(["userdel", host_users.user_name(aid)], capture_output=True)


def test_os_users_are_refused_clearly_without_root_or_useradd(monkeypatch, tmp_path):
    """Not root, or no useradd: `--os-users` is refused with its reason; so is a host key file others can read."""
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(host_users.OsUsersRefused, match="needs root"):
        host_users.check()
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(host_users.OsUsersRefused, match="needs useradd"):
        host_users.check()
    key = tmp_path / "host.key"
    key.write_text("yggh_x_y")
    key.chmod(0o644)
    with pytest.raises(host_users.OsUsersRefused, match="chmod 600"):
        host_users.check_key_file(key)


def test_the_cli_refuses_os_users_when_not_root(monkeypatch, tmp_path, capsys):
    """`ygg-agent host --os-users` as an ordinary user: an error naming why, exit status 2, nothing started."""
    import json

    from ygg_server.agents.cli import main

    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setenv("YGG_HOST_KEY", "yggh_x_y")
    assert main(["host", "--url", "ws://127.0.0.1:9/", "--root", str(tmp_path), "--os-users"]) == 2
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["error"] == "OsUsersRefused" and "needs root" in out["detail"]


def test_agent_user_names_are_short_and_stable():
    assert host_users.user_name("agent.0123456789abcdef0123456789abcdef") == "ygg-0123456789ab"
    assert host_users.user_name("agent.x") == host_users.user_name("agent.x") and len(host_users.user_name("x")) == 16
