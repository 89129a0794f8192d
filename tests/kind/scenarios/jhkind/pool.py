"""The node scenarios' own workers inside the main cluster (.ci/run, since stop 48): `kind-up.sh`
with KIND_POOL_WORKERS=N adds N workers labelled and tainted jobhandlers.test/pool=nodes
(NoSchedule), which nothing of the main pass can use. With KIND_NODE_POOL=nodes (the node pass),
every chart pod a scenario makes goes there: the roles and the migration Jobs by their nodeSelector
and tolerations (`place`, applied to every values file a Scenario writes), 19's NetworkPolicy engine
by its DaemonSet's pod spec (`add`); `nodes.workers` lists the pool's workers only, so drains,
node loss (8z: kind-up.sh's KIND_REPAIR mode brings the node back without touching the rest) and
26's pinned worker stay on it. The scenarios' own pods (client, broker, PostgreSQL, Galaxy's launched
Jobs, helm test pods) stay off the pool, on the main workers: drains and node loss do not take them.
Without KIND_NODE_POOL (make test-kind: the passes one after the other), nothing changes."""

from __future__ import annotations

import os
from typing import Any

KEY = "jobhandlers.test/pool"


def name() -> str | None:
    """The pool this pass runs on, or None (a cluster of its own: every worker is the pass's)."""
    return os.environ.get("KIND_NODE_POOL") or None


def pod_placement() -> dict[str, Any]:
    """A pod spec's nodeSelector and tolerations for the pool ({} without one)."""
    pool = name()
    if pool is None:
        return {}
    return {"nodeSelector": {KEY: pool},
            "tolerations": [{"key": KEY, "operator": "Equal", "value": pool, "effect": "NoSchedule"}]}


def add(spec: dict[str, Any] | None) -> dict[str, Any]:
    """A copy of a pod spec (or a chart role's / the migration's values) with the pool's label added to
    its nodeSelector and its toleration to its tolerations; without a pool, a copy as it is."""
    spec = dict(spec or {})
    where = pod_placement()
    if where:
        spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **where["nodeSelector"]}
        spec["tolerations"] = list(spec.get("tolerations") or []) + where["tolerations"]
    return spec


def place(values: dict[str, Any]) -> dict[str, Any]:
    """values with every role of `handlers` and the migration Jobs (migration, downgrade,
    post-deploy) on the pool (`add`; a role set to null stays null). Without a pool, values itself."""
    if name() is None:
        return values
    out = dict(values)
    out["handlers"] = {role: spec if spec is None else add(spec)
                       for role, spec in (values.get("handlers") or {}).items()}
    out["migration"] = add(values.get("migration"))
    return out
