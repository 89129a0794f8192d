"""Job handler lifecycle with real processes and real signals: claim/lease, SIGTERM drain,
SIGKILL recovery, drain mode, heartbeat semantics."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import psycopg

from wl_harness import wait_for


def submit(url: str, kind: str = "sleep", duration: float = 0.0, n: int = 1) -> list[int]:
    with psycopg.connect(url) as conn:
        return [conn.execute("INSERT INTO jobs (kind, duration) VALUES (%s, %s) RETURNING id",
                             (kind, duration)).fetchone()[0] for _ in range(n)]


def job(url: str, job_id: int) -> tuple[str, int]:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT state, attempts FROM jobs WHERE id = %s", (job_id,)).fetchone()
    return row[0], row[1]


def attempts(url: str, job_id: int) -> list[tuple[int, str, str | None]]:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT attempt, handler, outcome FROM job_attempts WHERE job_id = %s ORDER BY attempt",
                            (job_id,)).fetchall()


def heartbeat_age(state: Path) -> float:
    try:
        return time.time() - (state / "heartbeat").stat().st_mtime
    except FileNotFoundError:
        return float("inf")


def test_four_handlers_run_200_jobs_exactly_once(migrated: str, spawn: Any) -> None:
    handlers = [spawn(migrated, "job", WORKLOAD_CONCURRENCY="2") for _ in range(4)]
    for h in handlers:
        h.wait_event("claiming")
    ids = submit(migrated, "sleep", 0.01, 200)

    def all_done() -> bool:
        with psycopg.connect(migrated) as conn:
            return conn.execute("SELECT count(*) FROM jobs WHERE state = 'done'").fetchone()[0] == 200

    wait_for(all_done, 90, "200 jobs done")
    with psycopg.connect(migrated) as conn:
        per_job = conn.execute("SELECT job_id, count(*), min(outcome) FROM job_attempts GROUP BY job_id").fetchall()
        by_handler = conn.execute("SELECT handler, count(*) FROM job_attempts GROUP BY handler").fetchall()
        max_attempts = conn.execute("SELECT max(attempts) FROM jobs").fetchone()[0]
    assert sorted(r[0] for r in per_job) == ids
    assert all(r[1] == 1 and r[2] == "done" for r in per_job), "every job claimed and completed exactly once"
    assert max_attempts == 1
    assert len(by_handler) >= 2, f"work should be shared, got {by_handler}"
    claimed = sum(len(h.named("claimed")) for h in handlers)
    assert claimed == 200
    for h in handlers:
        h.signal(signal.SIGTERM)
    assert [h.wait(15) for h in handlers] == [0, 0, 0, 0]


def test_idle_handler_exits_at_once_on_sigterm(migrated: str, spawn: Any) -> None:
    h = spawn(migrated, "job", WORKLOAD_POLL_SECONDS="5")
    h.wait_event("claiming")
    t0 = time.monotonic()
    h.signal(signal.SIGTERM)
    assert h.wait(10) == 0
    assert time.monotonic() - t0 < 4.0, "an idle handler must not wait out its 5 s poll"
    assert [e["event"] for e in h.events()][-3:] == ["draining", "drained", "exit"]
    # The handler's own clock, free of process start-up and scheduling noise on a loaded machine.
    assert h.named("exit")[0]["ts"] - h.named("draining")[0]["ts"] < 1.0


def test_sigterm_mid_job_finishes_the_job_and_claims_nothing_more(migrated: str, spawn: Any, tmp_path: Path) -> None:
    state = tmp_path / "st"
    first = submit(migrated, "sleep", 2.0)[0]
    # A long poll: the exit must follow the job's end, not the next poll.
    h = spawn(migrated, "job", state=state, WORKLOAD_CONCURRENCY="1", WORKLOAD_POLL_SECONDS="5")
    h.wait_event("claimed", where=lambda e: e["job"] == first)
    later = submit(migrated, "sleep", 0.0)[0]
    h.signal(signal.SIGTERM)
    wait_for(lambda: (state / "stopping").exists(), 1.0, "the stopping marker right after SIGTERM")
    draining = h.wait_event("draining")[0]
    assert draining["in_flight"] == 1
    assert h.wait(20) == 0
    assert job(migrated, first) == ("done", 1)
    assert job(migrated, later) == ("queued", 0), "no claim after SIGTERM"
    finished = h.named("finished")[0]
    exit_event = h.named("exit")[0]
    assert exit_event["exit_code"] == 0
    assert exit_event["ts"] - finished["ts"] < 1.0, "exit within 1 s of the last job"


def test_drain_deadline_requeues_and_another_handler_reruns(migrated: str, spawn: Any) -> None:
    jid = submit(migrated, "sleep", 3.0)[0]
    a = spawn(migrated, "job", DRAIN_DEADLINE_SECONDS="0.5")
    a.wait_event("claimed", where=lambda e: e["job"] == jid)
    a.signal(signal.SIGTERM)
    assert a.wait(10) == 1, "past the drain deadline the handler requeues and exits non-zero"
    assert a.named("requeued")[0]["job"] == jid
    assert job(migrated, jid) == ("queued", 1)
    b = spawn(migrated, "job")
    wait_for(lambda: job(migrated, jid) == ("done", 2), 20, "the requeued job rerun by another handler")
    assert [a_[2] for a_ in attempts(migrated, jid)] == ["requeued", "done"]
    b.signal(signal.SIGTERM)
    assert b.wait(15) == 0


def test_second_sigterm_requeues_at_once(migrated: str, spawn: Any) -> None:
    jid = submit(migrated, "sleep", 20.0)[0]
    h = spawn(migrated, "job", DRAIN_DEADLINE_SECONDS="60")
    h.wait_event("claimed")
    h.signal(signal.SIGTERM)
    h.wait_event("draining")
    t0 = time.monotonic()
    h.signal(signal.SIGTERM)
    assert h.wait(10) == 1
    assert time.monotonic() - t0 < 5.0, "the second SIGTERM must not wait for the 20 s job"
    assert job(migrated, jid) == ("queued", 1)


def test_sigkill_mid_job_lease_expires_and_the_job_reruns(migrated: str, spawn: Any, tmp_path: Path) -> None:
    # The rescuer starts drained so that it is ready, but cannot take the job first.
    rescuer_state = tmp_path / "rescuer"
    b = spawn(migrated, "job", state=rescuer_state, WORKLOAD_HANDLER_ID="rescuer", JOBHANDLERS_START_DRAINED="1")
    b.wait_event("claiming_paused")
    a = spawn(migrated, "job", WORKLOAD_HANDLER_ID="victim")
    a.wait_event("claiming")
    jid = submit(migrated, "sleep", 2.0)[0]
    a.wait_event("claimed", where=lambda e: e["job"] == jid)
    a.signal(signal.SIGKILL)
    a.wait(5)
    assert job(migrated, jid) == ("running", 1), "killed mid-job: the job is still leased to the dead handler"
    (rescuer_state / "drain").unlink()
    hit = b.wait_event("claimed", timeout=20, where=lambda e: e["job"] == jid)[0]
    assert hit["attempt"] == 2
    wait_for(lambda: job(migrated, jid) == ("done", 2), 20, "the rerun to finish")
    assert attempts(migrated, jid) == [(1, "victim", None), (2, "rescuer", "done")]
    b.signal(signal.SIGTERM)
    assert b.wait(15) == 0


def test_lost_lease_makes_completion_a_noop(migrated: str, spawn: Any, tmp_path: Path) -> None:
    """A blocking job outlives its lease (no renewal while the loop is stalled): the job is
    rerun elsewhere and the stale completion changes nothing (at-least-once, idempotent)."""
    fast_state = tmp_path / "fast"
    b = spawn(migrated, "job", state=fast_state, WORKLOAD_HANDLER_ID="fast", JOBHANDLERS_START_DRAINED="1")
    b.wait_event("claiming_paused")
    a = spawn(migrated, "job", WORKLOAD_LEASE_SECONDS="1", WORKLOAD_HANDLER_ID="slow")
    a.wait_event("claiming")
    jid = submit(migrated, "blocking", 4.0)[0]
    a.wait_event("blocking_started")
    with psycopg.connect(migrated) as conn:  # the rerun will be a plain sleep
        conn.execute("UPDATE jobs SET kind = 'sleep', duration = 0 WHERE id = %s", (jid,))
    (fast_state / "drain").unlink()
    wait_for(lambda: job(migrated, jid) == ("done", 2), 20, "the rerun by the other handler")
    stale = a.wait_event("finished", timeout=20)[0]
    assert stale["outcome"] == "stale"
    assert attempts(migrated, jid) == [(1, "slow", "stale"), (2, "fast", "done")]
    with psycopg.connect(migrated) as conn:
        assert conn.execute("SELECT finished_by FROM jobs WHERE id = %s", (jid,)).fetchone() == ("fast",)
    for h in (a, b):
        h.signal(signal.SIGTERM)
        assert h.wait(15) == 0


def test_drain_mode_stops_claiming_and_undrain_resumes(migrated: str, spawn: Any, cli: Any, tmp_path: Path) -> None:
    state = tmp_path / "st"
    h = spawn(migrated, "job", state=state)
    h.wait_event("claiming")
    drain = cli(migrated, "drain", JOBHANDLERS_STATE_DIR=str(state))
    assert drain.returncode == 0 and (state / "drain").exists()
    h.wait_event("claiming_paused", where=lambda e: e["reason"] == "drain-marker")
    jid = submit(migrated, "sleep", 0.0)[0]
    # The loop keeps ticking (heartbeat refreshed twice) and still does not claim.
    first = (state / "heartbeat").stat().st_mtime
    wait_for(lambda: (state / "heartbeat").stat().st_mtime > first, 5, "a heartbeat while drained")
    second = (state / "heartbeat").stat().st_mtime
    wait_for(lambda: (state / "heartbeat").stat().st_mtime > second, 5, "another heartbeat while drained")
    assert job(migrated, jid) == ("queued", 0)
    assert h.proc.poll() is None
    assert cli(migrated, "undrain", JOBHANDLERS_STATE_DIR=str(state)).returncode == 0
    h.wait_event("claiming_resumed")
    wait_for(lambda: job(migrated, jid) == ("done", 1), 10, "the job claimed after undrain")
    # SIGUSR2 toggles drain mode.
    h.signal(signal.SIGUSR2)
    wait_for(lambda: (state / "drain").exists(), 5, "SIGUSR2 to write the drain marker")
    h.wait_event("claiming_paused", count=2)
    h.signal(signal.SIGUSR2)
    h.wait_event("claiming_resumed", count=2)
    assert not (state / "drain").exists()
    h.signal(signal.SIGTERM)
    assert h.wait(10) == 0


def test_start_drained_and_the_prestop_marker_stop_claiming(migrated: str, spawn: Any, tmp_path: Path) -> None:
    state = tmp_path / "st"
    h = spawn(migrated, "job", state=state, JOBHANDLERS_START_DRAINED="1")
    h.wait_event("claiming_paused", where=lambda e: e["reason"] == "drain-marker")
    assert (state / "drain").exists()
    jid = submit(migrated, "sleep", 0.0)[0]
    (state / "drain").unlink()
    wait_for(lambda: job(migrated, jid)[0] == "done", 10, "claiming after the marker is removed")
    (state / "stopping").touch()  # what the chart's preStop hook does
    h.wait_event("claiming_paused", where=lambda e: e["reason"] == "stopping-marker")
    other = submit(migrated, "sleep", 0.0)[0]
    first = (state / "heartbeat").stat().st_mtime
    wait_for(lambda: (state / "heartbeat").stat().st_mtime > first, 5, "a heartbeat while stopping")
    assert job(migrated, other) == ("queued", 0)
    h.signal(signal.SIGTERM)
    assert h.wait(10) == 0


def test_busy_file_while_a_job_runs(migrated: str, spawn: Any, tmp_path: Path) -> None:
    """The reference contract's busy signal (scaleIn.preferIdle's default busyPath): `busy` exists
    while a job runs and not while the handler is idle; a restarted container starts idle."""
    state = tmp_path / "st"
    state.mkdir()
    (state / "busy").write_text("a previous container's\n")
    h = spawn(migrated, "job", state=state)
    h.wait_event("claiming")
    assert not (state / "busy").exists(), "a handler starts idle"
    jid = submit(migrated, "sleep", 3.0)[0]
    wait_for(lambda: (state / "busy").exists(), 10, "busy while the job runs")
    h.wait_event("finished", where=lambda e: e["job"] == jid)
    wait_for(lambda: not (state / "busy").exists(), 10, "idle once the job is done")
    h.signal(signal.SIGTERM)
    assert h.wait(10) == 0


def test_heartbeat_stops_during_a_blocking_job_and_resumes(migrated: str, spawn: Any, tmp_path: Path) -> None:
    state = tmp_path / "st"
    h = spawn(migrated, "job", state=state)
    wait_for(lambda: heartbeat_age(state) < 0.5, 10, "a fresh heartbeat")
    jid = submit(migrated, "blocking", 3.0)[0]
    h.wait_event("blocking_started")
    wait_for(lambda: heartbeat_age(state) > 1.5, 10, "the heartbeat to go stale during the blocking job")
    assert h.proc.poll() is None, "the process is alive while its loop is stalled"
    h.wait_event("finished", where=lambda e: e["job"] == jid)
    wait_for(lambda: heartbeat_age(state) < 0.5, 5, "the heartbeat to resume after the blocking job")
    h.signal(signal.SIGTERM)
    assert h.wait(10) == 0


def test_heartbeat_stops_during_a_loop_of_caught_errors_and_resumes(migrated: str, spawn: Any,
                                                                     tmp_path: Path) -> None:
    state = tmp_path / "st"
    h = spawn(migrated, "job", state=state)
    wait_for(lambda: heartbeat_age(state) < 0.5, 10, "a fresh heartbeat")
    with psycopg.connect(migrated, autocommit=True) as conn:
        conn.execute("ALTER TABLE jobs RENAME TO jobs_away")  # every claim now raises
    h.wait_event("loop_error", count=3)
    wait_for(lambda: heartbeat_age(state) > 1.5, 10, "the heartbeat to go stale while the loop errors")
    assert h.proc.poll() is None, "the handler keeps looping on caught exceptions"
    with psycopg.connect(migrated, autocommit=True) as conn:
        conn.execute("ALTER TABLE jobs_away RENAME TO jobs")
    h.wait_event("loop_recovered")
    wait_for(lambda: heartbeat_age(state) < 0.5, 5, "the heartbeat to resume once the errors stop")
    jid = submit(migrated, "sleep", 0.0)[0]
    wait_for(lambda: job(migrated, jid)[0] == "done", 10, "work after recovery")
    h.signal(signal.SIGTERM)
    assert h.wait(10) == 0


def test_failing_and_cpu_jobs_are_recorded(migrated: str, spawn: Any) -> None:
    bad = submit(migrated, "fail", 0.0)[0]
    cpu = submit(migrated, "cpu", 0.3)[0]
    h = spawn(migrated, "job")
    wait_for(lambda: job(migrated, bad)[0] == "failed" and job(migrated, cpu)[0] == "done", 15, "both jobs to end")
    with psycopg.connect(migrated) as conn:
        assert "on purpose" in conn.execute("SELECT error FROM jobs WHERE id = %s", (bad,)).fetchone()[0]
    h.signal(signal.SIGTERM)
    assert h.wait(10) == 0


def test_restart_clears_the_previous_containers_markers(migrated: str, spawn: Any, tmp_path: Path) -> None:
    """The emptyDir outlives a container restart: `stopping` and `heartbeat` of the previous
    container are removed at start; the operator's `drain` marker stays."""
    state = tmp_path / "st"
    state.mkdir()
    for name in ("stopping", "heartbeat", "drain"):
        (state / name).touch()
    os.utime(state / "heartbeat", (0, 0))
    h = spawn(migrated, "job", state=state)
    h.wait_event("claiming_paused", where=lambda e: e["reason"] == "drain-marker")
    assert not (state / "stopping").exists() and (state / "drain").exists()
    wait_for(lambda: heartbeat_age(state) < 1.0, 5, "a new heartbeat")
    h.signal(signal.SIGTERM)
    assert h.wait(10) == 0
