"""Liveness on the real apps: a handler busy on a job longer than its liveness window is
left alone, and a wedged one is restarted in place by its liveness probe within the
probe-level grace. Also the one way to wedge a process from outside: SIGSTOP from its node
(a PID namespace's init ignores SIGSTOP sent from inside the namespace)."""

from __future__ import annotations

import json
import subprocess
import time
from typing import Any, Callable

from .cluster import event_time, parse_time, restart_count
from .progress import Progress
from .scenario import Scenario
from .waits import wait_until


def liveness_failures(sc: Scenario) -> list[dict]:
    """The namespace's `Unhealthy` events of liveness probes."""
    return [e for e in sc.kube.events(sc.namespace)
            if e.get("reason") == "Unhealthy" and "Liveness" in (e.get("message") or "")]


def assert_left_alone(sc: Scenario, p: Progress, what: str) -> None:
    """No handler restarted and no liveness probe failed so far."""
    restarts = sc.handler_restarts()
    failures = liveness_failures(sc)
    p.fact("restarts_while_busy", sum(restarts.values()))
    assert sum(restarts.values()) == 0, f"{what}: a busy handler was restarted: {restarts}"
    assert not failures, f"{what}: liveness failed on a busy handler: {[e.get('message') for e in failures]}"


def busy_job_left_alone(sc: Scenario, p: Progress, submit: Callable[[list[float]], None],
                        report: Callable[[], dict[str, Any]], seconds: float) -> None:
    """Submit one job of `seconds` (longer than the liveness window), wait for the app to
    report it succeeded, and check that no handler was restarted or failed liveness meanwhile."""
    submit([seconds])
    wait_until(lambda: report()["states"].get("succeeded", 0) == 1, seconds + 60, "the long job to succeed",
               interval=2, describe=lambda: str(report()))
    assert_left_alone(sc, p, f"{seconds}s job")


def wait_restarted_by_liveness(sc: Scenario, p: Progress, role: str, since: float, timeout: float,
                               probe_grace: int) -> str:
    """Wait until a pod of `role` has been restarted in place after a liveness `Killing`
    event; check the kill took the probe-level grace, not the drain grace. Returns its name."""
    def restarted() -> str | None:
        for pod in sc.handler_pods(role):
            if restart_count(pod) >= 1:
                return pod["metadata"]["name"]
        return None
    name = wait_until(restarted, timeout, f"a {role} pod to be restarted by its liveness probe", interval=1,
                      describe=sc.describe_pods)
    p.fact("wedge_to_restart_s", round(time.time() - since, 1))
    pod = sc.kube.pod(sc.namespace, name)
    assert pod is not None
    status = next(s for s in pod["status"]["containerStatuses"] if s["name"] == role)
    last = status["lastState"]["terminated"]
    kills = [e for e in sc.kube.events(sc.namespace)
             if e.get("reason") == "Killing" and (e.get("involvedObject") or {}).get("name") == name
             and "liveness" in (e.get("message") or "")]
    assert kills, f"no liveness Killing event for {name}"
    # None when the event correlator folded the liveness failures into the pod's readiness
    # `Unhealthy` series ("combined from similar events"), which keeps only the last message
    failed_at = [event_time(e) for e in liveness_failures(sc)]
    p.fact("first_liveness_failure_after_wedge_s", round(min(failed_at) - since, 1) if failed_at else None)
    kill_to_exit = parse_time(last["finishedAt"]) - event_time(kills[0])
    p.fact("liveness_kill_to_exit_s", round(kill_to_exit, 1))
    p.fact("liveness_exit_code", last.get("exitCode"))
    assert kill_to_exit <= probe_grace + 3, (
        f"the liveness restart took {kill_to_exit:.0f}s: not the probe-level grace ({probe_grace}s)")
    assert kill_to_exit < sc.grace(role) / 2
    return name


def freeze(sc: Scenario, pod_name: str, container: str) -> int:
    """SIGSTOP the container's main process from its node (kind: a docker container named
    after the node), as a hung process looks to Kubernetes. Returns the host PID."""
    pod = sc.kube.pod(sc.namespace, pod_name)
    assert pod is not None, f"{pod_name} is gone"
    node = pod["spec"]["nodeName"]
    status = next(s for s in pod["status"]["containerStatuses"] if s["name"] == container)
    cid = status["containerID"].split("://", 1)[-1]
    out = subprocess.run(["docker", "exec", node, "crictl", "inspect", cid], capture_output=True, text=True,
                         timeout=60, check=False)
    assert out.returncode == 0, f"crictl inspect {cid} on {node}: {out.stderr}"
    pid = int(json.loads(out.stdout)["info"]["pid"])
    res = subprocess.run(["docker", "exec", node, "kill", "-STOP", str(pid)], capture_output=True, text=True,
                         timeout=60, check=False)
    assert res.returncode == 0, f"kill -STOP {pid} on {node}: {res.stderr}"
    state = subprocess.run(["docker", "exec", node, "sh", "-c", f"grep ^State: /proc/{pid}/status"],
                           capture_output=True, text=True, timeout=60, check=False).stdout
    assert "stopped" in state, f"{pod_name}: PID {pid} not stopped: {state!r}"
    return pid
