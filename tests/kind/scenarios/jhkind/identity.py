"""Stable identities (handlers.<role>.kind: StatefulSet): when each process of a role lived,
and whether two processes held one identity (pod name) at the same time."""

from __future__ import annotations

from typing import Callable

from .cluster import parse_time
from .observe import Timeline, terminated_state

Lifetime = tuple[str, str, float, float | None]  # pod name, uid, container start, container exit


def lifetimes(timeline: Timeline, role: str) -> list[Lifetime]:
    """(pod name, uid, container start, container exit or None) of every pod of the role seen."""
    out = []
    for uid, pod in timeline.last_pods().items():
        if (pod["metadata"].get("labels") or {}).get("app.kubernetes.io/component") != role:
            continue
        st = next((c for c in (pod.get("status") or {}).get("containerStatuses") or [] if c["name"] == role), None)
        if st is None:
            continue
        state = st.get("state") or {}
        term = terminated_state(pod, role)
        started = (term or state.get("running") or {}).get("startedAt")
        if started is None:
            continue
        out.append((pod["metadata"]["name"], uid, parse_time(started), parse_time(term["finishedAt"]) if term else None))
    return out


def overlaps(spans: list[Lifetime], key: Callable[[str], str]) -> list[float]:
    """For each pair of consecutive processes holding one identity (key(name)): the seconds the
    second started before the first exited (> 0: two live processes held it at once)."""
    by_id: dict[str, list[tuple[float, float | None]]] = {}
    for name, _uid, start, end in spans:
        by_id.setdefault(key(name), []).append((start, end))
    out = []
    for pairs in by_id.values():
        pairs.sort()
        for (s0, e0), (s1, _e1) in zip(pairs, pairs[1:]):
            out.append(round((e0 if e0 is not None else float("inf")) - s1, 2))
    return out
