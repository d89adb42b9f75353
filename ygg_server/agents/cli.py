"""`ygg-agent`: run one agent, several (one at a time), or the offline demo team.

    ygg-agent run agent.toml
    ygg-agent run --name researcher --api-key-env YGG_KEY --backend builtin --personality researcher
    ygg-agent supervise lead.toml researcher.toml reviewer.toml
    ygg-agent host --url ws://SERVER:8765/ --root /srv/ygg-host [--os-users] [agent.toml …]   (docs/agents.md)
    ygg-agent demo --data-dir DIR --workspace team --owner alice [--url ws://127.0.0.1:8765/]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import logging
import signal
import sys

from ..about import version_line
from . import config as agent_config
from .bridge import Bridge, Supervisor


def _from_flags(a) -> agent_config.AgentConfig:
    backend = {"kind": a.backend}
    for k in ("model", "personality", "base_url"):
        if getattr(a, k):
            backend[k] = getattr(a, k)
    if a.model_key_env:
        backend["api_key_env"] = a.model_key_env
    d = {"name": a.name, "url": a.url, "backend": backend}
    if a.api_key_env:
        d["api_key_env"] = a.api_key_env
    if a.data_dir:
        d["data_dir"] = a.data_dir
    if a.role:
        d["role"] = a.role
    if a.tools:
        d["tools"] = a.tools.split(",")
    return agent_config.from_dict(d)


async def _until_signal(start, stop) -> None:
    done = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, done.set)
        except NotImplementedError:
            pass
    work = asyncio.create_task(start())
    waiter = asyncio.create_task(done.wait())
    finished, _ = await asyncio.wait({work, waiter}, return_when=asyncio.FIRST_COMPLETED)
    await stop()
    for t in (work, waiter):
        t.cancel()
    if work in finished and not work.cancelled() and work.exception():
        raise work.exception()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="ygg-agent", description="Run Ygg agents over the socket protocol.")
    p.add_argument("--version", action="version", version=version_line("ygg-agent"))
    p.add_argument("--log-level", default="INFO")
    sub = p.add_subparsers(dest="command", required=True)

    r = sub.add_parser("run", help="run one agent")
    r.add_argument("config", nargs="?", help="the agent's TOML config")
    r.add_argument("--name")
    r.add_argument("--url", default="ws://127.0.0.1:8765/")
    r.add_argument("--api-key-env", help="environment variable holding the agent's Ygg API key")
    r.add_argument("--backend", default="builtin", choices=agent_config.BACKENDS)
    r.add_argument("--personality")
    r.add_argument("--model")
    r.add_argument("--model-key-env", help="environment variable holding the model provider's key")
    r.add_argument("--base-url")
    r.add_argument("--data-dir")
    r.add_argument("--role")
    r.add_argument("--tools", help="comma-separated tool names")

    s = sub.add_parser("supervise", help="run several agents, started one at a time")
    s.add_argument("configs", nargs="+")
    s.add_argument("--connect-timeout", type=float, default=30.0)

    h = sub.add_parser("host", help="the host supervisor: run this host's agents when they have work")
    h.add_argument("--url", default="ws://127.0.0.1:8765/")
    h.add_argument("--host-key-env", default="YGG_HOST_KEY", help="environment variable holding the host key "
                   "(ygg-server admin add-host)")
    h.add_argument("--root", required=True, help="the host's directory: each agent's working directory is in it")
    h.add_argument("configs", nargs="*", help="agents' TOML configs (by name; default: the built-in backend)")
    h.add_argument("--host-key-file", help="a file holding the host key (instead of the variable; mode 600)")
    h.add_argument("--reachable-timeout", type=float, default=30.0)
    h.add_argument("--os-users", action="store_true", help="run each agent's bridge as its own OS user, "
                   "ygg-<short id> (multi-tenant hosts; root, useradd)")
    h.add_argument("--bridge-python", help="with --os-users: the interpreter the bridges run with (default: this "
                   "one; it must be readable by other users)")

    d = sub.add_parser("demo", help="create (once) and run the offline demo agents")
    d.add_argument("--data-dir", required=True, help="the server's data dir")
    d.add_argument("--workspace", required=True)
    d.add_argument("--owner", required=True, help="the handle of the person who owns the agents")
    d.add_argument("--url", default="ws://127.0.0.1:8765/")

    a = p.parse_args(argv)
    logging.basicConfig(level=a.log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        if a.command == "run":
            if not a.config and not a.name:
                p.error("run needs a config file or --name")
            cfg = agent_config.load(a.config) if a.config else _from_flags(a)
            bridge = Bridge(cfg)
            asyncio.run(_until_signal(bridge.run, bridge.stop))
        elif a.command == "supervise":
            sup = Supervisor([Bridge(agent_config.load(c)) for c in a.configs], a.connect_timeout)

            async def go():
                await sup.start()
                print(json.dumps({"started": sup.order}), flush=True)
                await sup.wait()

            asyncio.run(_until_signal(go, sup.stop))
        elif a.command == "host":
            from .hosting import HostSupervisor

            if a.host_key_file:
                if a.os_users:
                    from .host_users import check_key_file

                    check_key_file(a.host_key_file)
                with open(a.host_key_file) as f:
                    key = f.read().strip()
            else:
                key = os.environ.get(a.host_key_env)
            if not key:
                raise ValueError(f"no host key in {a.host_key_file or '$' + a.host_key_env}")
            configs = {c.name: c for c in (agent_config.load(path) for path in a.configs)}
            host = HostSupervisor(a.url, key, a.root, configs=configs, reachable_timeout=a.reachable_timeout,
                                  os_users=a.os_users, bridge_python=a.bridge_python)

            async def go():
                await host.start()
                print(json.dumps({"host": host.host, "agents": sorted(x["name"] for x in host.agents.values())}),
                      flush=True)
                await asyncio.gather(*host._tasks)

            asyncio.run(_until_signal(go, host.stop))
        else:
            from .demo import start_demo

            holder = {}

            async def go():
                holder["demo"] = demo = await start_demo(a.url, data_dir=a.data_dir, workspace=a.workspace,
                                                         owner=a.owner)
                print(json.dumps({"started": demo.supervisor.order}), flush=True)
                await demo.supervisor.wait()

            async def stop():
                if "demo" in holder:
                    await holder["demo"].stop()

            asyncio.run(_until_signal(go, stop))
    except (ValueError, OSError) as e:
        print(json.dumps({"error": type(e).__name__, "detail": str(e)}))
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
