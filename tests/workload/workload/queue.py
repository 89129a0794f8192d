"""The job queue in PostgreSQL: submit, claim with a lease, renew, complete, requeue.

At-least-once: a claim takes queued jobs and running jobs whose lease expired
(`FOR UPDATE SKIP LOCKED`, so handlers never wait on each other). Every claim is an
attempt (`jobs.attempts`, one `job_attempts` row); completion is fenced by
(lease_owner, attempt), so a handler that lost its lease cannot overwrite the rerun
and completing twice is a no-op.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

import psycopg

KINDS = ("sleep", "cpu", "blocking", "fail")
STATES = ("queued", "running", "done", "failed")


@dataclass(frozen=True)
class Claim:
    """One attempt at one job, owned by this handler until completed or requeued."""

    id: int
    kind: str
    duration: float
    attempt: int


def duration_columns(version: int) -> tuple[str, ...]:
    """The columns a job's duration is written to: v1 `duration`; v2 both (expand); v3
    `duration_seconds` alone (its post-deploy migration drops `duration`)."""
    return {1: ("duration",), 2: ("duration", "duration_seconds")}.get(version, ("duration_seconds",))


def duration_read(version: int, alias: str = "") -> str:
    """The SQL expression a job's duration is read with (v2: the new column first)."""
    p = f"{alias}." if alias else ""
    return {1: f"{p}duration", 2: f"coalesce({p}duration_seconds, {p}duration)"}.get(version, f"{p}duration_seconds")


def insert_job(conn: psycopg.Connection, version: int, kind: str, duration: float, **more: Any) -> int:
    """INSERT one job row with the duration written as `version` writes it; returns its id."""
    cols = ["kind", *duration_columns(version), *more]
    values = [kind, *[duration] * len(duration_columns(version)), *more.values()]
    row = conn.execute(f"INSERT INTO jobs ({', '.join(cols)}) VALUES ({', '.join(['%s'] * len(cols))}) RETURNING id",
                       values).fetchone()
    assert row is not None
    return int(row[0])


def submit(conn: psycopg.Connection, kind: str, duration: float, priority: int | None = None,
           version: int = 1) -> int:
    """Queue a job; returns its id. `priority` needs schema revision 4 (image v2)."""
    if kind not in KINDS:
        raise ValueError(f"unknown job kind {kind!r}; use one of {', '.join(KINDS)}")
    if duration < 0:
        raise ValueError("duration must be >= 0")
    if priority is not None and version >= 2:
        return insert_job(conn, version, kind, duration, priority=priority)
    return insert_job(conn, version, kind, duration)


def claim(conn: psycopg.Connection, owner: str, limit: int, lease: float, version: int = 1) -> list[Claim]:
    """Claim up to `limit` claimable jobs with a lease of `lease` seconds."""
    order = "priority DESC, id" if version >= 2 else "id"
    # One statement (one round trip, atomic in autocommit): pick, lease, record the attempt.
    rows = conn.execute(f"""
        WITH picked AS (
            SELECT id FROM jobs
            WHERE state = 'queued' OR (state = 'running' AND lease_expires < now())
            ORDER BY {order} LIMIT %s FOR UPDATE SKIP LOCKED),
        claimed AS (
            UPDATE jobs j SET state = 'running', attempts = j.attempts + 1, lease_owner = %s,
                              lease_expires = now() + make_interval(secs => %s), started_at = now()
            FROM picked WHERE j.id = picked.id
            RETURNING j.id, j.kind, {duration_read(version, "j")} AS duration, j.attempts),
        logged AS (
            INSERT INTO job_attempts (job_id, attempt, handler) SELECT id, attempts, %s FROM claimed)
        SELECT id, kind, duration, attempts FROM claimed ORDER BY id""",
                        (limit, owner, lease, owner)).fetchall()
    return [Claim(int(r[0]), str(r[1]), float(r[2]), int(r[3])) for r in rows]


def _pairs(claims: Iterable[Claim]) -> tuple[list[int], list[int]]:
    items = list(claims)
    return [c.id for c in items], [c.attempt for c in items]


def renew(conn: psycopg.Connection, owner: str, claims: Iterable[Claim], lease: float) -> set[int]:
    """Extend the leases still held; returns the ids whose lease is still ours."""
    ids, attempts = _pairs(claims)
    if not ids:
        return set()
    rows = conn.execute("""
        UPDATE jobs SET lease_expires = now() + make_interval(secs => %s)
        WHERE (id, attempts) IN (SELECT * FROM unnest(%s::bigint[], %s::int[]))
          AND state = 'running' AND lease_owner = %s
        RETURNING id""", (lease, ids, attempts, owner)).fetchall()
    return {int(r[0]) for r in rows}


def complete(conn: psycopg.Connection, owner: str, job: Claim, ok: bool, error: str | None = None) -> str:
    """Record the end of an attempt; returns 'done', 'failed' or 'stale' (lease lost: no-op)."""
    outcome = "done" if ok else "failed"
    row = conn.execute("""
        WITH fin AS (
            UPDATE jobs SET state = %s, finished_at = now(), finished_by = %s, error = %s,
                            lease_owner = NULL, lease_expires = NULL
            WHERE id = %s AND attempts = %s AND state = 'running' AND lease_owner = %s
            RETURNING id)
        UPDATE job_attempts SET ended_at = now(),
                                outcome = CASE WHEN EXISTS (SELECT 1 FROM fin) THEN %s ELSE 'stale' END
        WHERE job_id = %s AND attempt = %s
        RETURNING outcome""", (outcome, owner, error, job.id, job.attempt, owner, outcome, job.id, job.attempt)
                       ).fetchone()
    return str(row[0]) if row else "stale"


def requeue(conn: psycopg.Connection, owner: str, claims: Iterable[Claim]) -> list[int]:
    """Give jobs back to the queue (drain deadline reached); returns the ids requeued."""
    ids, attempts = _pairs(claims)
    if not ids:
        return []
    with conn.transaction():
        rows = conn.execute("""
            UPDATE jobs SET state = 'queued', lease_owner = NULL, lease_expires = NULL
            WHERE (id, attempts) IN (SELECT * FROM unnest(%s::bigint[], %s::int[]))
              AND state = 'running' AND lease_owner = %s
            RETURNING id""", (ids, attempts, owner)).fetchall()
        done = [int(r[0]) for r in rows]
        conn.execute("""
            UPDATE job_attempts SET ended_at = now(), outcome = 'requeued'
            WHERE (job_id, attempt) IN (SELECT * FROM unnest(%s::bigint[], %s::int[]))
              AND job_id = ANY(%s)""", (ids, attempts, done))
    return done


def get(conn: psycopg.Connection, job_id: int, version: int = 1) -> dict[str, Any] | None:
    """One job as a JSON-friendly dict, or None."""
    cur = conn.execute(f"""SELECT id, kind, {duration_read(version)} AS duration, state, attempts, lease_owner, created_at, started_at,
                                 finished_at, finished_by, error, workflow_id, step
                          FROM jobs WHERE id = %s""", (job_id,))
    row = cur.fetchone()
    if row is None:
        return None
    names = [d.name for d in cur.description or []]
    return {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in zip(names, row)}


def counts(conn: psycopg.Connection) -> dict[str, int]:
    """Jobs per state (every state present, zeros included)."""
    result = {s: 0 for s in STATES}
    for state, n in conn.execute("SELECT state, count(*) FROM jobs GROUP BY state").fetchall():
        result[str(state)] = int(n)
    return result
