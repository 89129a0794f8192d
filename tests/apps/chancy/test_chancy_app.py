"""The unmodified chancy against a real PostgreSQL: the commands the chart calls — migrate,
schema check, the worker and its GET /health (chancy's API plugin) — and the lifecycle
behaviour the chart relies on. Nothing is mocked; slow migrations come from real locks."""

from __future__ import annotations

import signal
import time
from typing import Any, Callable

import pytest
from app_fixtures import HeldLock
from chapp import App, output, query, wait_for

LOCK_SECONDS = 16.0
# A fresh install's first statement (chancy's Migrator: CREATE TABLE IF NOT EXISTS
# chancy_schema_version) waits behind another session's uncommitted CREATE of it.
FRESH_LOCK = "CREATE TABLE chancy_schema_version (version_of varchar(255) PRIMARY KEY, version int)"
# The v2 migration (ALTER TABLE jh_taskrun ADD worker) waits behind this.
UPGRADE_LOCK = "LOCK TABLE jh_taskrun IN ACCESS EXCLUSIVE MODE"

pytestmark = [pytest.mark.timeout(180), pytest.mark.xdist_group("chancy")]


def runs(url: str) -> list[tuple[Any, ...]]:
    return query(url, "SELECT job_id, started_at, finished_at FROM jh_taskrun")


def states(url: str) -> list[tuple[Any, ...]]:
    return query(url, "SELECT state, attempts FROM chancy_jobs ORDER BY created_at")


def ok(res: Any) -> str:
    return f"exit {res.returncode}\n{res.stdout[-2000:]}\n{res.stderr[-3000:]}"


def waiting_on_lock(url: str) -> bool:
    return bool(query(url, "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() "
                           "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"))


def started_worker(a: App) -> Any:
    worker = a.start("worker", "start")
    wait_for(lambda: a.health() == 200, 30, "GET /health to answer 200")
    # chancy installs its SIGTERM handler only after LISTEN is set up and just before it
    # declares its queue: a SIGTERM before that kills it outright (-15)
    wait_for(lambda: "Adding queue 'default'" in output(worker), 30, "the worker to add its queue")
    time.sleep(0.5)
    return worker


def test_migrate_then_check(app: Callable[..., App], facts: dict) -> None:
    a = app(1)
    before = a.schema_check()
    assert before.returncode == 3, f"an empty database passed the schema check: {ok(before)}"
    raw = a.run("misc", "check-migrations")
    assert raw.returncode == 0 and "✗" in raw.stdout, ok(raw)  # chancy's own command never fails
    t0 = time.monotonic()
    mig = a.run("misc", "migrate")
    facts["migrate_fresh_s"] = round(time.monotonic() - t0, 2)
    assert mig.returncode == 0, ok(mig)
    t0 = time.monotonic()
    check = a.schema_check()
    facts["schema_check_s"] = round(time.monotonic() - t0, 2)
    assert check.returncode == 0, ok(check)
    assert query(a.url, "SELECT version FROM chancy_schema_version WHERE version_of = 'jhtasks'") == [(1,)]
    again = a.run("misc", "migrate")
    assert again.returncode == 0 and a.schema_check().returncode == 0, ok(again)


def test_schema_check_unreachable(app: Callable[..., App]) -> None:
    a = app(1)
    a.url = "postgresql://nobody@127.0.0.1:1/none"
    assert a.schema_check().returncode == 5


def test_v2_image_sees_v1_schema_behind(app: Callable[..., App]) -> None:
    v1, v2 = app(1), app(2)
    assert v1.run("misc", "migrate").returncode == 0
    behind = v2.schema_check()
    assert behind.returncode == 3, f"v2 passed the check on a v1 schema: {ok(behind)}"
    assert v2.run("misc", "migrate").returncode == 0
    assert v2.schema_check().returncode == 0
    # an old image on a newer schema passes (chancy only counts unapplied migrations)
    assert v1.schema_check().returncode == 0


def test_worker_refuses_unmigrated_schema_but_exits_0(app: Callable[..., App]) -> None:
    """chancy's worker checks its migrations at start, prints the fix and returns 1 — which
    click discards: the process exits 0 (a Deployment restarts it all the same)."""
    a = app(1)
    worker = a.start("worker", "start")
    rc = worker.wait(30)
    assert "missing migrations" in output(worker), output(worker)
    assert rc == 0, output(worker)
    assert a.health() is None


def test_health_up_while_busy_down_after_stop(app: Callable[..., App], dburl: str, facts: dict) -> None:
    """GET /health is served by the worker's own event loop; jobs run in child processes
    (ProcessExecutor), so a busy worker keeps answering. It is static (no database check)."""
    a = app(1)
    assert a.run("misc", "migrate").returncode == 0
    t0 = time.monotonic()
    worker = started_worker(a)
    facts["worker_start_to_health_200_s"] = round(time.monotonic() - t0, 2)
    a.push(8, 8, 8)
    wait_for(lambda: len(runs(dburl)) == 3, 30, "3 jobs to start")
    latencies = []
    for _ in range(5):
        t1 = time.monotonic()
        assert a.health() == 200
        latencies.append(time.monotonic() - t1)
        time.sleep(0.5)
    facts["health_latency_busy_max_s"] = round(max(latencies), 3)
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(40) == 0, output(worker)
    assert a.health() is None, "GET /health still answers after the worker exited"


