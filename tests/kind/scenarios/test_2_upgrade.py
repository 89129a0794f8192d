"""Upgrades: a new migration runs as a pre-upgrade hook while the old pods keep serving
(scenario 2a); a failing migration stops the upgrade and leaves the old release serving
(scenario 2b)."""

from __future__ import annotations

import time

import pytest

from jhkind.client import summarize
from jhkind.cluster import job_state, parse_time, pod_ready, restart_count
from jhkind.scenario import Scenario, job_completed_at
from jhkind.waits import hold_for, wait_until

pytestmark = [pytest.mark.kind, pytest.mark.timeout(600)]
V1 = {"handlers": {"web": {"replicas": 2}}}


def _start_client(sc: Scenario) -> float:
    client = sc.client()
    wait_until(lambda: sum(r.ok for r in client.requests()) >= 5, 30, "the client loop to get 5 answers from web")
    return time.time()


def _images(sc: Scenario) -> dict[str, str]:
    return {role: d["spec"]["template"]["spec"]["containers"][0]["image"] for role, d in sc.deployments().items()}


def test_2a_upgrade_to_v2(scenario: Scenario) -> None:
    sc, p = scenario, scenario.progress
    with p.phase("install v1"):
        sc.install(V1).check("helm install v1")
        sc.wait_handlers_ready(60)
        assert sc.db.schema_revision() == 3
    with p.phase("client loop against the web Service"):
        _start_client(sc)
    old = {pod["metadata"]["uid"]: pod["metadata"]["name"] for pod in sc.handler_pods()}
    t_up = time.time()
    with p.phase("helm upgrade --wait to workload:2 (10 s migration)"):
        res = sc.upgrade(V1, {"image": {"tag": "2"}, "migration": {"extraArgs": ["--slow", "10"]}}).check("helm upgrade")
    with p.phase("old pods gone"):
        wait_until(lambda: not ({pod["metadata"]["uid"] for pod in sc.handler_pods(live_only=False)} & set(old)),
                   120, "the v1 pods to terminate", describe=sc.describe_pods)
        sc.wait_handlers_ready(60)
    t_end = time.time() + 1

    with p.phase("pre-upgrade hook ran before the new pods"):
        jobs = sc.migration_jobs()
        assert len(jobs) == 1, [j["metadata"]["name"] for j in jobs]
        job = jobs[0]
        assert "pre-upgrade" in (job["metadata"].get("annotations") or {}).get("helm.sh/hook", "")
        assert job_state(job) == "complete"
        assert job["spec"]["template"]["spec"]["containers"][0]["image"].endswith(":2")
        created, completed = parse_time(job["metadata"]["creationTimestamp"]), job_completed_at(job)
        assert created >= t_up - 2, "the migration Job was not (re)created by the upgrade"
        p.fact("upgrade_migration_job_seconds", round(completed - parse_time(job["status"]["startTime"]), 1))
        assert sc.db.schema_revision() == 4

    with p.phase("new pods passed wait-for-migrations first, nothing restarted"):
        new = [pod for pod in sc.handler_pods() if pod["metadata"]["uid"] not in old]
        assert len(new) == sum(int(d["spec"]["replicas"]) for d in sc.deployments().values())
        for pod in new:
            name = pod["metadata"]["name"]
            assert pod["spec"]["containers"][0]["image"].endswith(":2"), name
            assert parse_time(pod["metadata"]["creationTimestamp"]) >= completed, f"{name} created before the hook completed"
            init = pod["status"]["initContainerStatuses"][0]
            assert init["name"] == "wait-for-migrations"
            term = init["state"]["terminated"]
            assert term["exitCode"] == 0, f"{name}: {init}"
            main = pod["status"]["containerStatuses"][0]
            assert parse_time(main["state"]["running"]["startedAt"]) >= parse_time(term["finishedAt"])
            log = sc.kube.logs(sc.namespace, name, "wait-for-migrations").strip().splitlines()
            assert log and "ok" in log[-1], f"{name}: wait-for-migrations log {log}"
        restarts = sc.handler_restarts()
        p.fact("restarts_total", sum(restarts.values()))
        assert sum(restarts.values()) == 0, f"restarts during the upgrade: {restarts}"

    with p.phase("client saw no failed request"):
        s = summarize(sc.client().requests(), t_up, t_end)
        p.fact("upgrade_seconds", round(res.seconds, 1))
        p.fact("client_requests", s["requests"])
        p.fact("client_failed", s["failed"])
        p.fact("client_max_ms", s["max_ms"])
        assert s["requests"] >= 20, f"the client loop barely ran during the upgrade: {s}"
        assert s["failed"] == 0, f"failed requests during the upgrade: {s['failures']}"


def test_2b_failed_migration_on_upgrade(scenario: Scenario) -> None:
    sc, p = scenario, scenario.progress
    with p.phase("install v1"):
        sc.install(V1).check("helm install v1")
        sc.wait_handlers_ready(60)
    with p.phase("client loop against the web Service"):
        _start_client(sc)
    before = {pod["metadata"]["uid"]: pod["metadata"]["name"] for pod in sc.handler_pods()}
    generations = {role: d["metadata"]["generation"] for role, d in sc.deployments().items()}
    t_up = time.time()
    with p.phase("helm upgrade to workload:2 with a failing migration"):
        res = sc.upgrade(V1, {"image": {"tag": "2"}, "migration": {"extraArgs": ["--fail"]}}, timeout_s=180)
    p.fact("helm_upgrade_exit", res.rc)
    p.fact("helm_upgrade_seconds", round(res.seconds, 1))
    assert res.rc != 0, f"helm upgrade succeeded although the migration fails:\n{res.stdout}"

    with p.phase("hook failed, release failed, deployments untouched"):
        jobs = sc.migration_jobs()
        assert len(jobs) == 1 and job_state(jobs[0]) == "failed", [j.get("status") for j in jobs]
        logs = "".join(sc.kube.logs(sc.namespace, pod["metadata"]["name"])
                       for pod in sc.kube.pods(sc.namespace, f"job-name={jobs[0]['metadata']['name']}"))
        assert "migrate_failed" in logs, f"the hook failed for another reason than the migration: {logs[-2000:]}"
        status = sc.helm.status(sc.release, sc.namespace)
        p.fact("helm_status", (status.get("info") or {}).get("status"))
        assert (status.get("info") or {}).get("status") == "failed"
        assert {role: d["metadata"]["generation"] for role, d in sc.deployments().items()} == generations
        assert all(img.endswith(":1") for img in _images(sc).values()), _images(sc)
        assert sc.db.schema_revision() == 3

    def unchanged() -> str | None:
        pods = sc.handler_pods(live_only=False)
        uids = {pod["metadata"]["uid"] for pod in pods}
        if uids != set(before):
            return f"pods changed: {sorted(pod['metadata']['name'] for pod in pods)} vs {sorted(before.values())}"
        bad = [f"{pod['metadata']['name']} ready={pod_ready(pod)} restarts={restart_count(pod)}"
               for pod in pods if not pod_ready(pod) or restart_count(pod)]
        return f"not serving: {bad}" if bad else None

    with p.phase("old pods keep serving (10 s window)"):
        hold_for(unchanged, 10, "after the failed upgrade")
        restarts = sc.handler_restarts()
        p.fact("restarts_total", sum(restarts.values()))
        assert sum(restarts.values()) == 0, sc.restart_report(restarts)
        s = summarize(sc.client().requests(), t_up, time.time())
        p.fact("client_requests", s["requests"])
        p.fact("client_failed", s["failed"])
        assert s["requests"] >= 20 and s["failed"] == 0, s
