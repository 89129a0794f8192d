"""The unmodified procrastinate (Django add-on) against a real PostgreSQL: the commands the
chart calls — migrate, schema check, healthchecks probe, worker — and the lifecycle
behaviour it relies on. Nothing is mocked; slow migrations come from real PostgreSQL locks."""

from __future__ import annotations

import signal
import subprocess
import time
from typing import Any, Callable

import pytest
from app_fixtures import HeldLock
from pcapp import App, ok, output, query, wait_for

PRE_HEARTBEAT = "0033_post_cancel_notification"  # procrastinate's last migration before 0034_pre_add_heartbeat
LOCK_SECONDS = 16.0

pytestmark = [pytest.mark.timeout(180), pytest.mark.xdist_group("procrastinate")]


def started_runs(url: str, task: str = "sleep_task") -> list[tuple[Any, ...]]:
    return query(url, "SELECT job_id, started_at, finished_at FROM jhtasks_taskrun WHERE task = %s", task)


def waiting_on_lock(url: str) -> bool:
    """Some other backend of this database waits on a heavyweight lock."""
    return bool(query(url, "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() "
                           "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"))


def test_migrate_then_check(app: Callable[..., App], facts: dict) -> None:
    a = app(1)
    before = a.run("migrate", "--check")
    assert before.returncode != 0, f"an empty database passed the schema check: {ok(before)}"
    t0 = time.monotonic()
    mig = a.run("migrate", "--noinput")
    facts["migrate_fresh_s"] = round(time.monotonic() - t0, 2)
    assert mig.returncode == 0, ok(mig)
    assert "Applying procrastinate.0041_post_retry_failed_job... OK" in mig.stdout
    t0 = time.monotonic()
    check = a.run("migrate", "--check")
    facts["schema_check_s"] = round(time.monotonic() - t0, 2)
    assert check.returncode == 0, ok(check)
    t0 = time.monotonic()
    health = a.run("procrastinate", "healthchecks")
    facts["healthchecks_s"] = round(time.monotonic() - t0, 2)
    assert health.returncode == 0 and "Worker App: OK" in health.stdout, ok(health)
    again = a.run("migrate", "--noinput")
    assert again.returncode == 0 and "No migrations to apply." in again.stdout, ok(again)


def test_v2_image_sees_v1_schema_behind(app: Callable[..., App]) -> None:
    v1, v2 = app(1), app(2)
    assert v1.run("migrate", "--noinput").returncode == 0
    behind = v2.run("migrate", "--check")
    assert behind.returncode != 0, f"v2 passed the check on a v1 schema: {ok(behind)}"
    assert v2.run("migrate", "--noinput").returncode == 0
    assert v2.run("migrate", "--check").returncode == 0
    # an old image on a newer schema passes (Django only looks for unapplied migrations):
    # during a rolling upgrade the v1 pods keep passing their probes
    assert v1.run("migrate", "--check").returncode == 0


def test_partial_schema_worker_refuses(app: Callable[..., App], dburl: str) -> None:
    a = app(1)
    part = a.run("migrate", "procrastinate", PRE_HEARTBEAT, "--noinput")
    assert part.returncode == 0, ok(part)
    assert a.run("migrate", "--check").returncode != 0
    health = a.run("procrastinate", "healthchecks")
    assert health.returncode != 0 and "Missing procrastinate migrations" in health.stdout + health.stderr, ok(health)
    worker = a.start("procrastinate", "worker", "--shutdown-graceful-timeout=10")
    rc = worker.wait(30)
    log = output(worker)
    assert rc != 0, f"worker ran on a schema without its heartbeat migrations:\n{log}"
    assert "does not exist" in log, log
    assert query(dburl, "SELECT count(*) FROM procrastinate_jobs")[0][0] == 0


