"""A cluster add-on for one module's tests (19's NetworkPolicy engine, 26e's metrics-server): its
image built by its script, `kind load`ed into the cluster's nodes, its manifest applied, then
waited for; deleted after, whatever the tests did."""

from __future__ import annotations

import subprocess
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from jhkind.cluster import Kube
from jhkind.nodes import KUBECTL
from jhkind.setup import BIN


def _run(cmd: list[str], what: str, timeout: float, stdin: str | None = None) -> str:
    proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{what}: {' '.join(cmd)} failed ({proc.returncode}): {proc.stderr[-3000:]}"
    return proc.stdout


@contextmanager
def installed(kube: Kube, cluster: str, script: Path, manifest: Path, ready: Callable[[], None],
              delete_args: tuple[str, ...] = ()) -> Iterator[str]:
    """Build the image (`script` prints its reference last), load it, apply `manifest` (its IMAGE
    replaced by that reference), call `ready` (which waits or raises); yield the image. On the way
    out the manifest's objects are deleted (`kubectl delete --wait`, plus `delete_args`)."""
    image = _run([str(script)], f"building {script.name}", 1800).strip().splitlines()[-1]
    _run([str(BIN / "kind"), "load", "docker-image", image, "--name", cluster], f"loading {image}", 600)
    docs = manifest.read_text().replace("IMAGE", image)
    kubectl = [str(KUBECTL), "--kubeconfig", kube.kubeconfig]
    _run([*kubectl, "apply", "-f", "-"], f"applying {manifest.name}", 120, docs)
    try:
        ready()
        yield image
    finally:
        subprocess.run([*kubectl, "delete", *delete_args, "--wait", "--timeout=90s", "--ignore-not-found", "-f", "-"],
                       input=docs, capture_output=True, text=True, timeout=150)
