"""The API server as the oracle: does it accept every object of a render?

    verdict = dry_run(api, helm.render_text([example], kube_version="1.37"))
    assert verdict.accepted, verdict.explain()

Each call gets a namespace of its own (`jh-<n>`, labelled Pod Security `restricted`, as a
production namespace of the chart would be): the render's `demo` namespace is rewritten to it.
What a real cluster's controllers would have created first is created for real there: the
`default` ServiceAccount and the render's own ServiceAccounts (the ServiceAccount admission
plugin refuses a Pod whose account does not exist; hooks and helm test Pods are in the render).
Other namespaces the render names (a launcher's) are created too. Then every object, cluster-
scoped ones and hooks included, goes through `kubectl apply --dry-run=server` (strict field
validation): the API server's decoding, validation and admission, nothing persisted.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, field
from typing import Any

from generator import model
from generator.render import helm

from kubeapi import ApiServer

_counter = itertools.count(1)
ENFORCE = {"pod-security.kubernetes.io/enforce": "restricted"}


@dataclass
class Verdict:
    """What the API server said about one render."""

    namespace: str
    objects: int
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def accepted(self) -> bool:
        """True when the API server refused no object."""
        return not self.errors

    def explain(self) -> str:
        """The refusals, one per line, for an assertion message."""
        return "\n".join(self.errors) or "accepted"


def _as_list(objects: list[dict[str, Any]]) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}, default=str)


def _namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": dict(ENFORCE)}}


def _service_account(name: str, namespace: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": namespace}}


def _relocate(objects: list[dict[str, Any]], namespace: str) -> list[dict[str, Any]]:
    """The objects with metadata.namespace `demo` (the render's) moved to `namespace`."""
    out = []
    for obj in objects:
        meta = obj.get("metadata")
        if isinstance(meta, dict) and meta.get("namespace") == model.NAMESPACE:
            obj = {**obj, "metadata": {**meta, "namespace": namespace}}
        out.append(obj)
    return out


def _messages(stderr: str) -> tuple[list[str], list[str]]:
    """kubectl's stderr split into refusals and warnings, one entry per object."""
    errors, warnings = [], []
    for line in stderr.splitlines():
        line = line.strip()
        if line.startswith("Warning:"):
            warnings.append(line)
        elif line:
            errors.append(re.sub(r'error when (creating|patching|retrieving current configuration of)[^:]*: ', "", line))
    return errors, warnings


def dry_run(api: ApiServer, rendered: str | list[dict[str, Any]]) -> Verdict:
    """Send a render (helm's text or parsed objects) through the API server, nothing persisted."""
    objects = helm.parse_manifests(rendered) if isinstance(rendered, str) else list(rendered)
    ns = f"jh-{next(_counter)}"
    objects = _relocate(objects, ns)
    others = sorted({str(o["metadata"]["namespace"]) for o in objects
                     if isinstance(o.get("metadata"), dict) and o["metadata"].get("namespace")} - {ns})
    setup = [_namespace(n) for n in [ns, *others]]
    setup += [_service_account("default", n) for n in [ns, *others]]
    setup += [o for o in objects if o.get("kind") == "ServiceAccount"]
    verdict = Verdict(ns, len(objects))
    # the accounts for real (the controller-manager would have made `default`); a refusal is one
    made = api.kubectl("apply", "-f", "-", stdin=_as_list(setup), check=False)
    verdict.errors, verdict.warnings = _messages(made.stderr)
    if made.returncode != 0 and not verdict.errors:
        verdict.errors.append(f"kubectl apply exited {made.returncode}")
    if verdict.errors:
        return verdict
    proc = api.kubectl("apply", "--dry-run=server", "-f", "-", stdin=_as_list(objects), check=False)
    verdict.errors, verdict.warnings = _messages(proc.stderr)
    if proc.returncode != 0 and not verdict.errors:
        verdict.errors.append(f"kubectl apply --dry-run=server exited {proc.returncode}: {proc.stdout[-500:]}")
    return verdict
