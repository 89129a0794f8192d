"""Stable identities (handlers.<role>.kind: StatefulSet): 15a a rollout with jobs in flight
keeps one live process per pod name, drains each old pod and loses nothing; 15b the same
measured on a Deployment role, where the new pod starts while the old one still drains
(the galaxy-helm pattern: one identity per Deployment, default rolling update)."""

from __future__ import annotations

import random
import time

import pytest

from jhkind.identity import lifetimes, overlaps
from jhkind.observe import terminated_state
from jhkind.scenario import Scenario
from jhkind.waits import wait_until

pytestmark = [pytest.mark.kind, pytest.mark.timeout(600)]

JOBS = 24
REPLICAS = 2
CONCURRENCY = 6  # 2 x 6 = 12 slots for 24 jobs of 10-25 s


def _env(**kv: str) -> list[dict]:
    return [{"name": k, "value": v} for k, v in kv.items()]


def _rollout_with_jobs(sc: Scenario, kind: str) -> dict:
    p = sc.progress
    job = {"replicas": REPLICAS, "maxJobRuntimeSeconds": 30,
           "env": _env(WORKLOAD_POLL_SECONDS="0.5", WORKLOAD_LEASE_SECONDS="10", WORKLOAD_CONCURRENCY=str(CONCURRENCY))}
    if kind == "StatefulSet":
        job["kind"] = "StatefulSet"
    with p.phase(f"install: job role as a {kind} of {REPLICAS}"):
        sc.install({"handlers": {"job": job}}).check("helm install")
        sc.wait_handlers_ready(120)
    names = sorted(pod["metadata"]["name"] for pod in sc.handler_pods("job"))
    if kind == "StatefulSet":
        assert names == [f"{sc.deployments()['job']['metadata']['name']}-{i}" for i in range(REPLICAS)], names
    grace = sc.grace("job")
    rng = random.Random(15)
    durations = [round(rng.uniform(10, 25), 1) for _ in range(JOBS)]
    with p.phase(f"submit {JOBS} jobs of 10-25 s"):
        ids = sc.client().submit([{"kind": "sleep", "duration": d} for d in durations])
        wait_until(lambda: sc.db.states()["running"] >= 8, 60, "8 jobs to be running")
    old = {pod["metadata"]["uid"] for pod in sc.handler_pods("job")}
    with p.phase("rollout restart of the job role"):
        t0 = sc.restart_role("job")
        sc.wait_rollout("job", old, timeout=REPLICAS * grace + 180)
        p.fact(f"{kind}_rollout_seconds", round(time.time() - t0, 1))
    with p.phase(f"all {JOBS} jobs finish"):
        wait_until(lambda: sc.db.report(ids)["done"] == JOBS, 240, f"all {JOBS} jobs to be done", interval=2,
                   describe=lambda: str(sc.db.report(ids)))
    report = sc.db.report(ids)
    life = lifetimes(sc.timeline, "job")
    exits = [terminated_state(pod, "job") for uid, pod in sc.timeline.last_pods().items() if uid in old]
    return {"report": report, "lifetimes": life, "names": names, "grace": grace,
            "old_exit_codes": [t["exitCode"] if t else None for t in exits]}


def test_15a_statefulset_rollout_one_process_per_identity(scenario: Scenario) -> None:
    sc, p = scenario, scenario.progress
    r = _rollout_with_jobs(sc, "StatefulSet")
    report = r["report"]
    p.fact("jobs_lost", report["lost"])
    p.fact("duplicate_completions", report["duplicate_completions"])
    assert report["lost"] == 0 and report["duplicate_completions"] == 0, report
    spans = overlaps(r["lifetimes"], key=lambda name: name)
    p.fact("identity_overlaps_s", spans)
    p.fact("max_identity_overlap_s", max(spans))
    assert len(spans) == REPLICAS, f"expected one replacement per identity: {r['lifetimes']}"
    assert max(spans) <= 0, f"two processes held one identity at once: {spans}"
    assert r["old_exit_codes"] == [0] * REPLICAS, r["old_exit_codes"]
    now = sorted(pod["metadata"]["name"] for pod in sc.handler_pods("job"))
    assert now == r["names"], f"identities changed: {r['names']} -> {now}"
    assert sum(sc.handler_restarts().values()) == 0, sc.restart_report(sc.handler_restarts())


def test_15b_deployment_rollout_overlaps(scenario: Scenario) -> None:
    """The naive baseline: with a Deployment (maxSurge 1), the replacement of a handler starts
    while the old one still drains, so a slot keyed by role index would be held twice."""
    sc, p = scenario, scenario.progress
    r = _rollout_with_jobs(sc, "Deployment")
    assert r["report"]["lost"] == 0, r["report"]
    # identity of a Deployment pod: its position in start order within the role (what a
    # per-index Deployment such as galaxy-helm's job_handler_N would give it)
    life = sorted(r["lifetimes"], key=lambda x: x[2])
    olds = [x for x in life if x[3] is not None]
    news = [x for x in life if x[3] is None]
    overlaps = [round(o[3] - n[2], 2) for o, n in zip(olds, news)]
    p.fact("identity_overlaps_s", overlaps)
    p.fact("max_identity_overlap_s", max(overlaps))
    assert max(overlaps) > 0, f"the Deployment rollout never ran old and new side by side: {overlaps}"
