"""`ygg-server`: serve, admin, bench. Each admin command prints its result as JSON on its last line."""

from __future__ import annotations

import argparse
import os
import asyncio
import dataclasses
import json
import signal
import sys

from .about import version_line
from .clock import now_us
from .startup import StartupError, bind_error, need, reporting, usable_data_dir
from .ops import admin
from . import logs, maintenance
from .net.proxy import networks
from .settings import add_limit_flags, apply_serve_section, limits_from, load_file, oauth_section
from .gcpolicy import calm_gc
from .lockfile import DataDirLock
from .store import sqlite as db
from .configure_cli import CONFIGURE, configure_arguments, run_configure


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="ygg-server", description="The Ygg server and its operator commands.")
    p.add_argument("--version", action="version", version=version_line("ygg-server"))
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("serve", help="run the server")
    s.add_argument("--data-dir", default=None, help="the embedded SQLite database's directory (without --db)")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=8765)
    s.add_argument("--db", default=None, help="postgresql://… (default: embedded SQLite in the data dir)")
    _pg_arguments(s)
    s.add_argument("--node-id", default=None, help="PostgreSQL: this node's id (default: random)")
    s.add_argument("--backup-dir", default=None,
                   help="PostgreSQL: where the pg_dump taken before a schema migration goes (default: the user's "
                        "data dir's backups/); SQLite keeps its copy beside the database")
    s.add_argument("--no-backup", action="store_true", help="PostgreSQL: migrate without that copy (you made one)")
    s.add_argument("--lease-seconds", type=float, default=30.0,
                   help="PostgreSQL: a claimed delivery's lease, renewed while its connection lives (default 30)")
    s.add_argument("--mcp-port", type=int, default=None, metavar="N",
                   help="serve the MCP endpoint (agents as tools: http://HOST:N/mcp) on this port too (0: any free)")
    s.add_argument("--config", default=None, help="a TOML file: [serve] options and [limits] (flags win)")
    s.add_argument("--tls-cert", default=None, help="serve wss:// with this certificate chain (PEM)")
    s.add_argument("--tls-key", default=None, help="… and this private key (PEM)")
    s.add_argument("--log-level", default="WARNING")
    s.add_argument("--log-file", default=None, help="append the log here (default: stderr)")
    s.add_argument("--log-json", action="store_true", help="one JSON object a line")
    add_limit_flags(s)
    s.add_argument("--session-days", type=float, default=None,
                   help="a person's session ends this many days after sign-in (default 30)")
    s.add_argument("--session-idle-days", type=float, default=None,
                   help="… or sooner, when unused this many days (default 14)")
    s.add_argument("--writer", choices=("process", "thread"), default=None,
                   help="SQLite: run the single writer in its own process (default; or $YGG_WRITER) or on a thread")

    a = sub.add_parser("admin", help="operator commands", description="Operator commands. A WORKSPACE is " + _WORKSPACE)
    a.add_argument("--data-dir", default=None)
    a.add_argument("--db", default=None, help="postgresql://… (instead of the data dir's SQLite)")
    _pg_arguments(a)
    asub = a.add_subparsers(dest="action", required=True)
    x = asub.add_parser("add-person", help="a person (the password is asked for unless --password is given)")
    x.add_argument("handle")
    x.add_argument("--password", default=None, help="for scripts; left out, it is asked for (not echoed)")
    x.add_argument("--plan", default=admin.DEFAULT_PLAN)
    x = asub.add_parser("add-workspace")
    x.add_argument("name")
    x.add_argument("--owner", required=True)
    x.add_argument("--restricted", action="store_true", help="open only to the organization's admins and the "
                                                              "people added to it (default: every member)")
    x.add_argument("--org", default=None, help="an organization of which the owner is owner or admin (default: "
                                               "the owner's own)")
    x = asub.add_parser("add-org")
    x.add_argument("name")
    x.add_argument("--owner", required=True)
    x.add_argument("--plan", default=admin.DEFAULT_PLAN)
    x.add_argument("--licensed", type=int, default=None, metavar="N", help=_LICENSED)
    x = asub.add_parser("add-org-member")
    x.add_argument("org", help="an organization id, or its owner's handle")
    x.add_argument("handle")
    x.add_argument("--role", default="member", choices=["admin", "member"])
    x = asub.add_parser("leave-org", help="a person leaves an organization (not its last owner)")
    x.add_argument("org", help="an organization id, or its owner's handle")
    x.add_argument("handle")
    x = asub.add_parser("leave-workspace", help="a person leaves one workspace (not a personal one, nor its last owner)")
    x.add_argument("workspace", help=_WORKSPACE)
    x.add_argument("handle")
    x = asub.add_parser("join-workspace", help="a person joins a workspace their organization opens to them")
    x.add_argument("workspace", help=_WORKSPACE)
    x.add_argument("handle")
    x = asub.add_parser("delete-workspace", help="a workspace and all in it (never a personal one)")
    x.add_argument("workspace", help=_WORKSPACE)
    x = asub.add_parser("set-permissions", help="an agent's permissions in a workspace (seed 002)")
    x.add_argument("workspace", help=_WORKSPACE)
    x.add_argument("agent", help="name, name@owner, or id")
    for flag in ("send", "receive", "monitor"):
        x.add_argument(f"--{flag}", choices=["on", "off"], default=None)
    for flag in ("can-message", "takes-from"):
        x.add_argument(f"--{flag}", default=None, metavar="REF,…", help="comma-separated; '' for anyone")
    x = asub.add_parser("set-restricted")
    x.add_argument("workspace", help=_WORKSPACE)
    x.add_argument("restricted", choices=["on", "off"])
    x = asub.add_parser("add-member")
    x.add_argument("workspace", help=_WORKSPACE)
    x.add_argument("handle")
    x.add_argument("--role", default="member", choices=["owner", "admin", "member", "viewer"])
    x = asub.add_parser("add-agent")
    x.add_argument("name")
    x.add_argument("--owner", required=True)
    x.add_argument("--workspace", default=None, help="pinned to this workspace: " + _WORKSPACE)
    x = asub.add_parser("fund")
    x.add_argument("target", nargs="?", help="the agent (name, name@owner, or id)")
    x.add_argument("--pool", default=None, metavar="WORKSPACE", help="the pool of this workspace: " + _WORKSPACE)
    x.add_argument("--workspace", default=None, help="the agent's wallet in this workspace (default: the last made "
                   "that it shares with its owner): " + _WORKSPACE)
    x.add_argument("amount", type=int)
    x = asub.add_parser("set-plan")
    x.add_argument("org", help="an organization id, or its owner's handle")
    x.add_argument("plan")
    x.add_argument("--licensed", type=int, default=None, metavar="N", help=_LICENSED)
    x = asub.add_parser("add-group")
    x.add_argument("workspace", help=_WORKSPACE)
    x.add_argument("name")
    x.add_argument("members", nargs="+", help="agents (name, name@owner, id) and @people")
    x = asub.add_parser("remove-group", help="a workspace's group (its conversation stays, with its members)")
    x.add_argument("workspace", help=_WORKSPACE)
    x.add_argument("name")
    x = asub.add_parser("add-host", help="a host that runs a person's agents under `ygg-agent host` (its key printed "
                        "once)")
    x.add_argument("name")
    x.add_argument("--owner", required=True)
    x = asub.add_parser("set-runtime", help="where an agent runs: local (clears its host assignment) or hosted")
    x.add_argument("agent", help="name, name@owner, or id")
    x.add_argument("runtime", choices=["local", "hosted"])
    x.add_argument("--host", default=None, help="hosted: one of the agent's owner's hosts (name or id)")
    x = asub.add_parser("revoke-agent")
    x.add_argument("agent")
    x = asub.add_parser("rotate-key", help="a new API key for an agent (printed once); the old one stops working")
    x.add_argument("agent")
    x = asub.add_parser("reset-password", help="a person's new password; every session of theirs ends")
    x.add_argument("handle")
    x.add_argument("--password", default=None, help="for scripts; left out, it is asked for (not echoed)")
    x = asub.add_parser("deactivate-person", help="sessions end, sign-in refused, memberships and agents taken away")
    x.add_argument("handle")
    x = asub.add_parser("reactivate-person", help="a deactivated person signs in again, owning their personal workspace")
    x.add_argument("handle")
    x = asub.add_parser("remove-member", help="a person out of a workspace, with their agents there")
    x.add_argument("workspace", help=_WORKSPACE)
    x.add_argument("handle")
    x = asub.add_parser("remove-org-member", help="a person out of an organization and the workspaces it opened")
    x.add_argument("org", help="an organization id, or its owner's handle")
    x.add_argument("handle")

    configure_arguments(asub)
    maintenance.add_parsers(asub)

    b = sub.add_parser("bench", help="benchmarks: see `ygg-server bench --help`")
    b.add_argument("rest", nargs=argparse.REMAINDER)

    args = p.parse_args(argv)
    return reporting("ygg-server", lambda: _run(p, s, args))


