"""The queue side of launcher mode: hand a claimed job over to its Kubernetes Job, find the
jobs owned by Jobs, and record the end of a launched run (fenced by the Job's owner tag).

A launched job is `running` with `lease_owner = 'k8s-job:<job name>'` and no lease expiry:
the lease query never reclaims it (only the launcher's adoption decides its fate), so a
handler that is gone for longer than a lease does not cause a second run.
"""

from __future__ import annotations

from dataclasses import dataclass

import psycopg

from workload.queue import duration_read


@dataclass(frozen=True)
class Launched:
    """A job as its Kubernetes Job's pod sees it."""

    id: int
    kind: str
    duration: float
    attempt: int


def hand_over(conn: psycopg.Connection, job_id: int, owner: str) -> bool:
    """The job now belongs to its Kubernetes Job (`owner`); False when it is no longer running."""
    row = conn.execute("""UPDATE jobs SET lease_owner = %s, lease_expires = NULL
                          WHERE id = %s AND state = 'running' RETURNING id""", (owner, job_id)).fetchone()
    return row is not None


def take(conn: psycopg.Connection, job_id: int, owner: str, version: int) -> Launched | None:
    """`run-job`'s start: hand over (the handler may have died before it could) and read the
    job; None when it is not running (already finished, or failed by the launcher)."""
    row = conn.execute(f"""UPDATE jobs SET lease_owner = %s, lease_expires = NULL
                           WHERE id = %s AND state = 'running'
                           RETURNING id, kind, {duration_read(version)}, attempts""", (owner, job_id)).fetchone()
    return Launched(int(row[0]), str(row[1]), float(row[2]), int(row[3])) if row else None


def finish(conn: psycopg.Connection, job_id: int, owner: str, ok: bool, error: str | None, by: str) -> str:
    """Record the end of the launched run; 'done', 'failed' or 'stale' (no longer ours: no-op)."""
    outcome = "done" if ok else "failed"
    row = conn.execute("""
        WITH fin AS (
            UPDATE jobs SET state = %s, finished_at = now(), finished_by = %s, error = %s,
                            lease_owner = NULL, lease_expires = NULL
            WHERE id = %s AND state = 'running' AND lease_owner = %s
            RETURNING id, attempts)
        UPDATE job_attempts a SET ended_at = now(), outcome = %s
        FROM fin WHERE a.job_id = fin.id AND a.attempt = fin.attempts
        RETURNING a.outcome""", (outcome, by, error, job_id, owner, outcome)).fetchone()
    return str(row[0]) if row else "stale"


def owned(conn: psycopg.Connection, owner_prefix: str) -> dict[int, str]:
    """Running jobs owned by a Kubernetes Job of this launcher: id -> owner."""
    rows = conn.execute("""SELECT id, lease_owner FROM jobs
                           WHERE state = 'running' AND lease_expires IS NULL AND lease_owner LIKE %s""",
                        (owner_prefix.replace("%", r"\%").replace("_", r"\_") + "%",)).fetchall()
    return {int(r[0]): str(r[1]) for r in rows}


def state(conn: psycopg.Connection, job_id: int) -> tuple[str, str | None] | None:
    """(state, lease_owner) of one job, or None."""
    row = conn.execute("SELECT state, lease_owner FROM jobs WHERE id = %s", (job_id,)).fetchone()
    return (str(row[0]), row[1]) if row else None
