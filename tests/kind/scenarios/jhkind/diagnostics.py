"""What a failed scenario prints: pod states, events, Jobs, helm status and every log."""

from __future__ import annotations

import json
import time

from .cluster import Kube, event_time, job_state, restart_count


def container_line(st: dict) -> str:
    state = st.get("state") or {}
    (name, detail), = state.items() if state else (("unknown", {}),)
    extra = ""
    if detail:
        extra = " ".join(f"{k}={detail[k]}" for k in ("reason", "exitCode", "startedAt", "finishedAt") if k in detail)
    last = (st.get("lastState") or {}).get("terminated")
    last_s = f" last=[exit {last.get('exitCode')} {last.get('reason')} {last.get('finishedAt')}]" if last else ""
    return f"    {st.get('name')}: ready={st.get('ready')} restarts={st.get('restartCount')} {name} {extra}{last_s}"


def dump_namespace(kube: Kube, namespace: str, helm_status: dict | None = None, log_tail: int = 80) -> str:
    """A human-readable dump of the namespace (returned and printed)."""
    out: list[str] = [f"===== diagnostics for namespace {namespace} at {time.strftime('%H:%M:%S')} ====="]
    try:
        pods = kube.pods(namespace)
    except Exception as exc:  # the dump must never hide the original failure
        out.append(f"cannot list pods: {exc!r}")
        pods = []
    out.append("--- pods")
    for pod in pods:
        meta, status = pod["metadata"], pod.get("status") or {}
        conds = ",".join(f"{c['type']}={c['status']}" for c in status.get("conditions") or [])
        out.append(f"  {meta['name']} phase={status.get('phase')} restarts={restart_count(pod)} "
                   f"deleting={'yes' if meta.get('deletionTimestamp') else 'no'} [{conds}]")
        for st in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
            out.append(container_line(st))
    out.append("--- jobs")
    try:
        for job in kube.jobs(namespace):
            st = job.get("status") or {}
            conds = ",".join(f"{c['type']}={c['status']}" for c in st.get("conditions") or [])
            out.append(f"  {job['metadata']['name']} state={job_state(job)} succeeded={st.get('succeeded')} "
                       f"failed={st.get('failed')} [{conds}]")
    except Exception as exc:
        out.append(f"cannot list jobs: {exc!r}")
    out.append("--- events")
    try:
        for ev in kube.events(namespace):
            obj = ev.get("involvedObject") or {}
            out.append(f"  {time.strftime('%H:%M:%S', time.gmtime(event_time(ev)))} {ev.get('type')} "
                       f"{obj.get('kind')}/{obj.get('name')} {ev.get('reason')}: {(ev.get('message') or '').strip()}"
                       f"{' x' + str(ev.get('count')) if (ev.get('count') or 1) > 1 else ''}")
    except Exception as exc:
        out.append(f"cannot list events: {exc!r}")
    if helm_status is not None:
        out.append("--- helm status")
        info = helm_status.get("info", helm_status)
        out.append("  " + json.dumps({k: info.get(k) for k in ("status", "description")} if isinstance(info, dict) else info))
    out.append("--- logs")
    for pod in pods:
        spec = pod.get("spec") or {}
        status = pod.get("status") or {}
        restarted = {s["name"] for s in (status.get("containerStatuses") or []) + (status.get("initContainerStatuses") or [])
                     if s.get("restartCount")}
        for c in (spec.get("initContainers") or []) + (spec.get("containers") or []):
            text = kube.logs(namespace, pod["metadata"]["name"], c["name"])
            lines = text.splitlines()[-log_tail:]
            out.append(f"  -- {pod['metadata']['name']}/{c['name']} ({len(lines)} last lines)")
            out.extend("     " + ln for ln in lines)
            if c["name"] in restarted:
                prev = kube.logs(namespace, pod["metadata"]["name"], c["name"], previous=True).splitlines()[-log_tail:]
                out.append(f"  -- {pod['metadata']['name']}/{c['name']} previous container")
                out.extend("     " + ln for ln in prev)
    out.append(f"===== end of diagnostics for {namespace} =====")
    text = "\n".join(out)
    print(text, flush=True)
    return text
