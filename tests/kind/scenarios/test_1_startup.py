"""Startup: migrations before handlers (scenario 1a) and proof that the naive chart
crash-loops under the same conditions (scenario 1b); GitOps mode (1c)."""

from __future__ import annotations

import pytest

from jhkind.cluster import job_state, parse_time, pod_ready
from jhkind.observe import first_seen, is_handler_pod, ready_series
from jhkind.scenario import Scenario, job_completed_at

MIGRATION_SECONDS = 20
# A third role, as in Galaxy (web + workflow + job handlers).
WORKFLOW_ROLE = {
    "enabled": True, "replicas": 1, "command": ["workload", "workflow"], "args": [], "port": None,
    "maxJobRuntimeSeconds": 10, "terminationGracePeriodSeconds": None, "startDrained": False,
    "env": [{"name": "WORKLOAD_POLL_SECONDS", "value": "0.5"}],
    "resources": {"requests": {"cpu": "10m", "memory": "64Mi"}},
    "pdb": {"enabled": True, "maxUnavailable": 1},
    "nodeSelector": {}, "tolerations": [], "affinity": {},
}
pytestmark = [pytest.mark.kind, pytest.mark.timeout(600)]


def _desired(sc: Scenario) -> int:
    return sum(int(d["spec"]["replicas"]) for d in sc.deployments().values())


def _all_ready_after(sc: Scenario, t0: float) -> float | None:
    """Seconds from t0 until the timeline first shows every desired handler pod Ready."""
    want = _desired(sc)
    return next((t for t, n in ready_series(sc.timeline, t0) if n >= want), None)


@pytest.mark.versions
def test_1a_fresh_install_slow_migration(scenario: Scenario) -> None:
    sc, p = scenario, scenario.progress
    with p.phase(f"helm install --wait with a {MIGRATION_SECONDS}s migration"):
        res = sc.install({"migration": {"extraArgs": ["--slow", str(MIGRATION_SECONDS)]},
                          "handlers": {"workflow": WORKFLOW_ROLE}},
                         timeout_s=300).check("helm install")
    p.fact("helm_install_seconds", round(res.seconds, 1))

    with p.phase("hook Job before handler pods"):
        jobs = sc.migration_jobs()
        assert len(jobs) == 1, f"expected one migration Job, found {[j['metadata']['name'] for j in jobs]}"
        job = jobs[0]
        hook = (job["metadata"].get("annotations") or {}).get("helm.sh/hook", "")
        assert "pre-install" in hook, f"migration Job is not a pre-install hook (helm.sh/hook={hook!r})"
        assert job_state(job) == "complete", f"migration Job state {job_state(job)}: {job.get('status')}"
        started, completed = parse_time(job["status"]["startTime"]), job_completed_at(job)
        assert completed is not None
        p.fact("migration_job_seconds", round(completed - started, 1))
        assert completed - started >= MIGRATION_SECONDS, "the migration was not slow: --slow had no effect"

        handler_pods = [pod for pod in sc.timeline.last_pods().values() if is_handler_pod(pod)]
        assert handler_pods, "no handler pod was ever seen"
        first_created = min(parse_time(pod["metadata"]["creationTimestamp"]) for pod in handler_pods)
        p.fact("first_handler_pod_after_job_complete_s", round(first_created - completed, 1))
        assert first_created >= completed, (
            f"a handler pod was created {completed - first_created:.0f}s before the migration Job completed")
        # the same, as observed by the watches (sub-second, local clock)
        seen_complete = next((c.t for c in sc.timeline.job_changes() if job_state(c.obj) == "complete"), None)
        seen_pod = first_seen(sc.timeline, is_handler_pod)
        assert seen_complete is not None and seen_pod is not None and seen_pod > seen_complete, (
            f"watch order: Job complete seen at {seen_complete}, first handler pod seen at {seen_pod}")

    with p.phase("every handler container Ready, restartCount 0"):
        sc.wait_handlers_ready(60)
        pods = sc.handler_pods()
        assert {pod["metadata"]["labels"]["app.kubernetes.io/component"] for pod in pods} == {"web", "job", "workflow"}
        for pod in pods:
            name = pod["metadata"]["name"]
            assert pod_ready(pod), f"{name} is not Ready"
            for st in pod["status"]["containerStatuses"]:
                assert st["ready"] and st["restartCount"] == 0, f"{name}/{st['name']}: {st}"
            inits = pod["status"].get("initContainerStatuses") or []
            assert [s["name"] for s in inits] == ["wait-for-migrations"], f"{name}: init containers {inits}"
            term = inits[0]["state"].get("terminated") or {}
            assert term.get("exitCode") == 0 and inits[0]["restartCount"] == 0, f"{name}: wait-for-migrations {inits[0]}"
        restarts = sc.handler_restarts()
        assert sum(restarts.values()) == 0, f"restarts seen during the install: {restarts}"
        ready_s = _all_ready_after(sc, res.started)
        p.fact("install_to_all_ready_s", ready_s)
        p.fact("restarts_total", 0)


