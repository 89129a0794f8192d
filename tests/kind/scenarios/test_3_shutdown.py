"""Shutdown and health: drain on rollout (3a), drain mode (3b), liveness vs blocking jobs (3c),
SIGKILL mid-job (3d)."""

from __future__ import annotations

import random
import time

import pytest

from jhkind import liveness as live
from jhkind.cluster import parse_time, pod_ready, restart_count
from jhkind.observe import LogFollower, deletion_started, ready_false_at, terminated_state
from jhkind.scenario import Scenario
from jhkind.waits import hold_for, wait_until

pytestmark = [pytest.mark.kind, pytest.mark.timeout(600)]

DRAIN_JOBS = 50
DRAIN_REPLICAS = 3
DRAIN_CONCURRENCY = 8  # 3 x 8 = 24 slots for 50 jobs of 10-30 s


def _env(**kv: str) -> list[dict]:
    return [{"name": k, "value": v} for k, v in kv.items()]


@pytest.mark.versions
def test_3a_drain_on_rollout(scenario: Scenario) -> None:
    sc, p = scenario, scenario.progress
    values = {"handlers": {"job": {
        "replicas": DRAIN_REPLICAS, "maxJobRuntimeSeconds": 30,
        "env": _env(WORKLOAD_POLL_SECONDS="0.5", WORKLOAD_LEASE_SECONDS="10",
                    WORKLOAD_CONCURRENCY=str(DRAIN_CONCURRENCY))}}}
    with p.phase(f"install with {DRAIN_REPLICAS} job handlers"):
        sc.install(values).check("helm install")
        sc.wait_handlers_ready(90)
    grace = sc.grace("job")
    period = int(sc.values["readiness"]["periodSeconds"])
    p.fact("job_grace_seconds", grace)
    rng = random.Random(5)
    durations = [round(rng.uniform(10, 30), 1) for _ in range(DRAIN_JOBS)]
    with p.phase(f"submit {DRAIN_JOBS} jobs of 10-30 s through the web API"):
        ids = sc.client().submit([{"kind": "sleep", "duration": d} for d in durations])
        wait_until(lambda: sc.db.states()["running"] >= 15, 60, "15 jobs to be running")
    old = {pod["metadata"]["uid"]: pod["metadata"]["name"] for pod in sc.handler_pods("job")}
    followers = {uid: LogFollower(sc.kube, sc.namespace, name, "job").start() for uid, name in old.items()}
    with p.phase("rollout restart of the job role"):
        sc.restart_role("job")
        sc.wait_rollout("job", set(old), timeout=grace + 120)
    with p.phase(f"all {DRAIN_JOBS} jobs finish"):
        wait_until(lambda: sc.db.report(ids)["done"] == DRAIN_JOBS, 180,
                   f"all {DRAIN_JOBS} jobs to be done", interval=2, describe=lambda: str(sc.db.report(ids)))
    report = sc.db.report(ids)
    p.fact("jobs_lost", report["lost"])
    p.fact("jobs_rerun", report["reruns"])
    p.fact("duplicate_completions", report["duplicate_completions"])
    p.fact("attempt_outcomes", report["attempt_outcomes"])
    assert report["lost"] == 0 and report["duplicate_completions"] == 0, report

    with p.phase("old pods: drained, exit 0 before grace, NotReady within a probe period"):
        last = sc.timeline.last_pods()
        attempts = sc.db.attempts(ids)
        finished_while_draining = 0
        for uid, name in old.items():
            pod = last[uid]
            started = deletion_started(sc.timeline, uid)
            assert started is not None, f"{name}: deletion never seen"
            term = terminated_state(pod, "job")
            assert term is not None, f"{name}: final container state not seen: {pod.get('status')}"
            exit_s = parse_time(term["finishedAt"]) - started
            ready_s = (ready_false_at(pod) or float("inf")) - started
            busy = [a for a in attempts if a.pod == name and a.ended_at and a.ended_at >= started and a.outcome == "done"]
            finished_while_draining += len(busy)
            f = followers[uid]
            f.join(5)
            draining, exit_ev = f.first("draining"), f.first("exit")
            sigterm_to_exit = round(exit_ev["ts"] - draining["ts"], 2) if draining and exit_ev else None
            p.note(f"{name}: exit {term['exitCode']} {exit_s:.0f}s after delete (grace {grace}s), "
                   f"NotReady after {ready_s:.0f}s, {len(busy)} jobs finished while draining, "
                   f"SIGTERM->exit {sigterm_to_exit}s (in flight at SIGTERM: {draining and draining.get('in_flight')})")
            assert term["exitCode"] == 0, f"{name} exited {term['exitCode']} ({term.get('reason')})"
            assert exit_s < grace, f"{name} needed {exit_s:.0f}s, grace {grace}s"
            assert ready_s <= period + 1, f"{name} still Ready {ready_s:.0f}s after deletion (probe period {period}s)"
        p.fact("jobs_finished_while_draining", finished_while_draining)
        assert finished_while_draining > 0, "the rollout hit no busy handler: nothing was drained"
        restarts = sc.handler_restarts()
        assert sum(restarts.values()) == 0, sc.restart_report(restarts)


