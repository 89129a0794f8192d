"""Rollback after a migration: v1 -> v2 (migrates to revision 4, expand-only) -> `helm rollback`
to v1, in each mode: fail fast (acceptAhead false, no downgrade), acceptAhead, and the
pre-rollback downgrade hook."""

from __future__ import annotations

import time

import pytest

from jhkind.client import summarize
from jhkind.cluster import parse_time
from jhkind.scenario import Scenario
from jhkind.waits import wait_until

pytestmark = [pytest.mark.kind, pytest.mark.timeout(900)]
V1 = {"handlers": {"web": {"replicas": 2}}}
DOWNGRADE = {"migration": {"onRollback": "downgrade"}, "commands": {"downgrade": ["workload", "downgrade"]}}


def rollback(sc: Scenario, revision: int, timeout_s: int) -> tuple[int, float, str]:
    t0 = time.monotonic()
    res = sc.helm.run(["rollback", sc.release, str(revision), "-n", sc.namespace, "--wait",
                       "--timeout", f"{timeout_s}s"], timeout=timeout_s + 120)
    return res.rc, time.monotonic() - t0, res.stdout + res.stderr


def images_ready(sc: Scenario, tag: str) -> bool:
    pods = sc.handler_pods()
    return bool(pods) and sc.all_handlers_ready() and all(
        p["spec"]["containers"][0]["image"].endswith(f":{tag}") for p in pods)


def to_v2(sc: Scenario, *extra: dict) -> None:
    sc.install(V1, *extra).check("helm install v1")
    sc.wait_handlers_ready(90)
    assert sc.db.schema_revision() == 3
    sc.upgrade(V1, *extra, {"image": {"tag": "2"}}).check("helm upgrade v2")
    wait_until(lambda: images_ready(sc, "2"), 120, "v2 pods Ready", describe=sc.describe_pods)
    assert sc.db.schema_revision() == 4


def test_4a_rollback_without_downgrade_fails_fast_and_v2_keeps_serving(scenario: Scenario) -> None:
    sc, p = scenario, scenario.progress
    with p.phase("v1 -> v2 (revision 4)"):
        to_v2(sc)
    client = sc.client()
    wait_until(lambda: sum(r.ok for r in client.requests()) >= 5, 30, "client answers")
    t0 = time.time()
    with p.phase("helm rollback to v1 (acceptAhead false, no downgrade)"):
        rc, seconds, out = rollback(sc, 1, timeout_s=90)
    p.fact("rollback_exit", rc)
    p.fact("rollback_seconds", round(seconds, 1))
    assert rc != 0, f"helm rollback succeeded onto a newer schema: {out[-500:]}"
    with p.phase("the v1 pods' wait-for-migrations failed at once with the fix"):
        v1 = [pod for pod in sc.handler_pods(live_only=False) if pod["spec"]["containers"][0]["image"].endswith(":1")]
        assert v1, "no v1 pod was created by the rollback"
        name = v1[0]["metadata"]["name"]
        log = sc.kube.logs(sc.namespace, name, "wait-for-migrations")
        if "schema is ahead of this image" not in log:  # restarted since (backoff): its attempt before says it
            log = sc.kube.logs(sc.namespace, name, "wait-for-migrations", previous=True)
        assert "schema is ahead of this image" in log and "roll forward" in log, log
        statuses = [s for pod in v1 for s in pod["status"].get("initContainerStatuses") or []
                    if s["name"] == "wait-for-migrations"]
        term = [s.get("lastState", {}).get("terminated") or s["state"].get("terminated") for s in statuses]
        assert any(t and t["exitCode"] == 1 for t in term), statuses
        first = min(parse_time(tm["startedAt"]) for tm in term if tm)
        ended = min(parse_time(tm["finishedAt"]) for tm in term if tm)
        p.fact("ahead_detected_seconds", round(ended - first, 1))  # one check, not the 300 s wait
        assert ended - first < 30
        p.note(f"{name}: wait-for-migrations: {log.strip().splitlines()[-1][:200]}")
    with p.phase("v2 pods kept serving: 0 failed requests, 0 restarts, schema still at 4"):
        s = summarize(client.requests(), t0, time.time())
        p.fact("client_requests", s["requests"])
        p.fact("client_failed", s["failed"])
        assert s["failed"] == 0, s["failures"]
        serving = [pod for pod in sc.handler_pods() if pod["spec"]["containers"][0]["image"].endswith(":2")]
        assert len(serving) >= 3, f"v2 pods gone: {sc.describe_pods()}"
        restarts = sc.handler_restarts()
        v2_restarts = {pod["metadata"]["name"]: restarts.get(pod["metadata"]["name"], 0) for pod in serving}
        p.fact("v2_restarts", sum(v2_restarts.values()))
        p.fact("v1_wait_retries", sum(restarts.values()) - sum(v2_restarts.values()))
        assert sum(v2_restarts.values()) == 0, v2_restarts
        assert sc.db.schema_revision() == 4


def test_4b_rollback_with_accept_ahead_starts_v1_on_the_v2_schema(scenario: Scenario) -> None:
    sc, p = scenario, scenario.progress
    accept = {"waitForMigrations": {"acceptAhead": True}}
    with p.phase("v1 -> v2 (revision 4), acceptAhead true"):
        to_v2(sc, accept)
    with p.phase("helm rollback to v1 --wait"):
        rc, seconds, out = rollback(sc, 1, timeout_s=180)
    assert rc == 0, out[-1500:]
    t_ready = time.monotonic()
    wait_until(lambda: images_ready(sc, "1"), 120, "v1 pods Ready", describe=sc.describe_pods)
    p.fact("rollback_to_ready_seconds", round(seconds + time.monotonic() - t_ready, 1))
    for pod in sc.handler_pods():
        log = sc.kube.logs(sc.namespace, pod["metadata"]["name"], "wait-for-migrations")
        assert "WARNING: the schema is ahead of this image" in log, log
    assert sc.db.schema_revision() == 4
    restarts = sc.handler_restarts()
    p.fact("restarts_total", sum(restarts.values()))
    assert sum(restarts.values()) == 0, sc.restart_report(restarts)


def test_4c_rollback_with_downgrade_hook_brings_the_schema_back(scenario: Scenario) -> None:
    sc, p = scenario, scenario.progress
    with p.phase("v1 -> v2 (revision 4), onRollback downgrade"):
        to_v2(sc, DOWNGRADE)
    with p.phase("helm rollback to v1 --wait: the pre-rollback hook runs `workload downgrade` in v1"):
        rc, seconds, out = rollback(sc, 1, timeout_s=180)
    assert rc == 0, out[-1500:]
    t_ready = time.monotonic()
    wait_until(lambda: images_ready(sc, "1"), 120, "v1 pods Ready", describe=sc.describe_pods)
    p.fact("rollback_to_ready_seconds", round(seconds + time.monotonic() - t_ready, 1))
    assert sc.db.schema_revision() == 3
    jobs = [j for j in sc.kube.batch.list_namespaced_job(sc.namespace).items if j.metadata.name.endswith("-downgrade")]
    assert jobs and jobs[0].spec.template.spec.containers[0].image.endswith(":1")
    restarts = sc.handler_restarts()
    p.fact("restarts_total", sum(restarts.values()))
    assert sum(restarts.values()) == 0, sc.restart_report(restarts)
