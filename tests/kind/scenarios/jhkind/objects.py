"""The objects of a helm release as the cluster holds them: (kind, name) -> uid, so an upgrade
that deletes and re-creates an object shows as a changed uid."""

from __future__ import annotations

import yaml
from kubernetes.dynamic import DynamicClient

from .cluster import Kube
from .helm import Helm

Key = tuple[str, str]  # (kind, name)


def manifest_keys(helm: Helm, release: str, namespace: str) -> list[tuple[str, str, str]]:
    """(apiVersion, kind, name) of every object of the release's manifest (hooks excluded)."""
    docs = [d for d in yaml.safe_load_all(helm.manifest(release, namespace)) if d]
    return [(d["apiVersion"], d["kind"], d["metadata"]["name"]) for d in docs]


def uids(kube: Kube, helm: Helm, release: str, namespace: str) -> dict[Key, str]:
    """(kind, name) -> uid of each manifest object; every one must exist."""
    dyn = DynamicClient(kube.api)
    out: dict[Key, str] = {}
    for api_version, kind, name in manifest_keys(helm, release, namespace):
        obj = dyn.resources.get(api_version=api_version, kind=kind).get(name=name, namespace=namespace)
        out[(kind, name)] = obj.metadata.uid
    return out


def recreated(before: dict[Key, str], after: dict[Key, str]) -> dict[str, list[Key]]:
    """Objects the upgrade deleted, created, or deleted and created again (a new uid)."""
    return {
        "deleted": sorted(before.keys() - after.keys()),
        "created": sorted(after.keys() - before.keys()),
        "replaced": sorted(k for k in before.keys() & after.keys() if before[k] != after[k]),
    }