def test_3b_drain_mode(scenario: Scenario) -> None:
    sc, p = scenario, scenario.progress
    with p.phase("install"):
        sc.install().check("helm install")
        sc.wait_handlers_ready(60)
    pod = sc.handler_pods("job")[0]
    name, uid = pod["metadata"]["name"], pod["metadata"]["uid"]
    period = int(sc.values["readiness"]["periodSeconds"])
    client = sc.client()

    with p.phase(f"exec `workload drain` in {name}"):
        res = sc.kube.exec(sc.namespace, name, ["workload", "drain"], container="job")
        assert res.rc == 0, f"workload drain exited {res.rc}: {res.stderr}"
        t0 = time.time()
        wait_until(lambda: not pod_ready(sc.kube.pod(sc.namespace, name)), 2 * period + 3,
                   f"{name} to turn NotReady")
        p.fact("notready_after_drain_s", round(time.time() - t0, 1))

    ids = client.submit([{"kind": "sleep", "duration": 1} for _ in range(3)])

    def drained_and_idle() -> str | None:
        cur = sc.kube.pod(sc.namespace, name)
        if cur is None or cur["metadata"]["uid"] != uid:
            return "the pod is gone"
        if cur["status"].get("phase") != "Running" or restart_count(cur):
            return f"phase {cur['status'].get('phase')}, restarts {restart_count(cur)}"
        if pod_ready(cur):
            return "Ready while drained"
        claimed = [a for a in sc.db.attempts(ids)]
        return f"claimed while drained: {claimed}" if claimed else None

    with p.phase("drained: Running, NotReady, claims nothing (8 s window)"):
        hold_for(drained_and_idle, 8, "drain mode")

    with p.phase("exec `workload undrain`"):
        res = sc.kube.exec(sc.namespace, name, ["workload", "undrain"], container="job")
        assert res.rc == 0, f"workload undrain exited {res.rc}: {res.stderr}"
        t0 = time.time()
        wait_until(lambda: pod_ready(sc.kube.pod(sc.namespace, name)), 2 * period + 5, f"{name} to be Ready again")
        p.fact("ready_after_undrain_s", round(time.time() - t0, 1))
        wait_until(lambda: sc.db.report(ids)["done"] == len(ids), 30, "the queued jobs to be done")
        assert {a.pod for a in sc.db.attempts(ids)} == {name}
        assert restart_count(sc.kube.pod(sc.namespace, name)) == 0


def test_3c_liveness_vs_blocking_jobs(scenario: Scenario) -> None:
    sc, p = scenario, scenario.progress
    readiness_max, liveness_max, probe_grace = 5, 24, 5
    values = {
        "readiness": {"maxAgeSeconds": readiness_max, "periodSeconds": 2},
        "liveness": {"maxAgeSeconds": liveness_max, "periodSeconds": 3, "failureThreshold": 1,
                     "terminationGracePeriodSeconds": probe_grace},
        "handlers": {"job": {"maxJobRuntimeSeconds": 120,
                             "env": _env(WORKLOAD_POLL_SECONDS="0.5", WORKLOAD_LEASE_SECONDS="60",
                                         WORKLOAD_CONCURRENCY="2")}},
    }
    with p.phase("install with readiness 5 s, liveness 24 s, probe grace 5 s"):
        sc.install(values).check("helm install")
        sc.wait_handlers_ready(60)
    drain_grace = sc.grace("job")
    p.fact("drain_grace_seconds", drain_grace)
    pod = sc.handler_pods("job")[0]
    name, uid = pod["metadata"]["name"], pod["metadata"]["uid"]
    client = sc.client()

    with p.phase(f"blocking job of 15 s (> readiness {readiness_max}s, < liveness {liveness_max}s)"):
        [jid] = client.submit([{"kind": "blocking", "duration": 15}])
        wait_until(lambda: sc.db.job(jid)["state"] == "running", 20, "the blocking job to start")
        wait_until(lambda: not pod_ready(sc.kube.pod(sc.namespace, name)), readiness_max + 8,
                   f"{name} to turn NotReady while blocked")
        wait_until(lambda: sc.db.job(jid)["state"] == "done", 30, "the blocking job to finish")
        wait_until(lambda: pod_ready(sc.kube.pod(sc.namespace, name)), 15, f"{name} to be Ready again")
        cur = sc.kube.pod(sc.namespace, name)
        assert cur["metadata"]["uid"] == uid and restart_count(cur) == 0, "the blocked handler was restarted"
        failures = live.liveness_failures(sc)
        assert not failures, f"liveness failed during a job shorter than its window: {failures}"

    with p.phase(f"wedged handler (blocking 600 s) restarted by liveness with the {probe_grace}s probe grace"):
        t_wedge = time.time()
        [wid] = client.submit([{"kind": "blocking", "duration": 600}])
        restarted = live.wait_restarted_by_liveness(sc, p, "job", t_wedge, timeout=liveness_max + 45,
                                                    probe_grace=probe_grace)
        assert restarted == name, f"{restarted} was restarted, {name} was wedged"
        assert sc.kube.pod(sc.namespace, name)["metadata"]["uid"] == uid, "the pod was replaced, not restarted in place"


