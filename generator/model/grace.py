"""A role's terminationGracePeriodSeconds and the terms it is made of (chart/templates/_grace.tpl)."""

from __future__ import annotations

import math
from collections import namedtuple
from collections.abc import Mapping

from .drain import DRAIN_FALLBACK
from .roles import enabled_roles

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing costs milliseconds at every start (check/fast.py)
    from typing import Any

class Grace(namedtuple("Grace", ['role', 'max_job_runtime', 'multiplier', 'buffer', 'pre_stop', 'computed', 'explicit'])):
    """A role's terminationGracePeriodSeconds and the terms it is made of."""

    __slots__ = ()
    # role: str
    # max_job_runtime: int
    # multiplier: float
    # buffer: int
    # pre_stop: int
    # computed: int
    # explicit: int | None

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
    multiplier = float(drain.get("runtimeMultiplier", 1.0))  # "1.5" from helm --set too
    buffer = int(drain.get("bufferSeconds", 30))
    pre_stop = int(drain.get("preStopSeconds", DRAIN_FALLBACK["preStopSeconds"]))
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


def max_grace(values: Mapping[str, Any]) -> int:
    """The longest effective grace of any enabled role (0 without roles)."""
    return max((role_grace(values, r).effective for r in enabled_roles(values)), default=0)
