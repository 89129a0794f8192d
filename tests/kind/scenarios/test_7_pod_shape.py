"""The pod as operators shape it, on a real cluster: a real database proxy (Debian's
pgbouncer, tests/apps/pgbouncer) as a native sidecar in every handler pod and in the
migration Job, and a config-file change that rolls the pods."""

from __future__ import annotations

import random

import pytest

from jhkind.cluster import job_state, parse_time
from jhkind.observe import deletion_started, is_handler_pod
from jhkind.scenario import Scenario
from jhkind.waits import wait_until

pytestmark = [pytest.mark.kind, pytest.mark.timeout(900)]

PROXY_IMAGE = "jobhandlers/pgbouncer:1"
SECRET = "jobs-db"
JOBS = 24


def _env(**kv: str) -> list[dict]:
    return [{"name": k, "value": v} for k, v in kv.items()]


def proxy_values(sc: Scenario, files: str = "pool = pgbouncer\n") -> dict:
    """Every pod reaches PostgreSQL only through 127.0.0.1:6432, served by the sidecar."""
    sidecar = {
        "name": "pgbouncer", "image": PROXY_IMAGE, "imagePullPolicy": "IfNotPresent", "migration": True,
        "env": [{"name": "UPSTREAM_HOST", "value": sc.pg.host},
                {"name": "DATABASE_URL", "valueFrom": {"secretKeyRef": {"name": SECRET, "key": "DATABASE_URL"}}}],
        "startupProbe": {"tcpSocket": {"port": 6432}, "periodSeconds": 1, "failureThreshold": 30},
        "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                            "runAsNonRoot": True, "capabilities": {"drop": ["ALL"]}},
        "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
    }
    return {"database": {"host": "127.0.0.1", "port": 6432, "existingSecret": SECRET, "password": ""},
            "sidecars": [sidecar], "files": {"workload.ini": files},
            "handlers": {"job": {"replicas": 2, "maxJobRuntimeSeconds": 30,
                                 "env": _env(WORKLOAD_POLL_SECONDS="0.5", WORKLOAD_LEASE_SECONDS="10",
                                             WORKLOAD_CONCURRENCY="6")}}}


def create_secret(sc: Scenario) -> None:
    url = f"postgresql://{sc.database}:{sc.password}@127.0.0.1:6432/{sc.database}"
    sc.kube.apply_objects(sc.namespace, [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": SECRET},
                                          "stringData": {"DATABASE_URL": url}}])


def finished_at(pod: dict, name: str) -> float | None:
    """When a container (regular or init/sidecar) of the pod terminated."""
    status = pod.get("status") or {}
    for st in (status.get("containerStatuses") or []) + (status.get("initContainerStatuses") or []):
        term = (st.get("state") or {}).get("terminated")
        if st.get("name") == name and term:
            return parse_time(term["finishedAt"])
    return None