def test_3d_sigkill_mid_job(scenario: Scenario) -> None:
    sc, p = scenario, scenario.progress
    lease = 10
    values = {"handlers": {"job": {"env": _env(WORKLOAD_POLL_SECONDS="0.5", WORKLOAD_LEASE_SECONDS=str(lease),
                                               WORKLOAD_CONCURRENCY="1")}}}
    with p.phase("install"):
        sc.install(values).check("helm install")
        sc.wait_handlers_ready(60)
    client = sc.client()
    [jid] = client.submit([{"kind": "sleep", "duration": 15}])
    job = wait_until(lambda: (j := sc.db.job(jid))["state"] == "running" and j, 20, "the job to start")
    victim = job["lease_owner"].rsplit(":", 1)[0]
    with p.phase(f"force-delete {victim} (grace 0) mid-job"):
        t_kill = sc.db.now()
        sc.kube.core.delete_namespaced_pod(victim, sc.namespace, grace_period_seconds=0)
        # the last lease the dead handler wrote (it renews until the process is gone)
        expiries: list[float] = []

        def rerun() -> bool:
            j = sc.db.job(jid)
            if j["attempts"] == 1 and j["lease_expires"]:
                expiries.append(j["lease_expires"])
            return j["attempts"] >= 2
        wait_until(rerun, lease + 60, "the job to be claimed again", interval=0.3)
    with p.phase("rerun finishes"):
        wait_until(lambda: sc.db.job(jid)["state"] == "done", 60, "the rerun to finish")
    attempts = sc.db.attempts([jid])
    p.fact("attempts", [(a.attempt, a.pod, a.outcome) for a in attempts])
    first, final = attempts[0], attempts[-1]
    assert first.pod == victim and first.outcome is None, f"attempt 1 should be cut off: {first}"
    assert final.pod != victim and final.outcome == "done", final
    lease_end = max(expiries) if expiries else t_kill
    p.fact("rerun_after_kill_s", round(attempts[1].claimed_at - t_kill, 1))
    p.fact("rerun_after_lease_expiry_s", round(attempts[1].claimed_at - lease_end, 1))
    assert attempts[1].claimed_at >= lease_end, "the job was claimed again before its lease expired"
    assert sc.db.report([jid])["lost"] == 0


# ---- 3e: what a rollout of long-draining handlers costs in pods ----------------------------
COST_REPLICAS = 3
COST_JOB_SECONDS = 20
COST_ROLES = {
    # the chart's default: surge first (maxSurge 1, maxUnavailable 0)
    "surge": {},
    # maxSurge 0: "for roles whose capacity matters less than their memory"
    "nosurge": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}},
    # stable identities: a pod is replaced only once its predecessor is gone
    "ident": {"kind": "StatefulSet"},
}


def peak_live(spans: list[tuple[str, str, float, float | None]]) -> int:
    """The most processes of a role alive at one moment (container start to exit)."""
    events = sorted([(start, 1) for _n, _u, start, _e in spans] +
                    [(end, -1) for _n, _u, _s, end in spans if end is not None], key=lambda e: (e[0], e[1]))
    live = peak = 0
    for _t, step in events:
        live += step
        peak = max(peak, live)
    return peak


