"""`workload workflow`: turns workflow records into chained jobs, one step after another.

Each tick locks open workflows (`FOR UPDATE SKIP LOCKED`, so several workflow handlers
share the work) and, in one transaction per batch: queues step 1 of a new workflow, queues
step n+1 when step n is done, or closes the workflow. A unique (workflow_id, step) index
makes a repeated tick harmless.
"""

from __future__ import annotations

import psycopg

from workload import log, queue
from workload.loop import Loop


def submit(conn: psycopg.Connection, steps: int, kind: str = "sleep", duration: float = 0.0) -> int:
    """Create a workflow of `steps` chained jobs; returns its id."""
    if steps < 1:
        raise ValueError("steps must be >= 1")
    row = conn.execute("INSERT INTO workflows (steps, step_kind, step_duration) VALUES (%s, %s, %s) RETURNING id",
                       (steps, kind, duration)).fetchone()
    assert row is not None
    return int(row[0])


def advance(conn: psycopg.Connection, batch: int = 50, version: int = 1) -> list[tuple[int, str, int]]:
    """One pass over open workflows; returns (workflow, action, step) for each change."""
    changes: list[tuple[int, str, int]] = []
    with conn.transaction():
        rows = conn.execute("""
            SELECT w.id, w.steps, w.step_kind, w.step_duration, w.state, w.current_step, j.state
            FROM workflows w
            LEFT JOIN jobs j ON j.workflow_id = w.id AND j.step = w.current_step
            WHERE w.state IN ('new', 'running')
            ORDER BY w.id LIMIT %s
            FOR UPDATE OF w SKIP LOCKED""", (batch,)).fetchall()
        for wid, steps, kind, duration, state, step, job_state in rows:
            if state == "new" or job_state == "done" and step < steps:
                nxt = step + 1
                cols = ["kind", *queue.duration_columns(version), "workflow_id", "step"]
                conn.execute(f"""INSERT INTO jobs ({', '.join(cols)}) VALUES ({', '.join(['%s'] * len(cols))})
                                 ON CONFLICT (workflow_id, step) WHERE workflow_id IS NOT NULL DO NOTHING""",
                             (kind, *[duration] * len(queue.duration_columns(version)), wid, nxt))
                conn.execute("UPDATE workflows SET state = 'running', current_step = %s WHERE id = %s", (nxt, wid))
                changes.append((wid, "step_queued", nxt))
            elif job_state in ("done", "failed"):
                final = "done" if job_state == "done" else "failed"
                conn.execute("UPDATE workflows SET state = %s, finished_at = now() WHERE id = %s", (final, wid))
                changes.append((wid, f"workflow_{final}", step))
    return changes


class WorkflowHandler(Loop):
    """The workflow role."""

    role = "workflow"

    def iteration(self, claiming: bool) -> None:
        if not claiming:
            self.connection().execute("SELECT 1")  # drained: still prove the database answers
            return
        for wid, action, step in advance(self.connection(), version=self.settings.version):
            log.event(action, workflow=wid, step=step)
