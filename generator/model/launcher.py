"""Launching roles (handlers.<role>.launcher; chart/templates/_launcher.tpl)."""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Mapping

from .. import lifecycle as _lc
from .roles import NAMESPACE, _block, _role_spec
from .scalein import role_prefers_idle
from .versions import at_least

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing costs milliseconds at every start (check/fast.py)
    from typing import Any

# Launching roles (handlers.<role>.launcher; chart/templates/_launcher.tpl).
MUTATING_ADMISSION_POLICY_MIN_VERSION = _lc.min_version("mutatingAdmissionPolicy")
POD_SECURITY_LEVELS: tuple[str, ...] = tuple(_lc.DATA["launcher"]["levels"])
LAUNCHER_DEFAULT_RULES: list[dict[str, Any]] = list(_lc.DATA["launcher"]["defaultRules"])


class Launcher(namedtuple("Launcher", ['enabled', 'namespace', 'rules', 'enforce', 'pods_meet', 'mutate',
                                       'pod_selector', 'max_job_runtime'])):
    """A role's launcher settings with the chart's defaults resolved."""

    __slots__ = ()
    # enabled: bool
    # namespace: str
    # rules: list[Any]
    # enforce: str  — the Pod Security level enforced where the launched pods run
    # pods_meet: str  — the level the app's launched pods meet
    # mutate: bool
    # pod_selector: Mapping[str, Any]
    # max_job_runtime: int | None


def role_launcher(values: Mapping[str, Any], role: str) -> Launcher:
    """handlers.<role>.launcher as the chart renders it (enabled only for an enabled role)."""
    spec = _role_spec(values, role)
    raw = _block(spec.get("launcher"))
    ps = _block(raw.get("podSecurity"))
    rules = raw.get("rules")
    return Launcher(
        enabled=bool(spec.get("enabled", True)) and raw.get("enabled") is True,
        namespace=str(raw.get("namespace") or NAMESPACE),
        rules=LAUNCHER_DEFAULT_RULES if rules is None else list(rules),
        enforce=str(ps.get("enforce") or "restricted"),
        pods_meet=str(ps.get("podsMeet") or "restricted"),
        mutate=ps.get("mutate") is True,
        pod_selector=_block(ps.get("podSelector")),
        max_job_runtime=raw.get("maxJobRuntimeSeconds"),
    )


def launcher_mutates(launcher: Launcher, kube_version: str) -> bool:
    """The chart renders the role's MutatingAdmissionPolicy (mutate, a podSelector, >= 1.36)."""
    return (launcher.enabled and launcher.mutate and bool(launcher.pod_selector)
            and at_least(kube_version, MUTATING_ADMISSION_POLICY_MIN_VERSION))


def launched_pods_admitted(launcher: Launcher, kube_version: str) -> bool:
    """The launched pods meet the enforced Pod Security level, or the policy lifts baseline to restricted."""
    meet, need = POD_SECURITY_LEVELS.index(launcher.pods_meet), POD_SECURITY_LEVELS.index(launcher.enforce)
    return meet >= need or (launcher_mutates(launcher, kube_version)
                            and launcher.pods_meet == "baseline" and launcher.enforce == "restricted")


def role_calls_api(values: Mapping[str, Any], role: str) -> bool:
    """The role's pods hold an API token of their own: it launches, or sets its deletion cost."""
    return role_launcher(values, role).enabled or role_prefers_idle(values, role)
