"""The procrastinate test app (tests/apps/procrastinate) on the cluster: its values, jobs
deferred through the app itself, what its database says, and real PostgreSQL locks that
make its migrations slow."""

from __future__ import annotations

import json
from typing import Any

from .locks import hold_lock  # noqa: F401 - used as pc.hold_lock by the scenarios
from .scenario import Scenario

IMAGE = "jobhandlers/procrastinate"
HEALTHCHECKS = ["django-admin", "procrastinate", "healthchecks"]
# A fresh install's first migration (jhtasks 0001: CREATE TABLE jhtasks_taskrun, run before
# procrastinate's own) waits behind an uncommitted CREATE of the same table.
FRESH_LOCK = "CREATE TABLE jhtasks_taskrun (id int)"
# The v2 migration (ALTER TABLE jhtasks_taskrun ADD worker) waits behind this.
UPGRADE_LOCK = "LOCK TABLE jhtasks_taskrun IN ACCESS EXCLUSIVE MODE"
# The worker's own heartbeat (a DEBUG log line every 10 s from its event loop), sent to a
# file by the app's settings (WORKER_HEARTBEAT_LOG): the liveness signal, as in
# values-examples/procrastinate.yaml. healthchecks cannot see a wedged loop.
HEARTBEAT_LOG = "worker-heartbeat.log"
LIVENESS_MAX_AGE = 25
LIVENESS_GRACE = 10


def values(tag: str = "1", concurrency: int = 4, replicas: int = 1, max_job_s: int = 30) -> dict[str, Any]:
    """Overrides of the scenario base values for the procrastinate worker (drain.mode none)."""
    return {
        "image": {"repository": IMAGE, "tag": tag},
        "commands": {
            "migrate": ["django-admin", "migrate", "--noinput"],
            "schemaCheck": ["django-admin", "migrate", "--check"],
            "databaseCheck": ["django-admin", "shell", "-c",
                              "from django.db import connection; connection.ensure_connection()"],
            "drain": None, "undrain": None,
        },
        "drain": {"mode": "none"},
        "env": [{"name": "DJANGO_SETTINGS_MODULE", "value": "jhproc.settings"}],
        "startupProbe": {"periodSeconds": 2, "failureThreshold": 60, "timeoutSeconds": 10},
        "handlers": {
            "web": {"enabled": False},
            "job": {
                "replicas": replicas, "maxJobRuntimeSeconds": max_job_s,
                "env": [{"name": "WORKER_HEARTBEAT_LOG", "value": f"$(JOBHANDLERS_STATE_DIR)/{HEARTBEAT_LOG}"}],
                "resources": {"requests": {"cpu": "10m", "memory": "96Mi"}},
                "command": ["django-admin", "procrastinate", "worker"],
                "args": [f"--concurrency={concurrency}", "--shutdown-graceful-timeout=$(DRAIN_DEADLINE_SECONDS)"],
                # one interpreter start per probe (~0.4 CPU-s): every 10 s, not 5 (the example: 15)
                "readinessProbe": {"exec": {"command": HEALTHCHECKS}, "periodSeconds": 10,
                                   "timeoutSeconds": 10, "failureThreshold": 1},
                # window 25 + 5 x 1 = 30 s >= 3 x readiness (10 x 1): JH002. The probe is sh + stat,
                # but on a saturated node its exec can take seconds: with failureThreshold 1, a 2 s
                # timeout restarted a healthy worker (stop 47's ci10: 5c and 5d, side by side); 5 s,
                # as the example's
                "livenessProbe": {"heartbeat": {"path": HEARTBEAT_LOG, "maxAgeSeconds": LIVENESS_MAX_AGE},
                                  "periodSeconds": 5, "timeoutSeconds": 5, "failureThreshold": 1,
                                  "terminationGracePeriodSeconds": LIVENESS_GRACE},
                # started = the worker's loop has logged since this container started
                "startupProbe": {"heartbeat": {"path": HEARTBEAT_LOG}},
            },
        },
    }


def defer(sc: Scenario, pod: str, seconds: list[float]) -> None:
    """Defer one sleep_task per entry through the app's own API (one exec, one process)."""
    code = ("from jhtasks.tasks import sleep_task\n"
            f"for s in {json.dumps(seconds)}: sleep_task.defer(seconds=s)")
    res = sc.kube.exec(sc.namespace, pod, ["django-admin", "shell", "-c", code], container="job", timeout=120)
    assert res.rc == 0, f"defer failed (exit {res.rc}): {res.stderr[-2000:]}"


def defer_wedge(sc: Scenario, pod: str) -> None:
    """Defer the test app's `wedge` task: an async task that blocks the worker's event loop."""
    res = sc.kube.exec(sc.namespace, pod, ["django-admin", "procrastinate", "defer", "wedge"], container="job",
                       timeout=120)
    assert res.rc == 0, f"defer wedge failed (exit {res.rc}): {res.stderr[-2000:]}"


def job_report(sc: Scenario) -> dict[str, Any]:
    """procrastinate job states, and task runs without a finish (= lost work)."""
    states = {s: int(n) for s, n in sc.pg.sql(
        sc.database, "SELECT status::text, count(*) FROM procrastinate_jobs GROUP BY 1")}
    runs = sc.pg.sql(sc.database, "SELECT count(*), count(*) FILTER (WHERE finished_at IS NULL), "
                                  "count(DISTINCT job_id), count(*) - count(DISTINCT job_id) FROM jhtasks_taskrun")
    total, unfinished, jobs, repeats = (int(x) for x in runs[0])
    return {"states": states, "runs": total, "unfinished_runs": unfinished, "jobs_run": jobs, "reruns": repeats}
