"""Where the time between "migration done" and "all handlers Ready" goes (`make bench-kind`).

Sources, finest first:
  * containerd (`crictl inspect` / `inspectp` on the kind node): sandbox created, container
    created / started / finished, in nanoseconds;
  * container log lines with CRI timestamps (`kubectl logs --timestamps`): the migration's
    `migrate_done`, wait-for-migrations' `... ok` line, the handler's `starting` / `started`
    events (the workload also stamps them itself, in milliseconds);
  * the local receive time of watch events (Deployments, ReplicaSets, pods, Jobs, hook
    Secrets and ServiceAccounts), tens of milliseconds behind the API server at most;
  * the API objects' own timestamps (creationTimestamp, condition lastTransitionTime,
    container startedAt/finishedAt), kept as a cross-check: they have second resolution.
Everything runs on one host, so the kind nodes and the bench share one clock.
"""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import threading
from typing import Any, Callable

from jhkind.cluster import Kube, condition, parse_time, pod_ready
from jhkind.observe import Change, Timeline, _Stream, is_handler_pod

WAIT_CONTAINER = "wait-for-migrations"

# (key, label) of the segments, in causal order; each is "previous point -> this point".
HOOK_SEGMENTS = [
    ("job_complete", "migrate_done -> Job Complete (job controller sees the pod exit)"),
    ("deployment_created", "Job Complete -> Deployment created (helm: hook clean-up, release objects)"),
    ("pod_created", "Deployment -> ReplicaSet -> pod created (controllers)"),
    ("scheduled", "pod created -> scheduled"),
    ("sandbox_created", "scheduled -> pod sandbox created (kubelet, CNI)"),
    ("init_started", "sandbox -> wait-for-migrations started"),
    ("check_ok", "wait-for-migrations started -> schema check ok (Python start + query)"),
    ("init_finished", "schema check ok -> init container exited"),
    ("main_started", "init exited -> handler container started (kubelet PLEG + container start)"),
    ("app_starting", "handler container started -> `starting` event (interpreter + imports)"),
    ("app_started", "`starting` -> `started` (connect + schema gate)"),
    ("probe_started", "`started` -> startupProbe passed (probe tick + exec + status)"),
    ("ready", "startupProbe passed -> Ready (readiness run + status)"),
]
GITOPS_SEGMENTS = [("check_ok", "migrate_done -> schema check ok (next wait-for-migrations try)"),
                   *HOOK_SEGMENTS[7:]]
NAIVE_SEGMENTS = [("ready", "migrate_done -> Ready (crash-loop back-off, restart, readiness)")]


class StartupTimeline(Timeline):
    """The scenario Timeline plus watches on the objects helm creates around the hooks."""

    def __init__(self, kube: Kube, namespace: str):
        super().__init__(kube, namespace)
        self.extra = {name: _Stream() for name in ("deployments", "replicasets", "secrets", "serviceaccounts")}
        fns: dict[str, Callable] = {"deployments": kube.apps.list_namespaced_deployment,
                                    "replicasets": kube.apps.list_namespaced_replica_set,
                                    "secrets": kube.core.list_namespaced_secret,
                                    "serviceaccounts": kube.core.list_namespaced_service_account}
        self._threads += [threading.Thread(target=self._run, args=(fn, self.extra[name]), daemon=True)
                          for name, fn in fns.items()]

    def changes(self, name: str) -> list[Change]:
        with self.extra[name].lock:
            return list(self.extra[name].changes)


def _first(changes: list[Change], pred: Callable[[dict], bool], kind: str | None = None) -> float | None:
    for ch in changes:
        if (kind is None or ch.kind == kind) and pred(ch.obj):
            return ch.t
    return None


def _status(pod: dict, name: str | None, init: bool) -> dict:
    key = "initContainerStatuses" if init else "containerStatuses"
    for st in (pod.get("status") or {}).get(key) or []:
        if name is None or st.get("name") == name:
            return st
    return {}


