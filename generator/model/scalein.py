"""Scale-in that takes idle pods first (handlers.<role>.scaleIn.preferIdle; chart/templates/_scalein.tpl)."""

from __future__ import annotations

from collections.abc import Mapping

from .. import lifecycle as _lc
from .roles import _block, _role_spec

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing costs milliseconds at every start (check/fast.py)
    from typing import Any

# Scale-in that takes idle pods first (handlers.<role>.scaleIn.preferIdle; chart/templates/_scalein.tpl).
DELETION_COST_POLICY_MIN_VERSION = _lc.min_version("podDeletionCostPolicy")
SCALE_IN: dict[str, Any] = dict(_lc.DATA["scaleIn"])


def role_prefers_idle(values: Mapping[str, Any], role: str) -> bool:
    """handlers.<role>.scaleIn.preferIdle.enabled on an enabled role (the chart's scaleIn.enabled)."""
    spec = _role_spec(values, role)
    prefer = _block(_block(spec.get("scaleIn")).get("preferIdle"))
    return bool(spec.get("enabled", True)) and prefer.get("enabled") is True
