"""Beyond one node (KIND_WORKERS=2): spread, `kubectl drain` through the eviction API and the
chart's PodDisruptionBudget, scale-down, and the loss of a worker (its container stopped)
while its handlers hold running jobs. PostgreSQL runs on the control plane, which no
scenario drains or stops. Node loss runs last: it takes a worker away for a while."""

from __future__ import annotations

import json
import random
import subprocess
import time
from collections import Counter

import pytest

from jhkind import nodes
from jhkind.cluster import parse_time
from jhkind.observe import deletion_started, terminated_state
from jhkind.scenario import Scenario
from jhkind.waits import wait_until

pytestmark = [pytest.mark.kind, pytest.mark.nodes, pytest.mark.timeout(1200)]

REPLICAS = 3


def _env(**kv: str) -> list[dict]:
    return [{"name": k, "value": v} for k, v in kv.items()]


def busy_values(concurrency: int = 4, lease: int = 10, max_job_s: int = 30, **job: object) -> dict:
    return {"handlers": {"job": {"replicas": REPLICAS, "maxJobRuntimeSeconds": max_job_s, **job,
                                 "env": _env(WORKLOAD_POLL_SECONDS="0.5", WORKLOAD_LEASE_SECONDS=str(lease),
                                             WORKLOAD_CONCURRENCY=str(concurrency))}}}


