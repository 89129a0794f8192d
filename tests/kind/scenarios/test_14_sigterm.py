"""Pods held in `wait-for-migrations` stop at once (issue 23). The database stays behind
(migration.enabled: false: nothing migrates it), so the job handlers wait in their init
container, whose loop is the container's PID 1; their computed grace is long (maxJobRuntime
300 s: 313 s). They are removed three ways: `kubectl delete pod`, `kubectl drain` of their
node, `helm uninstall`. A loop without a SIGTERM handler is killed only at the end of the
grace (the kernel drops signals PID 1 has no handler for); the chart's loop exits 143 at once.

Pods still in their init containers are Pending, which the eviction API lets through
whatever the PodDisruptionBudget says, so the drain is not held by the chart's PDB.
The drain cordons one worker for a few seconds, limited to this release's pods
(--pod-selector) and uncordoned in a finally: the file runs with the node scenarios
(tests/kind/kind.mk NODE_SCENARIOS), alone."""

from __future__ import annotations

import subprocess
import time

import pytest

from jhkind import nodes
from jhkind.scenario import Scenario
from jhkind.waits import wait_until

pytestmark = [pytest.mark.kind, pytest.mark.nodes, pytest.mark.timeout(600)]

WAIT = "wait-for-migrations"
REPLICAS = 2
MAX_JOB_S = 300
# "within a few seconds": far below the grace; the kubelet's own status sync and the API
# round trips are most of it.
FAST_S = 15
HELD = {
    "migration": {"enabled": False},  # the schema stays behind: the wait never passes
    "waitForMigrations": {"timeoutSeconds": 3600, "intervalSeconds": 5},
    "handlers": {"web": {"enabled": False}, "job": {"replicas": REPLICAS, "maxJobRuntimeSeconds": MAX_JOB_S}},
}