def crictl(node: str, *args: str) -> dict:
    """`crictl <args> -o json` on a kind node (its container is named after the node)."""
    sub, rest = args[0], args[1:]  # crictl reads flags before the arguments only
    out = subprocess.run(["docker", "exec", node, "crictl", sub, "-o", "json", *rest], capture_output=True,
                         text=True, timeout=60)
    if out.returncode != 0:
        return {}
    return json.loads(out.stdout or "{}")


def _cri_times(node: str, container_id: str | None) -> dict[str, float | None]:
    if not node or not container_id:
        return {}
    info = crictl(node, "inspect", container_id.split("://", 1)[-1])
    st = info.get("status") or {}
    out: dict[str, float | None] = {k: parse_time(st.get(f"{k}At")) for k in ("created", "started", "finished")}
    out = {k: (v if v and v > 1e9 else None) for k, v in out.items()}  # 0001-01-01 = not yet
    sandbox = (info.get("info") or {}).get("sandboxID")
    if sandbox:
        sb = crictl(node, "inspectp", sandbox)
        out["sandbox_created"] = parse_time((sb.get("status") or {}).get("createdAt"))
    return out


_TS = re.compile(r"^(\S+) (.*)$")


def log_lines(kube: Kube, ns: str, pod: str, container: str) -> list[tuple[float, str]]:
    """(CRI timestamp, text) of every line of a container's log."""
    try:
        text = kube.core.read_namespaced_pod_log(pod, ns, container=container, timestamps=True)
    except Exception:  # noqa: BLE001 - a missing log is a missing point, not a failure
        return []
    out = []
    for line in text.splitlines():
        m = _TS.match(line)
        if m:
            out.append((parse_time(m.group(1)), m.group(2)))
    return out


def _event_ts(lines: list[tuple[float, str]], name: str) -> float | None:
    """The workload's own millisecond stamp of its first `name` event (else the CRI one)."""
    for t, text in lines:
        if text.startswith("{") and f'"event":"{name}"' in text:
            try:
                return float(json.loads(text)["ts"])
            except (ValueError, KeyError):
                return t
    return None


def migration_points(kube: Kube, ns: str, timeline: Timeline, job: dict) -> dict[str, float | None]:
    """migrate_done (the schema is at head) and the Job's Complete condition."""
    name = job["metadata"]["name"]
    pods = [p for p in kube.pods(ns, f"job-name={name}")]
    out: dict[str, float | None] = {"migrate_done": None}
    for p in pods:
        container = p["spec"]["containers"][0]["name"]
        done = _event_ts(log_lines(kube, ns, p["metadata"]["name"], container), "migrate_done")
        if done and not out["migrate_done"]:
            out["migrate_done"] = done
            st = _status(p, container, False)
            out["container_exited"] = _cri_times(p["spec"].get("nodeName") or "", st.get("containerID")).get("finished")
            uid = p["metadata"]["uid"]
            out["pod_succeeded"] = _first([ch for ch in timeline.pod_changes() if ch.obj["metadata"]["uid"] == uid],
                                          lambda o: (o.get("status") or {}).get("phase") == "Succeeded")

    def cond(ctype: str) -> float | None:
        return _first(timeline.job_changes(), lambda j: j["metadata"]["name"] == name and
                      (condition(j, ctype) or {}).get("status") == "True")
    out["success_criteria_met"] = cond("SuccessCriteriaMet")
    out["job_complete"] = cond("Complete")
    out["job_complete_api"] = parse_time((job.get("status") or {}).get("completionTime"))
    return out


