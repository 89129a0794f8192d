"""The huey test app (tests/apps/huey) on the cluster: its values (drain.mode signal INT +
waitForExit, or the naive SIGTERM-only contrast), tasks enqueued through the app itself,
and what its database says (huey's `task` queue table, our jhtasks_taskrun rows)."""

from __future__ import annotations

import json
from typing import Any

from .locks import hold_lock  # noqa: F401 - used as hy.hold_lock by the scenarios
from .scenario import Scenario

IMAGE = "jobhandlers/huey"
DB_READY = ["python3", "-c", "import os, psycopg2; psycopg2.connect(os.environ['DATABASE_URL'], connect_timeout=3).close()"]
HAS_WORKERS = ["sh", "-c", 'test -n "$(cat /proc/1/task/1/children)"']
# A fresh install's first app migration (jhtasks 0001: CREATE TABLE jhtasks_taskrun, then
# huey's tables) waits behind an uncommitted CREATE of the same table.
FRESH_LOCK = "CREATE TABLE jhtasks_taskrun (id int)"
SIGNAL_DRAIN = {"mode": "signal", "signal": "INT", "waitForExit": True}
NAIVE_DRAIN = {"mode": "none"}
# the kubelet itself sends SIGINT (lifecycle.stopSignal, ContainerStopSignals on in kind-up):
# no preStop kill, no signal adapter
STOP_SIGNAL_DRAIN = {"mode": "none", "stopSignal": "INT", "stopSignalFeatureGate": True}


def values(drain: dict[str, Any], replicas: int = 2, max_job_s: int = 30) -> dict[str, Any]:
    """Overrides of the scenario base values for the huey consumer (2 process workers)."""
    return {
        "image": {"repository": IMAGE, "tag": "1"},
        "commands": {
            "migrate": ["django-admin", "migrate", "--noinput"],
            "schemaCheck": ["django-admin", "migrate", "--check"],
            "databaseCheck": ["django-admin", "shell", "-c",
                              "from django.db import connection; connection.ensure_connection()"],
            "drain": None, "undrain": None,
        },
        "drain": drain,
        "env": [{"name": "DJANGO_SETTINGS_MODULE", "value": "jhhuey.settings"}],
        "startupProbe": {"periodSeconds": 2, "failureThreshold": 60, "timeoutSeconds": 10},
        "handlers": {
            "web": {"enabled": False},
            "job": {
                "replicas": replicas, "maxJobRuntimeSeconds": max_job_s, "env": [],
                "resources": {"requests": {"cpu": "10m", "memory": "96Mi"}},
                "command": ["django-admin", "run_huey"],
                "args": ["--workers", "2", "--worker-type", "process", "--delay", "0.2", "--max-delay", "1",
                         "--shutdown-timeout=$(DRAIN_DEADLINE_SECONDS)"],
                "readinessProbe": {"exec": {"command": DB_READY}, "periodSeconds": 5,
                                   "timeoutSeconds": 10, "failureThreshold": 2},
                "livenessProbe": {"exec": {"command": HAS_WORKERS}, "periodSeconds": 5,
                                  "timeoutSeconds": 5, "failureThreshold": 3},
            },
        },
    }


def enqueue(sc: Scenario, pod: str, seconds: list[float]) -> None:
    """Enqueue one sleep_task per entry through huey's own API (one exec, one process)."""
    code = f"from jhtasks.tasks import sleep_task\nfor s in {json.dumps(seconds)}: sleep_task(s)"
    res = sc.kube.exec(sc.namespace, pod, ["django-admin", "shell", "-c", code], container="job", timeout=120)
    assert res.rc == 0, f"enqueue failed (exit {res.rc}): {res.stderr[-2000:]}"


def job_report(sc: Scenario, live_pods: set[str] | None = None) -> dict[str, Any]:
    """huey's queue length, and task runs: finished, unfinished (on a pod not in live_pods =
    interrupted: huey drops it), distinct tasks run, reruns."""
    queued = int(sc.pg.sql(sc.database, "SELECT count(*) FROM task")[0][0])
    rows = sc.pg.sql(sc.database, "SELECT task_id, worker, finished_at IS NOT NULL FROM jhtasks_taskrun")
    finished = {r[0] for r in rows if str(r[2]).lower() in ("t", "true")}
    unfinished = [r for r in rows if str(r[2]).lower() not in ("t", "true")]
    dead = [r for r in unfinished if live_pods is not None and r[1].split(":")[0] not in live_pods]
    return {"queued": queued, "runs": len(rows), "finished": len(finished), "unfinished_runs": len(unfinished),
            "interrupted_runs": len(dead), "jobs_run": len({r[0] for r in rows}),
            "reruns": len(rows) - len({r[0] for r in rows})}