def test_sigterm_finishes_job_in_flight(app: Callable[..., App], dburl: str, facts: dict) -> None:
    a = app(1)
    assert a.run("migrate", "--noinput").returncode == 0
    assert a.run("procrastinate", "defer", "sleep_task", '{"seconds": 6}').returncode == 0
    worker = a.start("procrastinate", "worker", "--shutdown-graceful-timeout=30")
    wait_for(lambda: started_runs(dburl), 30, "sleep_task to start")
    time.sleep(1)
    t0 = time.monotonic()
    worker.send_signal(signal.SIGTERM)
    rc = worker.wait(40)
    facts["sigterm_to_exit_with_6s_job_s"] = round(time.monotonic() - t0, 2)
    assert rc == 0, output(worker)
    [(_, started, finished)] = started_runs(dburl)
    assert finished is not None, "the job in flight did not finish before the worker exited"
    assert query(dburl, "SELECT status::text FROM procrastinate_jobs") == [("succeeded",)]
    assert "Stop requested" in output(worker) and "Stopped worker" in output(worker)


def test_idle_worker_exits_at_once(app: Callable[..., App], facts: dict) -> None:
    a = app(1)
    assert a.run("migrate", "--noinput").returncode == 0
    worker = a.start("procrastinate", "worker", "--shutdown-graceful-timeout=30")
    wait_for(lambda: "Starting worker" in output(worker), 30, "the worker to start")
    t0 = time.monotonic()
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(10) == 0, output(worker)
    facts["sigterm_to_exit_idle_s"] = round(time.monotonic() - t0, 2)
    assert facts["sigterm_to_exit_idle_s"] < 5


def test_graceful_timeout_cannot_stop_a_sync_job(app: Callable[..., App], dburl: str, facts: dict) -> None:
    """procrastinate 'aborts' at the graceful timeout, but a sync task runs in a thread and
    cannot be interrupted: the process exits only when the job ends (in Kubernetes: at
    SIGKILL, so the grace period must cover the longest job)."""
    a = app(1)
    assert a.run("migrate", "--noinput").returncode == 0
    assert a.run("procrastinate", "defer", "sleep_task", '{"seconds": 6}').returncode == 0
    worker = a.start("procrastinate", "worker", "--shutdown-graceful-timeout=1")
    wait_for(lambda: started_runs(dburl), 30, "sleep_task to start")
    t0 = time.monotonic()
    worker.send_signal(signal.SIGTERM)
    rc = worker.wait(30)
    facts["graceful_timeout_1s_sync_6s_job_exit_s"] = round(time.monotonic() - t0, 2)
    assert "still running after graceful timeout. Aborting them" in output(worker)
    assert facts["graceful_timeout_1s_sync_6s_job_exit_s"] > 3, output(worker)
    assert rc == 0 and started_runs(dburl)[0][2] is not None


def test_wedged_worker_ignores_sigterm_and_passes_healthchecks(app: Callable[..., App], dburl: str) -> None:
    """The `wedge` task blocks the event loop: SIGTERM is never handled, yet the healthchecks
    probe (database + migrations only) still passes — it cannot detect a wedged worker."""
    a = app(1)
    assert a.run("migrate", "--noinput").returncode == 0
    assert a.run("procrastinate", "defer", "wedge").returncode == 0
    worker = a.start("procrastinate", "worker", "--shutdown-graceful-timeout=2")
    wait_for(lambda: started_runs(dburl, "wedge"), 30, "wedge to start")
    worker.send_signal(signal.SIGTERM)
    with pytest.raises(subprocess.TimeoutExpired):
        worker.wait(6)
    assert a.run("procrastinate", "healthchecks").returncode == 0


