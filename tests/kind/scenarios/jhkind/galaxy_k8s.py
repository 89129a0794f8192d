"""Galaxy on its Kubernetes job runner (values-examples/galaxy-k8s.yaml) on kind: the
ReadWriteMany claim Galaxy's data directory lives on (a static hostPath PV on the directory
kind-up.sh mounts into every node), a watch of every Kubernetes Job Galaxy creates, and the
shared install (claim + watch + helm install) of test_22_galaxy_k8s.py."""

from __future__ import annotations

import contextlib
import subprocess
from pathlib import Path
from typing import Iterator

from . import galaxy as gx
from . import setup
from .cluster import Kube, parse_time
from .helm import Helm
from .poller import Poller
from .postgres import Postgres
from .shared import Shared, open_shared
from .waits import wait_until

CLAIM = "galaxy-data"          # values-examples/galaxy-k8s.yaml: extraVolumes, k8s_persistent_volume_claims
NODE_DIR = "/jobhandlers-shared"  # kind-up.sh: the host directory every node mounts (extraMounts)
APP_UID = 10001                # the Galaxy image's user; the job pods run as it too (k8s_run_as_user_id)
GALAXY_JOBS = "app.kubernetes.io/managed-by=galaxy"  # a label Galaxy puts on every Job's pod template


def node_sh(script: str) -> None:
    """Run a shell script as root in the control-plane node (the shared directory is the same
    host directory on every node)."""
    node = f"{setup.cluster_name()}-control-plane"
    res = subprocess.run(["docker", "exec", node, "sh", "-c", script], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, f"{node}: {script}: {res.stderr}"


def shared_claim(kube: Kube, namespace: str) -> str:
    """A ReadWriteMany claim CLAIM in the namespace, bound to a static hostPath PV on
    NODE_DIR/<namespace>, a directory owned by APP_UID (Galaxy and its job pods write it).
    Returns the PV's name."""
    node_sh(f"test -d {NODE_DIR} || {{ echo 'no {NODE_DIR}: a cluster made before kind-up.sh mounted it "
            f"(make kind-down kind-up)' >&2; exit 1; }}; "
            f"mkdir -p {NODE_DIR}/{namespace} && chown {APP_UID}:{APP_UID} {NODE_DIR}/{namespace}")
    pv = f"jh-{namespace}-{CLAIM}"
    kube.core.create_persistent_volume({
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": pv, "labels": {"jobhandlers.test/namespace": namespace}},
        "spec": {"capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteMany"],
                 "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "",
                 "hostPath": {"path": f"{NODE_DIR}/{namespace}", "type": "Directory"},
                 "claimRef": {"namespace": namespace, "name": CLAIM}},
    })
    kube.core.create_namespaced_persistent_volume_claim(namespace, {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": CLAIM},
        "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": "", "volumeName": pv,
                 "resources": {"requests": {"storage": "5Gi"}}},
    })
    wait_until(lambda: (kube.core.read_namespaced_persistent_volume_claim(CLAIM, namespace).status.phase == "Bound"),
               60, f"claim {CLAIM} bound to {pv}", interval=1)
    return pv


class JobWatch(Poller):
    """Every Kubernetes Job Galaxy creates in the namespace, polled every 2 s (the handler
    deletes a Job once it has collected it): Galaxy job id (label
    app.galaxyproject.org/job_id) -> Job names, Job name -> pod names and their highest
    container restart count, each pod's node, and each Job's completion time."""

    def __init__(self, kube: Kube, namespace: str):
        super().__init__(interval=2)
        self.kube, self.namespace = kube, namespace
        self.jobs: dict[str, set[str]] = {}
        self.pods: dict[str, set[str]] = {}
        self.restarts: dict[str, int] = {}
        self.nodes: dict[str, str] = {}
        self.labels: dict[str, str] = {}
        self.completed: dict[str, float] = {}

    def poll(self) -> None:
        for job in self.kube.jobs(self.namespace):
            meta = job["metadata"]
            labels = ((job["spec"].get("template") or {}).get("metadata") or {}).get("labels") or {}
            if labels.get("app.kubernetes.io/managed-by") != "galaxy":
                continue
            self.jobs.setdefault(labels.get("app.galaxyproject.org/job_id", "?"), set()).add(meta["name"])
            done = (job.get("status") or {}).get("completionTime")
            if done:
                self.completed[meta["name"]] = parse_time(done)
        for pod in self.kube.pods(self.namespace, GALAXY_JOBS):
            name = pod["metadata"]["labels"].get("job-name", "?")
            key = pod["metadata"]["name"]
            self.pods.setdefault(name, set()).add(key)
            self.labels = pod["metadata"]["labels"]
            if pod["spec"].get("nodeName"):
                self.nodes[key] = pod["spec"]["nodeName"]
            for st in (pod.get("status") or {}).get("containerStatuses") or []:
                self.restarts[key] = max(self.restarts.get(key, 0), int(st.get("restartCount") or 0))


def job_watch(shared: Shared) -> JobWatch:
    """The JobWatch of an install made by open_install."""
    return shared.extra["watch"]


@contextlib.contextmanager
def open_install(kube: Kube, helm: Helm, postgres: Postgres, workdir: Path) -> Iterator[Shared]:
    """One namespace (Pod Security restricted) + database + ReadWriteMany claim + Galaxy
    install (helm install --wait of galaxy-k8s.yaml) + a JobWatch; after: the release
    uninstalled (its MutatingAdmissionPolicy and binding are cluster-scoped), the namespace,
    the PV and the shared directory removed."""
    with open_shared(kube, helm, postgres, workdir, "gxk8s", "22-galaxy-k8s",
                     "helm install of values-examples/galaxy-k8s.yaml") as shared:
        sc = shared.sc
        watch = shared.extra["watch"] = JobWatch(kube, sc.namespace)
        watch.start()
        shared.before_close.append(watch.stop)
        shared.before_close.append(lambda: sc.helm.run(["uninstall", sc.release, "-n", sc.namespace, "--wait",
                                                        "--timeout", "120s"], timeout=180))
        with sc.progress.phase(f"ReadWriteMany claim {CLAIM} (hostPath PV on {NODE_DIR})"):
            pv = shared_claim(kube, sc.namespace)
        shared.after_close += [lambda: kube._ignore_404(kube.core.delete_persistent_volume, pv),
                               lambda: node_sh(f"rm -rf {NODE_DIR}/{sc.namespace}")]
        with sc.progress.phase("helm install --wait of values-examples/galaxy-k8s.yaml"):
            shared.install = gx.install(sc, timeout_s=900, example=gx.EXAMPLE_K8S)
        yield shared
