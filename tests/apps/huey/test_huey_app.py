"""The unmodified huey consumer (Django integration, SqlHuey storage on PostgreSQL) against a
real PostgreSQL: the commands the chart calls — migrate, schema check, database check,
run_huey — and the shutdown behaviour the `signal` drain adapter relies on: SIGINT lets a
running task finish, SIGTERM interrupts it (and huey does not re-enqueue it)."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml
from hyapp import CONSUMER, ROOT, VENV, App, output, query, wait_for

EXAMPLE = yaml.safe_load((ROOT / "values-examples" / "huey.yaml").read_text())["handlers"]["job"]
# values-examples/huey.yaml's readiness probe: ["python3", "-c", CODE]
READY = EXAMPLE["readinessProbe"]["exec"]["command"][2]

pytestmark = [pytest.mark.timeout(180), pytest.mark.xdist_group("huey")]


def ok(res: Any) -> str:
    return f"exit {res.returncode}\n{res.stdout[-2000:]}\n{res.stderr[-3000:]}"


def runs(url: str) -> list[tuple[Any, ...]]:
    return query(url, "SELECT task_id, started_at, finished_at FROM jhtasks_taskrun ORDER BY id")


def queued(url: str) -> int:
    return int(query(url, "SELECT count(*) FROM task")[0][0])


def migrated(a: App) -> App:
    res = a.run("migrate", "--noinput")
    assert res.returncode == 0, ok(res)
    return a


def test_migrate_then_check(app: Callable[..., App], facts: dict) -> None:
    a = app()
    before = a.run("migrate", "--check")
    assert before.returncode != 0, f"an empty database passed the schema check: {ok(before)}"
    t0 = time.monotonic()
    mig = a.run("migrate", "--noinput")
    facts["migrate_fresh_s"] = round(time.monotonic() - t0, 2)
    assert mig.returncode == 0, ok(mig)
    assert "Applying jhtasks.0001_initial... OK" in mig.stdout, mig.stdout
    # huey's SqlHuey tables were made by the migration, through huey's own create_tables
    tables = {r[0] for r in query(a.url, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
    assert {"kv", "schedule", "task", "counter", "jhtasks_taskrun"} <= tables, tables
    after = a.run("migrate", "--check")
    assert after.returncode == 0, ok(after)
    again = a.run("migrate", "--noinput")
    assert again.returncode == 0 and "No migrations to apply" in again.stdout, ok(again)
    drift = a.run("makemigrations", "--check", "--dry-run", "jhtasks")
    assert drift.returncode == 0, f"models and migrations disagree: {ok(drift)}"


def test_database_check(app: Callable[..., App]) -> None:
    code = "from django.db import connection; connection.ensure_connection()"
    good = app()
    assert good.run("shell", "-c", code).returncode == 0
    bad = app()
    bad.url = bad.url.rsplit("/", 1)[0] + "/no_such_database"
    res = bad.run("shell", "-c", code)
    assert res.returncode != 0 and "no_such_database" in res.stderr, ok(res)


def test_tasks_run_through_postgres(app: Callable[..., App]) -> None:
    a = migrated(app())
    a.enqueue(0.2, 0.2, 0.2)
    assert queued(a.url) == 3
    proc = a.start(*CONSUMER)
    wait_for(lambda: sum(1 for r in runs(a.url) if r[2]) == 3, 60, "3 finished runs", interval=0.3)
    assert queued(a.url) == 0
    assert len({r[0] for r in runs(a.url)}) == 3
    # the probes of values-examples/huey.yaml: liveness = the consumer has child processes
    # (2 workers + the scheduler), readiness = the queue database answers
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
    assert len(children) == 3, children
    ready = subprocess.run([str(VENV / "bin" / "python"), "-c", READY], env=a.env(), capture_output=True, text=True)
    assert ready.returncode == 0, ready.stderr
    down = subprocess.run([str(VENV / "bin" / "python"), "-c", READY], capture_output=True, text=True,
                          env={**a.env(), "DATABASE_URL": a.url.rsplit("/", 1)[0] + "/no_such_database"})
    assert down.returncode != 0
    proc.send_signal(signal.SIGINT)
    assert proc.wait(30) == 0, output(proc)


def start_busy(a: App, seconds: float) -> Any:
    """A consumer with one task of `seconds` running."""
    migrated(a)
    proc = a.start(*CONSUMER)
    wait_for(lambda: "Huey consumer started" in output(proc),
             60, "the consumer to start", interval=0.2)
    a.enqueue(seconds)
    wait_for(lambda: runs(a.url), 30, "the task to start", interval=0.1)
    return proc


def test_sigint_finishes_the_running_task_then_exits_0(app: Callable[..., App], facts: dict) -> None:
    a = app()
    proc = start_busy(a, 6)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    rc = proc.wait(60)
    facts["sigint_exit_s"] = round(time.monotonic() - t0, 2)
    log = output(proc)
    assert rc == 0, log
    [(_, started, finished)] = runs(a.url)
    assert finished is not None, f"SIGINT lost the running task\n{log}"
    assert facts["sigint_exit_s"] >= 3, f"the consumer exited before the task could finish\n{log}"
    assert "Received SIGINT" in log and "Shutting down gracefully" in log, log
    # and it took no new work while draining
    assert queued(a.url) == 0


def test_sigint_stops_fetching(app: Callable[..., App]) -> None:
    a = app()
    proc = start_busy(a, 4)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.5)
    a.enqueue(0.1, 0.1)
    assert proc.wait(60) == 0, output(proc)
    assert len(runs(a.url)) == 1, runs(a.url)
    assert queued(a.url) == 2, "a draining consumer took new tasks"


def test_sigterm_interrupts_the_running_task(app: Callable[..., App], facts: dict) -> None:
    a = app()
    proc = start_busy(a, 20)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    rc = proc.wait(30)
    facts["sigterm_exit_s"] = round(time.monotonic() - t0, 2)
    log = output(proc)
    [(task_id, _, finished)] = runs(a.url)
    assert finished is None, f"SIGTERM let the task finish: the signal adapter would not matter\n{log}"
    assert facts["sigterm_exit_s"] < 10, log
    assert f"{task_id} did not finish" in log, log
    facts["sigterm_exit_code"] = rc
    # huey drops the interrupted task: it is neither queued nor run again by a new consumer
    assert queued(a.url) == 0
    again = a.start(*CONSUMER)
    time.sleep(4)
    assert len(runs(a.url)) == 1, "the interrupted task was re-run"
    again.send_signal(signal.SIGINT)
    assert again.wait(30) == 0