@pytest.mark.versions
def test_7a_pgbouncer_native_sidecar_serves_migration_wait_and_drain(scenario: Scenario) -> None:
    sc, p = scenario, scenario.progress
    create_secret(sc)
    with p.phase("helm install --wait: migration Job, wait-for-migrations and handlers all via pgbouncer"):
        res = sc.install(proxy_values(sc), timeout_s=300).check("helm install")
        sc.wait_handlers_ready(120)
    p.fact("helm_install_seconds", round(res.seconds, 1))
    [job] = sc.migration_jobs()
    assert job_state(job) == "complete", job.get("status")
    jspec = job["spec"]["template"]["spec"]
    assert [c["name"] for c in jspec["initContainers"]][:2] == ["pgbouncer", "wait-for-database"]
    assert jspec["initContainers"][0]["restartPolicy"] == "Always"
    for pod in sc.handler_pods():
        inits = pod["spec"]["initContainers"]
        assert [c["name"] for c in inits] == ["pgbouncer", "wait-for-migrations"], pod["metadata"]["name"]
    restarts = sc.handler_restarts()
    p.fact("restarts_after_install", sum(restarts.values()))
    assert sum(restarts.values()) == 0, sc.restart_report(restarts)

    grace = sc.grace("job")
    rng = random.Random(7)
    durations = [round(rng.uniform(8, 20), 1) for _ in range(JOBS)]
    with p.phase(f"submit {JOBS} jobs of 8-20 s"):
        ids = sc.client().submit([{"kind": "sleep", "duration": d} for d in durations])
        wait_until(lambda: sc.db.states()["running"] >= 8, 60, "8 jobs to be running")
    old = {pod["metadata"]["uid"]: pod["metadata"]["name"] for pod in sc.handler_pods("job")}
    with p.phase("rollout restart of the job role with jobs in flight"):
        sc.restart_role("job")
        sc.wait_rollout("job", set(old), timeout=grace + 120)
    with p.phase(f"all {JOBS} jobs finish"):
        wait_until(lambda: sc.db.report(ids)["done"] == JOBS, 180, f"all {JOBS} jobs done", interval=2,
                   describe=lambda: str(sc.db.report(ids)))
    report = sc.db.report(ids)
    p.fact("jobs_lost", report["lost"])
    p.fact("jobs_rerun", report["reruns"])
    assert report["lost"] == 0 and report["duplicate_completions"] == 0, report

    with p.phase("the proxy outlived every draining handler"):
        last = sc.timeline.last_pods()
        attempts = sc.db.attempts(ids)
        gaps, drained_jobs = [], 0
        for uid, name in old.items():
            pod = last[uid]
            started = deletion_started(sc.timeline, uid)
            handler_end, proxy_end = finished_at(pod, "job"), finished_at(pod, "pgbouncer")
            assert started and handler_end and proxy_end, f"{name}: final states not seen: {pod.get('status')}"
            gap = proxy_end - handler_end
            gaps.append(round(gap, 1))
            # jobs this pod completed (a database write through the proxy) after its deletion began
            done = [a for a in attempts if a.pod == name and a.ended_at and a.ended_at >= started and a.outcome == "done"]
            drained_jobs += len(done)
            last_write = max((a.ended_at for a in done), default=started)
            p.note(f"{name}: handler exited {handler_end - started:.0f}s after delete, pgbouncer {gap:+.1f}s after it "
                   f"(grace {grace}s); {len(done)} jobs completed through the proxy while draining, the last "
                   f"{last_write - started:.1f}s after delete")
            assert gap >= 0, f"{name}: pgbouncer stopped {-gap:.1f}s before the handler finished draining"
            assert handler_end - started < grace
        p.fact("proxy_after_handler_seconds", gaps)
        p.fact("jobs_completed_while_draining", drained_jobs)
        assert drained_jobs > 0, "no job finished during a drain: the proxy's lifetime was not tested"
        assert sum(sc.handler_restarts().values()) == 0


def test_7b_config_file_change_rolls_every_pod(scenario: Scenario) -> None:
    sc, p = scenario, scenario.progress
    create_secret(sc)
    with p.phase("install with files"):
        sc.install(proxy_values(sc)).check("helm install")
        sc.wait_handlers_ready(120)
    before = {pod["metadata"]["uid"] for pod in sc.handler_pods()}
    with p.phase("helm upgrade --wait with one config file changed"):
        res = sc.upgrade(proxy_values(sc, files="pool = pgbouncer\nworkers = 8\n")).check("helm upgrade")
        sc.wait_handlers_ready(120)
    p.fact("helm_upgrade_seconds", round(res.seconds, 1))
    wait_until(lambda: not (before & {pod["metadata"]["uid"] for pod in sc.handler_pods()}), 120,
               "every old pod to be replaced")
    after = sc.handler_pods()
    assert after and not before & {pod["metadata"]["uid"] for pod in after}
    sums = {pod["metadata"]["annotations"]["checksum/files"] for pod in after}
    assert len(sums) == 1
    p.fact("pods_rolled", len(before))
    assert sum(sc.handler_restarts().values()) == 0
    assert all(is_handler_pod(pod) for pod in after)