def pod_points(kube: Kube, ns: str, timeline: StartupTimeline, pod: dict) -> dict[str, Any]:
    """The start-up points of one handler pod (epoch seconds; None = not seen)."""
    uid, name = pod["metadata"]["uid"], pod["metadata"]["name"]
    changes = [ch for ch in timeline.pod_changes() if ch.obj["metadata"]["uid"] == uid]
    last = changes[-1].obj if changes else pod
    node = (last.get("spec") or {}).get("nodeName") or ""
    main = last["spec"]["containers"][0]["name"]
    has_init = any(c["name"] == WAIT_CONTAINER for c in last["spec"].get("initContainers") or [])
    rs_name = next((o["name"] for o in last["metadata"].get("ownerReferences") or [] if o["kind"] == "ReplicaSet"), "")
    dep_name = rs_name.rsplit("-", 1)[0]
    pts: dict[str, Any] = {"pod": name, "node": node, "restarts": sum(int(s.get("restartCount") or 0) for s in
                                                                      (last.get("status") or {}).get("containerStatuses") or [])}
    pts["deployment_created"] = _first(timeline.changes("deployments"), lambda d: d["metadata"]["name"] == dep_name, "ADDED")
    pts["replicaset_created"] = _first(timeline.changes("replicasets"), lambda r: r["metadata"]["name"] == rs_name, "ADDED")
    pts["pod_created"] = changes[0].t if changes else None
    pts["scheduled"] = _first(changes, lambda p: bool((p.get("spec") or {}).get("nodeName")))
    pts["probe_started"] = _first(changes, lambda p: bool(_status(p, main, False).get("started")))
    pts["ready"] = _first(changes, pod_ready)
    # the API's own (second-resolution) stamps, for comparison
    pts["api"] = {"pod_created": parse_time(last["metadata"].get("creationTimestamp")),
                  "scheduled": parse_time((condition(last, "PodScheduled") or {}).get("lastTransitionTime")),
                  "ready": parse_time((condition(last, "Ready") or {}).get("lastTransitionTime"))}
    main_st = _status(last, main, False)
    # the first run of the handler container: a restarted one reports lastState
    first_main = main_st.get("lastState", {}).get("terminated") and main_st.get("lastState") or main_st.get("state") or {}
    pts["api"]["main_started"] = parse_time((first_main.get("running") or first_main.get("terminated") or {}).get("startedAt"))
    cri_main = _cri_times(node, main_st.get("containerID"))
    pts["sandbox_created"] = cri_main.get("sandbox_created")
    pts["main_started"] = cri_main.get("started") if not pts["restarts"] else None
    lines = log_lines(kube, ns, name, main)
    pts["app_starting"] = _event_ts(lines, "starting")
    pts["app_started"] = _event_ts(lines, "started")
    if has_init:
        init_st = _status(last, WAIT_CONTAINER, True)
        term = (init_st.get("state") or {}).get("terminated") or {}
        pts["api"]["init_started"] = parse_time(term.get("startedAt"))
        pts["api"]["init_finished"] = parse_time(term.get("finishedAt"))
        cri_init = _cri_times(node, init_st.get("containerID"))
        pts["init_started"] = cri_init.get("started")
        pts["init_finished"] = cri_init.get("finished")
        ok = [t for t, text in log_lines(kube, ns, name, WAIT_CONTAINER) if text.endswith(": ok") or ": ok:" in text]
        pts["check_ok"] = ok[0] if ok else None
        pts["wait_tries"] = len(log_lines(kube, ns, name, WAIT_CONTAINER))
    return pts


def _segments(points: dict[str, Any], order: list[tuple[str, str]], start: float | None) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    prev = start
    for key, _label in order:
        t = points.get(key)
        out[key] = round(t - prev, 3) if t is not None and prev is not None else None
        prev = t if t is not None else prev
    return out


