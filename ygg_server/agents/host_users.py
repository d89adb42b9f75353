"""Hosted bridges under OS users of their own (seed 003 §21: on multi-tenant hosts, each agent "its own OS user").

`ygg-agent host --os-users` (root only, with `useradd`): each agent's bridge is a process of its own, run as the
system user `ygg-<short id>` (made once with `useradd --system --no-create-home --shell /usr/sbin/nologin`, then
reused) in its working directory (`ROOT/agents/<agent id>/`, owned by that user, mode 0700; ROOT and `agents/`
0711: nobody lists them). The process is started with `user=`, `group=` and `extra_groups=[]` and an environment of
its own: a few basics (PATH, LANG, LC_ALL, TZ), HOME its directory, its narrow token in `$YGG_AGENT_TOKEN`, and the
variable its backend's `api_key_env` names, if any: never another agent's token nor the host key (kept in the
supervisor; a host key file must be readable by its owner only, `check_key_file`).

The child (`python -m ygg_server.agents.host_users DIR/bridge.json`) runs the same `Bridge` as `ygg-agent run`,
prints `{"reachable": <agent id>}` once signed in, and exits when its token is refused (switched back to local).
Its log is `DIR/bridge.log`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import grp
import hashlib
import json
import logging
import os
import pwd
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from . import config as agent_config
from .bridge import Bridge

log = logging.getLogger("ygg.agents.host")

TOKEN_ENV = "YGG_AGENT_TOKEN"
BASE_ENV = ("PATH", "LANG", "LC_ALL", "TZ")


class OsUsersRefused(ValueError):
    """The host cannot run its agents as OS users of their own (why, in words)."""


def check() -> None:
    if os.geteuid() != 0:
        raise OsUsersRefused("--os-users needs root: the supervisor makes each agent's OS user and starts its "
                             "bridge as that user")
    if shutil.which("useradd") is None:
        raise OsUsersRefused("--os-users needs useradd (the passwd package) to make each agent's OS user")


def check_key_file(path: str | os.PathLike) -> None:
    """A host key file the agents' users could read (or write) is refused."""
    if os.stat(path).st_mode & 0o077:
        raise OsUsersRefused(f"the host key file {path} is open to other users: chmod 600 it")


def user_name(aid: str) -> str:
    """`ygg-` and the first 12 hex digits of the agent's uuid (of a digest of its id, if it has none)."""
    tail = aid.split(".", 1)[-1]
    short = tail[:12] if re.fullmatch(r"[0-9a-f]{12,}", tail) else hashlib.sha256(aid.encode()).hexdigest()[:12]
    return "ygg-" + short


def agent_user(aid: str) -> pwd.struct_passwd:
    """The agent's OS user, made now if there is none."""
    name = user_name(aid)
    try:
        return pwd.getpwnam(name)
    except KeyError:
        pass
    args = ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin"]
    try:
        grp.getgrnam(name)
        args += ["-g", name]  # (a group of that name is left from before: the user joins it)
    except KeyError:
        pass
    done = subprocess.run([*args, name], capture_output=True, text=True)
    if done.returncode != 0:
        raise OsUsersRefused(f"useradd {name} failed: {done.stderr.strip() or done.returncode}")
    log.info("made the OS user %s for %s", name, aid)
    return pwd.getpwnam(name)


def private_root(root: Path) -> None:
    """ROOT and ROOT/agents: the supervisor's, traversable (each agent reaches its own directory) but not listed."""
    for d in (root, root / "agents"):
        d.mkdir(parents=True, exist_ok=True)
        os.chmod(d, 0o711)


def own_dir(path: Path, pw: pwd.struct_passwd) -> None:
    """The agent's directory and everything in it: its user's, 0700 (what an in-process run left included)."""
    path.mkdir(parents=True, exist_ok=True)
    for d, dirs, files in os.walk(path):
        for name in [d, *(os.path.join(d, x) for x in dirs + files)]:
            os.chown(name, pw.pw_uid, pw.pw_gid, follow_symlinks=False)
    os.chmod(path, 0o700)


def import_path() -> str:
    """Where this process finds Ygg and its dependencies: PYTHONPATH of a bridge run by another interpreter of the
    same version (`--bridge-python`, where this one is out of the agents' users' reach)."""
    paths = [str(Path(__file__).resolve().parents[2]), sysconfig.get_paths()["purelib"],
             sysconfig.get_paths()["platlib"]]
    return os.pathsep.join(dict.fromkeys(paths))