def _run(p: argparse.ArgumentParser, s: argparse.ArgumentParser, args) -> int:
    if args.command == "serve":
        _settle_serve(s, args)
    if args.command in ("serve", "admin") and not (args.data_dir or args.db):
        p.error("--data-dir DIR or --db postgresql://… is required")
    if args.command in ("serve", "admin") and args.db and not _is_pg(args.db):
        p.error("--db takes a postgresql:// URL")
    if args.command == "serve":
        logs.setup(args.log_level, args.log_file, args.log_json)
        os.environ["YGG_LOG_LEVEL"] = args.log_level.upper()  # the writer process's too
        return asyncio.run(serve(args))
    if args.command == "bench":
        from .bench.core import main as bench_main

        return bench_main(args.rest)
    return run_admin(args)


_WORKSPACE = ("an id, a name only one workspace has, or ORG/WORKSPACE (the organization's name or id, or its owner's "
              "handle, then the workspace's name: a name is unique only within its organization)")
_LICENSED = ("team: the messages a month licensed (seed 002: agents one per 100 of them, at least 50); "
             "left out, not metered")


def _settle_serve(s: argparse.ArgumentParser, args) -> None:
    """serve's options from --config and the flags (settings.py): args.limits, args.ssl."""
    file = load_file(args.config)
    apply_serve_section(s, args, file, args.config or "")
    args.limits = limits_from(args, file, args.config or "--config")
    args.oauth = oauth_section(file, args.config or "--config")  # (connected accounts' providers; $YGG_OAUTH_* win)
    days = {k: v * 86400 for k, v in (("person_session", args.session_days), ("person_idle", args.session_idle_days))
            if v is not None}  # (--person-session/--person-idle in seconds, or these in days)
    if days:
        args.limits = dataclasses.replace(args.limits, **days)
    try:
        networks(args.limits.trusted_proxies + args.limits.metrics_from)
    except ValueError as e:
        raise StartupError(str(e)) from None
    if args.limits.metrics:
        need("prometheus_client")
    args.ssl = tls_context(args.tls_cert, args.tls_key)


