"""Autoscaled roles (handlers.<role>.autoscaling; chart/templates/_autoscaling.tpl)."""

from __future__ import annotations

from collections.abc import Mapping

from .. import lifecycle as _lc
from .grace import role_grace
from .roles import _block, _role_spec

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing costs milliseconds at every start (check/fast.py)
    from typing import Any

# Autoscaled roles (handlers.<role>.autoscaling; chart/templates/_autoscaling.tpl).
HPA_V2_MIN_VERSION = _lc.min_version("hpaV2")
HPA_BEHAVIOR_MIN_VERSION = _lc.min_version("hpaBehavior")
AUTOSCALING: dict[str, int] = {k: int(v) for k, v in _lc.DATA["autoscaling"].items()}


def role_autoscaler(values: Mapping[str, Any], role: str) -> str | None:
    """"hpa", "keda" or None: the autoscaler the chart renders for a role (the HPA when both are on)."""
    auto = _block(_role_spec(values, role).get("autoscaling"))
    for kind in ("hpa", "keda"):
        if _block(auto.get(kind)).get("enabled") is True:
            return kind
    return None


def autoscaler_poll_seconds(values: Mapping[str, Any], role: str, kind: str) -> int:
    """One poll of the metrics: the HPA controller's sync period, or KEDA's pollingInterval."""
    if kind == "keda":
        keda = _block(_block(_role_spec(values, role).get("autoscaling")).get("keda"))
        return int(keda.get("pollingInterval", 30))
    return AUTOSCALING["hpaSyncPeriodSeconds"]


def derived_scale_down(values: Mapping[str, Any], role: str, poll_seconds: int) -> dict[str, Any]:
    """The scaleDown behavior the chart renders when the user gives none: at most the PDB's
    maxUnavailable pods (1 for a percentage) per min(grace, 1800 s), and a stabilization window
    of max(300 s, one poll), at most 3600 s."""
    pdb = _block(_role_spec(values, role).get("pdb"))
    max_unavailable = pdb.get("maxUnavailable", 1)
    pods = max_unavailable if isinstance(max_unavailable, int) and not isinstance(max_unavailable, bool) \
        and max_unavailable > 0 else 1
    period = min(max(1, role_grace(values, role).effective), AUTOSCALING["maxPolicyPeriodSeconds"])
    window = min(max(AUTOSCALING["minStabilizationWindowSeconds"], int(poll_seconds)),
                 AUTOSCALING["maxStabilizationWindowSeconds"])
    return {"stabilizationWindowSeconds": window, "selectPolicy": "Min",
            "policies": [{"type": "Pods", "value": pods, "periodSeconds": period}]}
