"""Accessors the generated tests use to find lifecycle parts in rendered objects, by the
runtime contract (env JOBHANDLERS_ROLE, init container `wait-for-migrations`), not by names."""

from __future__ import annotations

from typing import Any, Sequence

WAIT_CONTAINER = "wait-for-migrations"
ROLLOUT_CONTAINER = "wait-for-rollout"
HOOK = "helm.sh/hook"
HOOK_WEIGHT = "helm.sh/hook-weight"


def pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    """spec.template.spec of a Deployment, StatefulSet or Job."""
    return obj["spec"]["template"]["spec"]


def env_value(container: dict[str, Any], name: str) -> str | None:
    """A literal env value of a container, or None when absent."""
    for entry in container.get("env") or []:
        if entry.get("name") == name:
            return entry.get("value")
    return None


def role_container(deployment: dict[str, Any]) -> dict[str, Any]:
    """The handler container: the one given JOBHANDLERS_ROLE."""
    for c in pod_spec(deployment).get("containers") or []:
        if env_value(c, "JOBHANDLERS_ROLE") is not None:
            return c
    raise AssertionError(f"no container with JOBHANDLERS_ROLE in Deployment {deployment['metadata']['name']}")


from .model import WORKLOAD_KINDS  # noqa: E402 - chart/lifecycle.yaml workloadKinds


def deployments_by_role(objects: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """role -> its workload (a Deployment, or a StatefulSet for roles with stable identities)."""
    out: dict[str, dict[str, Any]] = {}
    for obj in objects:
        if obj.get("kind") in WORKLOAD_KINDS:
            role = env_value(role_container(obj), "JOBHANDLERS_ROLE")
            assert role not in out, f"two workloads for role {role}"
            out[str(role)] = obj
    return out


def of_kind(objects: Sequence[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The objects of one kind."""
    return [o for o in objects if o.get("kind") == kind]


def migration_jobs(objects: Sequence[dict[str, Any]], post_deploy: bool = False) -> list[dict[str, Any]]:
    """The migration Jobs, or (post_deploy) the post-deploy ones: those that wait for the
    rollout (init container wait-for-rollout; commands.postMigrate)."""
    return [j for j in of_kind(objects, "Job") if (init_container(j, ROLLOUT_CONTAINER) is not None) == post_deploy]


def annotations(obj: dict[str, Any]) -> dict[str, str]:
    """metadata.annotations (empty when absent)."""
    return dict((obj.get("metadata") or {}).get("annotations") or {})


def hook_phases(obj: dict[str, Any]) -> set[str]:
    """The helm.sh/hook phases of an object (empty set when not a hook)."""
    value = annotations(obj).get(HOOK, "")
    return {p.strip() for p in value.split(",") if p.strip()}


def init_container(deployment: dict[str, Any], name: str = WAIT_CONTAINER) -> dict[str, Any] | None:
    """An init container by name, or None."""
    for c in pod_spec(deployment).get("initContainers") or []:
        if c.get("name") == name:
            return c
    return None


def command_line(container: dict[str, Any]) -> str:
    """command + args joined with spaces."""
    return " ".join(str(x) for x in (container.get("command") or []) + (container.get("args") or []))


def secret_refs(spec: dict[str, Any]) -> set[str]:
    """Names of the Secrets a pod spec's containers and init containers read (env, envFrom)."""
    names: set[str] = set()
    for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        for entry in c.get("env") or []:
            ref = ((entry.get("valueFrom") or {}).get("secretKeyRef") or {}).get("name")
            if ref:
                names.add(ref)
        for entry in c.get("envFrom") or []:
            ref = (entry.get("secretRef") or {}).get("name")
            if ref:
                names.add(ref)
    for vol in spec.get("volumes") or []:
        ref = (vol.get("secret") or {}).get("secretName")
        if ref:
            names.add(ref)
    return names
