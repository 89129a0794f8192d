"""A role of a (merged) values mapping: its spec, kind, image and the settings that are the role's alone."""

from __future__ import annotations

import re
from collections.abc import Mapping

from .. import lifecycle as _lc
from .versions import UNHEALTHY_POD_EVICTION_MIN_VERSION, at_least

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing costs milliseconds at every start (check/fast.py)
    from typing import Any

WORKLOAD_KINDS: tuple[str, ...] = tuple(_lc.DATA["workloadKinds"])

# An image tag (the distribution reference grammar); the chart refuses anything else (JH028).
IMAGE_TAG_PATTERN = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
RELEASE_NAME = "demo"
NAMESPACE = "demo"


def _role_spec(values: Mapping[str, Any], role: str) -> Mapping[str, Any]:
    return (values.get("handlers") or {}).get(role) or {}


def _block(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def role_kind(values: Mapping[str, Any], role: str) -> str:
    """The workload kind a role renders: Deployment unless handlers.<role>.kind says StatefulSet."""
    return str(((values.get("handlers") or {}).get(role) or {}).get("kind") or "Deployment")


def enabled_roles(values: Mapping[str, Any]) -> list[str]:
    """Roles that render a workload (Deployment or StatefulSet), sorted."""
    return sorted(r for r, spec in (values.get("handlers") or {}).items() if spec and spec.get("enabled", True))


def image_reference(values: Mapping[str, Any], app_version: str) -> str:
    """repository@digest when image.digest is set (the tag is ignored), else repository:tag
    (an empty tag: the chart's appVersion)."""
    image = _block(values.get("image"))
    if image.get("digest"):
        return f"{image.get('repository')}@{image['digest']}"
    return f"{image.get('repository')}:{image.get('tag') or app_version}"


def version_label(tag: str) -> str:
    """app.kubernetes.io/version for a tag: at most 63 of [A-Za-z0-9._-], alphanumeric at both
    ends, any other character "_" (the chart's "jobhandlers.versionLabel")."""
    return re.sub(r"[^-A-Za-z0-9_.]", "_", tag)[:63].strip("-_.")


def node_loss_toleration(values: Mapping[str, Any], role: str) -> int | None:
    """tolerationSeconds for not-ready/unreachable: the role's, else the chart-wide one."""
    own = _role_spec(values, role).get("nodeLossTolerationSeconds")
    value = own if own is not None else values.get("nodeLossTolerationSeconds", 30)
    return None if value is None else int(value)


def pdb_unhealthy_pod_eviction_policy(values: Mapping[str, Any], role: str, kube_version: str) -> str | None:
    """The role's PDB unhealthyPodEvictionPolicy as rendered: its own, else pdb's; None below 1.27."""
    own = _block(_role_spec(values, role).get("pdb")).get("unhealthyPodEvictionPolicy")
    policy = own or _block(values.get("pdb")).get("unhealthyPodEvictionPolicy")
    if not policy or not at_least(kube_version, UNHEALTHY_POD_EVICTION_MIN_VERSION):
        return None
    return str(policy)
