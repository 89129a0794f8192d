"""procrastinate (unmodified, Django add-on) under the chart: exec healthchecks probes,
drain.mode none, `migrate --check` gating. Slow migrations come from real PostgreSQL locks
held by the test (jhkind.procrastinate.hold_lock), never from a sleep in the app."""

from __future__ import annotations

import random
import time

import pytest

from jhkind import liveness as live
from jhkind import procrastinate as pc
from jhkind.cluster import job_state, parse_time, pod_ready
from jhkind.locks import lock_done
from jhkind.observe import LogFollower, deletion_started, handler_exit_codes, is_handler_pod, terminated_state
from jhkind.scenario import Scenario, job_completed_at
from jhkind.waits import wait_until

pytestmark = [pytest.mark.kind, pytest.mark.timeout(900)]

LOCK_SECONDS = 16
NAIVE = {"waitForMigrations": {"enabled": False}, "startupProbe": {"enabled": False},
         "migration": {"useHelmHooks": False}}


def test_5a_procrastinate_fresh_install_locked_migration(scenario: Scenario) -> None:
    sc, p = scenario, scenario.progress
    lock = pc.hold_lock(sc, pc.FRESH_LOCK, LOCK_SECONDS)
    with p.phase(f"helm install --wait; the first migration waits {LOCK_SECONDS}s on a real lock"):
        res = sc.install(pc.values(replicas=2), timeout_s=400).check("helm install")
    p.fact("helm_install_seconds", round(res.seconds, 1))
    lock_done(lock, LOCK_SECONDS)
    with p.phase("hook Job before handler pods; 0 restarts"):
        [job] = sc.migration_jobs()
        assert "pre-install" in (job["metadata"].get("annotations") or {}).get("helm.sh/hook", "")
        assert job_state(job) == "complete", job.get("status")
        started, completed = parse_time(job["status"]["startTime"]), job_completed_at(job)
        assert completed is not None
        p.fact("migration_job_seconds", round(completed - started, 1))
        assert completed - started >= 15, "the migration was not held up by the lock"
        pods = [pod for pod in sc.timeline.last_pods().values() if is_handler_pod(pod)]
        first = min(parse_time(pod["metadata"]["creationTimestamp"]) for pod in pods)
        assert first >= completed, f"a handler pod was created {completed - first:.0f}s before the migration ended"
        sc.wait_handlers_ready(90)
        restarts = sc.handler_restarts()
        p.fact("restarts_total", sum(restarts.values()))
        assert sum(restarts.values()) == 0, sc.restart_report(restarts)


def test_5b_procrastinate_naive_restarts(scenario: Scenario) -> None:
    sc, p = scenario, scenario.progress
    lock = pc.hold_lock(sc, pc.FRESH_LOCK, LOCK_SECONDS)
    with p.phase("naive install (no hook, no init gate, no startupProbe) during a locked migration"):
        res = sc.install(pc.values(replicas=2), NAIVE, timeout_s=400).check("helm install (naive)")
    p.fact("helm_install_seconds", round(res.seconds, 1))
    lock_done(lock, LOCK_SECONDS)
    restarts = sc.handler_restarts()
    p.fact("restarts_total", sum(restarts.values()))
    p.fact("restarts_per_pod", restarts)
    p.fact("handler_exit_codes", handler_exit_codes(sc.timeline))
    assert sum(restarts.values()) > 0, "ungated workers did not restart: the gated test measures nothing"


def test_5c_procrastinate_rollout_with_jobs_in_flight(scenario: Scenario) -> None:
    sc, p = scenario, scenario.progress
    with p.phase("install 2 workers x 4 slots"):
        sc.install(pc.values(replicas=2, concurrency=4, max_job_s=30)).check("helm install")
        sc.wait_handlers_ready(120)
    grace = sc.grace("job")
    p.fact("job_grace_seconds", grace)
    rng = random.Random(5)
    durations = [round(rng.uniform(10, 25), 1) for _ in range(16)]
    pod0 = sc.handler_pods("job")[0]["metadata"]["name"]
    with p.phase(f"defer {len(durations)} sleep_task jobs of 10-25 s"):
        pc.defer(sc, pod0, durations)
        wait_until(lambda: pc.job_report(sc)["states"].get("doing", 0) >= 6, 60, "6 jobs in flight",
                   describe=lambda: str(pc.job_report(sc)))
    old = {pod["metadata"]["uid"]: pod["metadata"]["name"] for pod in sc.handler_pods("job")}
    logs = {uid: LogFollower(sc.kube, sc.namespace, name, "job").start() for uid, name in old.items()}
    with p.phase("rollout restart of the job role"):
        sc.restart_role("job")
        sc.wait_rollout("job", set(old), timeout=grace + 180)
    with p.phase("every job succeeds"):
        wait_until(lambda: pc.job_report(sc)["states"].get("succeeded", 0) == len(durations), 240,
                   "all jobs to succeed", interval=2, describe=lambda: str(pc.job_report(sc)))
    report = pc.job_report(sc)
    p.fact("job_report", report)
    lost = len(durations) - report["states"].get("succeeded", 0)
    p.fact("jobs_lost", lost)
    assert lost == 0 and report["unfinished_runs"] == 0 and report["reruns"] == 0, report
    with p.phase("old pods exit 0 before grace; no restarts (liveness left busy workers alone)"):
        last = sc.timeline.last_pods()
        finished_while_draining = 0
        for uid, name in old.items():
            started = deletion_started(sc.timeline, uid)
            term = terminated_state(last[uid], "job")
            assert started is not None and term is not None, f"{name}: deletion or final state not seen"
            exit_s = parse_time(term["finishedAt"]) - started
            logs[uid].join(5)
            waited = [ln for ln in logs[uid].lines if "Waiting for job to finish" in ln]
            ended = [ln for ln in logs[uid].lines if "ended with status: Success" in ln]
            stopped = any("Stopped worker" in ln for ln in logs[uid].lines)
            p.note(f"{name}: exit {term['exitCode']} {exit_s:.0f}s after delete (grace {grace}s); "
                   f"{len(waited)} jobs in flight at SIGTERM, {len(ended)} succeeded in its life")
            assert term["exitCode"] == 0, f"{name} exited {term['exitCode']} ({term.get('reason')})"
            assert exit_s < grace, f"{name} needed {exit_s:.0f}s, grace {grace}s"
            assert stopped, f"{name}: no 'Stopped worker' line (not a graceful stop)"
            finished_while_draining += len(waited)
        p.fact("jobs_finished_while_draining", finished_while_draining)
        assert finished_while_draining > 0, "the rollout hit no busy worker: nothing was drained"
        restarts = sc.handler_restarts()
        assert sum(restarts.values()) == 0, sc.restart_report(restarts)