def test_1b_naive_chart_restarts(scenario: Scenario) -> None:
    sc, p = scenario, scenario.progress
    naive = {"waitForMigrations": {"enabled": False}, "startupProbe": {"enabled": False},
             "migration": {"useHelmHooks": False, "extraArgs": ["--slow", str(MIGRATION_SECONDS)]}}
    with p.phase("helm install --wait of the naive chart (no hook, no init gate, no startupProbe)"):
        res = sc.install(naive, timeout_s=300).check("helm install (naive)")
    p.fact("helm_install_seconds", round(res.seconds, 1))
    with p.phase("handlers restarted"):
        jobs = sc.migration_jobs()
        assert jobs and not (jobs[0]["metadata"].get("annotations") or {}).get("helm.sh/hook"), \
            "naive mode must render a plain (non-hook) migration Job"
        restarts = sc.handler_restarts()
        exit_codes = sorted({
            (st.get("lastState") or {}).get("terminated", {}).get("exitCode")
            for pod in sc.timeline.last_pods().values() if is_handler_pod(pod)
            for st in (pod.get("status") or {}).get("containerStatuses") or []
            if (st.get("lastState") or {}).get("terminated")
        })
        p.fact("restarts_total", sum(restarts.values()))
        p.fact("restarts_per_pod", restarts)
        p.fact("handler_exit_codes", exit_codes)
        p.fact("install_to_all_ready_s", _all_ready_after(sc, res.started))
        assert sum(restarts.values()) > 0, (
            "the naive chart showed no handler restart: scenario 1a would not be measuring anything")


def test_1c_gitops_mode_pods_wait_in_init(scenario: Scenario) -> None:
    """Without hooks (Argo CD / Flux) the handler pods start while the plain Job migrates:
    the wait-for-migrations init container really waits, and still nothing restarts."""
    sc, p = scenario, scenario.progress
    with p.phase(f"helm install --wait, migration.useHelmHooks=false, {MIGRATION_SECONDS}s migration"):
        res = sc.install({"migration": {"useHelmHooks": False, "extraArgs": ["--slow", str(MIGRATION_SECONDS)]}},
                         timeout_s=300).check("helm install (gitops mode)")
    p.fact("helm_install_seconds", round(res.seconds, 1))
    with p.phase("handler pods waited in init for the plain migration Job"):
        jobs = sc.migration_jobs()
        assert len(jobs) == 1, [j["metadata"]["name"] for j in jobs]
        job = jobs[0]
        assert not (job["metadata"].get("annotations") or {}).get("helm.sh/hook"), "expected a plain Job"
        assert sc.wait_job(job["metadata"]["name"], 120) == "complete"  # all conditions read, not the first
        migrated = sc.db.revision_applied_at(3)  # the schema reached the v1 head (DB clock)
        sc.wait_handlers_ready(60)
        pods = sc.handler_pods()
        waited = []
        for pod in pods:
            name = pod["metadata"]["name"]
            created = parse_time(pod["metadata"]["creationTimestamp"])
            init = pod["status"]["initContainerStatuses"][0]
            term = init["state"]["terminated"]
            assert init["name"] == "wait-for-migrations" and term["exitCode"] == 0 and init["restartCount"] == 0, init
            finished = parse_time(term["finishedAt"])
            main_started = parse_time(pod["status"]["containerStatuses"][0]["state"]["running"]["startedAt"])
            tries = [ln for ln in sc.kube.logs(sc.namespace, name, "wait-for-migrations").splitlines()
                     if ln.startswith("wait-for-migrations: try")]
            p.note(f"{name}: created {created - migrated:+.1f}s and init done {finished - migrated:+.1f}s vs the "
                   f"schema reaching head, {len(tries)} schema checks")
            assert created < migrated, f"{name} was created after the migration: nothing to wait for"
            # finishedAt has 1 s resolution
            assert finished >= int(migrated) and main_started >= finished, f"{name} did not wait for the migration"
            assert len(tries) > 1, f"{name}: the init container did not loop: {tries}"
            waited.append(finished - created)
        p.fact("init_wait_seconds_max", round(max(waited), 1))
        restarts = sc.handler_restarts()
        p.fact("restarts_total", sum(restarts.values()))
        assert sum(restarts.values()) == 0, f"restarts in gitops mode: {restarts}"
        p.fact("install_to_all_ready_s", _all_ready_after(sc, res.started))
