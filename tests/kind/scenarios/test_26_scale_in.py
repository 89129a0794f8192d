"""Scale-in that takes idle pods first (handlers.<role>.scaleIn.preferIdle, README: Autoscaling),
against a control run without it.

Both runs: 4 job handlers of one slot each on one worker (so the ReplicaSet's "doubled up" rank is
equal for all), 2 of them running a 60 s job, then `kubectl scale --replicas=2` (what an HPA or KEDA
does through the scale subresource). Before the scale the busy pods turn not Ready and Ready again
(the drain marker for a moment), so they are the pods Ready for the shorter time: the ReplicaSet's
own tie-break then removes exactly them (pkg/controller/controller_utils.go, ActivePodsWithRanks:
not Ready, then the lower pod-deletion-cost, then doubled up, then Ready for less time).
- 26a, preferIdle: the busy pods' deletion cost (1000) outranks their Ready time, so the two idle
  pods go, no job is interrupted, and the scale-in ends when the idle pods exit. The role's token
  may patch only its own pod's deletion cost (the ValidatingAdmissionPolicy, from 1.30).
- 26b, control: the two busy pods go, drain their jobs (marker adapter) and exit 0 within their
  grace, so the scale-in lasts as long as their jobs.
Every job is done once, on the pod that started it, in both.
- 26c, a real HPA controller (no metrics source: it enforces its bounds before any metric) raises the
  Deployment from 1 to its minReplicas, keeps its count through a helm upgrade, and scales in when
  maxReplicas falls below it; preferIdle removes the idle pod.
- 26d, the StatefulSet variant (Celery): the HPA's scale-in removes the top ordinal, which drains.
- 26e, burst then quiet with a real metrics source (metrics-server, built here from its Go module):
  the HPA on CPU scales the role out for a burst of cpu jobs and back in once it ends, while long
  jobs run; the pods that go are idle ones."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Iterator

import pytest

from generator import model
from jhkind import addon
from jhkind import celery as cy
from jhkind import nodes
from jhkind.cluster import pod_ready
from jhkind.observe import deletion_started, old_pod_exit
from jhkind.scenario import Scenario
from jhkind.waits import wait_until

# `sequential`: in the node scenarios' pass (one at a time, on its own cluster), which ends long
# before the main pass: they need only a worker of their own, and cost the main lanes nothing there.
pytestmark = [pytest.mark.kind, pytest.mark.sequential, pytest.mark.timeout(600)]

COST = "controller.kubernetes.io/pod-deletion-cost"
JOB_SECONDS = 60
PERIOD = 2
CELERY_HELD = 4 * 2  # messages one Celery worker holds: prefetch multiplier 4 x 2 slots (the example)

# The deletion-cost container's own client, with its own token: PATCH a pod, print the HTTP status and
# the API server's message (the policy's words on a refusal).
PATCH = """
import json, os, ssl, sys, urllib.error, urllib.request as u
d = "/var/run/secrets/kubernetes.io/serviceaccount"
ns, pod, body = sys.argv[1:4]
url = "https://%s:%s/api/v1/namespaces/%s/pods/%s" % (os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"], ns, pod)
req = u.Request(url, data=body.encode(), method="PATCH", headers={"Content-Type": "application/merge-patch+json",
                "Authorization": "Bearer " + open(d + "/token").read().strip()})
try:
    u.urlopen(req, context=ssl.create_default_context(cafile=d + "/ca.crt"), timeout=20).read()
    print(json.dumps([200, ""]))
except urllib.error.HTTPError as e:
    print(json.dumps([e.code, json.loads(e.read() or b"{}").get("message", "")]))
"""


def _values(worker: str, prefer: bool) -> dict:
    env = [{"name": k, "value": v} for k, v in
           {"WORKLOAD_POLL_SECONDS": "0.5", "WORKLOAD_LEASE_SECONDS": "10", "WORKLOAD_CONCURRENCY": "1"}.items()]
    return {"handlers": {"job": {
        "replicas": 4, "maxJobRuntimeSeconds": 90, "env": env,
        "nodeSelector": {"kubernetes.io/hostname": worker}, "topologySpreadConstraints": [],
        "scaleIn": {"preferIdle": {"enabled": prefer, "periodSeconds": PERIOD}}}}}


def _costs(sc: Scenario) -> dict[str, str | None]:
    return {q["metadata"]["name"]: (q["metadata"].get("annotations") or {}).get(COST) for q in sc.handler_pods("job")}


def _flip_ready(sc: Scenario, pods: list[str]) -> None:
    """The drain marker for a moment: not Ready (claims nothing, keeps its job), then Ready again."""
    for name in pods:
        res = sc.kube.exec(sc.namespace, name, ["sh", "-c", "touch /run/jobhandlers/drain"], container="job")
        assert res.rc == 0, res.stderr
    by_name = lambda: {q["metadata"]["name"]: q for q in sc.handler_pods("job")}  # noqa: E731
    wait_until(lambda: not any(pod_ready(by_name()[n]) for n in pods), 60, "the busy pods not Ready")
    for name in pods:
        res = sc.kube.exec(sc.namespace, name, ["sh", "-c", "rm -f /run/jobhandlers/drain"], container="job")
        assert res.rc == 0, res.stderr
    wait_until(lambda: all(pod_ready(by_name()[n]) for n in pods), 60, "the busy pods Ready again")


def _hpa(low: int, high: int, **job: object) -> dict:
    """Values overrides: the job role autoscaled by an HPA between low and high (and any other job keys)."""
    return {"handlers": {"job": {"autoscaling": {"hpa": {"enabled": True, "minReplicas": low,
                                                         "maxReplicas": high}}, **job}}}


def _replicas(sc: Scenario) -> int:
    """The job workload's spec.replicas: what the HPA set."""
    return int(sc.deployments()["job"]["spec"].get("replicas") or 0)


def _patch_as(sc: Scenario, pod: str, target: str, body: dict) -> tuple[int, str]:
    res = sc.kube.exec(sc.namespace, pod, ["python3", "-c", PATCH, sc.namespace, target, json.dumps(body)],
                       container="deletion-cost", timeout=60)
    assert res.rc == 0, res.stderr[-2000:]
    code, message = json.loads(res.stdout.strip().splitlines()[-1])
    return int(code), str(message)


def _scale_in(sc: Scenario, prefer: bool) -> dict:
    p = sc.progress
    worker = nodes.workers(sc.kube)[0]
    with p.phase(f"install 4 job handlers x 1 slot on {worker}, preferIdle {prefer}"):
        sc.install(_values(worker, prefer)).check("helm install")
        sc.wait_handlers_ready(120)
        if prefer:
            wait_until(lambda: set(_costs(sc).values()) == {"0"}, 60, "every pod's deletion cost 0 (idle)",
                       describe=lambda: str(_costs(sc)))
    grace = sc.grace("job")
    with p.phase(f"2 jobs of {JOB_SECONDS} s running on 2 of the pods"):
        ids = sc.client().submit([{"kind": "sleep", "duration": JOB_SECONDS}] * 2)
        wait_until(lambda: len(sc.db.attempts(ids)) == 2, 60, "both jobs claimed")
        busy = sorted({a.pod for a in sc.db.attempts(ids)})
        assert len(busy) == 2, f"one pod took both jobs: {busy}"
        everyone = {q["metadata"]["uid"]: q["metadata"]["name"] for q in sc.handler_pods("job")}
        idle = sorted(n for n in everyone.values() if n not in busy)
    with p.phase("the busy pods turn not Ready and Ready again (Ready for the shorter time)"):
        _flip_ready(sc, busy)
        if prefer:
            want = {n: ("1000" if n in busy else "0") for n in everyone.values()}
            wait_until(lambda: _costs(sc) == want, 30, "deletion cost 1000 on the busy pods, 0 on the idle ones",
                       describe=lambda: str(_costs(sc)))
    p.fact("deletion_costs_before", _costs(sc))
    with p.phase("kubectl scale --replicas=2 (the scale subresource, as an HPA)"):
        dep = sc.deployments()["job"]["metadata"]["name"]
        t_scale = sc.db.now()
        t0 = time.monotonic()
        nodes.kubectl(sc.kube, "scale", "-n", sc.namespace, f"deployment/{dep}", "--replicas=2",
                      timeout=60).check_returncode()
        wait_until(lambda: len(sc.handler_pods("job", live_only=False)) == 2, grace + 60,
                   "2 job handlers left, the removed ones gone", describe=sc.describe_pods)
        scale_in_s = round(time.monotonic() - t0, 1)
    kept = {q["metadata"]["name"] for q in sc.handler_pods("job")}
    removed = {uid: name for uid, name in everyone.items() if name not in kept}
    p.fact("scale_in_seconds", scale_in_s)
    p.fact("removed_pods", sorted(removed.values()))
    p.fact("busy_pods", busy)
    with p.phase("both jobs finish"):
        wait_until(lambda: sc.db.report(ids)["done"] == 2, JOB_SECONDS + 120, "both jobs done", interval=2,
                   describe=lambda: str(sc.db.report(ids)))
    report = sc.db.report(ids)
    attempts = sc.db.attempts(ids)
    p.fact("jobs_lost", report["lost"])
    p.fact("jobs_rerun", report["reruns"])
    assert report["lost"] == 0 and report["reruns"] == 0 and report["duplicate_completions"] == 0, report
    assert sorted(a.pod for a in attempts) == busy and all(a.outcome == "done" for a in attempts), attempts
    last = sc.timeline.last_pods()
    exits = []
    for uid, name in removed.items():
        started, finished, code = old_pod_exit(sc.timeline, uid, name, "job", last)
        assert code == 0 and finished - started < grace, f"{name}: exit {code} after {finished - started:.0f} s"
        exits.append(round(finished - started, 1))
    p.fact("removed_exit_seconds", exits)
    left_s = round(max(a.ended_at or 0 for a in attempts) - t_scale, 1)
    p.fact("jobs_left_at_the_scale_seconds", left_s)
    assert left_s > 15, f"the jobs were nearly done at the scale ({left_s} s left): nothing to compare"
    return {"left_s": left_s, "busy": busy, "idle": idle, "removed": sorted(removed.values()), "kept": kept,
            "scale_in_s": scale_in_s, "uids": everyone, "attempts": attempts}


@pytest.mark.versions
def test_26a_prefer_idle_scale_in_takes_the_idle_pods(scenario: Scenario) -> None:
    sc, p = scenario, scenario.progress
    run = _scale_in(sc, prefer=True)
    assert run["removed"] == run["idle"], f"preferIdle removed {run['removed']}, the idle pods were {run['idle']}"
    by_name = {name: uid for uid, name in run["uids"].items()}
    assert all(deletion_started(sc.timeline, by_name[n]) is None for n in run["busy"]), "a busy pod was deleted"
    # the scale-in waited only for the idle pods' preStop, not for the jobs
    assert run["scale_in_s"] < run["left_s"], (run["scale_in_s"], run["left_s"])
    with p.phase("the token may patch only its own pod's deletion cost (ValidatingAdmissionPolicy)"):
        me, other = sorted(run["kept"])
        own_cost = _patch_as(sc, me, me, {"metadata": {"annotations": {COST: "7"}}})
        other_cost = _patch_as(sc, me, other, {"metadata": {"annotations": {COST: "-5"}}})
        own_label = _patch_as(sc, me, me, {"metadata": {"labels": {"stolen": "yes"}}})
    p.fact("patch_own_cost", own_cost[0])
    p.fact("patch_other_pods_cost", other_cost)
    p.fact("patch_own_label", own_label)
    assert own_cost[0] == 200, own_cost
    minor = model.minor_version(sc.kube.server_version())
    if model.at_least(minor, model.DELETION_COST_POLICY_MIN_VERSION):
        assert other_cost[0] in (403, 422) and "may patch only its own pod" in other_cost[1], other_cost
        assert own_label[0] in (403, 422) and "may change only" in own_label[1], own_label
    else:  # no ValidatingAdmissionPolicy: RBAC alone, which JH070 warns about
        assert other_cost[0] == 200 and own_label[0] == 200, (other_cost, own_label)


def test_26b_control_scale_in_takes_the_busy_pods(scenario: Scenario) -> None:
    run = _scale_in(scenario, prefer=False)
    assert run["removed"] == run["busy"], \
        f"the control removed {run['removed']}, the busy pods (Ready for the shorter time) were {run['busy']}"
    # the removed pods drained their jobs: the scale-in lasted until those jobs ended
    assert run["scale_in_s"] >= run["left_s"] - 3, (run["scale_in_s"], run["left_s"])


def test_26c_hpa_scale_in_keeps_its_count_through_helm_upgrade(scenario: Scenario) -> None:
    """A real autoscaler: the HPA controller. Without a metrics source it still enforces its bounds
    (horizontal.go: a count below minReplicas or above maxReplicas is corrected at once, before any
    metric), so: the chart renders no `replicas`, the Deployment starts at 1 and the HPA raises it to
    its minReplicas 3; a `helm upgrade` (the PDB only) leaves the HPA's 3 alone; an upgrade to
    maxReplicas 2 makes the HPA scale in, and with preferIdle the idle pod goes while 2 run jobs."""
    sc, p = scenario, scenario.progress
    worker = nodes.workers(sc.kube)[0]
    values = _values(worker, True)
    del values["handlers"]["job"]["replicas"]

    with p.phase("install with an HPA (min 3, max 5): the Deployment starts at 1, the HPA raises it to 3"):
        t0 = time.monotonic()  # from the install's start: helm's --wait may outlast the HPA's first sync
        sc.install(values, _hpa(3, 5)).check("helm install")
        wait_until(lambda: _replicas(sc) == 3, 120, "the HPA's minReplicas 3", describe=sc.describe_pods)
        p.fact("hpa_scale_out_seconds_from_install", round(time.monotonic() - t0, 1))
        wait_until(lambda: len([q for q in sc.handler_pods("job") if pod_ready(q)]) == 3, 120, "3 job handlers Ready")
    with p.phase(f"2 jobs of {JOB_SECONDS} s on 2 of the 3 pods, their deletion cost 1000"):
        ids = sc.client().submit([{"kind": "sleep", "duration": JOB_SECONDS}] * 2)
        wait_until(lambda: len(sc.db.attempts(ids)) == 2, 60, "both jobs claimed")
        busy = sorted({a.pod for a in sc.db.attempts(ids)})
        assert len(busy) == 2, busy
        idle = sorted(set(_costs(sc)) - set(busy))
        wait_until(lambda: _costs(sc) == {n: ("1000" if n in busy else "0") for n in [*busy, *idle]}, 30,
                   "the deletion costs", describe=lambda: str(_costs(sc)))
    with p.phase("helm upgrade (the PDB only): the HPA's count stays"):
        sc.upgrade(values, _hpa(3, 5, pdb={"maxUnavailable": 2})).check("helm upgrade")
        after_upgrade = _replicas(sc)
    p.fact("replicas_after_helm_upgrade", after_upgrade)
    assert after_upgrade == 3, f"helm upgrade reset the HPA's 3 replicas to {after_upgrade}"
    everyone = {q["metadata"]["uid"]: q["metadata"]["name"] for q in sc.handler_pods("job")}
    with p.phase("helm upgrade to maxReplicas 2: the HPA scales in"):
        t0 = time.monotonic()
        sc.upgrade(values, _hpa(2, 2, pdb={"maxUnavailable": 2})).check("helm upgrade")
        wait_until(lambda: len(sc.handler_pods("job", live_only=False)) == 2, 120, "the HPA's scale-in to 2",
                   describe=sc.describe_pods)
        p.fact("hpa_scale_in_seconds_from_upgrade", round(time.monotonic() - t0, 1))
    removed = sorted(n for n in everyone.values() if n not in {q["metadata"]["name"] for q in sc.handler_pods("job")})
    p.fact("removed_pods", removed)
    p.fact("idle_pods", idle)
    assert removed == idle, f"the HPA's scale-in removed {removed}, the idle pod was {idle}"
    with p.phase("both jobs finish on the pods that claimed them"):
        wait_until(lambda: sc.db.report(ids)["done"] == 2, JOB_SECONDS + 120, "both jobs done", interval=2)
    report, attempts = sc.db.report(ids), sc.db.attempts(ids)
    p.fact("jobs_lost", report["lost"])
    assert report["lost"] == 0 and report["reruns"] == 0 and report["duplicate_completions"] == 0, report
    assert sorted(a.pod for a in attempts) == busy, attempts


@pytest.mark.timeout(900)
def test_26d_celery_statefulset_hpa_scale_in_takes_the_top_ordinal(scenario: Scenario) -> None:
    """The StatefulSet variant: real Celery on RabbitMQ (values-examples/django-celery.yaml, prefetch 4 x
    2 slots: each worker holds 8 messages). The pod-deletion cost means nothing to a StatefulSet (JH071):
    its scale-in always removes the highest ordinal, so what the chart can promise is that this worker
    drains. The HPA (min 2) raises the StatefulSet from 1 to 2; a helm upgrade with the same values keeps
    the HPA's 2; with both prefetch windows full and 4 tasks queued, an upgrade to maxReplicas 1 makes
    the HPA scale in: `-1` goes, drains (the example's cancel_consumer: it runs what it holds, hands
    nothing back) and exits 0 within its grace. Every task runs once, none is lost."""
    sc, p = scenario, scenario.progress

    def hpa(low: int, high: int) -> dict:  # null: helm drops the example's replicas
        return _hpa(low, high, replicas=None)

    def upgrade(low: int, high: int) -> None:
        sc.values = cy.values(sc, hpa(low, high))
        sc.helm.upgrade(sc.release, sc.namespace, [sc._values_file(sc.values)], 400).check("helm upgrade")

    with p.phase("broker + helm install with an HPA (min 2, max 3): the StatefulSet starts at 1, the HPA raises it"):
        cy.start_broker(sc)
        t0 = time.monotonic()
        cy.install(sc, hpa(2, 3)).check("helm install")
        wait_until(lambda: _replicas(sc) == 2, 120, "the HPA's minReplicas 2", describe=sc.describe_pods)
        p.fact("hpa_scale_out_seconds_from_install", round(time.monotonic() - t0, 1))
        sc.wait_handlers_ready(300)
    with p.phase("helm upgrade with the same values: the HPA's count stays"):
        upgrade(2, 3)
        p.fact("replicas_after_helm_upgrade", _replicas(sc))
        assert _replicas(sc) == 2, f"helm upgrade reset the HPA's 2 replicas to {_replicas(sc)}"
    grace = sc.grace("job")
    pods = sorted(sc.handler_pods("job"), key=lambda pod: pod["metadata"]["name"])
    gone = pods[-1]
    uid, name = gone["metadata"]["uid"], gone["metadata"]["name"]
    assert name.endswith("-1"), [q["metadata"]["name"] for q in pods]
    rng = random.Random(264)
    n = 2 * CELERY_HELD + 4
    with p.phase(f"submit {n} tasks of 5-8 s; both windows full"):
        cy.fill_windows(sc, pods[0]["metadata"]["name"], [round(rng.uniform(5, 8), 1) for _ in range(n)],
                        unacked=2 * CELERY_HELD)
    with p.phase(f"helm upgrade to maxReplicas 1: the HPA scales in, {name} drains and goes"):
        t0 = time.monotonic()
        upgrade(1, 1)
        wait_until(lambda: uid not in {q["metadata"]["uid"] for q in sc.handler_pods("job", live_only=False)},
                   grace + 60, f"{name} to be gone", interval=1)
        p.fact("hpa_scale_in_seconds_from_upgrade", round(time.monotonic() - t0, 1))
    assert _replicas(sc) == 1, _replicas(sc)
    started, ended, code = old_pod_exit(sc.timeline, uid, name, "job")
    with p.phase("queue drained, every run ended"):
        rep = cy.wait_settled(sc, 300, {name: ended})
    rep.update(grace=grace, exit=(code, round(ended - started, 1)))
    p.fact("report", rep)
    assert rep["lost"] == 0 and rep["finished"] == n, rep
    assert rep["run_twice"] == 0 and rep["interrupted_runs"] == 0, rep
    assert rep["exit"][0] == 0 and rep["exit"][1] < grace, f"{name} exit code and seconds after deletion: {rep['exit']}"
    assert sum(sc.handler_restarts().values()) == 0, sc.restart_report(sc.handler_restarts())


# 26e: the HPA's real metrics source (metrics-server v0.8.0, built here from its Go module).
MS_MANIFEST = Path(__file__).resolve().parent / "metrics-server.yaml"
MS_SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "metrics-server-image.sh"
BURST = 10  # cpu jobs of CPU_SECONDS each, 2 per pod at once
CPU_SECONDS = 20
LONG_SECONDS = 240  # 2 sleep jobs submitted at the peak: still running when the quiet scale-in comes


def _raw(kube, path: str) -> dict | None:
    res = nodes.kubectl(kube, "get", "--raw", path, timeout=60)
    return json.loads(res.stdout) if res.returncode == 0 else None


@pytest.fixture(scope="module")
def metrics_server(kube, kind_cluster_name: str) -> Iterator[str]:
    """metrics-server in kube-system for this module's tests, serving metrics.k8s.io; removed after."""
    def ready() -> None:
        wait_until(lambda: bool((_raw(kube, "/apis/metrics.k8s.io/v1beta1/nodes") or {}).get("items")), 240,
                   "metrics-server serving node metrics", interval=3)
    image = addon.image(MS_SCRIPT, kind_cluster_name)
    with addon.applied(kube, image, MS_MANIFEST, ready):
        yield image


def _hpa_status(sc: Scenario) -> dict:
    res = nodes.kubectl(sc.kube, "get", "hpa", "-n", sc.namespace, "-o", "json", timeout=60)
    res.check_returncode()
    items = json.loads(res.stdout)["items"]
    assert len(items) == 1, [i["metadata"]["name"] for i in items]
    return items[0].get("status") or {}


def _cpu_utilization(sc: Scenario) -> int | None:
    for m in _hpa_status(sc).get("currentMetrics") or []:
        if m.get("type") == "Resource" and m["resource"]["name"] == "cpu":
            return m["resource"]["current"].get("averageUtilization")
    return None


def test_26e_burst_then_quiet_with_metrics_server(scenario: Scenario, metrics_server: str) -> None:
    """Burst then quiet, with the HPA on CPU fed by a real metrics-server: the job role (requests 100m,
    limit 300m, 2 slots a pod) autoscaled between 2 and 4 at 50 % of its requests, preferIdle on. A burst
    of cpu jobs drives it to 4; at the peak 2 long sleep jobs start; once the cpu jobs are done the CPU
    falls and the HPA scales back to 2 (a 20 s window here: the derived one is 300 s) while the sleep
    jobs still run: the pods that go are idle ones (deletion cost 0), exit 0 within their grace, and
    every job runs once, on the pod that started it."""
    sc, p = scenario, scenario.progress
    env = [{"name": k, "value": v} for k, v in
           {"WORKLOAD_POLL_SECONDS": "0.5", "WORKLOAD_LEASE_SECONDS": "10", "WORKLOAD_CONCURRENCY": "2"}.items()]
    tiny = {"requests": {"cpu": "10m", "memory": "32Mi"}}
    values = {"handlers": {"job": {
        "replicas": None, "maxJobRuntimeSeconds": LONG_SECONDS + 60, "env": env,
        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "300m"}},
        "autoscaling": {"hpa": {
            "enabled": True, "minReplicas": 2, "maxReplicas": 4,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                "type": "Utilization", "averageUtilization": 50}}}],
            "behavior": {
                "scaleUp": {"stabilizationWindowSeconds": 0,
                            "policies": [{"type": "Pods", "value": 2, "periodSeconds": 15}]},
                "scaleDown": {"stabilizationWindowSeconds": 20,
                              "policies": [{"type": "Pods", "value": 2, "periodSeconds": 15}]}}}},
        "scaleIn": {"preferIdle": {"enabled": True, "periodSeconds": PERIOD, "resources": tiny}}}}}
    with p.phase("install: the job role autoscaled 2-4 on CPU (50 % of 100m)"):
        sc.install(values).check("helm install")
        wait_until(lambda: len([q for q in sc.handler_pods("job") if pod_ready(q)]) == 2, 180, "2 job handlers Ready",
                   describe=sc.describe_pods)
    with p.phase("the HPA reads the pods' CPU from metrics-server"):
        wait_until(lambda: _cpu_utilization(sc) is not None, 180, "the HPA's current CPU utilization",
                   describe=lambda: json.dumps(_hpa_status(sc))[-1500:])
    p.fact("cpu_utilization_idle", _cpu_utilization(sc))
    grace = sc.grace("job")
    before = {q["metadata"]["name"] for q in sc.handler_pods("job")}
    with p.phase(f"burst: {BURST} cpu jobs of {CPU_SECONDS} s; the HPA scales out to 4"):
        t0 = time.monotonic()
        burst = sc.client().submit([{"kind": "cpu", "duration": CPU_SECONDS}] * BURST)
        peak: list[int] = []

        def scaled_out() -> bool:
            if (u := _cpu_utilization(sc)) is not None:
                peak.append(u)
            return _replicas(sc) == 4
        wait_until(scaled_out, 240, "the HPA's scale-out to 4", interval=2,
                   describe=lambda: f"replicas {_replicas(sc)}, utilization {peak[-5:]}")
        scale_out_s = round(time.monotonic() - t0, 1)
        wait_until(lambda: len([q for q in sc.handler_pods("job") if pod_ready(q)]) == 4, 180, "4 job handlers Ready",
                   describe=sc.describe_pods)
    p.fact("scale_out_seconds", scale_out_s)
    p.fact("cpu_utilization_peak", max(peak or [0]))
    with p.phase(f"at the peak: 2 sleep jobs of {LONG_SECONDS} s"):
        long = sc.client().submit([{"kind": "sleep", "duration": LONG_SECONDS}] * 2)
        wait_until(lambda: len(sc.db.attempts(long)) == 2, 120, "both long jobs claimed")
    everyone = {q["metadata"]["uid"]: q["metadata"]["name"] for q in sc.handler_pods("job")}
    busy = sorted({a.pod for a in sc.db.attempts(long)})
    with p.phase("the burst ends"):
        wait_until(lambda: sc.db.report(burst)["done"] == BURST, 300, "every cpu job done", interval=2,
                   describe=lambda: str(sc.db.report(burst)))
        t_quiet = time.monotonic()
    with p.phase("quiet: the HPA scales back to 2, idle pods first"):
        wait_until(lambda: len(sc.handler_pods("job", live_only=False)) == 2, LONG_SECONDS, "the scale-in to 2",
                   interval=2, describe=lambda: f"replicas {_replicas(sc)}, utilization {_cpu_utilization(sc)}, "
                                                f"costs {_costs(sc)}")
        scale_in_s = round(time.monotonic() - t_quiet, 1)
        running = [a for a in sc.db.attempts(long) if a.ended_at is None]
    p.fact("scale_in_seconds_after_the_burst", scale_in_s)
    kept = {q["metadata"]["name"] for q in sc.handler_pods("job")}
    removed = {uid: name for uid, name in everyone.items() if name not in kept}
    p.fact("busy_pods", busy)
    # a busy pod of the scale-out is Ready for less time than the first two: the ReplicaSet's own rank
    # alone would remove it first; its deletion cost kept it
    p.fact("busy_pods_from_the_scale_out", sorted(set(busy) - before))
    p.fact("removed_pods", sorted(removed.values()))
    p.fact("long_jobs_running_at_the_scale_in", len(running))
    assert len(running) == 2, f"the long jobs ended before the scale-in ({scale_in_s} s after the burst): nothing to prove"
    assert not set(busy) & set(removed.values()), f"preferIdle: a busy pod was removed ({busy} busy, {removed} removed)"
    exits = []
    last = sc.timeline.last_pods()
    for uid, name in removed.items():
        started, finished, code = old_pod_exit(sc.timeline, uid, name, "job", last)
        assert code == 0 and finished - started < grace, f"{name}: exit {code} after {finished - started:.0f} s"
        exits.append(round(finished - started, 1))
    p.fact("removed_exit_seconds", exits)
    with p.phase("the long jobs finish on their pods"):
        wait_until(lambda: sc.db.report(long)["done"] == 2, LONG_SECONDS + 60, "both long jobs done", interval=3)
    report = sc.db.report(burst + long)
    p.fact("jobs", report)
    assert report["lost"] == 0 and report["reruns"] == 0 and report["duplicate_completions"] == 0, report
    attempts = sc.db.attempts(burst + long)
    assert len(attempts) == BURST + 2 and all(a.outcome == "done" for a in attempts), attempts
    assert all(a.pod in kept for a in attempts if a.job_id in long), "a long job ended on a pod that was removed"
    assert sum(sc.handler_restarts().values()) == 0, sc.restart_report(sc.handler_restarts())
