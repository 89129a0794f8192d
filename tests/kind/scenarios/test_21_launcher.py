"""Jobs that outlive their handler (launcher mode, handlers.job.launcher): the job role runs
each claimed job as a Kubernetes Job named `<prefix>-job-<id>` (`workload run-job <id>`),
watches it and collects it; it never waits for a Job on SIGTERM. One install: 8 jobs of 45 s
(and one whose handler died between creating its Job and recording it, galaxy#6246: adopted,
run once) run while the handler is rolled (a, maxSurge 0: `helm upgrade` changing its pod
template) and its successor is SIGKILLed (b, force-deleted, grace 0) right after its first
adoption pass: every job done once (one Kubernetes Job, one pod, one attempt per job id;
0 pod restarts), the old handler exits within a second of SIGTERM leaving its Jobs running,
the successors adopt them and collect (delete) every one, 0 lost. (c) jobs that finish while
no handler runs (scaled to 0) are collected by the next handler. 1.5-2.2 min."""

from __future__ import annotations

import time

import pytest

from jhkind import launcher as ln
from jhkind.cluster import job_state, parse_time, pod_ready
from jhkind.observe import LogFollower, deletion_started, terminated_state
from jhkind.scenario import RELEASE, WORKLOAD_IMAGE, Scenario
from jhkind.waits import wait_until

pytestmark = [pytest.mark.kind, pytest.mark.timeout(600)]

PREFIX = "jhl"
JOBS = 8
JOB_SECONDS = 45
LATE_JOBS = 3
LATE_SECONDS = 8
SECRET = f"{RELEASE}-jobhandlers-database"


