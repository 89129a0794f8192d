"""A cluster add-on for one module's tests (19's NetworkPolicy engine, 26e's metrics-server): its
image built by its script and `kind load`ed into the cluster's nodes (image), its manifest applied
and waited for, then deleted whatever the tests did (applied)."""

from __future__ import annotations

import subprocess
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import yaml

from jhkind.cluster import Kube
from jhkind.nodes import KUBECTL
from jhkind.setup import BIN, run


def image(script: Path, cluster: str) -> str:
    """Build the image (`script` prints its reference last) and load it into the cluster's nodes."""
    ref = run([str(script)], f"building {script.name}", 1800).strip().splitlines()[-1]
    run([str(BIN / "kind"), "load", "docker-image", ref, "--name", cluster], f"loading {ref}", 600)
    return ref


@contextmanager
def applied(kube: Kube, image_ref: str, manifest: Path, ready: Callable[[], None],
            delete_args: tuple[str, ...] = (),
            place: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> Iterator[None]:
    """Apply `manifest` (its IMAGE replaced by `image_ref`), call `ready` (which waits or raises), yield;
    on the way out its objects are deleted (`kubectl delete --wait`, plus `delete_args`). `place`
    (jhkind.pool.add) rewrites every DaemonSet's pod spec."""
    docs = manifest.read_text().replace("IMAGE", image_ref)
    if place:
        objs = [o for o in yaml.safe_load_all(docs) if o]
        for o in objs:
            if o.get("kind") == "DaemonSet":
                o["spec"]["template"]["spec"] = place(o["spec"]["template"]["spec"])
        docs = yaml.safe_dump_all(objs, sort_keys=False)
    kubectl = [str(KUBECTL), "--kubeconfig", kube.kubeconfig]
    run([*kubectl, "apply", "-f", "-"], f"applying {manifest.name}", 120, docs)
    try:
        ready()
        yield
    finally:
        subprocess.run([*kubectl, "delete", *delete_args, "--wait", "--timeout=90s", "--ignore-not-found", "-f", "-"],
                       input=docs, capture_output=True, text=True, timeout=150)
