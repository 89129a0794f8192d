"""The chancy test app (tests/apps/chancy) on the cluster: its values, jobs pushed through
the app itself, what its database says, and real PostgreSQL locks that make its
migrations slow (the lock session is jhkind.locks.hold_lock)."""

from __future__ import annotations

import json
from typing import Any

from .locks import hold_lock  # noqa: F401 - used as pc.hold_lock by the scenarios
from .scenario import Scenario

IMAGE = "jobhandlers/chancy"
APP = ["chancy", "--app", "jhchancy.app.app"]
SCHEMA_CHECK = ("out=$(chancy --app jhchancy.app.app misc check-migrations) || exit 5; "
                "case $out in *✗*) exit 3;; esac")
HEALTH = {"path": "/health", "port": 8000}
# A fresh install's first statement (CREATE TABLE IF NOT EXISTS chancy_schema_version)
# waits behind an uncommitted CREATE of the same table.
FRESH_LOCK = "CREATE TABLE chancy_schema_version (version_of varchar(255) PRIMARY KEY, version int)"
# The v2 migration (ALTER TABLE jh_taskrun ADD worker) waits behind this; running :1
# workers only touch jh_taskrun from a job, so the migration is the first to wait.
UPGRADE_LOCK = "LOCK TABLE jh_taskrun IN ACCESS EXCLUSIVE MODE"


def values(tag: str = "1", replicas: int = 1, max_job_s: int = 30) -> dict[str, Any]:
    """Overrides of the scenario base values for the chancy worker (drain.mode none)."""
    return {
        "image": {"repository": IMAGE, "tag": tag},
        "commands": {
            "migrate": [*APP, "misc", "migrate"],
            "schemaCheck": ["sh", "-c", SCHEMA_CHECK],
            "databaseCheck": ["python3", "-c",
                              "import os, psycopg; psycopg.connect(os.environ['DATABASE_URL']).close()"],
            "drain": None, "undrain": None,
        },
        "drain": {"mode": "none"},
        "env": [{"name": "CHANCY_API_PORT", "value": "8000"}],
        "startupProbe": {"periodSeconds": 2, "failureThreshold": 60, "timeoutSeconds": 5},
        "handlers": {
            "web": {"enabled": False},
            "job": {
                "replicas": replicas, "maxJobRuntimeSeconds": max_job_s, "env": [],
                "resources": {"requests": {"cpu": "10m", "memory": "96Mi"}},
                "command": [*APP, "worker", "start"], "args": [],
                "readinessProbe": {"httpGet": HEALTH, "periodSeconds": 5, "timeoutSeconds": 5,
                                   "failureThreshold": 2},
                "livenessProbe": {"httpGet": HEALTH, "periodSeconds": 5, "timeoutSeconds": 5,
                                  "failureThreshold": 1},
            },
        },
    }


def push(sc: Scenario, pod: str, seconds: list[float]) -> None:
    """Push one sleep_task per entry through the app's own API (one exec, one process)."""
    code = ("import asyncio\nfrom jhchancy.app import app, sleep_task\n"
            "async def main():\n    async with app:\n"
            f"        for s in {json.dumps(seconds)}: await app.push(sleep_task.job.with_kwargs(seconds=s))\n"
            "asyncio.run(main())")
    res = sc.kube.exec(sc.namespace, pod, ["python3", "-c", code], container="job", timeout=120)
    assert res.rc == 0, f"push failed (exit {res.rc}): {res.stderr[-2000:]}"


def job_report(sc: Scenario) -> dict[str, Any]:
    """chancy job states, and task runs without a finish (= lost work)."""
    states = {s: int(n) for s, n in sc.pg.sql(
        sc.database, "SELECT state, count(*) FROM chancy_jobs GROUP BY 1")}
    runs = sc.pg.sql(sc.database, "SELECT count(*), count(*) FILTER (WHERE finished_at IS NULL), "
                                  "count(DISTINCT job_id), count(*) - count(DISTINCT job_id) FROM jh_taskrun")
    total, unfinished, jobs, repeats = (int(x) for x in runs[0])
    return {"states": states, "runs": total, "unfinished_runs": unfinished, "jobs_run": jobs, "reruns": repeats}