def kubectl(sc: Scenario, *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return nodes.kubectl(sc.kube, *args, timeout=timeout)


def workers(sc: Scenario) -> list[str]:
    names = nodes.workers(sc.kube)
    assert len(names) >= 2, f"the node scenarios need 2 workers (make kind-up KIND_WORKERS=2), have {names}"
    return names


def placement(sc: Scenario, role: str = "job") -> Counter:
    return nodes.placement(sc.handler_pods(role))


def submit(sc: Scenario, n: int, low: float, high: float, seed: int) -> tuple[list, float]:
    rng = random.Random(seed)
    durations = [round(rng.uniform(low, high), 1) for _ in range(n)]
    return sc.client().submit([{"kind": "sleep", "duration": d} for d in durations]), max(durations)


def wait_done(sc: Scenario, ids: list, timeout: float = 300) -> dict:
    wait_until(lambda: sc.db.report(ids)["done"] == len(ids), timeout, f"all {len(ids)} jobs done", interval=2,
               describe=lambda: str(sc.db.report(ids)))
    report = sc.db.report(ids)
    assert report["lost"] == 0 and report["duplicate_completions"] == 0, report
    return report


def exited_cleanly(sc: Scenario, uids: dict[str, str], grace: int) -> list[float]:
    """Every pod in uids ended with exit 0 before its grace; returns delete->exit seconds."""
    last, out = sc.timeline.last_pods(), []
    for uid, name in uids.items():
        started = deletion_started(sc.timeline, uid)
        term = terminated_state(last[uid], "job")
        assert started is not None and term is not None, f"{name}: deletion or final state not seen"
        exit_s = parse_time(term["finishedAt"]) - started
        assert term["exitCode"] == 0, f"{name} exited {term['exitCode']} ({term.get('reason')})"
        assert exit_s < grace, f"{name} needed {exit_s:.0f}s, grace {grace}s"
        out.append(round(exit_s, 1))
    return out


def test_8a_default_spread_puts_a_role_on_both_workers(scenario: Scenario) -> None:
    sc, p = scenario, scenario.progress
    nodes = workers(sc)
    with p.phase(f"install {REPLICAS} job handlers with the default topology spread"):
        sc.install(busy_values()).check("helm install")
        sc.wait_handlers_ready(120)
    spread = placement(sc)
    p.fact("job_pods_per_node", dict(spread))
    assert set(spread) <= set(nodes) and len(spread) == 2, f"not spread over both workers: {dict(spread)}"
    assert max(spread.values()) - min(spread.values()) <= 1


def test_8b_node_drain_respects_the_pdb_and_loses_nothing(scenario: Scenario) -> None:
    sc, p = scenario, scenario.progress
    with p.phase(f"install {REPLICAS} job handlers x 4 slots"):
        sc.install(busy_values()).check("helm install")
        sc.wait_handlers_ready(120)
    grace = sc.grace("job")
    node = placement(sc).most_common(1)[0][0]
    ids, longest = submit(sc, 24, 10, 25, seed=8)
    wait_until(lambda: sc.db.states()["running"] >= 10, 60, "10 jobs running")
    on_node = {pod["metadata"]["uid"]: pod["metadata"]["name"] for pod in sc.handler_pods("job")
               if pod["spec"].get("nodeName") == node}
    p.note(f"draining {node}: {len(on_node)} of {REPLICAS} job handlers, longest job {longest}s, grace {grace}s")
    try:
        with p.phase(f"kubectl drain {node} (eviction API, PDB maxUnavailable 1)"):
            res = nodes.drain(sc.kube, node, f"app.kubernetes.io/instance={sc.release}", grace * 3 + 120)
        drain_s, out, refusals = res.seconds, res.output, res.pdb_refusals
        p.fact("drain_seconds", round(drain_s, 1))
        p.fact("longest_job_seconds", longest)
        p.fact("pdb_refusals", refusals)
        if res.rc != 0:
            blocked = [pod["metadata"]["name"] for pod in sc.handler_pods("job") if not pod["status"].get("conditions")
                       or not any(c["type"] == "Ready" and c["status"] == "True" for c in pod["status"]["conditions"])]
            pytest.fail(f"kubectl drain exited {res.rc}: {out[-2000:]}\nReplacements not Ready (the PDB "
                        f"blocks the next eviction until they are): {blocked}")
        if len(on_node) > 1:
            assert refusals > 0, "two handlers on the node but the PDB never refused an eviction"
        report = wait_done(sc, ids)
        p.fact("jobs_lost", report["lost"])
        p.fact("jobs_rerun", report["reruns"])
        p.fact("evicted_exit_seconds", exited_cleanly(sc, on_node, grace))
        assert drain_s <= len(on_node) * (longest + grace) + 60, f"drain took {drain_s:.0f}s"
        assert not any(pod["spec"].get("nodeName") == node for pod in sc.handler_pods("job"))
    finally:
        kubectl(sc, "uncordon", node, timeout=60)


def test_8c_scale_down_drains_the_removed_handlers(scenario: Scenario) -> None:
    sc, p = scenario, scenario.progress
    with p.phase(f"install {REPLICAS} job handlers x 4 slots, all busy"):
        sc.install(busy_values()).check("helm install")
        sc.wait_handlers_ready(120)
        ids, _ = submit(sc, 18, 10, 25, seed=9)
        wait_until(lambda: sc.db.states()["running"] >= 10, 60, "10 jobs running")
    grace = sc.grace("job")
    before = {pod["metadata"]["uid"]: pod["metadata"]["name"] for pod in sc.handler_pods("job")}
    with p.phase("kubectl scale --replicas=1"):
        dep = sc.deployments()["job"]["metadata"]["name"]
        kubectl(sc, "scale", "-n", sc.namespace, f"deployment/{dep}", "--replicas=1", timeout=60).check_returncode()
        wait_until(lambda: len(sc.handler_pods("job")) == 1, grace + 60, "one job handler left")
    kept = {pod["metadata"]["uid"] for pod in sc.handler_pods("job")}
    removed = {uid: name for uid, name in before.items() if uid not in kept}
    assert len(removed) == REPLICAS - 1
    report = wait_done(sc, ids)
    p.fact("jobs_lost", report["lost"])
    p.fact("removed_exit_seconds", exited_cleanly(sc, removed, grace))


def _drain_drained_handlers(sc: Scenario, policy: str | None, timeout_s: int) -> tuple[nodes.Drain, str]:
    """2 job handlers started drained (startDrained: Running, alive, not Ready: every pod of the
    role unhealthy for its PDB), then `kubectl drain` of one of their nodes, limited to this
    namespace's pods. Returns the drain and the node."""
    p = sc.progress
    pdb: dict = {"maxUnavailable": 1}
    if policy:
        pdb["unhealthyPodEvictionPolicy"] = policy
    values = {"podLabels": {"jobhandlers-scenario": sc.namespace},
              "handlers": {"web": {"enabled": False},
                           "job": {"replicas": 2, "startDrained": True, "pdb": pdb}}}
    with p.phase(f"install 2 job handlers started drained (PDB {pdb})"):
        sc.install(values, wait=False).check("helm install")
        wait_until(lambda: len([q for q in sc.handler_pods("job") if q["status"].get("phase") == "Running"]) == 2,
                   120, "2 drained handlers Running", describe=sc.describe_pods)
    stored = json.loads(kubectl(sc, "get", "pdb", "-n", sc.namespace, "-o", "json", timeout=60).stdout)["items"][0]
    p.fact("pdb_unhealthy_pod_eviction_policy", stored["spec"].get("unhealthyPodEvictionPolicy"))
    node = sc.handler_pods("job")[0]["spec"]["nodeName"]
    with p.phase(f"kubectl drain {node} --timeout {timeout_s}s"):
        res = nodes.drain(sc.kube, node, f"jobhandlers-scenario={sc.namespace}", timeout_s)
    p.fact("drain_seconds", round(res.seconds, 1))
    p.fact("drain_exit_code", res.rc)
    p.fact("pdb_refusals", res.pdb_refusals)
    return res, node


@pytest.mark.versions
def test_8d_drain_of_drained_but_alive_handlers_completes(scenario: Scenario) -> None:
    """The chart's default PDB unhealthyPodEvictionPolicy AlwaysAllow (KEP-3017, from 1.27):
    a node drain is not held by a budget whose pods are all alive but not Ready."""
    sc = scenario
    try:
        res, node = _drain_drained_handlers(sc, None, 120)
        assert res.rc == 0, f"kubectl drain exited {res.rc}: {res.output[-2000:]}"
        assert res.pdb_refusals == 0, res.output
        assert not any(q["spec"].get("nodeName") == node for q in sc.handler_pods("job"))
    finally:
        for n in workers(sc):
            kubectl(sc, "uncordon", n, timeout=60)


def test_8e_drain_hangs_with_if_healthy_budget(scenario: Scenario) -> None:
    """The baseline: Kubernetes' own default (IfHealthyBudget) refuses every eviction of the
    unhealthy pods, so the drain (and an autoscaler's scale-down) hangs; 8d measures something real."""
    sc = scenario
    try:
        res, _node = _drain_drained_handlers(sc, "IfHealthyBudget", 30)
        assert res.rc != 0 and res.pdb_refusals > 0, res.output[-2000:]
    finally:
        for n in workers(sc):
            kubectl(sc, "uncordon", n, timeout=60)


def test_8z_node_loss_reschedules_and_reruns_every_job(scenario: Scenario) -> None:
    sc, p = scenario, scenario.progress
    toleration = 10
    with p.phase(f"install {REPLICAS} job handlers, nodeLossTolerationSeconds={toleration}, lease 10 s"):
        sc.install(busy_values(concurrency=4, lease=10), {"nodeLossTolerationSeconds": toleration}).check("helm install")
        sc.wait_handlers_ready(120)
    node = placement(sc).most_common(1)[0][0]
    ids, _ = submit(sc, 12, 40, 60, seed=10)
    wait_until(lambda: sc.db.states()["running"] >= 10, 60, "10 jobs running")
    lost_pods = {pod["metadata"]["name"] for pod in sc.handler_pods("job") if pod["spec"].get("nodeName") == node}
    p.note(f"stopping {node} with {len(lost_pods)} job handlers on it")
    t0 = time.monotonic()
    subprocess.run(["docker", "stop", "-t", "0", node], check=True, capture_output=True, timeout=120)
    try:
        with p.phase("pods rescheduled to the other worker"):
            wait_until(lambda: sum(1 for pod in sc.handler_pods("job") if pod["spec"].get("nodeName") != node
                                   and any(c["type"] == "Ready" and c["status"] == "True"
                                           for c in pod["status"].get("conditions") or [])) >= REPLICAS,
                       300, f"{REPLICAS} Ready job handlers off {node}", interval=2)
        p.fact("node_stop_to_replaced_seconds", round(time.monotonic() - t0, 1))
        with p.phase("every job done (the lost node's jobs rerun after their leases expired)"):
            report = wait_done(sc, ids, timeout=400)
        p.fact("node_stop_to_all_done_seconds", round(time.monotonic() - t0, 1))
        p.fact("jobs_lost", report["lost"])
        p.fact("jobs_rerun", report["reruns"])
        assert report["reruns"] > 0, "no job was rerun: the stopped node held none"
    finally:
        up = nodes.restart_node(node)
        assert up.returncode == 0, f"kind-up after restarting {node} failed: {up.stderr[-2000:]}"
        wait_until(lambda: any(c.type == "Ready" and c.status == "True"
                               for c in sc.kube.core.read_node(node).status.conditions), 240, f"{node} Ready again")