def test_3e_rollout_cost_of_long_drains(scenario: Scenario) -> None:
    """A Deployment does not count terminating pods (KEP-3973 only reports them, in
    .status.terminatingReplicas; a Deployment podReplacementPolicy, KEP-5882, is in no release
    up to 1.38.0-beta.0): while old handlers drain, a surge rollout runs up to twice the
    replicas, and so does maxSurge 0 when replacements start faster than the old handlers
    drain (terminating pods do not count against maxUnavailable). A StatefulSet role never runs more than its replicas,
    at the price of one drain per pod in sequence. Three roles, one rollout each, at once.
    Each old handler is busy when it is stopped (one job in flight, as many queued)."""
    from jhkind.identity import lifetimes

    sc, p = scenario, scenario.progress
    env = [{"name": "WORKLOAD_POLL_SECONDS", "value": "0.5"}, {"name": "WORKLOAD_LEASE_SECONDS", "value": "10"},
           {"name": "WORKLOAD_CONCURRENCY", "value": "1"}]
    small = {"requests": {"cpu": "10m", "memory": "64Mi"}}
    handlers: dict = {"job": {"enabled": False}}
    for role, extra in COST_ROLES.items():
        handlers[role] = {"enabled": True, "replicas": COST_REPLICAS, "command": ["workload", "job"], "args": [],
                          "port": None, "maxJobRuntimeSeconds": COST_JOB_SECONDS + 10, "resources": small,
                          "env": env, **extra}
    with p.phase(f"install: roles {', '.join(COST_ROLES)}, {COST_REPLICAS} handlers each, one slot per handler"):
        sc.install({"handlers": handlers}).check("helm install")
        sc.wait_handlers_ready(180)
    n = COST_REPLICAS * len(COST_ROLES)
    # one in flight on every handler and as many queued: an old handler that finishes its
    # first job before its turn takes another, so every pod is busy when it is stopped
    with p.phase(f"{2 * n} jobs of {COST_JOB_SECONDS} s: one in flight on every handler, {n} queued"):
        ids = sc.client().submit([{"kind": "sleep", "duration": COST_JOB_SECONDS} for _ in range(2 * n)])
        wait_until(lambda: sc.db.states()["running"] >= n, 90, f"{n} jobs to be running")
    old = {pod["metadata"]["uid"] for pod in sc.handler_pods()}
    grace = sc.grace("surge")
    with p.phase("rollout restart of the three roles at once"):
        started = {role: sc.restart_role(role) for role in COST_ROLES}
        done: dict[str, float] = {}

        def rolled(role: str) -> bool:
            pods = sc.handler_pods(role, live_only=False)
            st = sc.deployments()[role].get("status") or {}
            return (not ({q["metadata"]["uid"] for q in pods} & old) and len(pods) == COST_REPLICAS
                    and all(pod_ready(q) for q in pods) and int(st.get("updatedReplicas") or 0) == COST_REPLICAS)

        def all_rolled() -> bool:
            for role in COST_ROLES:
                if role not in done and rolled(role):
                    done[role] = round(time.time() - started[role], 1)
            return len(done) == len(COST_ROLES)

        wait_until(all_rolled, COST_REPLICAS * grace + 180, "every role rolled out, old pods gone",
                   describe=sc.describe_pods, interval=0.5)
    wait_until(lambda: sc.db.report(ids)["done"] == 2 * n, 180, f"all {2 * n} jobs done",
               describe=lambda: str(sc.db.report(ids)))
    report = sc.db.report(ids)
    peaks = {role: peak_live(lifetimes(sc.timeline, role)) for role in COST_ROLES}
    p.fact("peak_live_processes", peaks)
    p.fact("rollout_seconds", done)
    p.fact("grace_seconds", grace)
    p.fact("jobs", report)
    assert report["lost"] == 0 and report["duplicate_completions"] == 0, report
    # the StatefulSet never runs more processes than replicas; a surge rollout always does (a
    # new pod is Ready before the first old one stops). maxSurge 0 does too whenever a
    # replacement starts before the old handler has drained: reported, not asserted.
    assert peaks["ident"] == COST_REPLICAS, peaks
    assert peaks["surge"] > COST_REPLICAS, peaks
    assert peaks["nosurge"] >= COST_REPLICAS, peaks
    # the price (reported, not asserted: it depends as much on how fast new pods get Ready):
    # a StatefulSet stops a pod and waits for it to be gone before it starts the next one
    assert sum(sc.handler_restarts().values()) == 0, sc.restart_report(sc.handler_restarts())
