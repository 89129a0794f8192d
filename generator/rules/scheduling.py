"""Rules on where pods run: what the API server's affinity validation refuses, per version.

The schema holds what every version refuses (selector operators and their values, weights,
topologyKey, a required node selector's terms: values.schema.json `affinity`). From Kubernetes
1.32 (kubernetes/kubernetes#128212, ValidateNodeSelectorRequirement) the values of a *required*
node affinity's matchExpressions must also be label values; below, any string passes and the
pod never schedules. Preferred terms are not checked on any version."""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing costs milliseconds at every start (check/fast.py)
    from typing import Any, Iterator

from .. import model
from ..findings import dotted
from .base import Context, Hit

_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")


def label_value_problem(value: str) -> str | None:
    """Why `value` is no label value (IsValidLabelValue); None if it is one."""
    if len(value) > 63:
        return "it must be no more than 63 characters"
    if not _LABEL_VALUE.fullmatch(value):
        return "it must be empty or begin and end with a letter or digit, with '-', '_', '.' or letters and digits between"
    return None


def _affinities(ctx: Context) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    """(key path, affinity) of every role's and the migration Jobs' affinity."""
    for role in model.enabled_roles(ctx.values):
        yield ("handlers", role, "affinity"), ctx.get(f"handlers.{role}.affinity")
    yield ("migration", "affinity"), ctx.get("migration.affinity")


def _required_values(affinity: Any) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    """(key path inside the affinity, value) of each value of a required node affinity's matchExpressions."""
    required = ((affinity or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    for i, term in enumerate(required.get("nodeSelectorTerms") or []):
        for j, expression in enumerate((term or {}).get("matchExpressions") or []):
            for k, value in enumerate((expression or {}).get("values") or []):
                yield (("nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms", i,
                        "matchExpressions", j, "values", k), value)


def _jh075(ctx: Context) -> Iterator[Hit]:
    if not model.at_least(ctx.kube_version, model.NODE_AFFINITY_LABEL_VALUES_MIN_VERSION):
        return
    for root, affinity in _affinities(ctx):
        if not isinstance(affinity, dict):
            continue
        for sub, value in _required_values(affinity):
            why = label_value_problem(value) if isinstance(value, str) else None
            if why is None:
                continue
            path = root + sub
            yield Hit([path], f"{dotted(list(path))}={value!r} is no label value ({why}): the API server of Kubernetes "
                      f"{ctx.kube_version} refuses the pods' template, so the release fails to install",
                      "give the node label's value as it is on the nodes (a label value: at most 63 letters, digits, "
                      "'-', '_' or '.', a letter or digit at both ends)")