def kubectl(sc: Scenario, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return nodes.kubectl(sc.kube, *args, timeout=timeout)


def _waiting(sc: Scenario, pod: dict) -> bool:
    """The pod's wait-for-migrations is running and has logged a failed try (schema behind)."""
    statuses = {s["name"]: s for s in (pod.get("status") or {}).get("initContainerStatuses") or []}
    if not (statuses.get(WAIT, {}).get("state") or {}).get("running"):
        return False
    log = sc.kube.logs(sc.namespace, pod["metadata"]["name"], WAIT)
    return f"{WAIT}: try" in log and "exited" in log and ": ok" not in log


def held_pods(sc: Scenario, n: int = REPLICAS) -> list[dict]:
    """Wait until n job handler pods are waiting in wait-for-migrations; return them."""
    def ready() -> list[dict] | None:
        pods = [p for p in sc.handler_pods("job") if _waiting(sc, p)]
        return pods if len(pods) >= n else None
    return wait_until(ready, 180, f"{n} job handler pods waiting in {WAIT}", interval=1, describe=sc.describe_pods)


def install_held(sc: Scenario) -> list[dict]:
    p = sc.progress
    with p.phase(f"install {REPLICAS} job handlers against a database nothing migrates (no --wait)"):
        # a label of this namespace's pods only: every scenario's release is named alike, so
        # the drain's --pod-selector must not match another scenario's handlers
        held = {**HELD, "podLabels": {"jobhandlers-scenario": sc.namespace}}
        sc.install(held, wait=False).check("helm install")
        pods = held_pods(sc)
    grace = sc.grace("job")
    p.fact("grace_seconds", grace)
    assert grace >= 300, f"the role's computed grace is {grace}s; the scenario needs a long one"
    assert all(int(pod["spec"]["terminationGracePeriodSeconds"]) == grace for pod in pods)
    return pods


def wait_exit_code(sc: Scenario, uid: str) -> int | None:
    """The exit code of the pod's wait-for-migrations as last seen by the watch (None if unseen)."""
    pod = sc.timeline.last_pods().get(uid) or {}
    for st in (pod.get("status") or {}).get("initContainerStatuses") or []:
        term = (st.get("state") or {}).get("terminated")
        if st["name"] == WAIT and term:
            return int(term["exitCode"])
    return None


def check_stopped_by_sigterm(sc: Scenario, uids: list[str], key: str) -> None:
    codes = [wait_exit_code(sc, uid) for uid in uids]
    sc.progress.fact(key, codes)
    # 143: the loop's SIGTERM handler; 137 would be the SIGKILL at the end of the grace
    assert all(c in (None, 143) for c in codes), f"{WAIT} exit codes {codes}"


def test_14a_kubectl_delete_pod(scenario: Scenario) -> None:
    sc, p = scenario, scenario.progress
    pod = install_held(sc)[0]
    name, uid = pod["metadata"]["name"], pod["metadata"]["uid"]
    with p.phase(f"kubectl delete pod {name} (grace {sc.grace('job')} s)"):
        t0 = time.monotonic()
        res = kubectl(sc, "delete", "pod", name, "-n", sc.namespace, "--wait=true", "--timeout=120s")
        seconds = round(time.monotonic() - t0, 1)
    assert res.returncode == 0, res.stdout + res.stderr
    p.fact("delete_pod_seconds", seconds)
    check_stopped_by_sigterm(sc, [uid], "delete_pod_wait_exit_code")
    assert seconds < FAST_S, f"kubectl delete pod took {seconds}s (grace {sc.grace('job')}s)"


def test_14b_kubectl_drain_of_their_node(scenario: Scenario) -> None:
    sc, p = scenario, scenario.progress
    pods = install_held(sc)
    node = pods[0]["spec"]["nodeName"]
    on_node = [pod["metadata"]["uid"] for pod in pods if pod["spec"]["nodeName"] == node]
    selector = f"jobhandlers-scenario={sc.namespace},app.kubernetes.io/component=job"
    try:
        with p.phase(f"kubectl drain {node} --pod-selector {selector} ({len(on_node)} waiting pods)"):
            res = nodes.drain(sc.kube, node, selector, 120)
        p.fact("drain_seconds", round(res.seconds, 1))
        p.fact("drain_pods", len(on_node))
        assert res.rc == 0, res.output[-2000:]
        assert res.pdb_refusals == 0, res.output[-2000:]
    finally:
        nodes.uncordon(sc.kube, node)
    live = {pod["metadata"]["uid"] for pod in sc.handler_pods("job", live_only=False)}
    assert not set(on_node) & live, "a drained pod is still there"
    check_stopped_by_sigterm(sc, on_node, "drain_wait_exit_codes")
    assert res.seconds < FAST_S, f"kubectl drain took {res.seconds:.1f}s (grace {sc.grace('job')}s)"


def test_14c_helm_uninstall(scenario: Scenario) -> None:
    sc, p = scenario, scenario.progress
    uids = [pod["metadata"]["uid"] for pod in install_held(sc)]
    with p.phase("helm uninstall --wait, then every pod gone"):
        t0 = time.monotonic()
        res = sc.helm.run(["uninstall", sc.release, "-n", sc.namespace, "--wait", "--timeout", "120s"], timeout=180)
        uninstall_s = round(time.monotonic() - t0, 1)
        assert res.rc == 0, res.stderr + res.stdout
        wait_until(lambda: not sc.kube.pods(sc.namespace), 120, "every pod of the release gone", interval=0.5,
                   describe=sc.describe_pods)
        gone_s = round(time.monotonic() - t0, 1)
    p.fact("helm_uninstall_seconds", uninstall_s)
    p.fact("uninstall_to_pods_gone_seconds", gone_s)
    check_stopped_by_sigterm(sc, uids, "uninstall_wait_exit_codes")
    assert gone_s < FAST_S, f"the pods were gone {gone_s}s after helm uninstall (grace {MAX_JOB_S + 13}s)"
