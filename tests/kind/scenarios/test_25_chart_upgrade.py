"""Upgrading the chart itself with jobs in flight (issue 35): 25d the released 0.2.0 chart to
HEAD's with a real app (procrastinate, the values example as 0.2.0 shipped it); the reference
workload's upgrade from 0.2.0 with jobs in flight is the generated suite's `--from` test (24a,
which replaced 25a); 25b a role's kind switched Deployment -> StatefulSet -> Deployment in one upgrade each:
refused by the chart (JH061) while the old kind runs, then let through with
`kindSwitch.allowOverlap: true` (measured: both kinds run at once); 25c the documented two-step
switch (replicas 0, then the kind), which the chart lets through without it: 0 lost, 0 overlap."""

from __future__ import annotations

import random
import time

import pytest

import yaml

from jhkind import objects, released, switch
from jhkind import procrastinate as pc
from jhkind.cluster import job_state
from jhkind.scenario import Scenario
from jhkind.waits import wait_until

pytestmark = [pytest.mark.kind, pytest.mark.timeout(600)]

FROM = "0.2.0"
FULLNAME = "jh-jobhandlers"
JOBS = 12
JOB = {"replicas": 1, "env": [{"name": "WORKLOAD_POLL_SECONDS", "value": "0.5"},
                              {"name": "WORKLOAD_LEASE_SECONDS", "value": "10"},
                              {"name": "WORKLOAD_CONCURRENCY", "value": "4"}]}


def _submit(sc: Scenario, seed: int, seconds: tuple[float, float] = (10, 20)) -> list[int]:
    """JOBS sleep jobs of 10-20 s (or `seconds`); returns once 4 of them run."""
    rng = random.Random(seed)
    ids = sc.client().submit([{"kind": "sleep", "duration": round(rng.uniform(*seconds), 1)} for _ in range(JOBS)])
    wait_until(lambda: sc.db.states().get("running", 0) >= 4, 90, "4 jobs to be running")
    return ids


def _finish(sc: Scenario, ids: list[int], tag: str) -> dict:
    """Wait for every job, record lost and run-twice counts, and require both to be 0."""
    wait_until(lambda: sc.db.report(ids)["done"] == len(ids), 300, f"all {len(ids)} jobs to be done", interval=2,
               describe=lambda: str(sc.db.report(ids)))
    report = sc.db.report(ids)
    sc.progress.fact(f"{tag}jobs_lost", report["lost"])
    sc.progress.fact(f"{tag}jobs_run_twice", report["duplicate_completions"])
    sc.progress.fact(f"{tag}jobs_reclaimed", report["reruns"])
    assert report["lost"] == 0 and report["duplicate_completions"] == 0, report
    return report


def _templates(sc: Scenario) -> dict[str, dict]:
    return {role: w["spec"]["template"] for role, w in sc.deployments().items()}


def _migration_runs(sc: Scenario) -> dict[str, int]:
    """Migration Job uid -> the pods it ran (every Job the timeline saw, deleted hooks included)."""
    jobs = {ch.obj["metadata"]["uid"] for ch in sc.timeline.job_changes()
            if (ch.obj["metadata"].get("labels") or {}).get("app.kubernetes.io/component") == "migration"}
    runs = {uid: 0 for uid in jobs}
    for pod in sc.timeline.last_pods().values():
        for o in pod["metadata"].get("ownerReferences") or []:
            if o.get("kind") == "Job" and o.get("uid") in runs:
                runs[o["uid"]] += 1
    return runs


def _upgraded_in_place(sc: Scenario, before: dict, templates: dict[str, dict], pods: dict[str, set[str]]) -> None:
    """After `helm upgrade` FROM -> HEAD (25d): nothing deleted or re-created beyond
    lifecycle.yaml upgrades.FROM, pods rolled exactly where the pod template changed, 0 restarts,
    the migration ran once per release revision."""
    p = sc.progress
    with p.phase("only declared objects re-created"):
        change = objects.recreated(before, objects.uids(sc.kube, sc.helm, sc.release, sc.namespace))
        p.fact("objects_changed", {k: [f"{kind}/{name}" for kind, name in v] for k, v in change.items()})
        declared = released.declared_recreations(FROM)
        undeclared = [key for keys in change.values() for key in keys
                      if not released.is_declared(key[0], key[1], FULLNAME, declared)]
        assert not undeclared, f"deleted/created/re-created, not declared in lifecycle.yaml upgrades.{FROM}: {undeclared}"

    with p.phase("pods rolled exactly where the pod template changed"):
        after = _templates(sc)
        assert after.keys() == templates.keys(), (sorted(templates), sorted(after))
        changed = {role: after[role] != templates[role] for role in templates}
        live = {role: {pod["metadata"]["uid"] for pod in sc.handler_pods(role)} for role in templates}
        rolled = {role: not (live[role] & pods[role]) for role in templates}
        p.fact("template_changed", changed)
        p.fact("rolled", rolled)
        assert rolled == changed, f"rolled {rolled} but template changed {changed}"
        restarts = sc.handler_restarts()
        p.fact("restarts_total", sum(restarts.values()))
        assert sum(restarts.values()) == 0, sc.restart_report(restarts)

    with p.phase("the migration ran once per release revision"):
        revisions = len(sc.helm.history(sc.release, sc.namespace))
        runs = _migration_runs(sc)
        p.fact("helm_revisions", revisions)
        p.fact("migration_jobs", len(runs))
        p.fact("migration_pods", sum(runs.values()))
        assert revisions == 2 and len(runs) == revisions and set(runs.values()) == {1}, (revisions, runs)


