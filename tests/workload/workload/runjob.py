"""`workload run-job <id>`: the body of a launched Kubernetes Job. Takes the job over from the
handler that claimed it (fenced: only while it is still `running`), runs its work exactly as
an in-process handler does, and records the outcome. Exit 0 done (or nothing to do), 1 failed."""

from __future__ import annotations

import os
import time

from workload import db, launchq, log
from workload.config import ConfigError, database_url, image_version
from workload.handler import execute
from workload.jobspec import ENV_JOB_NAME
from workload.queue import Claim


def run_job(job_id: int) -> int:
    name = os.environ.get(ENV_JOB_NAME, "").strip()
    if not name:
        raise ConfigError(f"{ENV_JOB_NAME} is not set; run-job runs inside a Job the launcher created")
    owner = f"k8s-job:{name}"
    by = os.environ.get("WORKLOAD_HANDLER_ID", "").strip() or name
    log.bind(role="run-job", handler=by, job=job_id)
    with db.connect(database_url(), app="workload-run-job") as conn:
        launched = launchq.take(conn, job_id, owner, image_version())
        if launched is None:
            log.event("run_skipped", reason="job is not running (finished, or failed by the launcher)")
            return db.OK
        log.event("run_started", kind=launched.kind, duration=launched.duration, attempt=launched.attempt)
        t0 = time.monotonic()
        try:
            ok, error = execute(Claim(launched.id, launched.kind, launched.duration, launched.attempt))
        except Exception as exc:  # noqa: BLE001 - a job's failure is recorded, not raised
            ok, error = False, f"{type(exc).__name__}: {exc}"
    # a fresh connection: a job can outlast the server's idle timeouts
    with db.connect(database_url(), app="workload-run-job") as conn:
        outcome = launchq.finish(conn, job_id, owner, ok, error, by)
    log.event("finished", outcome=outcome, seconds=round(time.monotonic() - t0, 3),
              level="info" if outcome == "done" else "warning")
    return db.OK if outcome in ("done", "stale") else db.FAILED
