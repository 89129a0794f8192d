"""The containers of the chart's pods: their order, the user's ones, their resources and quantities."""

from __future__ import annotations

import re
from collections.abc import Mapping
from fractions import Fraction

from .roles import _block, _role_spec, enabled_roles
from .scalein import SCALE_IN, role_prefers_idle
from .versions import native_sidecars

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing costs milliseconds at every start (check/fast.py)
    from typing import Any

def _names(items: Any) -> list[str]:
    return [str(c.get("name")) for c in items or [] if isinstance(c, Mapping)]


def user_containers(values: Mapping[str, Any], role: str, key: str) -> list[tuple[tuple[str | int, ...], Any]]:
    """(key path, item) of a role's `sidecars` or `extraInitContainers` (key), in the order the
    chart renders them: the chart-wide ones, then the role's."""
    return [(where + (i,), item)
            for where, items in (((key,), values.get(key)), (("handlers", role, key), _role_spec(values, role).get(key)))
            for i, item in enumerate(items or [])]


def init_container_order(values: Mapping[str, Any], role: str, kube_version: str) -> list[str]:
    """The initContainers of a role's pod, in order: native sidecars, extraInitContainers
    "before", wait-for-migrations, extraInitContainers "after" (see _pod.tpl)."""
    inits = [c for _, c in user_containers(values, role, "extraInitContainers") if isinstance(c, Mapping)]
    order = _names([c for _, c in user_containers(values, role, "sidecars")]) if native_sidecars(kube_version) else []
    order += _names([c for c in inits if (c.get("position") or "before") == "before"])
    if _block(values.get("waitForMigrations")).get("enabled", True):
        order.append("wait-for-migrations")
    order += _names([c for c in inits if c.get("position") == "after"])
    return order


def regular_sidecars(values: Mapping[str, Any], role: str, kube_version: str) -> list[str]:
    """The containers after the handler: sidecars rendered as regular containers (below the
    native-sidecar version), then scaleIn.preferIdle's deletion-cost container (every version)."""
    own = [] if native_sidecars(kube_version) else _names([c for _, c in user_containers(values, role, "sidecars")])
    return own + ([SCALE_IN["container"]] if role_prefers_idle(values, role) else [])


def container_resources(values: Mapping[str, Any], own: Any) -> Mapping[str, Any]:
    """The resources of a chart-owned container: its own non-empty block, else defaultResources."""
    return _block(own) or _block(values.get("defaultResources"))


def owned_resources(values: Mapping[str, Any]) -> dict[str, tuple[str, Mapping[str, Any]]]:
    """Chart-owned container group -> (the key of its own resources, effective resources)."""
    out = {f"role {role}": (f"handlers.{role}.resources", _role_spec(values, role).get("resources"))
           for role in enabled_roles(values)}
    out["wait-for-migrations"] = ("waitForMigrations.resources", _block(values.get("waitForMigrations")).get("resources"))
    out["the migration Job"] = ("migration.resources", _block(values.get("migration")).get("resources"))
    out["the helm test pod"] = ("helmTest.resources", _block(values.get("helmTest")).get("resources"))
    return {k: (key, container_resources(values, own)) for k, (key, own) in out.items()}


_SUFFIXES = {"": 1, "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "k": 10**3,
             "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
             "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_QUANTITY = re.compile(r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(?:([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)")


def parse_quantity(value: Any) -> Fraction:
    """A Kubernetes resource quantity ("100m", "128Mi", "1e3", 2) as an exact number;
    ValueError when it is not one."""
    if isinstance(value, bool):
        raise ValueError(value)
    if isinstance(value, (int, float)):
        return Fraction(str(value))
    m = _QUANTITY.fullmatch(str(value).strip())
    if not m:
        raise ValueError(f"not a quantity: {value!r}")
    number = Fraction(m.group(1))
    if m.group(2):
        return number * Fraction(10) ** int(m.group(2)[1:])
    return number * _SUFFIXES[m.group(3) or ""]