def test_25d_upgrade_a_real_app_from_release_with_jobs_in_flight(scenario: Scenario) -> None:
    """procrastinate, unmodified, on the values example as the 0.2.0 release shipped it (its
    values-examples/procrastinate.yaml: 2 workers, SIGTERM alone, exec probes), with only the
    database, one worker and a 60 s job bound changed: installed with the released chart, then
    `helm upgrade` to HEAD's chart with the same values while jobs run. Every job succeeds once,
    nothing undeclared is re-created, the migration Job runs once per revision, 0 restarts."""
    sc, p = scenario, scenario.progress
    old_release = sc.workdir / f"release-{FROM}"
    old_chart = released.chart(FROM, old_release)
    example = yaml.safe_load((old_release / "values-examples" / "procrastinate.yaml").read_text())
    example.pop("database")
    values = {**example, "handlers": {**example["handlers"], "job": {
        **example["handlers"]["job"], "replicas": 1, "maxJobRuntimeSeconds": 60,
        "resources": {"requests": {"cpu": "10m", "memory": "96Mi"}}}}}
    with p.phase(f"install the released {FROM} chart with its procrastinate example"):
        sc.install(values, chart=old_chart).check(f"helm install {FROM}")
        sc.wait_handlers_ready(180)
    before = objects.uids(sc.kube, sc.helm, sc.release, sc.namespace)
    templates = _templates(sc)
    pods = {role: {pod["metadata"]["uid"] for pod in sc.handler_pods(role)} for role in templates}
    rng = random.Random(26)
    durations = [round(rng.uniform(10, 20), 1) for _ in range(8)]
    with p.phase(f"defer {len(durations)} sleep_task jobs of 10-20 s; 4 in flight"):
        pc.defer(sc, sc.handler_pods("job")[0]["metadata"]["name"], durations)
        wait_until(lambda: pc.job_report(sc)["states"].get("doing", 0) >= 4, 90, "4 jobs in flight",
                   describe=lambda: str(pc.job_report(sc)))
    with p.phase(f"helm upgrade {FROM} -> HEAD, same values"):
        res = sc.upgrade(values).check(f"helm upgrade {FROM} -> HEAD")
        p.fact("helm_upgrade_seconds", round(res.seconds, 1))
    with p.phase("every job succeeds, once"):
        wait_until(lambda: pc.job_report(sc)["states"].get("succeeded", 0) == len(durations), 300,
                   "all jobs to succeed", interval=2, describe=lambda: str(pc.job_report(sc)))
        report = pc.job_report(sc)
        p.fact("job_report", report)
        p.fact("jobs_lost", len(durations) - report["states"].get("succeeded", 0))
        assert report["unfinished_runs"] == 0 and report["reruns"] == 0, report
        sc.wait_handlers_ready(180)
    _upgraded_in_place(sc, before, templates, pods)


def _refused_without_ack(sc: Scenario, kind: str, old_kind: str) -> None:
    """The one-step switch without the acknowledgement: helm upgrade fails at render (JH061, the
    chart's lookup sees the old kind's replicas) and nothing changes: same workload, same pods,
    no new revision."""
    p = sc.progress
    with p.phase(f"helm upgrade: job role {old_kind} -> {kind} without kindSwitch.allowOverlap: refused"):
        workload = sc.deployments()["job"]
        pods = {pd["metadata"]["uid"] for pd in sc.handler_pods("job")}
        revisions = len(sc.helm.history(sc.release, sc.namespace))
        res = sc.upgrade({"handlers": {"job": {**JOB, "kind": kind}}})
        p.fact(f"refused_to_{kind.lower()}_exit", res.rc)
        assert res.rc != 0, f"a one-step switch to {kind} was not refused:\n{res.stdout[-2000:]}"
        for words in ("(jobhandlers check: JH061)", f"handlers.job.kind={kind}", f"this release's {old_kind}",
                      "handlers.job.kindSwitch.allowOverlap: true"):
            assert words in res.stderr, (words, res.stderr[-3000:])
        after = sc.deployments()["job"]
        assert (after["kind"], after["metadata"]["uid"]) == (old_kind, workload["metadata"]["uid"]), after["kind"]
        assert {pd["metadata"]["uid"] for pd in sc.handler_pods("job")} == pods
        assert len(sc.helm.history(sc.release, sc.namespace)) == revisions


