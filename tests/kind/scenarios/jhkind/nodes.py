"""Node operations of the multi-node scenarios and the benchmark: kubectl (drain, uncordon,
scale) through tests/kind/scripts/kubectl.sh, the worker nodes, where a role's pods run."""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from . import pool
from .cluster import Kube

KUBECTL = Path(__file__).resolve().parents[2] / "scripts" / "kubectl.sh"


def kubectl(kube: Kube, *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """kubectl against the scenario's cluster; never raises for a non-zero exit."""
    return subprocess.run([str(KUBECTL), "--kubeconfig", kube.kubeconfig, *args], capture_output=True, text=True,
                          timeout=timeout, check=False)


def workers(kube: Kube) -> list[str]:
    """The worker nodes (everything but the control plane; with a node pool, its workers), sorted."""
    nodes = kube.core.list_node().items
    want = pool.name()
    return sorted(n.metadata.name for n in nodes
                  if "node-role.kubernetes.io/control-plane" not in (n.metadata.labels or {})
                  and (want is None or (n.metadata.labels or {}).get(pool.KEY) == want))


def placement(pods: list[dict]) -> Counter:
    """node name -> number of the given pods on it."""
    return Counter(pod["spec"].get("nodeName") for pod in pods)


@dataclass
class Drain:
    """The outcome of one `kubectl drain`."""

    node: str
    rc: int
    seconds: float
    pdb_refusals: int
    output: str


def drain(kube: Kube, node: str, selector: str, timeout_s: int) -> Drain:
    """`kubectl drain` (eviction API, PDBs honoured) of the pods matching selector on node."""
    t0 = time.monotonic()
    res = kubectl(kube, "drain", node, "--ignore-daemonsets", "--delete-emptydir-data", f"--timeout={timeout_s}s",
                  "--pod-selector", selector, timeout=timeout_s + 60)
    out = res.stdout + res.stderr
    refusals = len(re.findall(r"violate the pod's disruption budget|Cannot evict pod", out))
    return Drain(node, res.returncode, time.monotonic() - t0, refusals, out)


def uncordon(kube: Kube, node: str) -> None:
    kubectl(kube, "uncordon", node, timeout=60)


def restart_node(node: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Start a stopped node container again and re-run kind-up in its repair mode, which re-installs
    the static CNI routes between the nodes (a restarted node comes back without its routes, and
    possibly with a new IP the others do not route to) and never recreates the cluster: another pass
    may run on it (a node pool, jhkind.pool)."""
    subprocess.run(["docker", "start", node], capture_output=True, text=True, timeout=120, check=False)
    root = Path(__file__).resolve().parents[4]
    env = dict(os.environ, KIND=str(root / "bin" / "kind"), KIND_REPAIR="1")
    return subprocess.run([str(KUBECTL.parent / "kind-up.sh")], env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)
