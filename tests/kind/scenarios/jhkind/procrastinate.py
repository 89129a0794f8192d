"""The procrastinate test app (tests/apps/procrastinate) on the cluster: its values, jobs
deferred through the app itself, what its database says, and real PostgreSQL locks that
make its migrations slow."""

from __future__ import annotations

import json
import threading
from typing import Any

from .scenario import Scenario

IMAGE = "jobhandlers/procrastinate"
HEALTHCHECKS = ["django-admin", "procrastinate", "healthchecks"]
# A fresh install's first migration (jhtasks 0001: CREATE TABLE jhtasks_taskrun, run before
# procrastinate's own) waits behind an uncommitted CREATE of the same table.
FRESH_LOCK = "CREATE TABLE jhtasks_taskrun (id int)"
# The v2 migration (ALTER TABLE jhtasks_taskrun ADD worker) waits behind this.
UPGRADE_LOCK = "LOCK TABLE jhtasks_taskrun IN ACCESS EXCLUSIVE MODE"


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
                "replicas": replicas, "maxJobRuntimeSeconds": max_job_s, "env": [],
                "resources": {"requests": {"cpu": "10m", "memory": "96Mi"}},
                "command": ["django-admin", "procrastinate", "worker"],
                "args": [f"--concurrency={concurrency}", "--shutdown-graceful-timeout=$(DRAIN_DEADLINE_SECONDS)"],
                "readinessProbe": {"exec": {"command": HEALTHCHECKS}, "periodSeconds": 5,
                                   "timeoutSeconds": 10, "failureThreshold": 2},
                "livenessProbe": {"exec": {"command": HEALTHCHECKS}, "periodSeconds": 5,
                                  "timeoutSeconds": 10, "failureThreshold": 1},
            },
        },
    }


def hold_lock(sc: Scenario, statement: str, seconds: float, timeout: float = 240) -> threading.Thread:
    """In a thread: one psql session runs `statement` in an open transaction, waits until
    another backend of the scenario database waits on a lock (the migration), keeps the
    lock `seconds` longer, rolls back. The result lands in thread.result / thread.error."""
    polls = int(timeout / 0.2)
    sql = f"""BEGIN; {statement};
DO $$ DECLARE n int := 0; BEGIN
  LOOP
    PERFORM pg_stat_clear_snapshot();
    EXIT WHEN EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database()
                      AND wait_event_type = 'Lock' AND pid <> pg_backend_pid());
    n := n + 1;
    IF n > {polls} THEN RAISE EXCEPTION 'nothing waited on the lock within {timeout:g} s'; END IF;
    PERFORM pg_sleep(0.2);
  END LOOP;
  PERFORM pg_sleep({seconds:g});
END $$;
ROLLBACK;"""

    def body() -> None:
        try:
            t.result = sc.pg.sql(sc.database, sql, timeout=timeout + seconds + 30)  # type: ignore[attr-defined]
        except Exception as exc:  # reported by the test
            t.error = exc  # type: ignore[attr-defined]

    t = threading.Thread(target=body, daemon=True, name="pg-lock")
    t.error = None  # type: ignore[attr-defined]
    t.start()
    return t


def defer(sc: Scenario, pod: str, seconds: list[float]) -> None:
    """Defer one sleep_task per entry through the app's own API (one exec, one process)."""
    code = ("from jhtasks.tasks import sleep_task\n"
            f"for s in {json.dumps(seconds)}: sleep_task.defer(seconds=s)")
    res = sc.kube.exec(sc.namespace, pod, ["django-admin", "shell", "-c", code], container="job", timeout=120)
    assert res.rc == 0, f"defer failed (exit {res.rc}): {res.stderr[-2000:]}"


def job_report(sc: Scenario) -> dict[str, Any]:
    """procrastinate job states, and task runs without a finish (= lost work)."""
    states = {s: int(n) for s, n in sc.pg.sql(
        sc.database, "SELECT status::text, count(*) FROM procrastinate_jobs GROUP BY 1")}
    runs = sc.pg.sql(sc.database, "SELECT count(*), count(*) FILTER (WHERE finished_at IS NULL), "
                                  "count(DISTINCT job_id), count(*) - count(DISTINCT job_id) FROM jhtasks_taskrun")
    total, unfinished, jobs, repeats = (int(x) for x in runs[0])
    return {"states": states, "runs": total, "unfinished_runs": unfinished, "jobs_run": jobs, "reruns": repeats}
