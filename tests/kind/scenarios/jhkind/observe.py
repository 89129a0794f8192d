"""Timelines: background watches that record every pod and Job change of a namespace
with the local receive time, and the analyses the scenarios assert on."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from kubernetes import watch
from kubernetes.client.exceptions import ApiException

from .cluster import Kube, condition, event_time, parse_time, pod_ready, restart_count


@dataclass
class Change:
    t: float  # local epoch seconds when the change was received
    kind: str  # ADDED / MODIFIED / DELETED
    obj: dict


@dataclass
class _Stream:
    changes: list[Change] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class Timeline:
    """Watches pods and Jobs of one namespace until stop()."""

    def __init__(self, kube: Kube, namespace: str):
        self.kube = kube
        self.namespace = namespace
        self.pods = _Stream()
        self.jobs = _Stream()
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._run, args=(kube.core.list_namespaced_pod, self.pods), daemon=True),
            threading.Thread(target=self._run, args=(kube.batch.list_namespaced_job, self.jobs), daemon=True),
        ]
        self.started = time.time()

    def start(self) -> "Timeline":
        for t in self._threads:
            t.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=10)

    def _run(self, list_fn: Callable, sink: _Stream) -> None:
        version = ""
        while not self._stop.is_set():
            w = watch.Watch()
            try:
                for ev in w.stream(list_fn, self.namespace, resource_version=version or None,
                                   timeout_seconds=5, allow_watch_bookmarks=False):
                    obj = self.kube.to_dict(ev["object"])
                    version = (obj.get("metadata") or {}).get("resourceVersion") or version
                    with sink.lock:
                        sink.changes.append(Change(time.time(), ev["type"], obj))
                    if self._stop.is_set():
                        break
            except ApiException as exc:
                if exc.status == 410:  # resource version too old: start over from a fresh list
                    version = ""
                else:
                    time.sleep(0.5)
            except Exception:
                time.sleep(0.5)
            finally:
                w.stop()

    # ---- snapshots ----
    def pod_changes(self) -> list[Change]:
        with self.pods.lock:
            return list(self.pods.changes)

    def job_changes(self) -> list[Change]:
        with self.jobs.lock:
            return list(self.jobs.changes)

    def last_pods(self) -> dict[str, dict]:
        """uid -> the last seen version of every pod ever seen (deleted ones included)."""
        out: dict[str, dict] = {}
        for ch in self.pod_changes():
            out[ch.obj["metadata"]["uid"]] = ch.obj
        return out


def is_handler_pod(pod: dict) -> bool:
    """A handler pod: a Deployment's (owned by a ReplicaSet) or a StatefulSet's, not a Job's
    or a test client's."""
    owners = (pod.get("metadata") or {}).get("ownerReferences") or []
    return any(o.get("kind") in ("ReplicaSet", "StatefulSet") for o in owners)


