"""`workload` command line: roles, migrations, schema checks, drain mode, job submission."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import psycopg

from workload import db, log, migrations, queue
from workload.config import ConfigError, Settings, database_url, image_version

if TYPE_CHECKING:
    from workload.launcher import JobLauncher

EPILOG = """exit codes: 0 ok, 1 failure, 2 unusable input, 3 schema behind, 4 schema ahead,
5 database unreachable. Environment: DATABASE_URL, WORKLOAD_VERSION (schema head: 1 -> 3,
2 -> 4, 3 -> 6 with pre-deploy head 5), SKIP_POST_DEPLOYMENT_MIGRATIONS, JOBHANDLERS_STATE_DIR, HEARTBEAT_INTERVAL_SECONDS, DRAIN_DEADLINE_SECONDS,
JOBHANDLERS_START_DRAINED, WORKLOAD_LEASE_SECONDS, WORKLOAD_POLL_SECONDS, WORKLOAD_CONCURRENCY;
launcher mode: WORKLOAD_LAUNCH=job, WORKLOAD_LAUNCH_IMAGE, WORKLOAD_LAUNCH_DB_SECRET[_KEY],
WORKLOAD_LAUNCH_NAMESPACE, WORKLOAD_LAUNCH_PREFIX, WORKLOAD_LAUNCH_SYNC_SECONDS (README).
Signals: SIGTERM/SIGINT drain then exit (a second one requeues at once), SIGUSR2 toggles drain mode."""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="workload", description=__doc__, epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    web = sub.add_parser("web", help="HTTP API role (port 8080)")
    web.add_argument("--host", default="0.0.0.0")
    web.add_argument("--port", type=int, default=int(os.environ.get("WORKLOAD_PORT", "8080") or 8080))
    job = sub.add_parser("job", help="job handler role: claims and runs jobs (in-process, or as Kubernetes Jobs)")
    job.add_argument("--launch", choices=("inprocess", "job"), default=None,
                     help="where a claimed job runs (default $WORKLOAD_LAUNCH or inprocess): in this process, "
                          "or as a Kubernetes Job running `workload run-job <id>`")
    rj = sub.add_parser("run-job", help="run one launched job (the command of a Kubernetes Job the launcher created)")
    rj.add_argument("job_id", type=int)
    sub.add_parser("workflow", help="workflow handler role: chains workflow steps into jobs")
    mig = sub.add_parser("migrate", help="apply pending schema migrations (advisory-locked, idempotent)")
    mig.add_argument("--slow", type=float, default=None, metavar="SECONDS",
                     help="sleep before the last pending migration (default $WORKLOAD_MIGRATE_SLOW or 0)")
    mig.add_argument("--fail", action="store_true",
                     help="make the last pending migration fail and roll back (also $WORKLOAD_MIGRATE_FAIL=1)")
    mig.add_argument("--skip-post-deployment", action="store_true",
                     help="the pre-deploy phase: stop before the first post-deployment migration "
                          "(also $SKIP_POST_DEPLOYMENT_MIGRATIONS=true)")
    sub.add_parser("downgrade", help="undo every applied revision above this image's head (their stored down SQL)")
    dbp = sub.add_parser("db", help="database checks")
    dbsub = dbp.add_subparsers(dest="db_command", required=True, metavar="CHECK")
    dbsub.add_parser("check", help="exit 0 iff the schema is at this image's head (3 behind, 4 ahead, 5 unreachable)")
    dbsub.add_parser("ping", help="exit 0 when the database accepts connections (5 otherwise)")
    wait = dbsub.add_parser("wait", help="repeat `db check` until it passes or --timeout expires")
    wait.add_argument("--timeout", type=float, default=300.0, metavar="SECONDS")
    wait.add_argument("--interval", type=float, default=2.0, metavar="SECONDS")
    for name, text in (("drain", "enter drain mode: stop claiming, fail readiness, stay alive"),
                       ("undrain", "leave drain mode")):
        d = sub.add_parser(name, help=text)
        d.add_argument("--state-dir", type=Path, default=None, help="default $JOBHANDLERS_STATE_DIR or /run/jobhandlers")
    submit = sub.add_parser("submit", help="queue jobs directly in the database")
    submit.add_argument("--kind", default="sleep", choices=queue.KINDS)
    submit.add_argument("--duration", type=float, default=1.0)
    submit.add_argument("--count", type=int, default=1)
    sub.add_parser("counts", help="print jobs per state as JSON")
    return p


def _state_dir(arg: Path | None) -> Path:
    return arg or Path(os.environ.get("JOBHANDLERS_STATE_DIR", "").strip() or "/run/jobhandlers")


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def cmd_migrate(args: argparse.Namespace) -> int:
    url, version = database_url(), image_version()
    slow = args.slow
    if slow is None:
        raw = os.environ.get("WORKLOAD_MIGRATE_SLOW", "").strip() or "0"
        try:
            slow = float(raw)
        except ValueError:
            raise ConfigError(f"WORKLOAD_MIGRATE_SLOW={raw!r} is not a number of seconds") from None
    if slow < 0:
        raise ConfigError("--slow must be >= 0")
    target = migrations.head(version)
    skip = args.skip_post_deployment or _flag("SKIP_POST_DEPLOYMENT_MIGRATIONS")
    upto = migrations.pre_deploy_head(version) if skip else target
    log.bind(role="migrate")
    log.event("migrate_start", version=version, head=target, upto=upto, slow=slow)
    try:
        reached = migrations.migrate(url, target, slow=slow, fail=args.fail or _flag("WORKLOAD_MIGRATE_FAIL"),
                                     upto=upto)
    except migrations.MigrationError as exc:
        log.event("migrate_failed", level="error", error=str(exc), exit_code=exc.code)
        log.error(str(exc))
        return exc.code
    log.event("migrate_done", revision=reached, exit_code=0)
    return db.OK


def cmd_downgrade(_args: argparse.Namespace) -> int:
    url, version = database_url(), image_version()
    target = migrations.head(version)
    log.bind(role="downgrade")
    try:
        before, after = migrations.downgrade(url, target)
    except migrations.MigrationError as exc:
        log.error(str(exc))
        return exc.code
    print(f"schema revision {before} -> {after} (this image's head {target})")
    return db.OK


def cmd_db(args: argparse.Namespace) -> int:
    url = database_url()
    if args.db_command == "ping":
        try:
            with db.connect(url, app="workload-ping") as conn:
                conn.execute("SELECT 1")
        except (db.Unreachable, psycopg.Error) as exc:
            print(f"database unreachable: {exc}", file=sys.stderr)
            return db.UNREACHABLE
        print("database accepts connections")
        return db.OK
    version = image_version()
    target, pre = migrations.head(version), migrations.pre_deploy_head(version)
    if args.db_command == "check":
        code, message = migrations.check(url, target, pre=pre)
        print(message, file=sys.stdout if code == db.OK else sys.stderr)
        return code
    deadline = time.monotonic() + args.timeout
    last = None
    while True:
        code, message = migrations.check(url, target, pre=pre)
        if message != last:
            print(message, file=sys.stdout if code == db.OK else sys.stderr, flush=True)
            last = message
        if code == db.OK:
            return code
        if time.monotonic() + args.interval > deadline:
            print(f"gave up after {args.timeout:g} s", file=sys.stderr)
            return code
        time.sleep(args.interval)


def cmd_role(args: argparse.Namespace) -> int:
    """Run a role; exit straight away once it returned (everything is flushed and closed,
    and interpreter teardown would add 100+ ms to a SIGTERM exit on a busy node)."""
    code = _role(args)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _role(args: argparse.Namespace) -> int:
    from workload.loop import run_role

    settings = Settings.from_env()
    if args.command == "job":
        mode = args.launch or os.environ.get("WORKLOAD_LAUNCH", "").strip() or "inprocess"
        if mode == "job":
            return run_role(_launcher(settings))
        if mode != "inprocess":
            raise ConfigError(f"WORKLOAD_LAUNCH={mode!r}; set it to inprocess or job")
        from workload.handler import JobHandler

        return run_role(JobHandler(settings))
    if args.command == "workflow":
        from workload.workflow import WorkflowHandler

        return run_role(WorkflowHandler(settings))
    from workload.web import WebRole

    try:
        role = WebRole(settings, args.host, args.port)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {args.host}:{args.port}: {exc.strerror}; choose another --port") from None
    return run_role(role)


def _launcher(settings: Settings) -> "JobLauncher":
    from workload.jobspec import LaunchSettings
    from workload.kubeapi import KubeApi
    from workload.launcher import JobLauncher

    api = KubeApi.from_env(os.environ)
    return JobLauncher(settings, LaunchSettings.from_env(os.environ, settings.version, api.namespace()), api)


def cmd_run_job(args: argparse.Namespace) -> int:
    from workload.runjob import run_job

    code = run_job(args.job_id)
    sys.stdout.flush()
    sys.stderr.flush()
    return code


def cmd_drain(args: argparse.Namespace) -> int:
    from workload.state import StateDir

    path = _state_dir(args.state_dir)
    try:
        StateDir(path, 0).set_drain(args.command == "drain")
    except OSError as exc:
        log.error(f"cannot update {path}: {exc.strerror}; check JOBHANDLERS_STATE_DIR / --state-dir")
        return db.FAILED
    print(f"{'drain mode on' if args.command == 'drain' else 'drain mode off'} ({path})")
    return db.OK


def cmd_submit(args: argparse.Namespace) -> int:
    with db.connect(database_url(), app="workload-submit") as conn:
        ids = [queue.submit(conn, args.kind, args.duration) for _ in range(args.count)]
    print(json.dumps({"ids": ids}))
    return db.OK


def cmd_counts(_args: argparse.Namespace) -> int:
    with db.connect(database_url(), app="workload-counts") as conn:
        print(json.dumps(queue.counts(conn)))
    return db.OK


COMMANDS = {"migrate": cmd_migrate, "downgrade": cmd_downgrade, "db": cmd_db, "web": cmd_role, "job": cmd_role, "workflow": cmd_role,
            "run-job": cmd_run_job,
            "drain": cmd_drain, "undrain": cmd_drain, "submit": cmd_submit, "counts": cmd_counts}


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `workload` console script; never prints a traceback."""
    args = _parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except ConfigError as exc:
        log.error(str(exc))
        return db.USAGE
    except db.Unreachable as exc:
        log.error(f"database unreachable: {exc}")
        return db.UNREACHABLE
    except (psycopg.Error, ValueError) as exc:
        log.error(f"{args.command}: {exc}")
        return db.FAILED
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # noqa: BLE001 - never a traceback
        log.error(f"{args.command}: unexpected {type(exc).__name__}: {exc}")
        return db.FAILED