def tls_context(cert: str | None, key: str | None):
    if not cert and not key:
        return None
    if not (cert and key):
        raise StartupError("TLS needs both --tls-cert and --tls-key")
    import ssl

    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        ctx.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as e:
        raise StartupError(f"cannot load the TLS certificate {cert} with key {key} ({e}): check both files") from None
    return ctx


def _pg_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-prepared", action="store_true",
                   help="PostgreSQL: no prepared statements, for transaction poolers (or ?prepared=false in the URL)")


def _is_pg(url: str) -> bool:
    return url.startswith(("postgres://", "postgresql://"))


def run_admin(args) -> int:
    if args.action in maintenance.VERBS:  # on the database as a whole, before anything connects (and migrates)
        try:
            out = maintenance.run(args)
        except maintenance.MaintenanceError as e:
            print(json.dumps({"error": e.code, "detail": e.detail}))
            return 1
        print(json.dumps(out))
        return 0
    if args.db:
        need("asyncpg")
        from .store import postgres as pg

        conn = pg.connect_sync(args.db, False if args.no_prepared else None)
    else:
        conn = db.connect(db.db_path(usable_data_dir(args.data_dir)))
    try:
        act, now = args.action, now_us()  # (the one clock: what a command makes is stamped with it)
        if act == "add-person":
            out = admin.add_person(conn, args.handle, _password(args), args.plan, now=now)
        elif act in _ACCOUNTS:
            out = _ACCOUNTS[act](conn, args)
        elif act == "add-workspace":
            out = admin.add_workspace(conn, args.name, args.owner, args.restricted, args.org, now=now)
        elif act == "add-org":
            out = admin.add_org(conn, args.name, args.owner, args.plan, args.licensed, now=now)
        elif act == "add-org-member":
            out = admin.add_org_member(conn, args.org, args.handle, args.role, now=now)
        elif act == "leave-org":
            out = admin.leave_org(conn, args.org, args.handle)
        elif act == "leave-workspace":
            out = admin.leave_workspace(conn, args.workspace, args.handle)
        elif act == "join-workspace":
            out = admin.join_workspace(conn, args.workspace, args.handle, now=now)
        elif act == "delete-workspace":
            out = admin.delete_workspace(conn, args.workspace)
        elif act in ("add-host", "set-runtime"):
            from .ops import hosting

            out = (hosting.add_host(conn, args.owner, args.name, now=now) if act == "add-host"
                   else hosting.set_runtime(conn, args.agent, args.runtime, args.host, now=now))
        elif act == "set-permissions":
            from .ops.permissions import set_permissions

            changes = {k: getattr(args, k) == "on" for k in ("send", "receive", "monitor") if getattr(args, k)}
            changes |= {k: [r for r in v.split(",") if r] for k in ("can_message", "takes_from")
                        if (v := getattr(args, k)) is not None}
            out = set_permissions(conn, args.workspace, args.agent, changes)
        elif act == "set-restricted":
            out = admin.set_restricted(conn, args.workspace, args.restricted == "on", now=now)
        elif act == "add-member":
            out = admin.add_member(conn, args.workspace, args.handle, args.role, now=now)
        elif act == "add-agent":
            out = admin.add_agent(conn, args.name, args.owner, args.workspace, now=now)
        elif act == "fund":
            if (args.target is None) == (args.pool is None):
                raise admin.AdminError("bad_args", "fund takes an AGENT or --pool WORKSPACE")
            out = admin.fund(conn, args.target, args.amount, pool_ws=args.pool, ws_ref=args.workspace, now=now)
        elif act == "add-group":
            out = admin.add_group(conn, args.workspace, args.name, args.members)
        elif act == "remove-group":
            out = admin.remove_group(conn, args.workspace, args.name)
        elif act == "set-plan":
            out = admin.set_plan(conn, args.org, args.plan, args.licensed)
        elif act == "rotate-key":
            out = admin.rotate_key(conn, args.agent)
        elif act in CONFIGURE:
            out = run_configure(conn, args, now)
        else:
            out = admin.revoke_agent(conn, args.agent)
        if act in _MEMBERSHIP:  # (the audit log: membership changes and deletions by the operator)
            from . import audit

            audit.record(_MEMBERSHIP[act], participant=None, by="operator", result=out)
    except admin.AdminError as e:
        print(json.dumps({"error": e.code, "detail": e.detail}))
        return 1
    finally:
        conn.close()
    print(json.dumps(out))
    return 0