def test_sigterm_finishes_job_in_flight(app: Callable[..., App], dburl: str, facts: dict) -> None:
    a = app(1)
    assert a.run("misc", "migrate").returncode == 0
    worker = started_worker(a)
    a.push(6)
    wait_for(lambda: runs(dburl), 30, "sleep_task to start")
    time.sleep(1)
    t0 = time.monotonic()
    worker.send_signal(signal.SIGTERM)
    # draining: no new jobs are taken, the API stops answering soon
    a.push(1)
    rc = worker.wait(40)
    facts["sigterm_to_exit_with_6s_job_s"] = round(time.monotonic() - t0, 2)
    assert rc == 0, output(worker)
    [(_, _, finished)] = runs(dburl)
    assert finished is not None, "the job in flight did not finish before the worker exited"
    assert sorted(s for s, _ in states(dburl)) == ["pending", "succeeded"], states(dburl)


def test_idle_worker_exits_at_once(app: Callable[..., App], facts: dict) -> None:
    a = app(1)
    assert a.run("misc", "migrate").returncode == 0
    worker = started_worker(a)
    t0 = time.monotonic()
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(15) == 0, output(worker)
    facts["sigterm_to_exit_idle_s"] = round(time.monotonic() - t0, 2)
    assert facts["sigterm_to_exit_idle_s"] < 5


def test_second_sigterm_forces_and_leaves_the_job(app: Callable[..., App], dburl: str, facts: dict) -> None:
    """The wrong path: a second SIGTERM (or SIGINT) forces the shutdown — the job in flight
    never records its finish and stays `running` until chancy's Recovery plugin reclaims it."""
    a = app(1)
    assert a.run("misc", "migrate").returncode == 0
    worker = started_worker(a)
    a.push(10)
    wait_for(lambda: runs(dburl), 30, "sleep_task to start")
    t0 = time.monotonic()
    worker.send_signal(signal.SIGTERM)
    time.sleep(1)
    worker.send_signal(signal.SIGTERM)
    rc = worker.wait(30)
    facts["double_sigterm_exit_s"] = round(time.monotonic() - t0, 2)
    facts["double_sigterm_exit_code"] = rc
    assert facts["double_sigterm_exit_s"] < 8, output(worker)
    assert "forcing shutdown" in output(worker), output(worker)
    time.sleep(10)  # the orphaned child would have finished by now if it survived
    assert states(dburl)[0][0] != "succeeded", states(dburl)


def test_drain_stops_at_shutdown_timeout(app: Callable[..., App], dburl: str, facts: dict) -> None:
    """chancy's worker waits `shutdown_timeout` (30 s, not settable from its CLI) for its
    jobs, then gives up on them: the chart's grace must exceed it (maxJobRuntimeSeconds)."""
    a = app(1)
    assert a.run("misc", "migrate").returncode == 0
    worker = started_worker(a)
    a.push(45)
    wait_for(lambda: runs(dburl), 30, "sleep_task to start")
    t0 = time.monotonic()
    worker.send_signal(signal.SIGTERM)
    rc = worker.wait(60)
    facts["drain_gives_up_after_s"] = round(time.monotonic() - t0, 2)
    facts["drain_gives_up_exit_code"] = rc
    assert 28 <= facts["drain_gives_up_after_s"] < 40, output(worker)
    assert runs(dburl)[0][2] is None


def test_slow_migration_from_a_real_lock(app: Callable[..., App], dburl: str, facts: dict) -> None:
    v1, v2 = app(1), app(2)
    assert v1.run("misc", "migrate").returncode == 0
    t0 = time.monotonic()
    locker = HeldLock(dburl, UPGRADE_LOCK, LOCK_SECONDS)
    mig = v2.start("misc", "migrate", name="migrate")
    wait_for(lambda: waiting_on_lock(dburl), 15, "migrate to wait on the lock")
    assert v2.schema_check().returncode == 3
    assert mig.poll() is None
    locker.release()
    assert mig.wait(60) == 0, output(mig)
    facts["locked_upgrade_migration_s"] = round(time.monotonic() - t0, 2)
    locker.join(5)
    assert facts["locked_upgrade_migration_s"] >= 15
    assert v2.schema_check().returncode == 0


def test_fresh_migration_held_by_a_lock_races_ungated_workers(app: Callable[..., App], dburl: str,
                                                               facts: dict) -> None:
    """A fresh install whose first statement (CREATE TABLE IF NOT EXISTS chancy_schema_version)
    waits behind another session's uncommitted CREATE of that table. An ungated worker's
    start-up check runs the same CREATE: it blocks too (no /health meanwhile: liveness
    fails), and when the lock goes both race — one of them dies with a UniqueViolation on
    pg_type. Without the chart's gate a fresh install can fail its migration outright."""
    a = app(1)
    t0 = time.monotonic()
    locker = HeldLock(dburl, FRESH_LOCK, LOCK_SECONDS)
    mig = a.start("misc", "migrate", name="migrate")
    wait_for(lambda: waiting_on_lock(dburl), 15, "migrate to wait on the lock")
    worker = a.start("worker", "start")
    time.sleep(5)
    assert worker.poll() is None and a.health() is None, output(worker)
    locker.release()
    mig_rc = mig.wait(60)
    facts["locked_fresh_migration_s"] = round(time.monotonic() - t0, 2)
    locker.join(5)
    assert facts["locked_fresh_migration_s"] >= 15
    wait_for(lambda: worker.poll() is not None or a.health() == 200, 30, "the ungated worker to exit or serve")
    loser = [name for name, proc in (("migrate", mig), ("worker", worker))
             if proc.poll() not in (None, 0) and "pg_type_typname_nsp_index" in output(proc)]
    facts["fresh_lock_race_loser"] = loser
    assert loser, f"no race seen: migrate exit {mig_rc}\n{output(mig)[-1500:]}\n{output(worker)[-1500:]}"
    if mig_rc != 0:  # the retry the chart's Job would do (backoffLimit)
        assert a.run("misc", "migrate").returncode == 0
    assert a.schema_check().returncode == 0