def pod_role(pod: dict) -> str:
    """The chart role of a handler pod: app.kubernetes.io/component label, else from its name."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    role = labels.get("app.kubernetes.io/component")
    if role:
        return role
    owners = (pod.get("metadata") or {}).get("ownerReferences") or []
    for o in owners:
        if o.get("kind") == "ReplicaSet":  # <fullname>-<role>-<rs-hash>
            return o["name"].rsplit("-", 1)[0].rsplit("-", 1)[-1]
        if o.get("kind") == "StatefulSet":  # <fullname>-<role>
            return o["name"].rsplit("-", 1)[-1]
    return "?"


def first_seen(timeline: Timeline, predicate: Callable[[dict], bool]) -> float | None:
    """Local time the first pod matching predicate was seen."""
    for ch in timeline.pod_changes():
        if predicate(ch.obj):
            return ch.t
    return None


def max_restarts(timeline: Timeline, predicate: Callable[[dict], bool] = is_handler_pod) -> dict[str, int]:
    """pod name -> highest restart count ever seen (all containers, init included)."""
    out: dict[str, int] = {}
    for ch in timeline.pod_changes():
        if predicate(ch.obj):
            name = ch.obj["metadata"]["name"]
            out[name] = max(out.get(name, 0), restart_count(ch.obj))
    return out


def ready_series(timeline: Timeline, t0: float, predicate: Callable[[dict], bool] = is_handler_pod) -> list[tuple[float, int]]:
    """(seconds since t0, number of Ready matching pods) after each pod change."""
    state: dict[str, bool] = {}
    series: list[tuple[float, int]] = [(0.0, 0)]
    for ch in timeline.pod_changes():
        if not predicate(ch.obj):
            continue
        uid = ch.obj["metadata"]["uid"]
        state[uid] = ch.kind != "DELETED" and pod_ready(ch.obj)
        series.append((round(ch.t - t0, 3), sum(state.values())))
    return series


def ready_transitions(timeline: Timeline, uid: str) -> list[tuple[float, bool]]:
    """(local time, ready) each time the Ready condition of that pod changed."""
    out: list[tuple[float, bool]] = []
    for ch in timeline.pod_changes():
        if ch.obj["metadata"]["uid"] != uid:
            continue
        ready = pod_ready(ch.obj)
        if not out or out[-1][1] != ready:
            out.append((ch.t, ready))
    return out


def deletion_started(timeline: Timeline, uid: str) -> float | None:
    """Server time the pod's deletion was requested: deletionTimestamp - grace of the FIRST
    version carrying them (the kubelet's final grace-0 delete rewrites both)."""
    for ch in timeline.pod_changes():
        meta = ch.obj.get("metadata") or {}
        if meta.get("uid") == uid and meta.get("deletionTimestamp"):
            return parse_time(meta["deletionTimestamp"]) - int(meta.get("deletionGracePeriodSeconds") or 0)
    return None


def old_pod_exit(timeline: Timeline, uid: str, name: str, container: str,
                 last: dict[str, dict] | None = None) -> tuple[float, float, int]:
    """A deleted pod's (deletion requested, container finishedAt, exit code), server times;
    fails the test if the timeline saw neither. `last`: timeline.last_pods(), if at hand."""
    started = deletion_started(timeline, uid)
    term = terminated_state((last if last is not None else timeline.last_pods())[uid], container)
    assert started is not None and term is not None, f"{name}: deletion or final state not seen"
    return started, parse_time(term["finishedAt"]), int(term["exitCode"])


def kubelet_stop_at(events: list[dict], uid: str, container: str) -> float | None:
    """When the kubelet began stopping a pod's container (its `Killing` event, whole seconds): the
    preStop hook starts then and SIGTERM follows it. Under load this is seconds after the deletion
    was requested (the kubelet's watch and sync lag); None when the event was not kept."""
    times = [event_time(e) for e in events
             if e.get("reason") == "Killing" and (e.get("involvedObject") or {}).get("uid") == uid
             and f"container {container}" in (e.get("message") or "")]
    return min(times) if times else None


def ready_false_at(pod: dict) -> float | None:
    """Server time the Ready condition last turned False (None while Ready)."""
    cond = condition(pod, "Ready")
    if not cond or cond.get("status") == "True":
        return None
    return parse_time(cond.get("lastTransitionTime"))


def ready_at(pod: dict) -> float | None:
    """Server time the Ready condition last turned True (None while not Ready)."""
    cond = condition(pod, "Ready")
    return parse_time(cond.get("lastTransitionTime")) if cond and cond.get("status") == "True" else None


def started_at(pod: dict, container: str) -> float | None:
    """Server time the container's current run started (None while it does not run)."""
    for st in (pod.get("status") or {}).get("containerStatuses") or []:
        if st["name"] == container:
            return parse_time(((st.get("state") or {}).get("running") or {}).get("startedAt"))
    return None


def terminated_state(pod: dict, container: str | None = None) -> dict | None:
    """The terminated state of the pod's (first or named) main container, if it ended."""
    for st in (pod.get("status") or {}).get("containerStatuses") or []:
        if container and st.get("name") != container:
            continue
        term = (st.get("state") or {}).get("terminated")
        if term:
            return term
        if container is None:
            return None
    return None


class LogFollower:
    """Follows one container's log in a thread (kept after the pod is gone): the workload's
    JSON lines carry sub-second `ts`, so SIGTERM->exit can be measured precisely."""

    def __init__(self, kube: Kube, namespace: str, pod: str, container: str):
        self.kube, self.namespace, self.pod, self.container = kube, namespace, pod, container
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> "LogFollower":
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            resp = self.kube.core.read_namespaced_pod_log(
                self.pod, self.namespace, container=self.container, follow=True, _preload_content=False)
            buf = b""
            for chunk in resp.stream(4096):
                buf += chunk
                *complete, buf = buf.split(b"\n")
                self.lines.extend(c.decode(errors="replace") for c in complete)
            if buf:
                self.lines.append(buf.decode(errors="replace"))
        except Exception as exc:  # the pod vanished: keep what was read
            self.lines.append(f'{{"follower_error": "{type(exc).__name__}"}}')

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    def events(self) -> list[dict]:
        import json
        out = []
        for line in self.lines:
            try:
                d = json.loads(line)
            except ValueError:
                continue
            if isinstance(d, dict) and "event" in d:
                out.append(d)
        return out

    def first(self, name: str) -> dict | None:
        return next((e for e in self.events() if e.get("event") == name), None)


def restart_series(timeline: Timeline, t0: float, predicate: Callable[[dict], bool] = is_handler_pod) -> list[tuple[float, int]]:
    """(seconds since t0, total container restarts of matching pods) at each increase."""
    counts: dict[str, int] = {}
    series: list[tuple[float, int]] = [(0.0, 0)]
    for ch in timeline.pod_changes():
        if not predicate(ch.obj):
            continue
        uid = ch.obj["metadata"]["uid"]
        n = restart_count(ch.obj)
        if n > counts.get(uid, 0):
            counts[uid] = n
            series.append((round(ch.t - t0, 3), sum(counts.values())))
    return series


def handler_exit_codes(timeline: Timeline) -> list[int]:
    """The distinct exit codes of every handler container that terminated and restarted."""
    return sorted({(st.get("lastState") or {}).get("terminated", {}).get("exitCode")
                   for pod in timeline.last_pods().values() if is_handler_pod(pod)
                   for st in (pod.get("status") or {}).get("containerStatuses") or []
                   if (st.get("lastState") or {}).get("terminated")})
