"""Launcher mode on the reference workload: the Kubernetes Jobs and pods a launcher created
(seen on the timeline), jobs queued straight into the database, and the handlers' log events."""

from __future__ import annotations

from .cluster import restart_count
from .observe import LogFollower, Timeline

LABEL_LAUNCHER = "workload.jobhandlers.io/launcher"
LABEL_JOB_ID = "workload.jobhandlers.io/job-id"


def launch_env(secret: str, prefix: str, image: str, **extra: str) -> list[dict]:
    """The job role's env for launcher mode (the chart mounts the token; these say what to launch)."""
    env = {"WORKLOAD_LAUNCH": "job", "WORKLOAD_LAUNCH_IMAGE": image, "WORKLOAD_LAUNCH_PREFIX": prefix,
           "WORKLOAD_LAUNCH_DB_SECRET": secret, "WORKLOAD_LAUNCH_DB_SECRET_KEY": "DATABASE_URL", **extra}
    return [{"name": k, "value": v} for k, v in env.items()]


def _job_id(obj: dict) -> int | None:
    value = ((obj.get("metadata") or {}).get("labels") or {}).get(LABEL_JOB_ID)
    return int(value) if value else None


def jobs_created(timeline: Timeline) -> dict[int, set[str]]:
    """job id -> uids of every Kubernetes Job ever seen for it."""
    out: dict[int, set[str]] = {}
    for ch in timeline.job_changes():
        jid = _job_id(ch.obj)
        if jid is not None:
            out.setdefault(jid, set()).add(ch.obj["metadata"]["uid"])
    return out


def job_pods(timeline: Timeline) -> dict[int, dict[str, dict]]:
    """job id -> {pod uid: last seen pod} of the launched pods."""
    out: dict[int, dict[str, dict]] = {}
    for uid, pod in timeline.last_pods().items():
        jid = _job_id(pod)
        if jid is not None:
            out.setdefault(jid, {})[uid] = pod
    return out


def pod_restarts(pods: dict[int, dict[str, dict]]) -> int:
    return sum(restart_count(p) for by_uid in pods.values() for p in by_uid.values())


def events(followers: list[LogFollower], name: str) -> list[dict]:
    return [e for f in followers for e in f.events() if e.get("event") == name]


def launcher_manifest(namespace: str, prefix: str, image: str, secret: str, job_id: int, attempt: int,
                      duration: float, launched_by: str) -> dict:
    """The very Job the launcher would create (the workload's own `jobspec`, from tests/workload)."""
    import sys

    from .helm import ROOT

    path = str(ROOT / "tests" / "workload")
    if path not in sys.path:
        sys.path.insert(0, path)
    from workload.jobspec import LaunchSettings, job_manifest

    env = {"WORKLOAD_LAUNCH_IMAGE": image, "WORKLOAD_LAUNCH_DB_SECRET": secret, "WORKLOAD_LAUNCH_PREFIX": prefix}
    return job_manifest(LaunchSettings.from_env(env, 1, namespace), job_id, attempt, duration, launched_by)