def child_env(cfg: agent_config.AgentConfig, pw: pwd.struct_passwd, token: str) -> dict[str, str]:
    env = {k: os.environ[k] for k in BASE_ENV if k in os.environ}
    env.update(HOME=cfg.data_dir, USER=pw.pw_name, LOGNAME=pw.pw_name,
               PYTHONPATH=import_path(), PYTHONDONTWRITEBYTECODE="1", **{TOKEN_ENV: token})
    named = cfg.backend.api_key_env
    if named and named in os.environ and named not in env:
        env[named] = os.environ[named]
    return env


def probe(python: str) -> None:
    """Can an unprivileged user run `python` and import Ygg with it? (As `nobody`, where there is one.)"""
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        return
    try:
        done = subprocess.run([python, "-c", "import ygg_server.agents.host_users"], capture_output=True, text=True,
                              cwd="/", env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                                            "PYTHONPATH": import_path()},
                              user=nobody.pw_uid, group=nobody.pw_gid, extra_groups=[], timeout=60)
        why = done.stderr.strip()[-300:] if done.returncode != 0 else ""
    except (OSError, subprocess.SubprocessError) as e:
        why = str(e)
    if why:
        raise OsUsersRefused(f"the agents' users cannot run {python} with Ygg importable (its directories must be "
                             f"readable by others; give --bridge-python): {why}")


class UserBridge:
    """One agent's bridge as a process of its OS user; `connected`, `run`, `stop` as a `Bridge`'s."""

    def __init__(self, cfg: agent_config.AgentConfig, aid: str, token: str, python: str):
        self.cfg, self.aid, self.token, self.python = cfg, aid, token, python
        self.connected = asyncio.Event()
        self.client = None  # (its client is in the child: the supervisor watches the process instead)
        self.proc: asyncio.subprocess.Process | None = None
        self.user: pwd.struct_passwd | None = None

    async def run(self) -> None:
        self.user = pw = await asyncio.to_thread(agent_user, self.aid)
        home = Path(self.cfg.data_dir)
        await asyncio.to_thread(own_dir, home, pw)
        cfg = dataclasses.replace(self.cfg, api_key=None, api_key_env=TOKEN_ENV)
        path = home / "bridge.json"
        path.write_text(json.dumps(dataclasses.asdict(cfg)))
        os.chown(path, pw.pw_uid, pw.pw_gid)
        os.chmod(path, 0o600)
        with open(home / "bridge.log", "ab") as err:
            os.fchown(err.fileno(), pw.pw_uid, pw.pw_gid)
            self.proc = await asyncio.create_subprocess_exec(
                self.python, "-m", "ygg_server.agents.host_users", str(path), cwd=home,
                env=child_env(self.cfg, pw, self.token), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=err, user=pw.pw_uid, group=pw.pw_gid, extra_groups=[], start_new_session=True)
        try:
            async for line in self.proc.stdout:
                try:
                    said = json.loads(line)
                except ValueError:
                    continue
                if isinstance(said, dict) and said.get("reachable"):
                    self.connected.set()
            code = await self.proc.wait()
        except asyncio.CancelledError:  # (its own session: it does not go with the supervisor unless stopped)
            await asyncio.shield(self.stop())
            raise
        log.info("%s's bridge (%s) ended: %s", self.cfg.name, pw.pw_name, code)

    async def stop(self) -> None:
        proc = self.proc
        if proc is None or proc.returncode is not None:
            return
        proc.terminate()
        try:
            await asyncio.wait_for(proc.wait(), 10)
        except asyncio.TimeoutError:
            proc.kill()
            await proc.wait()


async def _child(bridge: Bridge) -> None:
    task = asyncio.ensure_future(bridge.run())
    ready = asyncio.ensure_future(bridge.connected.wait())
    await asyncio.wait({task, ready}, return_when=asyncio.FIRST_COMPLETED)
    if ready.done():
        print(json.dumps({"reachable": bridge.me.get("id")}), flush=True)
        await asyncio.wait({task, bridge.client._task}, return_when=asyncio.FIRST_COMPLETED)  # refused: it ends
    else:
        ready.cancel()
    await bridge.stop()
    if task.done() and not task.cancelled() and task.exception() is not None:
        raise task.exception()


def main(argv: list[str] | None = None) -> int:
    from .cli import _until_signal

    (path,) = argv if argv is not None else sys.argv[1:]
    logging.basicConfig(level="INFO", format="%(asctime)s %(name)s %(levelname)s %(message)s")
    bridge = Bridge(agent_config.load(path))
    asyncio.run(_until_signal(lambda: _child(bridge), bridge.stop))
    return 0


if __name__ == "__main__":
    sys.exit(main())
