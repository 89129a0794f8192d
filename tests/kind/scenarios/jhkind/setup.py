"""Cluster-level preparation shared by the scenarios and the benchmark: which cluster,
the images inside it, the external PostgreSQL."""

from __future__ import annotations

import fcntl
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .helm import ROOT
from .progress import Progress
from .scenario import POSTGRES_IMAGE, WORKLOAD_IMAGE

BIN = ROOT / "bin"
# Where `make kind-up` writes the kubeconfig and which cluster it creates (tests/kind/kind.mk).
DEFAULT_KUBECONFIG = ROOT / "tests" / "kind" / ".work" / "kubeconfig"
DEFAULT_CLUSTER = "jobhandlers"
# jobhandlers/procrastinate (tests/apps/procrastinate, `make app-images`, part of `make image`)
APP_IMAGES = ["jobhandlers/procrastinate:1", "jobhandlers/procrastinate:2", "jobhandlers/chancy:1",
              "jobhandlers/chancy:2", "jobhandlers/huey:1", "jobhandlers/pgbouncer:1",
              "jobhandlers/workload-noshell:1", "jobhandlers/galaxy:26.1", "jobhandlers/galaxy:25.1",
              "jobhandlers/celery:1", "jobhandlers/rabbitmq:1"]
IMAGES = [f"{WORKLOAD_IMAGE}:1", f"{WORKLOAD_IMAGE}:2", f"{WORKLOAD_IMAGE}:3", POSTGRES_IMAGE, *APP_IMAGES]
REGISTRY_SCRIPT = ROOT / "tests" / "kind" / "scripts" / "registry.sh"
# what `registry.sh hosts` (run by kind-up) writes on a node whose containerd uses the local registry
MIRROR_CONFIG = "/etc/containerd/certs.d/docker.io/hosts.toml"


class SetupError(Exception):
    """The cluster or the images are not usable; the message says what to run."""


def cluster_name() -> str:
    return os.environ.get("KIND_CLUSTER_NAME") or DEFAULT_CLUSTER


def kubeconfig() -> str:
    """KUBECONFIG when given, else the kubeconfig `make kind-up` wrote."""
    path = os.environ.get("KUBECONFIG") or str(DEFAULT_KUBECONFIG)
    if not Path(path).is_file():
        raise SetupError(f"no kubeconfig at {path}: run `make kind-up` (or set KUBECONFIG to a cluster's kubeconfig)")
    return path


def private_kubeconfig(dest: Path) -> str:
    """A private copy of kubeconfig() at `dest` (helm keeps working while kind-up rewrites the
    original); when that file is missing but the kind cluster runs, kind's own kubeconfig."""
    try:
        source = kubeconfig()
    except SetupError:
        if os.environ.get("KUBECONFIG"):
            raise
        try:
            text = run([str(BIN / "kind"), "get", "kubeconfig", "--name", cluster_name()], "kind get kubeconfig", 60)
        except (SetupError, OSError):
            raise SetupError(f"no kubeconfig at {DEFAULT_KUBECONFIG} and no kind cluster {cluster_name()!r}: "
                             "run `make kind-up` (or set KUBECONFIG to a cluster's kubeconfig)") from None
        dest.write_text(text)
        return str(dest)
    dest.write_bytes(Path(source).read_bytes())
    return str(dest)


def run(cmd: list[str], what: str, timeout: float = 900, stdin: str | None = None) -> str:
    """cmd's stdout; a SetupError naming `what`, the command and its stderr's end when it fails."""
    proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise SetupError(f"{what} failed (exit {proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-3000:]}")
    return proc.stdout


def mirrored(nodes: list[str]) -> bool:
    """Whether every node pulls docker.io images from the local registry (kind-up, KIND_REGISTRY=1)."""
    return all(subprocess.run(["docker", "exec", n, "test", "-f", MIRROR_CONFIG], capture_output=True).returncode == 0
               for n in nodes)


def load_images(progress: Progress, name: str | None = None) -> list[str]:
    """Build the images when missing (`make image`), then make them available to the nodes:
    pushed to the local registry when the nodes use it (registry.sh push skips what is there;
    each node pulls what its pods use), else `kind load` (kind skips images the node already
    has: a cluster made with KIND_REGISTRY=0). JH_SKIP_KIND_LOAD=1: a non-kind cluster that
    has them."""
    name = name or cluster_name()
    missing = [img for img in IMAGES
               if subprocess.run(["docker", "image", "inspect", img], capture_output=True).returncode != 0]
    if missing:
        with progress.phase(f"make image (missing: {', '.join(missing)})"):
            run(["make", "-C", str(ROOT), "image"], "make image", timeout=1800)
    if os.environ.get("JH_SKIP_KIND_LOAD") == "1":
        return IMAGES
    clusters = run([str(BIN / "kind"), "get", "clusters"], "kind get clusters").split()
    if name not in clusters:
        raise SetupError(f"kind cluster {name!r} not found (have: {clusters}); run `make kind-up`, or set "
                         "KIND_CLUSTER_NAME, or JH_SKIP_KIND_LOAD=1 for a cluster that already has the images")
    nodes = run([str(BIN / "kind"), "get", "nodes", "--name", name], "kind get nodes").split()
    workers = sorted(n for n in nodes if "-worker" in n)
    if not workers:  # the single-node layout: everything on the one node
        plan = [(IMAGES, nodes)]
    else:  # PostgreSQL runs on the control plane only, handlers (tainted away from it) on workers
        plan = [([POSTGRES_IMAGE], [n for n in nodes if n not in workers]),
                ([i for i in IMAGES if i != POSTGRES_IMAGE], workers)]
    lock_path = Path(os.environ.get("JH_CACHE", "/var/cache/jobhandlers")) / "locks" / f"kind-load-{name}.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    if mirrored(nodes):
        with progress.phase(f"registry.sh push: {len(IMAGES)} images to the local registry the nodes pull from"), \
                open(lock_path, "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # parallel test workers: one pushes, the others find them there
            run([str(REGISTRY_SCRIPT), "push", *IMAGES], "registry.sh push", timeout=1800)
        return IMAGES
    with progress.phase(f"kind load {' '.join(IMAGES)} ({len(nodes)} nodes, in parallel)"), \
            open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parallel test workers: one loads, the others find the images there
        with ThreadPoolExecutor(max_workers=len(plan)) as pool:
            list(pool.map(lambda job: run([str(BIN / "kind"), "load", "docker-image", *job[0], "--name", name,
                                            "--nodes", ",".join(job[1])], "kind load", timeout=1800), plan))
    return IMAGES