def test_5d_procrastinate_upgrade_locked_migration(scenario: Scenario) -> None:
    sc, p = scenario, scenario.progress
    with p.phase("install :1"):
        sc.install(pc.values(tag="1")).check("helm install")
        sc.wait_handlers_ready(90)
    old = {pod["metadata"]["uid"] for pod in sc.handler_pods("job")}
    lock = pc.hold_lock(sc, pc.UPGRADE_LOCK, LOCK_SECONDS)
    t0 = time.time()
    with p.phase(f"helm upgrade to :2; its ALTER TABLE waits {LOCK_SECONDS}s on ACCESS EXCLUSIVE"):
        res = sc.upgrade(pc.values(tag="2"), timeout_s=400).check("helm upgrade")
    p.fact("helm_upgrade_seconds", round(res.seconds, 1))
    lock_done(lock, LOCK_SECONDS)
    assert time.time() - t0 >= 15
    with p.phase("new pods Ready after the hook, 0 restarts"):
        sc.wait_rollout("job", old, timeout=300)
        pods = sc.handler_pods("job")
        assert all(pod_ready(pod) and pod["spec"]["containers"][0]["image"].endswith(":2") for pod in pods)
        restarts = sc.handler_restarts()
        p.fact("restarts_total", sum(restarts.values()))
        assert sum(restarts.values()) == 0, sc.restart_report(restarts)


def test_5e_procrastinate_liveness_busy_and_wedged(scenario: Scenario) -> None:
    """Liveness is the worker's own heartbeat (a DEBUG line every 10 s from its event loop,
    logged to a file by the app's settings). A sync job twice the liveness window long
    leaves the loop beating: no restart. The app's `wedge` task blocks the loop (no
    heartbeat, no signal handling; `procrastinate healthchecks` still passes, tests/apps):
    the worker is restarted in place, SIGKILLed after the probe-level grace."""
    sc, p = scenario, scenario.progress
    with p.phase("install 2 workers x 2 slots; liveness = the worker heartbeat log"):
        sc.install(pc.values(replicas=2, concurrency=2, max_job_s=90)).check("helm install")
        sc.wait_handlers_ready(120)
    window = pc.LIVENESS_MAX_AGE + 5
    busy_s = 2 * window
    pod0 = sc.handler_pods("job")[0]["metadata"]["name"]
    with p.phase(f"a {busy_s}s sync job (2 x the {window}s liveness window): left alone"):
        live.busy_job_left_alone(sc, p, lambda seconds: pc.defer(sc, pod0, seconds), lambda: pc.job_report(sc), busy_s)
    with p.phase("the wedge task blocks one worker's event loop: liveness restarts it in place"):
        pc.defer_wedge(sc, pod0)
        wait_until(lambda: pc.job_report(sc)["states"].get("doing", 0) == 1, 30, "the wedge to start",
                   describe=lambda: str(pc.job_report(sc)))
        t_wedge = time.time()
        name = live.wait_restarted_by_liveness(sc, p, "job", t_wedge,
                                               timeout=window + pc.LIVENESS_GRACE + 60,
                                               probe_grace=pc.LIVENESS_GRACE)
        assert time.time() - t_wedge >= pc.LIVENESS_MAX_AGE - 10, "restarted before its heartbeat could be stale"
    with p.phase("the restarted worker passes its startupProbe on a fresh beat; the other was left alone"):
        sc.wait_handlers_ready(120)
        restarts = sc.handler_restarts()
        p.fact("restarts_per_pod", restarts)
        assert restarts.get(name) == 1 and sum(restarts.values()) == 1, restarts