def _switch(sc: Scenario, kind: str, old_kind: str, tag: str, seed: int) -> dict:
    """One upgrade that switches the job role to `kind` with jobs in flight, acknowledging the
    overlap (`kindSwitch.allowOverlap: true`: the chart refuses it otherwise); the measured window."""
    p = sc.progress
    # jobs of 30-45 s: the old kind's pod drains them while the new kind's pod starts, so both
    # surely run at once. With 10-20 s, ci15's first try (load ~20) saw the StatefulSet's pod
    # start only once the Deployment's had drained (overlap 0); its rerun passed.
    ids = _submit(sc, seed, (30, 45))
    t_up = time.time()
    with p.phase(f"helm upgrade: job role {old_kind} -> {kind} (kindSwitch.allowOverlap)"):
        sc.upgrade({"handlers": {"job": {**JOB, "kind": kind, "kindSwitch": {"allowOverlap": True}}}}
                   ).check(f"helm upgrade to {kind}")
        sc.wait_handlers_ready(180)
        wait_until(lambda: not [pd for pd in sc.handler_pods("job", live_only=False)
                                if switch.owner_kind(pd) == old_kind], 180, f"the {old_kind} pods to be gone")
    with p.phase("all jobs finish"):
        _finish(sc, ids, tag)
    now = time.time()
    old, new = switch.spans(sc.timeline, "job", old_kind, now), switch.spans(sc.timeline, "job", kind, now)
    assert old and new, (old, new)
    window_end = max(s for s, _ in new)
    out = {"overlap": switch.overlap_seconds(old, new), "gap": switch.gap_seconds(old, new, t_up, window_end),
           "in_flight": switch.in_flight_at_stop(sc.timeline, sc.db.attempts(ids), "job", old_kind)}
    p.fact(f"{tag}jobs_in_flight_at_stop", out["in_flight"])
    p.fact(f"{tag}overlap_s", out["overlap"])
    p.fact(f"{tag}gap_s", out["gap"])
    p.fact(f"{tag}switch_seconds", round(window_end - t_up, 1))
    return out


def test_25b_kind_switch_in_one_upgrade(scenario: Scenario) -> None:
    sc, p = scenario, scenario.progress
    with p.phase("install: job role a Deployment"):
        sc.install({"handlers": {"job": JOB}}).check("helm install")
        sc.wait_handlers_ready(120)
    _refused_without_ack(sc, "StatefulSet", "Deployment")
    fwd = _switch(sc, "StatefulSet", "Deployment", "to_sts_", 251)
    back = _switch(sc, "Deployment", "StatefulSet", "to_deploy_", 252)
    assert fwd["in_flight"] > 0 and back["in_flight"] > 0, f"no job ran when the old pods were stopped: {fwd} {back}"
    assert fwd["overlap"] > 0 and back["overlap"] > 0, \
        f"a one-step switch never ran both kinds at once: {fwd} {back}"


def test_25c_kind_switch_two_steps(scenario: Scenario) -> None:
    sc, p = scenario, scenario.progress
    with p.phase("install: job role a Deployment"):
        sc.install({"handlers": {"job": JOB}}).check("helm install")
        sc.wait_handlers_ready(120)
    ids = _submit(sc, 253)
    t_up = time.time()
    with p.phase("step 1: helm upgrade, replicas 0 (the Deployment drains)"):
        sc.upgrade({"handlers": {"job": {**JOB, "replicas": 0}}}).check("helm upgrade replicas 0")
        wait_until(lambda: not sc.handler_pods("job", live_only=False), 180, "the job pods to be gone")
    with p.phase("step 2: helm upgrade, kind StatefulSet (no kindSwitch.allowOverlap: the chart lets it through)"):
        sc.upgrade({"handlers": {"job": {**JOB, "kind": "StatefulSet"}}}).check("helm upgrade to StatefulSet")
        sc.wait_handlers_ready(180)
    with p.phase("all jobs finish"):
        _finish(sc, ids, "")
    now = time.time()
    old, new = switch.spans(sc.timeline, "job", "Deployment", now), switch.spans(sc.timeline, "job", "StatefulSet", now)
    assert old and new, (old, new)
    window_end = max(s for s, _ in new)
    overlap = switch.overlap_seconds(old, new)
    in_flight = switch.in_flight_at_stop(sc.timeline, sc.db.attempts(ids), "job", "Deployment")
    p.fact("jobs_in_flight_at_stop", in_flight)
    assert in_flight > 0, "no job ran when step 1 stopped the Deployment's pods"
    p.fact("overlap_s", overlap)
    p.fact("gap_s", switch.gap_seconds(old, new, t_up, window_end))
    p.fact("switch_seconds", round(window_end - t_up, 1))
    assert overlap == 0, f"the two-step switch ran both kinds at once for {overlap} s"
