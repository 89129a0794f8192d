"""A role's processes across a workload-kind switch (Deployment <-> StatefulSet): when the old
kind's and the new kind's containers ran, the seconds both ran (overlap) and the seconds neither
did (gap)."""

from __future__ import annotations

from .cluster import parse_time
from .observe import Timeline, deletion_started, terminated_state

Span = tuple[float, float]  # container start, exit (server times; exit = now while running)


def owner_kind(pod: dict) -> str:
    """Deployment (a ReplicaSet's pod), StatefulSet, or '' for anything else."""
    for o in (pod.get("metadata") or {}).get("ownerReferences") or []:
        if o.get("kind") == "ReplicaSet":
            return "Deployment"
        if o.get("kind") == "StatefulSet":
            return "StatefulSet"
    return ""


def spans(timeline: Timeline, role: str, kind: str, now: float) -> list[Span]:
    """The main container's run of every pod of `role` owned by a `kind` workload."""
    out: list[Span] = []
    for pod in timeline.last_pods().values():
        if (pod["metadata"].get("labels") or {}).get("app.kubernetes.io/component") != role or owner_kind(pod) != kind:
            continue
        st = next((c for c in (pod.get("status") or {}).get("containerStatuses") or [] if c["name"] == role), None)
        term = terminated_state(pod, role)
        started = ((term or (st or {}).get("state", {}).get("running") or {})).get("startedAt")
        if started is not None:
            out.append((parse_time(started), parse_time(term["finishedAt"]) if term else now))
    return out


def _union(items: list[Span]) -> list[Span]:
    merged: list[list[float]] = []
    for s, e in sorted(items):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    return [(s, e) for s, e in merged]


def _length(items: list[Span]) -> float:
    return sum(e - s for s, e in _union(items))


def overlap_seconds(old: list[Span], new: list[Span]) -> float:
    """Seconds during which an old-kind and a new-kind process of the role both ran."""
    both = [(max(a, c), min(b, d)) for a, b in _union(old) for c, d in _union(new) if min(b, d) > max(a, c)]
    return round(_length(both), 2)


def gap_seconds(old: list[Span], new: list[Span], start: float, end: float) -> float:
    """Seconds of [start, end] during which no process of the role ran."""
    covered = [(max(s, start), min(e, end)) for s, e in old + new if min(e, end) > max(s, start)]
    return round((end - start) - _length(covered), 2)


def in_flight_at_stop(timeline: Timeline, attempts: list, role: str, kind: str) -> int:
    """Job attempts that ran on a `kind` pod of `role` when that pod's deletion was requested
    (claimed before, ended after): the jobs its drain had to finish."""
    stops = {pod["metadata"]["name"]: deletion_started(timeline, uid) for uid, pod in timeline.last_pods().items()
             if (pod["metadata"].get("labels") or {}).get("app.kubernetes.io/component") == role
             and owner_kind(pod) == kind}
    return sum(1 for a in attempts if stops.get(a.pod) is not None
               and a.claimed_at <= stops[a.pod] < (a.ended_at if a.ended_at is not None else float("inf")))
