"""Rules on container resources the API server relates: an extended resource (e.g. nvidia.com/gpu)
without an equal limit. (A request above its limit is JH032's; the names and quantities themselves
are values.schema.json's: cpu, memory, ephemeral-storage or <domain>/<name>, each a quantity.)"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing costs milliseconds at every start (check/fast.py)
    from typing import Any, Iterator

from .base import Context, Hit, KeyPath

_SUFFIX = {"": 1, "m": Decimal("0.001"), "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
           "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_QUANTITY = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)([KMGTPE]i|[eE][+-]?[0-9]{1,2}|[mkMGTPE])?")


def quantity(value: Any) -> Decimal | None:
    """A Kubernetes resource quantity as a number (None when it is not one)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return Decimal(str(value))
    m = _QUANTITY.fullmatch(str(value))
    if not m:
        return None
    try:
        number, suffix = Decimal(m.group(1)), m.group(2) or ""
    except InvalidOperation:
        return None
    if suffix[:1] in ("e", "E") and len(suffix) > 1:
        return number.scaleb(int(suffix[1:]))
    return number * _SUFFIX[suffix]


def _blocks(ctx: Context) -> Iterator[tuple[KeyPath, Any]]:
    """Every resources block of the values: the defaults, each role's, the chart containers'."""
    yield ("defaultResources",), ctx.get("defaultResources")
    for key in ("waitForMigrations", "migration", "helmTest"):
        yield (key, "resources"), ctx.get(f"{key}.resources")
    for role, spec in (ctx.get("handlers") or {}).items():
        if isinstance(spec, dict):
            yield ("handlers", str(role), "resources"), spec.get("resources")


def _jh052(ctx: Context) -> Iterator[Hit]:
    for path, block in _blocks(ctx):
        if not isinstance(block, dict):
            continue
        requests, limits = block.get("requests") or {}, block.get("limits") or {}
        if not isinstance(requests, dict) or not isinstance(limits, dict):
            continue
        for name, asked in requests.items():
            req, lim = quantity(asked), quantity(limits[name]) if name in limits else None
            where = ".".join(path)
            if "/" in str(name) and (lim is None or lim != req):
                yield Hit([path + ("requests", name), path + ("limits",)],
                          f"{where}: the extended resource {name} is requested ({asked}) with "
                          f"{'no limit' if name not in limits else f'limit {limits[name]}'}: the API server refuses a "
                          "container whose extended resource has no limit equal to its request",
                          f"set {where}.limits.{name} to {asked}")