def breakdown(kube: Kube, ns: str, timeline: StartupTimeline, mode: str) -> dict[str, Any]:
    """Per pod points and, for the pod Ready last, the segments from migrate_done to Ready.
    mode: hook | gitops | naive."""
    jobs = [j for j in kube.jobs(ns) if (j["metadata"].get("labels") or {}).get("app.kubernetes.io/component") == "migration"]
    mig = migration_points(kube, ns, timeline, jobs[0]) if jobs else {}
    pods = [p for p in timeline.last_pods().values() if is_handler_pod(p)]
    points = [pod_points(kube, ns, timeline, p) for p in pods]
    ready = [p for p in points if p.get("ready")]
    out: dict[str, Any] = {"mode": mode, "migration": mig, "pods": points}
    if not ready or not mig.get("migrate_done"):
        return out
    last = max(ready, key=lambda p: p["ready"])
    order = {"hook": HOOK_SEGMENTS, "gitops": GITOPS_SEGMENTS}.get(mode, NAIVE_SEGMENTS)
    points_last = {**last, "job_complete": mig.get("job_complete")}
    out["migration_segments"] = _segments(mig, [("container_exited", "migrate_done -> migration container exited"),
                                                ("pod_succeeded", "-> pod Succeeded (kubelet PLEG + status)"),
                                                ("success_criteria_met", "-> Job SuccessCriteriaMet"),
                                                ("job_complete", "-> Job Complete (job controller)")],
                                          mig["migrate_done"])
    out["last_pod"] = last["pod"]
    out["segments"] = _segments(points_last, order, mig["migrate_done"])
    out["migrate_done_to_ready_s"] = round(last["ready"] - mig["migrate_done"], 3)
    if mig.get("job_complete"):
        out["job_complete_to_ready_s"] = round(last["ready"] - mig["job_complete"], 3)
    # the same chain for every pod (how much the pods differ)
    out["per_pod_ready_after_migrate_done_s"] = sorted(round(p["ready"] - mig["migrate_done"], 3) for p in ready)
    return out


def summarize(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Median (and min/max) of each segment over repeated installs of one mode."""
    keys = [k for k, _ in {"hook": HOOK_SEGMENTS, "gitops": GITOPS_SEGMENTS}.get(samples[0]["mode"], NAIVE_SEGMENTS)]
    out: dict[str, Any] = {"mode": samples[0]["mode"], "runs": len(samples), "segments": {}}
    for key in keys:
        vals = [s["segments"][key] for s in samples if s.get("segments") and s["segments"].get(key) is not None]
        if vals:
            out["segments"][key] = {"median": round(statistics.median(vals), 3), "min": min(vals), "max": max(vals)}
    for key in ("migrate_done_to_ready_s", "job_complete_to_ready_s"):
        vals = [s[key] for s in samples if s.get(key) is not None]
        if vals:
            out[key] = {"median": round(statistics.median(vals), 3), "min": min(vals), "max": max(vals),
                        "values": vals}
    return out


def segment_table(summaries: list[dict[str, Any]]) -> str:
    """Markdown: one row per segment, one column per mode (median, min-max)."""
    labels: dict[str, str] = {}
    for order in (GITOPS_SEGMENTS[:1], HOOK_SEGMENTS, NAIVE_SEGMENTS):
        for key, label in order:
            labels.setdefault(key, label)
    labels["check_ok"] = "wait-for-migrations started (hook) / migrate_done (GitOps) -> schema check ok"
    names = [s["mode"] for s in summaries]
    lines = [f"| segment (median of runs, min-max) | {' | '.join(names)} |", "|---" * (len(names) + 1) + "|"]

    def cell(s: dict, key: str) -> str:
        v = s["segments"].get(key) if key in labels else s.get(key)
        if not v:
            return "-"
        return f"{v['median']:.2f} ({v['min']:.2f}-{v['max']:.2f})" if v["min"] != v["max"] else f"{v['median']:.2f}"
    for key in [k for k, _ in HOOK_SEGMENTS]:
        if key == "ready" and any(s["mode"] == "naive" for s in summaries):
            pass
        lines.append(f"| {labels[key]} | {' | '.join(cell(s, key) for s in summaries)} |")
    for key, label in (("migrate_done_to_ready_s", "**migrate_done -> all handlers Ready**"),
                       ("job_complete_to_ready_s", "**migration Job Complete -> all handlers Ready**")):
        lines.append(f"| {label} | {' | '.join(cell(s, key) for s in summaries)} |")
    return "\n".join(lines)
