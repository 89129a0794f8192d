"""chancy (unmodified) under the chart: httpGet /health probes (chancy's API plugin),
drain.mode none, `misc check-migrations` gating through sh. Slow migrations come from real
PostgreSQL locks held by the test (jhkind.chancy.hold_lock), never from a sleep in the app."""

from __future__ import annotations

import random
import time

import pytest

from jhkind import chancy as pc
from jhkind import liveness as live
from jhkind.cluster import job_state, parse_time, pod_ready
from jhkind.locks import lock_done
from jhkind.observe import LogFollower, deletion_started, handler_exit_codes, is_handler_pod, terminated_state
from jhkind.scenario import Scenario, job_completed_at
from jhkind.waits import wait_until

pytestmark = [pytest.mark.kind, pytest.mark.timeout(900)]

LOCK_SECONDS = 16
NAIVE = {"waitForMigrations": {"enabled": False}, "startupProbe": {"enabled": False},
         "migration": {"useHelmHooks": False}}


def test_6a_chancy_fresh_install_locked_migration(scenario: Scenario) -> None:
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


def test_6b_chancy_naive_restarts(scenario: Scenario) -> None:
    """Gating off: the ungated workers' start-up check runs the same CREATE TABLE IF NOT
    EXISTS as the blocked migration; when the lock goes they race, and when the migration
    loses (UniqueViolation on pg_type) its Job fails and the workers restart forever on an
    unmigrated schema (chancy's "missing migrations" exits 0). Either way: restarts > 0."""
    sc, p = scenario, scenario.progress
    lock = pc.hold_lock(sc, pc.FRESH_LOCK, LOCK_SECONDS)
    with p.phase("naive install (no hook, no init gate, no startupProbe) during a locked migration"):
        res = sc.install(pc.values(replicas=2), NAIVE, timeout_s=150)
    p.fact("helm_install_seconds", round(res.seconds, 1))
    p.fact("helm_install_rc", res.rc)
    lock_done(lock, LOCK_SECONDS)
    jobs = sc.migration_jobs()
    p.fact("migration_job_states", [job_state(job) for job in jobs])
    versions = sc.pg.sql(sc.database, "SELECT count(*) FROM pg_tables WHERE tablename = 'chancy_jobs'")
    p.fact("schema_migrated", int(versions[0][0]) == 1)
    restarts = sc.handler_restarts()
    p.fact("restarts_total", sum(restarts.values()))
    p.fact("restarts_per_pod", restarts)
    p.fact("handler_exit_codes", handler_exit_codes(sc.timeline))
    assert sum(restarts.values()) > 0, "ungated workers did not restart: the gated test measures nothing"


def test_6c_chancy_rollout_with_jobs_in_flight(scenario: Scenario) -> None:
    sc, p = scenario, scenario.progress
    with p.phase("install 2 workers"):
        sc.install(pc.values(replicas=2, max_job_s=30)).check("helm install")
        sc.wait_handlers_ready(120)
    grace = sc.grace("job")
    p.fact("job_grace_seconds", grace)
    rng = random.Random(5)
    durations = [round(rng.uniform(10, 25), 1) for _ in range(12)]
    pod0 = sc.handler_pods("job")[0]["metadata"]["name"]
    with p.phase(f"push {len(durations)} sleep_task jobs of 10-25 s"):
        pc.push(sc, pod0, durations)
        wait_until(lambda: pc.job_report(sc)["states"].get("running", 0) >= 2, 60, "2 jobs in flight",
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
            pulled = [ln for ln in logs[uid].lines if "Pulled UUID" in ln]
            p.note(f"{name}: exit {term['exitCode']} {exit_s:.0f}s after delete (grace {grace}s); "
                   f"{len(pulled)} jobs pulled in its life")
            assert term["exitCode"] == 0, f"{name} exited {term['exitCode']} ({term.get('reason')})"
            assert exit_s < grace, f"{name} needed {exit_s:.0f}s, grace {grace}s"
            finished_while_draining += int(sc.pg.sql(sc.database, (
                "SELECT count(*) FROM jh_taskrun WHERE started_at < to_timestamp(%f) "
                "AND finished_at > to_timestamp(%f)") % (started, started))[0][0])
        p.fact("jobs_finished_while_draining", finished_while_draining)
        assert finished_while_draining > 0, "the rollout hit no busy worker: nothing was drained"
        restarts = sc.handler_restarts()
        assert sum(restarts.values()) == 0, sc.restart_report(restarts)


def test_6d_chancy_upgrade_locked_migration(scenario: Scenario) -> None:
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
        version = sc.pg.sql(sc.database, "SELECT version FROM chancy_schema_version WHERE version_of = 'jhtasks'")
        assert [str(row[0]) for row in version] == ["2"], version
        restarts = sc.handler_restarts()
        p.fact("restarts_total", sum(restarts.values()))
        assert sum(restarts.values()) == 0, sc.restart_report(restarts)


LIVENESS_GRACE = 10


def test_6e_chancy_liveness_busy_and_wedged(scenario: Scenario) -> None:
    """Liveness is chancy's own GET /health, served from the worker's event loop; jobs run
    in child processes. A job three liveness windows long: no restart. A worker frozen from
    its node (SIGSTOP: a hung process, as Kubernetes sees it) stops answering: restarted in
    place, SIGKILLed after the probe-level grace (a stopped process cannot act on SIGTERM)."""
    sc, p = scenario, scenario.progress
    liveness = {"periodSeconds": 5, "timeoutSeconds": 3, "failureThreshold": 2,
                "terminationGracePeriodSeconds": LIVENESS_GRACE}
    with p.phase("install 2 workers; liveness = chancy's /health, window 10 s"):
        sc.install(pc.values(replicas=2, max_job_s=60),
                   {"handlers": {"job": {"livenessProbe": liveness}}}).check("helm install")
        sc.wait_handlers_ready(120)
    window = liveness["periodSeconds"] * liveness["failureThreshold"]
    busy_s = 4 * window
    pod0 = sc.handler_pods("job")[0]["metadata"]["name"]
    with p.phase(f"a {busy_s}s job (4 x the {window}s liveness window): left alone"):
        live.busy_job_left_alone(sc, p, lambda seconds: pc.push(sc, pod0, seconds), lambda: pc.job_report(sc), busy_s)
    with p.phase("one worker frozen (SIGSTOP from its node): liveness restarts it in place"):
        victim = sc.handler_pods("job")[1]["metadata"]["name"]
        live.freeze(sc, victim, "job")
        t_freeze = time.time()
        name = live.wait_restarted_by_liveness(sc, p, "job", t_freeze, timeout=window + LIVENESS_GRACE + 60,
                                               probe_grace=LIVENESS_GRACE)
        assert name == victim, f"{name} was restarted, {victim} was frozen"
        assert time.time() - t_freeze >= window - liveness["periodSeconds"], "restarted before the window"
    with p.phase("the restarted worker is Ready again; the other was left alone"):
        sc.wait_handlers_ready(120)
        restarts = sc.handler_restarts()
        p.fact("restarts_per_pod", restarts)
        assert restarts.get(victim) == 1 and sum(restarts.values()) == 1, restarts