def _password(args) -> str:
    """`--password`, else asked for twice on the terminal (never echoed, never in the shell's history)."""
    if args.password is not None:
        return args.password
    import getpass

    first = getpass.getpass(f"password for @{args.handle}: ")
    if getpass.getpass("again: ") != first:
        raise admin.AdminError("password_mismatch", "the two passwords differ")
    return first


def _accounts():
    from .ops import accounts, membership

    return {
        "reset-password": lambda c, a: accounts.reset_password(c, a.handle, _password(a)),
        "deactivate-person": lambda c, a: accounts.deactivate(c, a.handle),
        "reactivate-person": lambda c, a: accounts.reactivate(c, a.handle, now_us()),
        "remove-member": lambda c, a: _audited(membership.remove_member(c, a.workspace, a.handle), "workspace"),
        "remove-org-member": lambda c, a: _audited(membership.remove_org_member(c, a.org, a.handle), "org"),
    }


def _audited(out: dict, kind: str) -> dict:
    from . import audit

    audit.record("member_removed", participant=None, by="operator", kind=kind, place=out[kind], member=out["id"])
    return out


_ACCOUNTS = _accounts()
_MEMBERSHIP = {"add-member": "member_added", "add-org-member": "org_member_added", "leave-org": "org_left",
               "leave-workspace": "workspace_left", "join-workspace": "workspace_joined",
               "delete-workspace": "workspace_deleted", "set-restricted": "workspace_restricted"}


