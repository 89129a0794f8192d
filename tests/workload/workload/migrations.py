"""Versioned schema: a small ordered list of migrations, applied under an advisory lock.

Each migration runs in its own transaction together with the row that records it in
`workload_schema_version`, so the recorded revision and the schema never disagree.
The image version (WORKLOAD_VERSION) selects the head: v1 stops at revision 3, v2 adds 4,
v3 adds 5 and 6. Revision 4 is expand-only (a defaulted column, an index and
`jobs.duration_seconds`, which v2 writes next to `jobs.duration`: v1 code works on it) and
carries its `down` SQL, stored with its row when applied, so an older image can undo a
revision it does not know (`workload downgrade`, the chart's pre-rollback hook).

v3 is an expand/contract pair split in two phases (GitLab's pre- and post-deployment
migrations): revision 5 (pre-deploy, expand-only) backfills `duration_seconds`, which v3 alone
reads and writes; revision 6 (post-deploy) drops `jobs.duration`, which v2 still reads and
writes. `migrate --skip-post-deployment` (or SKIP_POST_DEPLOYMENT_MIGRATIONS=true) stops
before it; a v3 image accepts the schema at 5 or 6.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import psycopg

from workload import db, log

# pg_advisory_lock key serializing every `workload migrate` on one database.
LOCK_KEY = 0x6A6F6273  # "jobs"
VERSION_TABLE = "workload_schema_version"


@dataclass(frozen=True)
class Migration:
    """One forward-only schema step."""

    revision: int
    name: str
    sql: str
    down: str | None = None  # SQL that undoes it (stored in the version table when applied)
    expand_only: bool = False  # older code keeps working on the schema with it applied
    post_deploy: bool = False  # contract: runs only once no older code runs (phase 2)


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "jobs", """
        CREATE TABLE jobs (
            id            bigserial PRIMARY KEY,
            kind          text NOT NULL CHECK (kind IN ('sleep', 'cpu', 'blocking', 'fail')),
            duration      double precision NOT NULL DEFAULT 0 CHECK (duration >= 0),
            state         text NOT NULL DEFAULT 'queued'
                          CHECK (state IN ('queued', 'running', 'done', 'failed')),
            attempts      integer NOT NULL DEFAULT 0,
            lease_owner   text,
            lease_expires timestamptz,
            created_at    timestamptz NOT NULL DEFAULT now(),
            started_at    timestamptz,
            finished_at   timestamptz,
            finished_by   text,
            error         text
        );
        CREATE INDEX jobs_open ON jobs (id) WHERE state IN ('queued', 'running');
    """),
    Migration(2, "job_attempts", """
        CREATE TABLE job_attempts (
            job_id     bigint NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
            attempt    integer NOT NULL,
            handler    text NOT NULL,
            claimed_at timestamptz NOT NULL DEFAULT now(),
            ended_at   timestamptz,
            outcome    text CHECK (outcome IN ('done', 'failed', 'stale', 'requeued')),
            PRIMARY KEY (job_id, attempt)
        );
    """),
    Migration(3, "workflows", """
        CREATE TABLE workflows (
            id            bigserial PRIMARY KEY,
            steps         integer NOT NULL CHECK (steps >= 1),
            step_kind     text NOT NULL DEFAULT 'sleep',
            step_duration double precision NOT NULL DEFAULT 0,
            state         text NOT NULL DEFAULT 'new'
                          CHECK (state IN ('new', 'running', 'done', 'failed')),
            current_step  integer NOT NULL DEFAULT 0,
            created_at    timestamptz NOT NULL DEFAULT now(),
            finished_at   timestamptz
        );
        ALTER TABLE jobs ADD COLUMN workflow_id bigint REFERENCES workflows (id),
                         ADD COLUMN step integer;
        CREATE UNIQUE INDEX jobs_workflow_step ON jobs (workflow_id, step) WHERE workflow_id IS NOT NULL;
    """),
    Migration(4, "job_priority", """
        ALTER TABLE jobs ADD COLUMN priority integer NOT NULL DEFAULT 0,
                         ADD COLUMN duration_seconds double precision CHECK (duration_seconds >= 0);
        CREATE INDEX jobs_open_priority ON jobs (priority DESC, id) WHERE state IN ('queued', 'running');
    """, down="""
        DROP INDEX IF EXISTS jobs_open_priority;
        ALTER TABLE jobs DROP COLUMN IF EXISTS priority, DROP COLUMN IF EXISTS duration_seconds;
    """, expand_only=True),
    Migration(5, "job_duration_backfill", """
        UPDATE jobs SET duration_seconds = duration WHERE duration_seconds IS NULL;
    """, down="SELECT 'the backfill needs no undo'", expand_only=True),
    Migration(6, "drop_job_duration", """
        ALTER TABLE jobs DROP COLUMN duration;
    """, down="""
        ALTER TABLE jobs ADD COLUMN duration double precision NOT NULL DEFAULT 0 CHECK (duration >= 0);
        UPDATE jobs SET duration = coalesce(duration_seconds, 0);
    """, post_deploy=True),
)

# Schema head per image version.
HEADS: dict[int, int] = {1: 3, 2: 4, 3: 6}


class MigrationError(Exception):
    """A migration could not be applied; carries the exit code."""

    def __init__(self, message: str, code: int = db.FAILED) -> None:
        super().__init__(message)
        self.code = code


def compatible_ahead(current: int, target: int) -> bool:
    """Every revision above this image's head is one this code base knows as expand-only
    (an older image accepts it only when the newer image recorded it so)."""
    known = {m.revision: m for m in MIGRATIONS}
    return all(known.get(r) is not None and known[r].expand_only for r in range(target + 1, current + 1))


def head(version: int) -> int:
    """The schema revision image `version` expects once both phases ran."""
    return HEADS[version]


def pre_deploy_head(version: int) -> int:
    """The last revision of `version`'s pre-deploy phase: just below its first post-deploy
    migration (its head when it has none). The image runs from there on."""
    previous = HEADS.get(version - 1, 0)
    post = [m.revision for m in MIGRATIONS if previous < m.revision <= HEADS[version] and m.post_deploy]
    return min(post) - 1 if post else HEADS[version]


def current_revision(conn: psycopg.Connection) -> int:
    """The highest applied revision; 0 for an empty database."""
    exists = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (VERSION_TABLE,)).fetchone()
    if not exists or not exists[0]:
        return 0
    row = conn.execute(f"SELECT coalesce(max(revision), 0) FROM {VERSION_TABLE}").fetchone()
    return int(row[0]) if row else 0


def describe(current: int, target: int, pre: int | None = None) -> tuple[int, str]:
    """(exit code, message) comparing the database revision with this image's head `target`
    (and its pre-deploy head `pre`: from there on the image runs, post-deploy pending)."""
    pre = target if pre is None else pre
    if current == target:
        return db.OK, f"database schema at revision {current}, this image's head"
    if pre <= current < target:
        return db.OK, (f"database schema at revision {current}, this image's pre-deploy head "
                       f"(post-deploy migrations up to {target} pending)")
    if current < pre:
        return db.BEHIND, (f"database schema at revision {current}, behind this image's head {pre}: "
                           "run `workload migrate` (the chart's migration Job) first")
    return db.AHEAD, (f"database schema at revision {current}, ahead of this image's head {target}: "
                      "this image is older than the schema; deploy the newer image (downgrades are not supported)")


def check(url: str, target: int, timeout: float = 5.0, pre: int | None = None) -> tuple[int, str]:
    """`workload db check`: (code, message); never raises for database trouble."""
    try:
        with db.connect(url, timeout, app="workload-check") as conn:
            return describe(current_revision(conn), target, pre)
    except db.Unreachable as exc:
        return db.UNREACHABLE, f"database unreachable: {exc}"
    except psycopg.Error as exc:
        return db.UNREACHABLE, f"database error while reading the schema revision: {exc}"


def migrate(url: str, target: int, slow: float = 0.0, fail: bool = False, timeout: float = 5.0,
            upto: int | None = None) -> int:
    """Apply every pending migration up to `upto` (default `target`, the image's head: a
    database above it is refused); returns the revision reached.

    Serialized by a session advisory lock: concurrent runs wait, then find nothing to do.
    `slow` sleeps that long before the last pending migration (the schema visibly stays
    behind meanwhile); `fail` makes the last pending migration fail and roll back.
    """
    try:
        conn = db.connect(url, timeout, app="workload-migrate")
    except db.Unreachable as exc:
        raise MigrationError(f"database unreachable: {exc}", db.UNREACHABLE) from None
    with conn:
        try:
            return _migrate_locked(conn, target, slow, fail, target if upto is None else upto)
        except psycopg.OperationalError as exc:
            raise MigrationError(f"lost the database connection while migrating: {exc}", db.UNREACHABLE) from None
        except psycopg.Error as exc:
            raise MigrationError(f"migration failed: {exc}") from None


def _migrate_locked(conn: psycopg.Connection, target: int, slow: float, fail: bool, upto: int) -> int:
    got = conn.execute("SELECT pg_try_advisory_lock(%s)", (LOCK_KEY,)).fetchone()
    if not (got and got[0]):
        log.event("migration_lock_wait", lock=LOCK_KEY)
        conn.execute("SELECT pg_advisory_lock(%s)", (LOCK_KEY,))
    log.event("migration_lock_acquired", lock=LOCK_KEY)
    try:
        _ensure_version_table(conn)
        current = current_revision(conn)
        if current > target:
            raise MigrationError(describe(current, target)[1], db.AHEAD)
        pending = [m for m in MIGRATIONS if current < m.revision <= upto]
        skipped = [m.revision for m in MIGRATIONS if max(current, upto) < m.revision <= target]
        if skipped:
            log.event("post_deploy_skipped", revisions=skipped)
        if not pending:
            log.event("migration_noop", revision=current, head=target)
            return current
        for index, step in enumerate(pending):
            last = index == len(pending) - 1
            if last and slow > 0:
                log.event("migration_slow", revision=step.revision, seconds=slow)
                time.sleep(slow)
            with conn.transaction():
                conn.execute(step.sql)
                conn.execute(f"INSERT INTO {VERSION_TABLE} (revision, name, down_sql) VALUES (%s, %s, %s)",
                             (step.revision, step.name, step.down))
                if last and fail:
                    raise MigrationError(f"migration {step.revision} ({step.name}) failed on purpose "
                                         "(WORKLOAD_MIGRATE_FAIL); rolled back")
            log.event("migration_applied", revision=step.revision, name=step.name)
        return pending[-1].revision
    finally:
        if not conn.closed and not conn.broken:
            conn.execute("SELECT pg_advisory_unlock(%s)", (LOCK_KEY,))


def _ensure_version_table(conn: psycopg.Connection) -> None:
    conn.execute(f"""CREATE TABLE IF NOT EXISTS {VERSION_TABLE} (
                         revision   integer PRIMARY KEY,
                         name       text NOT NULL,
                         applied_at timestamptz NOT NULL DEFAULT now())""")
    conn.execute(f"ALTER TABLE {VERSION_TABLE} ADD COLUMN IF NOT EXISTS down_sql text")


def downgrade(url: str, target: int, timeout: float = 5.0) -> tuple[int, int]:
    """Undo every applied revision above `target`, newest first, with the down SQL stored
    in its row (so an older image can undo what a newer one applied). Under the migration
    lock; each step in its own transaction with the removal of its row.
    Returns (revision before, revision after)."""
    try:
        conn = db.connect(url, timeout, app="workload-downgrade")
    except db.Unreachable as exc:
        raise MigrationError(f"database unreachable: {exc}", db.UNREACHABLE) from None
    with conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (LOCK_KEY,))
        try:
            before = current_revision(conn)
            if before <= target:
                log.event("downgrade_noop", revision=before, head=target)
                return before, before
            _ensure_version_table(conn)
            rows = conn.execute(f"SELECT revision, name, down_sql FROM {VERSION_TABLE} WHERE revision > %s "
                                "ORDER BY revision DESC", (target,)).fetchall()
            for revision, name, down in rows:
                if not down:
                    raise MigrationError(f"revision {revision} ({name}) recorded no down SQL: it cannot be undone; "
                                         "roll forward instead", db.FAILED)
                with conn.transaction():
                    conn.execute(down)
                    conn.execute(f"DELETE FROM {VERSION_TABLE} WHERE revision = %s", (revision,))
                log.event("downgrade_applied", revision=revision, name=name)
            return before, current_revision(conn)
        except psycopg.Error as exc:
            raise MigrationError(f"downgrade failed: {exc}") from None
        finally:
            if not conn.closed and not conn.broken:
                conn.execute("SELECT pg_advisory_unlock(%s)", (LOCK_KEY,))
