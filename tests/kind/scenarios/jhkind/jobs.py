"""What the reference workload's database says about jobs (read with SQL, never mocked)."""

from __future__ import annotations

from dataclasses import dataclass

from .postgres import Postgres


@dataclass
class Attempt:
    job_id: int
    attempt: int
    handler: str  # "<pod name>:<pid>"
    claimed_at: float
    ended_at: float | None
    outcome: str | None

    @property
    def pod(self) -> str:
        return self.handler.rsplit(":", 1)[0]


def _f(value: str) -> float | None:
    return float(value) if value not in ("", None) else None


class JobsDb:
    """Queries on one scenario database."""

    def __init__(self, pg: Postgres, database: str):
        self.pg = pg
        self.database = database

    def schema_revision(self) -> int:
        rows = self.pg.sql(self.database, "SELECT coalesce(max(revision), 0) FROM workload_schema_version")
        return int(rows[0][0])

    def revision_applied_at(self, revision: int) -> float:
        """Database time the migration to `revision` was committed (its transaction's now())."""
        rows = self.pg.sql(self.database, f"""SELECT extract(epoch FROM applied_at) FROM workload_schema_version
                                               WHERE revision = {int(revision)}""")
        if not rows:
            raise AssertionError(f"schema revision {revision} was never applied")
        return float(rows[0][0])

    def states(self) -> dict[str, int]:
        out = {"queued": 0, "running": 0, "done": 0, "failed": 0}
        for state, n in self.pg.sql(self.database, "SELECT state, count(*) FROM jobs GROUP BY state"):
            out[state] = int(n)
        return out

    def job(self, job_id: int) -> dict:
        rows = self.pg.sql(self.database, f"""
            SELECT state, attempts, coalesce(lease_owner, ''), coalesce(extract(epoch FROM lease_expires)::text, ''),
                   coalesce(finished_by, '') FROM jobs WHERE id = {int(job_id)}""")
        if not rows:
            raise AssertionError(f"job {job_id} does not exist")
        state, attempts, owner, expires, finished_by = rows[0]
        return {"state": state, "attempts": int(attempts), "lease_owner": owner,
                "lease_expires": _f(expires), "finished_by": finished_by}

    def attempts(self, job_ids: list[int] | None = None) -> list[Attempt]:
        where = f"WHERE job_id = ANY(ARRAY[{','.join(str(int(i)) for i in job_ids)}]::bigint[])" if job_ids else ""
        rows = self.pg.sql(self.database, f"""
            SELECT job_id, attempt, handler, extract(epoch FROM claimed_at),
                   coalesce(extract(epoch FROM ended_at)::text, ''), coalesce(outcome, '')
            FROM job_attempts {where} ORDER BY job_id, attempt""")
        return [Attempt(int(j), int(a), h, float(c), _f(e), o or None) for j, a, h, c, e, o in rows]

    def now(self) -> float:
        return float(self.pg.sql(self.database, "SELECT extract(epoch FROM clock_timestamp())")[0][0])

    def report(self, job_ids: list[int]) -> dict:
        """Lost, reruns and duplicate completions among `job_ids`."""
        ids = ",".join(str(int(i)) for i in job_ids)
        rows = self.pg.sql(self.database, f"""
            SELECT id, state, attempts FROM jobs WHERE id = ANY(ARRAY[{ids}]::bigint[])""")
        by_state: dict[str, int] = {}
        reruns = 0
        for _id, state, attempts in rows:
            by_state[state] = by_state.get(state, 0) + 1
            reruns += int(attempts) > 1
        outcomes: dict[str, int] = {}
        done_per_job: dict[int, int] = {}
        for a in self.attempts(job_ids):
            outcomes[a.outcome or "open"] = outcomes.get(a.outcome or "open", 0) + 1
            if a.outcome == "done":
                done_per_job[a.job_id] = done_per_job.get(a.job_id, 0) + 1
        return {
            "jobs": len(job_ids),
            "done": by_state.get("done", 0),
            "lost": len(job_ids) - by_state.get("done", 0),
            "states": by_state,
            "reruns": reruns,  # jobs claimed more than once (at-least-once duplicates of work)
            "duplicate_completions": sum(1 for n in done_per_job.values() if n > 1),
            "attempt_outcomes": outcomes,
        }