async def serve(args) -> int:
    from . import compose
    from .tools.oauth import OAuthClient, providers as oauth_providers

    lock = None
    if args.db:
        need("asyncpg")
        if not args.no_backup:
            await asyncio.to_thread(copy_before_migration, args)
        writer = compose.on_postgres(args.db, prepared=False if args.no_prepared else None, node=args.node_id,
                                    lease=args.lease_seconds)
    else:
        lock = hold_data_dir(usable_data_dir(args.data_dir))
        path = db.db_path(args.data_dir)
        db.connect(path).close()  # migrated here (a newer one refused) before the writer opens it
        writer = compose.on_sqlite(path, process=None if args.writer is None else args.writer == "process")
    gw = compose.gateway(writer, args.limits)
    gw.oauth_client = OAuthClient(providers=oauth_providers(file=getattr(args, "oauth", None)))
    try:
        await gw.start(args.host, args.port, ssl=args.ssl)
    except OSError as e:
        await gw.close()
        raise bind_error(args.host, args.port, e) from None
    mcp = None
    if args.mcp_port is not None:
        from .net.mcp import McpEndpoint

        try:
            mcp = await McpEndpoint(gw).start(args.host, args.mcp_port, args.tls_cert, args.tls_key)
        except OSError as e:
            await gw.close()
            raise bind_error(args.host, args.mcp_port, e) from None
    calm_gc()  # after startup: what it made is frozen
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    url = f"{'wss' if args.ssl else 'ws'}://{args.host}:{gw.port}/"
    if lock is not None:
        lock.publish(url)
    print(json.dumps({"listening": url, **({"mcp": mcp.url} if mcp else {})}), flush=True)
    await stop.wait()
    if mcp is not None:
        await mcp.close()
    await gw.close()
    if lock is not None:
        lock.release()
    return 0


def copy_before_migration(args) -> None:
    """PostgreSQL: a pg_dump before the nodes migrate an earlier schema (SQLite's copy: store/sqlite/backup.py)."""
    import time

    import platformdirs

    from .store.postgres import backup as pg_backup

    where = args.backup_dir or os.path.join(platformdirs.user_data_dir("ygg"), "backups")
    try:
        kept = pg_backup.before_migration(args.db, where, time.strftime("%Y%m%dT%H%M%S", time.gmtime(now_us() / 1e6)))
    except (pg_backup.DumpError, OSError) as e:
        raise StartupError(f"the schema is to be migrated and a copy is made first, which failed ({e}): install "
                           "postgresql-client, choose --backup-dir, or make one yourself (ygg-server admin backup) "
                           "and pass --no-backup") from None
    if kept:
        import logging

        logging.getLogger("ygg").warning("migrating the schema: the database as it was is kept in %s", kept)


def hold_data_dir(data_dir) -> DataDirLock:
    """The data dir's lock (lockfile.py), or a one-line error naming the server that holds it."""
    lock = DataDirLock(data_dir)
    if not lock.acquire():
        raise StartupError(f"the data dir {data_dir} is in use by {lock.held_by()}: connect to that one, or stop it "
                           "first")
    return lock


if __name__ == "__main__":
    sys.exit(main())