def _values(roll: str = "0") -> dict:
    env = ln.launch_env(SECRET, PREFIX, f"{WORKLOAD_IMAGE}:1",
                        WORKLOAD_POLL_SECONDS="0.5", WORKLOAD_LEASE_SECONDS="10", WORKLOAD_CONCURRENCY=str(JOBS + 1),
                        WORKLOAD_LAUNCH_SYNC_SECONDS="1", WORKLOAD_LAUNCH_DEADLINE_SLACK_SECONDS="60",
                        JH_ROLL=roll)
    return {"handlers": {"web": {"enabled": False},
                         # maxSurge 0: the old handler is stopped as soon as the upgrade reaches the
                         # Deployment (with the Jobs certainly running), however slowly the new one starts
                         "job": {"maxJobRuntimeSeconds": 5, "env": env,
                                 "strategy": {"type": "RollingUpdate",
                                              "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}},
                                 "launcher": {"enabled": True, "maxJobRuntimeSeconds": 120}}}}


def _submit(sc: Scenario, n: int, seconds: float) -> list[int]:
    rows = sc.pg.sql(sc.database, "INSERT INTO jobs (kind, duration) SELECT 'sleep', "
                     f"{float(seconds)} FROM generate_series(1, {int(n)}) RETURNING id")
    return sorted(int(r[0]) for r in rows)


def _orphan(sc: Scenario, seconds: float) -> int:
    """galaxy#6246's hole: a job claimed by a handler that created its Job and was SIGKILLed
    before it recorded anything (the job still leased to it for 10 min)."""
    rows = sc.pg.sql(sc.database, f"""
        WITH j AS (INSERT INTO jobs (kind, duration, state, attempts, lease_owner, lease_expires, started_at)
                   VALUES ('sleep', {float(seconds)}, 'running', 1, 'dead-handler:1', now() + interval '10 minutes',
                           now()) RETURNING id),
             a AS (INSERT INTO job_attempts (job_id, attempt, handler) SELECT id, 1, 'dead-handler:1' FROM j)
        SELECT id FROM j""")
    job_id = int(rows[0][0])
    body = ln.launcher_manifest(sc.namespace, PREFIX, f"{WORKLOAD_IMAGE}:1", SECRET, job_id, 1, seconds, "dead-handler:1")
    sc.kube.batch.create_namespaced_job(sc.namespace, body)
    return job_id


def _launched(sc: Scenario, ids: list[int]) -> bool:
    """Every job handed over to its Kubernetes Job and its pod running."""
    owners = sc.pg.sql(sc.database, "SELECT count(*) FROM jobs WHERE lease_owner LIKE 'k8s-job:%' "
                       f"AND id = ANY(ARRAY[{','.join(map(str, ids))}]::bigint[])")
    pods = [p for p in sc.kube.pods(sc.namespace, f"{ln.LABEL_LAUNCHER}={PREFIX}")
            if (p.get("status") or {}).get("phase") == "Running"
            and int(p["metadata"]["labels"][ln.LABEL_JOB_ID]) in ids]
    return int(owners[0][0]) == len(ids) and len(pods) == len(ids)


def _live_jobs(sc: Scenario) -> list[dict]:
    return [j for j in sc.kube.jobs(sc.namespace)
            if (j["metadata"].get("labels") or {}).get(ln.LABEL_LAUNCHER) == PREFIX]


def _handler(sc: Scenario, exclude: set[str]) -> dict:
    def ready() -> dict | None:
        pods = [p for p in sc.handler_pods("job") if p["metadata"]["uid"] not in exclude and pod_ready(p)]
        return pods[0] if len(pods) == 1 else None
    return wait_until(ready, 120, "one new Ready job handler", describe=sc.describe_pods)


def _exit_report(sc: Scenario, uid: str, name: str, follower: LogFollower) -> dict:
    """Exit code, SIGTERM->exit by the handler's own clock, and deletion->container exit."""
    pod = wait_until(lambda: (p := sc.timeline.last_pods().get(uid)) and terminated_state(p, "job") and p,
                     60, f"{name}'s container to terminate")
    term = terminated_state(pod, "job")
    follower.join(5)
    draining, exit_ev = follower.first("draining"), follower.first("exit")
    deleted = deletion_started(sc.timeline, uid)
    return {"exit_code": term["exitCode"],
            "sigterm_to_exit_s": round(exit_ev["ts"] - draining["ts"], 3) if draining and exit_ev else None,
            "delete_to_exit_s": round(parse_time(term["finishedAt"]) - deleted, 1) if deleted else None,
            "in_flight": (draining or {}).get("in_flight"),
            "jobs_left_running": (follower.first("leaving_jobs") or {}).get("active")}


def test_21_launched_jobs_outlive_their_handlers(scenario: Scenario) -> None:
    sc, p = scenario, scenario.progress
    t_start = time.monotonic()
    with p.phase("install: job role in launcher mode, no web role"):
        sc.install(_values()).check("helm install")
        sc.wait_handlers_ready(120)
    grace = sc.grace("job")
    p.fact("handler_grace_seconds", grace)
    first = sc.handler_pods("job")[0]
    followers = [LogFollower(sc.kube, sc.namespace, first["metadata"]["name"], "job").start()]

    with p.phase("a Job whose handler died before recording it (galaxy#6246): adopted, not rerun"):
        orphan = _orphan(sc, JOB_SECONDS)
        adopted = wait_until(lambda: next((e for e in followers[0].events() if e.get("event") == "adopted"
                                           and e.get("job") == orphan), None), 30, "the orphaned Job adopted")
        p.fact("orphan_adopted", {k: adopted.get(k) for k in ("job", "reason", "handed_over", "attempt")})
        assert adopted["reason"] == "found at sync" and adopted["attempt"] == "1", adopted
    with p.phase(f"{JOBS} jobs of {JOB_SECONDS} s launched as Kubernetes Jobs"):
        ids = _submit(sc, JOBS, JOB_SECONDS)
        wait_until(lambda: _launched(sc, ids), 90, f"{JOBS} Jobs launched, pods running", interval=1)
        ids = sorted([*ids, orphan])

    with p.phase("(a) roll the handler: helm upgrade changes its pod template"):
        sc.upgrade(_values(roll="1")).check("helm upgrade")
        second = _handler(sc, {first["metadata"]["uid"]})
        followers.append(LogFollower(sc.kube, sc.namespace, second["metadata"]["name"], "job").start())
        wait_until(lambda: followers[1].first("adoption"), 30, "the new handler's first adoption pass")

    with p.phase("(b) SIGKILL the new handler: force delete, grace 0"):
        sc.kube.core.delete_namespaced_pod(second["metadata"]["name"], sc.namespace, grace_period_seconds=0)
        third = _handler(sc, {first["metadata"]["uid"], second["metadata"]["uid"]})
        followers.append(LogFollower(sc.kube, sc.namespace, third["metadata"]["name"], "job").start())
        wait_until(lambda: followers[2].first("adoption"), 30, "the third handler's first adoption pass")
        rolled = _exit_report(sc, first["metadata"]["uid"], first["metadata"]["name"], followers[0])
        p.fact("rolled_handler_exit", rolled)

    with p.phase(f"all {JOBS + 1} jobs done and collected"):
        wait_until(lambda: sc.db.report(ids)["done"] == JOBS + 1, 120, f"{JOBS + 1} jobs done", interval=1,
                   describe=lambda: str(sc.db.report(ids)))
        wait_until(lambda: not _live_jobs(sc), 30, "every launched Job collected (deleted)", interval=1)

    report = sc.db.report(ids)
    created, pods = ln.jobs_created(sc.timeline), ln.job_pods(sc.timeline)
    adoptions = [f.first("adoption") for f in followers[1:]]
    collected = ln.events(followers, "collected")
    p.fact("jobs", report)
    p.fact("adoption_passes", adoptions)
    p.fact("kubernetes_jobs_per_id", sorted({len(created.get(i, ())) for i in ids}))
    p.fact("pods_per_id", sorted({len(pods.get(i, {})) for i in ids}))
    p.fact("collected_by", {f.pod: sum(1 for e in f.events() if e.get("event") == "collected") for f in followers})
    assert report["lost"] == 0 and report["reruns"] == 0 and report["duplicate_completions"] == 0, report
    assert report["attempt_outcomes"] == {"done": JOBS + 1}, report
    assert all(len(created.get(i, ())) == 1 for i in ids), f"one Kubernetes Job per job id: {created}"
    assert all(len(pods.get(i, {})) == 1 for i in ids), f"one pod per job id: {pods.keys()}"
    assert ln.pod_restarts(pods) == 0
    finished_by = dict(sc.pg.sql(sc.database, "SELECT id::text, finished_by FROM jobs WHERE id = ANY(ARRAY["
                                 f"{','.join(map(str, ids))}]::bigint[])"))
    assert all(finished_by[str(i)] in {q["metadata"]["name"] for q in pods[i].values()} for i in ids), \
        f"each run recorded by its Job's pod: {finished_by}"
    specs = [q["spec"] for by_uid in pods.values() for q in by_uid.values()]
    assert all(sp.get("automountServiceAccountToken") is False and sp.get("restartPolicy") == "Never"
               and not any("projected" in v for v in sp.get("volumes") or []) for sp in specs), "no API token in job pods"
    assert rolled["exit_code"] == 0 and rolled["in_flight"] == 0 and rolled["jobs_left_running"] >= 1, rolled
    assert rolled["sigterm_to_exit_s"] is not None and rolled["sigterm_to_exit_s"] < 1.0, rolled
    assert rolled["delete_to_exit_s"] is not None and rolled["delete_to_exit_s"] < grace / 2, (rolled, grace)
    assert adoptions[0] and adoptions[0]["jobs"] == JOBS + 1, f"the successor found every Job: {adoptions}"
    assert {e["job"] for e in collected} == set(ids), "the successors collected every job"
    assert sum(sc.handler_restarts().values()) == 0, sc.restart_report(sc.handler_restarts())

    # ---- (c) finished while no handler ran ----
    dep = sc.deployments()["job"]["metadata"]["name"]
    live = sc.handler_pods("job")[0]
    follower = LogFollower(sc.kube, sc.namespace, live["metadata"]["name"], "job").start()
    with p.phase(f"(c) {LATE_JOBS} jobs of {LATE_SECONDS} s launched, then the handler scaled to 0"):
        late = _submit(sc, LATE_JOBS, LATE_SECONDS)
        wait_until(lambda: _launched(sc, late), 60, f"{LATE_JOBS} Jobs launched", interval=1)
        sc.kube.apps.patch_namespaced_deployment_scale(dep, sc.namespace, {"spec": {"replicas": 0}})
        scaled = _exit_report(sc, live["metadata"]["uid"], live["metadata"]["name"], follower)
        p.fact("scaled_down_handler_exit", scaled)
        wait_until(lambda: sc.db.report(late)["done"] == LATE_JOBS, 60, "the jobs done with no handler",
                   interval=1, describe=lambda: str(sc.db.report(late)))
        left = wait_until(lambda: len(js := _live_jobs(sc)) == LATE_JOBS
                          and all(job_state(j) == "complete" for j in js) and js, 30,
                          f"the {LATE_JOBS} Jobs Complete (the Job controller lags the database)", interval=1)
        assert not sc.handler_pods("job"), "no handler ran meanwhile"
        p.fact("uncollected_complete_jobs", len(left))
    with p.phase("scale up: the new handler collects them"):
        sc.kube.apps.patch_namespaced_deployment_scale(dep, sc.namespace, {"spec": {"replicas": 1}})
        back = _handler(sc, set())
        f_back = LogFollower(sc.kube, sc.namespace, back["metadata"]["name"], "job").start()
        wait_until(lambda: not _live_jobs(sc), 60, "the finished Jobs collected", interval=1)
        got = wait_until(lambda: len(hits := [e for e in f_back.events() if e.get("event") == "collected"]) >= LATE_JOBS
                         and hits, 20, "the collected events")
    p.fact("late_collected", [(e["job"], e["job_phase"], e["state"], e["adopted"]) for e in got])
    assert scaled["exit_code"] == 0 and scaled["sigterm_to_exit_s"] is not None and scaled["sigterm_to_exit_s"] < 1.0
    assert {(e["job"], e["job_phase"], e["state"], e["adopted"]) for e in got} == \
        {(i, "complete", "done", True) for i in late}
    late_report = sc.db.report(late)
    assert late_report["lost"] == 0 and late_report["reruns"] == 0, late_report
    assert all(len(ln.jobs_created(sc.timeline).get(i, ())) == 1 for i in late)
    p.fact("scenario_seconds", round(time.monotonic() - t_start, 1))
