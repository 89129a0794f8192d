"""Migrations and schema checks against a real PostgreSQL server."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from typing import Any

import psycopg
import pytest

from wl_harness import HERE, free_port, workload_env
from workload import migrations


def fingerprint(url: str) -> list[tuple[Any, ...]]:
    """Tables, columns, indexes and constraints of the public schema (minus applied_at)."""
    with psycopg.connect(url) as conn:
        cols = conn.execute("""SELECT table_name, column_name, data_type, is_nullable, column_default
                               FROM information_schema.columns WHERE table_schema = 'public'
                               ORDER BY 1, 2""").fetchall()
        idx = conn.execute("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY 1").fetchall()
        cons = conn.execute("""SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint
                               WHERE connamespace = 'public'::regnamespace ORDER BY 1""").fetchall()
        versions = conn.execute("SELECT revision, name FROM workload_schema_version ORDER BY 1").fetchall()
    return [*cols, *idx, *cons, *versions]


def revision(url: str) -> int:
    with psycopg.connect(url) as conn:
        return migrations.current_revision(conn)


@pytest.mark.parametrize("version,head", [(1, 3), (2, 4)])
def test_migrate_from_empty_reaches_the_image_head(dburl: str, cli: Any, version: int, head: int) -> None:
    result = cli(dburl, "migrate", version=version)
    assert result.returncode == 0, result.stderr
    assert revision(dburl) == head
    assert '"event":"migrate_done"' in result.stdout
    check = cli(dburl, "db", "check", version=version)
    assert check.returncode == 0 and "this image's head" in check.stdout
    again = cli(dburl, "migrate", version=version)
    assert again.returncode == 0 and '"event":"migration_noop"' in again.stdout
    assert revision(dburl) == head


def test_migrate_from_every_older_revision_matches_a_fresh_schema(pg: Any, cli: Any) -> None:
    fresh = pg.create_database()
    assert cli(fresh, "migrate", version=2).returncode == 0
    expected = fingerprint(fresh)
    for start in range(0, 4):
        url = pg.create_database()
        if start:
            assert migrations.migrate(url, start) == start
        assert revision(url) == start
        result = cli(url, "migrate", version=2)
        assert result.returncode == 0, result.stderr
        applied = [r for r in range(start + 1, 5)]
        assert [int(x.split('"revision":')[1].split(",")[0]) for x in result.stdout.splitlines()
                if '"migration_applied"' in x] == applied
        assert fingerprint(url) == expected, f"schema migrated from revision {start} differs from a fresh one"
        pg.drop_database(url)
    pg.drop_database(fresh)


def test_four_concurrent_migrations_all_succeed_once(dburl: str, tmp_path: Any) -> None:
    env = workload_env(dburl, tmp_path / "s", 2)
    procs = [subprocess.Popen([sys.executable, "-m", "workload", "migrate", "--slow", "1"], env=env, cwd=HERE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(4)]
    outputs = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], [o[1] for o in outputs]
    applied = [line for out, _ in outputs for line in out.splitlines() if '"migration_applied"' in line]
    assert len(applied) == 4, "each of the 4 revisions must be applied exactly once across the 4 runs"
    winners = [out for out, _ in outputs if '"migration_applied"' in out]
    assert len(winners) == 1, "one run applies everything, the others find nothing pending"
    assert sum('"migration_noop"' in out for out, _ in outputs) == 3
    assert revision(dburl) == 4
    with psycopg.connect(dburl) as conn:
        rows = conn.execute("SELECT revision FROM workload_schema_version ORDER BY 1").fetchall()
    assert [r[0] for r in rows] == [1, 2, 3, 4]


def test_slow_migration_keeps_the_schema_behind_until_it_commits(dburl: str, cli: Any, spawn: Any) -> None:
    assert cli(dburl, "migrate", version=1).returncode == 0
    proc = spawn(dburl, "migrate", "--slow", "4", version=2)
    proc.wait_event("migration_slow")
    waiter = spawn(dburl, "db", "wait", "--timeout", "60", "--interval", "0.2", version=2)
    # While it sleeps the v1 handlers still see their schema; the v2 check says "behind".
    assert migrations.check(dburl, migrations.head(2))[0] == 3
    assert migrations.check(dburl, migrations.head(1))[0] == 0
    assert proc.proc.poll() is None, "checks must run while the migration is still sleeping"
    assert waiter.wait(60) == 0
    out = waiter.output()
    assert out.index("behind this image's head 4") < out.index("revision 4, this image's head")
    assert proc.wait(30) == 0
    assert cli(dburl, "db", "check", version=1).returncode == 4


def test_failed_migration_rolls_back_and_a_retry_succeeds(migrated: str, cli: Any) -> None:
    failed = cli(migrated, "migrate", version=2, WORKLOAD_MIGRATE_FAIL="1")
    assert failed.returncode == 1
    assert "failed on purpose" in failed.stderr and "Traceback" not in failed.stderr
    assert revision(migrated) == 3
    with psycopg.connect(migrated) as conn:
        cols = [r[0] for r in conn.execute("SELECT column_name FROM information_schema.columns "
                                           "WHERE table_name = 'jobs'").fetchall()]
    assert "priority" not in cols, "the failed migration's DDL must be rolled back"
    assert cli(migrated, "migrate", version=2).returncode == 0
    assert revision(migrated) == 4


def test_migrate_refuses_a_database_ahead_of_the_image(migrated: str, cli: Any) -> None:
    assert cli(migrated, "migrate", version=2).returncode == 0
    result = cli(migrated, "migrate", version=1)
    assert result.returncode == 4
    assert "ahead of this image's head 3" in result.stderr
    assert revision(migrated) == 4


def test_db_check_exit_codes(dburl: str, cli: Any) -> None:
    empty = cli(dburl, "db", "check", version=1)
    assert empty.returncode == 3 and "revision 0, behind" in empty.stderr
    migrations.migrate(dburl, 3)
    assert cli(dburl, "db", "check", version=1).returncode == 0
    behind = cli(dburl, "db", "check", version=2)
    assert behind.returncode == 3 and "behind this image's head 4" in behind.stderr
    migrations.migrate(dburl, 4)
    ahead = cli(dburl, "db", "check", version=1)
    assert ahead.returncode == 4 and "ahead of this image's head 3" in ahead.stderr
    assert cli(dburl, "db", "ping").returncode == 0


def test_db_check_ping_and_wait_report_an_unreachable_database(cli: Any) -> None:
    port = free_port()
    with socket.socket() as s:  # nothing listens on this port
        s.bind(("127.0.0.1", port))
        url = f"postgresql://postgres@127.0.0.1:{port}/jobs"
        check = cli(url, "db", "check")
        assert check.returncode == 5 and "database unreachable" in check.stderr
        ping = cli(url, "db", "ping")
        assert ping.returncode == 5 and "unreachable" in ping.stderr
        t0 = time.monotonic()
        wait = cli(url, "db", "wait", "--timeout", "1", "--interval", "0.3")
        assert wait.returncode == 5 and "gave up after 1 s" in wait.stderr
        assert time.monotonic() - t0 < 15
        migrate = cli(url, "migrate")
        assert migrate.returncode == 5 and "Traceback" not in migrate.stderr


def test_unusable_configuration_exits_2_with_the_fix(cli: Any, dburl: str) -> None:
    no_url = cli("", "db", "check")
    assert no_url.returncode == 2 and "DATABASE_URL is not set" in no_url.stderr
    bad_version = cli(dburl, "db", "check", version=7)
    assert bad_version.returncode == 2 and "WORKLOAD_VERSION='7'" in bad_version.stderr
    bad_number = cli(dburl, "job", WORKLOAD_LEASE_SECONDS="soon")
    assert bad_number.returncode == 2 and "WORKLOAD_LEASE_SECONDS='soon' is not a number" in bad_number.stderr
    for r in (no_url, bad_version, bad_number):
        assert "Traceback" not in r.stderr


def test_v1_downgrades_what_v2_applied_and_is_back_at_its_head(dburl: str, cli: Any) -> None:
    """v2 records revision 4 with its down SQL; the v1 image (which does not know revision 4's
    code) undoes it from the stored SQL: the pre-rollback hook's job."""
    assert cli(dburl, "migrate", version=1).returncode == 0
    v1_schema = fingerprint(dburl)
    assert cli(dburl, "migrate", version=2).returncode == 0 and revision(dburl) == 4
    assert cli(dburl, "db", "check", version=1).returncode == 4  # ahead of v1
    down = cli(dburl, "downgrade", version=1)
    assert down.returncode == 0, down.stderr
    assert "schema revision 4 -> 3" in down.stdout
    assert revision(dburl) == 3 and fingerprint(dburl) == v1_schema
    assert cli(dburl, "db", "check", version=1).returncode == 0
    again = cli(dburl, "downgrade", version=1)
    assert again.returncode == 0 and "schema revision 3 -> 3" in again.stdout


def test_v1_handler_accepts_an_expand_only_schema_only_when_told(dburl: str, cli: Any) -> None:
    from workload import db as wdb
    assert cli(dburl, "migrate", version=2).returncode == 0
    assert not migrations.compatible_ahead(4, 4 - 2)  # revision 3 is not expand-only
    assert migrations.compatible_ahead(4, 3)
    assert wdb.AHEAD == 4