def test_worker_heartbeat_log_fresh_while_busy_stale_when_wedged(app: Callable[..., App], dburl: str,
                                                                facts: dict, tmp_path: Any) -> None:
    """The liveness signal of values-examples/procrastinate.yaml: with WORKER_HEARTBEAT_LOG the
    settings send procrastinate.worker's DEBUG lines (its own 10 s heartbeat) to a file. A
    sync job in its thread leaves the loop beating; the `wedge` task stops every beat. Only
    the worker writes the file: a probe or a shell of the same settings never touches it."""
    beat = tmp_path / "worker-heartbeat.log"
    a = app(1)
    a.extra_env["WORKER_HEARTBEAT_LOG"] = str(beat)
    assert a.run("migrate", "--noinput").returncode == 0
    assert a.run("procrastinate", "healthchecks").returncode == 0
    assert not beat.exists(), "a non-worker command wrote the heartbeat log"
    assert a.run("procrastinate", "defer", "sleep_task", '{"seconds": 24}').returncode == 0
    worker = a.start("procrastinate", "worker", "--concurrency=2", "--shutdown-graceful-timeout=2")
    wait_for(lambda: started_runs(dburl), 30, "sleep_task to start")
    oldest = 0.0
    while not started_runs(dburl)[0][2]:
        assert worker.poll() is None, output(worker)
        oldest = max(oldest, time.time() - beat.stat().st_mtime)
        time.sleep(0.5)
    facts["heartbeat_log_max_age_busy_s"] = round(oldest, 1)
    assert oldest < 12, f"the heartbeat log was {oldest:.1f}s old while the worker was busy (beats every 10 s)"
    assert "Updating heartbeat of worker" in beat.read_text()
    assert "DEBUG" not in output(worker), "DEBUG lines leaked to stderr"
    assert a.run("procrastinate", "defer", "wedge").returncode == 0
    wait_for(lambda: started_runs(dburl, "wedge"), 30, "wedge to start")
    time.sleep(0.5)
    wedged_at = beat.stat().st_mtime
    time.sleep(14)
    assert beat.stat().st_mtime == wedged_at, "a wedged worker kept writing its heartbeat log"
    facts["heartbeat_log_age_wedged_s"] = round(time.time() - wedged_at, 1)
    assert a.run("procrastinate", "healthchecks").returncode == 0  # the healthcheck still passes


def test_slow_migration_from_a_real_lock(app: Callable[..., App], dburl: str, facts: dict) -> None:
    """v1 -> v2 while another session holds ACCESS EXCLUSIVE on the table the v2 migration
    alters: migrate really waits in PostgreSQL; the schema check says 'behind' meanwhile."""
    v1, v2 = app(1), app(2)
    assert v1.run("migrate", "--noinput").returncode == 0
    t0 = time.monotonic()
    locker = HeldLock(dburl, "LOCK TABLE jhtasks_taskrun IN ACCESS EXCLUSIVE MODE", LOCK_SECONDS)
    mig = v2.start("migrate", "--noinput", name="migrate")
    wait_for(lambda: waiting_on_lock(dburl), 15, "migrate to wait on the lock")
    assert v2.run("migrate", "--check").returncode != 0
    assert mig.poll() is None
    locker.release()
    assert mig.wait(60) == 0, output(mig)
    facts["locked_upgrade_migration_s"] = round(time.monotonic() - t0, 2)
    locker.join(5)
    assert facts["locked_upgrade_migration_s"] >= 15
    assert v2.run("migrate", "--check").returncode == 0


def test_fresh_migration_held_by_a_lock_leaves_workers_failing(app: Callable[..., App], dburl: str,
                                                               facts: dict) -> None:
    """A fresh install whose first migration (CREATE TABLE jhtasks_taskrun) waits behind
    another session's uncommitted CREATE of the same table: for that whole time procrastinate
    has no schema, so an ungated worker exits non-zero (the kind scenario's naive restarts)."""
    a = app(1)
    t0 = time.monotonic()
    locker = HeldLock(dburl, "CREATE TABLE jhtasks_taskrun (id int)", LOCK_SECONDS)
    mig = a.start("migrate", "--noinput", name="migrate")
    wait_for(lambda: waiting_on_lock(dburl), 15, "migrate to wait on the lock")
    worker = a.start("procrastinate", "worker", "--shutdown-graceful-timeout=5")
    assert worker.wait(30) != 0, output(worker)
    assert a.run("migrate", "--check").returncode != 0
    locker.release()
    assert mig.wait(60) == 0, output(mig)
    facts["locked_fresh_migration_s"] = round(time.monotonic() - t0, 2)
    locker.join(5)
    assert facts["locked_fresh_migration_s"] >= 15
    assert a.run("migrate", "--check").returncode == 0
