"""The lifecycle policy model: the single source of the numbers the chart must render.

Every expected value in the generated tests, every policy rule and `jobhandlers grace`
comes from these functions; the chart's templates implement the same formulas in
`chart/templates/_grace.tpl` and `_probes.tpl`, and the generated tests hold them equal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

# The kube-version matrix every values example is rendered and tested against.
KUBE_VERSIONS: tuple[str, ...] = ("1.16", "1.17", "1.18", "1.20", "1.25", "1.28", "1.34", "1.37")
DEFAULT_KUBE_VERSION = "1.34"
# Probe-level terminationGracePeriodSeconds is honoured from this version on.
PROBE_GRACE_MIN_VERSION = "1.25"
# PodDisruptionBudget policy/v1 exists from this version on.
PDB_V1_MIN_VERSION = "1.21"
RELEASE_NAME = "demo"
NAMESPACE = "demo"


def version_tuple(version: str) -> tuple[int, int]:
    """'1.29', 'v1.29.3-eks-1' -> (1, 29)."""
    core = version.lstrip("v").split("-")[0].split("+")[0]
    parts = core.split(".")
    return int(parts[0]), int(parts[1]) if len(parts) > 1 else 0


def at_least(version: str, minimum: str) -> bool:
    """Semver-style 'version >= minimum' on major.minor (pre-release suffixes match)."""
    return version_tuple(version) >= version_tuple(minimum)


@dataclass(frozen=True)
class Grace:
    """A role's terminationGracePeriodSeconds and the terms it is made of."""

    role: str
    max_job_runtime: int
    multiplier: float
    buffer: int
    pre_stop: int
    computed: int
    explicit: int | None

    @property
    def effective(self) -> int:
        """The value the chart renders: the explicit override when present, else computed."""
        return self.explicit if self.explicit is not None else self.computed

    @property
    def drain_deadline(self) -> int:
        """DRAIN_DEADLINE_SECONDS given to the handler: what is left after preStop,
        minus half the buffer kept for requeueing and exiting (at least 1)."""
        return max(1, self.effective - self.pre_stop - self.buffer // 2)


def computed_grace(max_job_runtime: int, multiplier: float, buffer: int, pre_stop: int) -> int:
    """ceil(maxJobRuntimeSeconds x runtimeMultiplier) + bufferSeconds + preStopSeconds."""
    # round() first so that 1.1 * 100 (=110.00000000000001) does not ceil to 111:
    # Helm's float arithmetic in _grace.tpl rounds the same way.
    return math.ceil(round(max_job_runtime * multiplier, 6)) + buffer + pre_stop


def role_grace(values: Mapping[str, Any], role: str) -> Grace:
    """The grace model for one role of a (merged) values mapping."""
    drain = values.get("drain", {})
    spec = values["handlers"][role]
    multiplier = float(drain.get("runtimeMultiplier", 1.0))
    buffer = int(drain.get("bufferSeconds", 30))
    pre_stop = int(drain.get("preStopSeconds", 10))
    runtime = int(spec["maxJobRuntimeSeconds"])
    explicit = spec.get("terminationGracePeriodSeconds")
    return Grace(
        role=role,
        max_job_runtime=runtime,
        multiplier=multiplier,
        buffer=buffer,
        pre_stop=pre_stop,
        computed=computed_grace(runtime, multiplier, buffer, pre_stop),
        explicit=int(explicit) if explicit is not None else None,
    )


def enabled_roles(values: Mapping[str, Any]) -> list[str]:
    """Roles that render a Deployment, sorted."""
    return sorted(r for r, spec in (values.get("handlers") or {}).items() if spec and spec.get("enabled", True))


def startup_probe_rendered(values: Mapping[str, Any], kube_version: str) -> bool:
    """startupProbe is rendered from startupProbe.minKubeVersion on, or below it only
    when forced with the feature gate declared on."""
    sp = values.get("startupProbe", {})
    if not sp.get("enabled", True):
        return False
    if at_least(kube_version, str(sp.get("minKubeVersion", "1.18"))):
        return True
    return bool(sp.get("force")) and bool(sp.get("featureGateEnabled"))


def liveness_initial_delay(values: Mapping[str, Any], kube_version: str) -> int:
    """Without a startupProbe, liveness waits out the startup budget instead."""
    if startup_probe_rendered(values, kube_version):
        return 0
    sp = values.get("startupProbe", {})
    return int(sp.get("periodSeconds", 5)) * int(sp.get("failureThreshold", 60))


def probe_grace(values: Mapping[str, Any], kube_version: str) -> int | None:
    """Probe-level liveness terminationGracePeriodSeconds, or None when not rendered."""
    value = values.get("liveness", {}).get("terminationGracePeriodSeconds")
    if value is None or not at_least(kube_version, PROBE_GRACE_MIN_VERSION):
        return None
    return int(value)


def pdb_api_version(kube_version: str) -> str:
    """policy/v1 from 1.21, policy/v1beta1 below."""
    return "policy/v1" if at_least(kube_version, PDB_V1_MIN_VERSION) else "policy/v1beta1"
