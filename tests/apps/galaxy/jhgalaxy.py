#!/usr/bin/env python3
"""Thin wrappers around Galaxy's own APIs for the jobhandlers chart (no Galaxy logic here).

  jhgalaxy migrate        create the schema from empty or upgrade it: Galaxy's
                          verify_databases_via_script (what `manage_db.sh init` runs) with
                          database_auto_migrate on, under a PostgreSQL advisory lock; a
                          session idle in a transaction that blocks it for
                          JHGALAXY_BREAK_IDLE_SECONDS (10) is terminated
  jhgalaxy schema-check   exit 0 at head, 3 behind, 4 ahead, 5 unreachable (Galaxy's
                          AlembicManager: database revisions against the code's heads,
                          branches gxy and tsi)
  jhgalaxy schema-wait    the same check polled in one process (importing galaxy.model
                          costs ~8 s CPU) until 0, 4 or WAIT_TIMEOUT_SECONDS; exit code as
                          schema-check (4 = 0 with JOBHANDLERS_SCHEMA_ACCEPT_AHEAD=1)
  jhgalaxy db-ping        exit 0 once the database accepts connections, else 5
  jhgalaxy heads          write the code's heads (AlembicManager's, per branch) to
                          JHGALAXY_HEADS (the image build runs it: no database needed)
  jhgalaxy exec PROG ...  exec PROG (gunicorn, galaxy-main) with the environment below

The fast path: most pods start on a schema already at head, where importing Galaxy only to hear
"at head" costs a pod ~6 s of CPU. When JHGALAXY_HEADS (/opt/galaxy/schema-heads.json) exists and
the database is the chart's DATABASE_URL, schema-check and schema-wait first read the database's
alembic_version rows with psycopg alone: rows equal to the heads Galaxy reported at build time are
"at head" (exit 0); anything else (behind, ahead, empty, an install database of its own) is
decided by Galaxy's AlembicManager as before. db-ping with DATABASE_URL connects with psycopg
alone (Galaxy would read the same URL: the override beats galaxy.yml).

Environment: GALAXY_CONFIG_FILE (galaxy.yml), DATABASE_URL (the chart's postgresql:// URL,
given to Galaxy as GALAXY_CONFIG_OVERRIDE_DATABASE_CONNECTION with the psycopg 3 driver),
JOBHANDLERS_STATE_DIR (when set, Galaxy's heartbeat log goes there).
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, NoReturn, Sequence

OK, BEHIND, AHEAD, UNREACHABLE = 0, 3, 4, 5
# pg_advisory_lock key of `migrate`: "jhgalaxy" as 8 bytes
LOCK_KEY = int.from_bytes(b"jhgalaxy", "big") & 0x7FFFFFFFFFFFFFFF
MODELS = ("gxy", "tsi")
HEADS_FILE = "/opt/galaxy/schema-heads.json"  # JHGALAXY_HEADS
PG_SCHEMES = ("postgres", "postgresql")  # what the chart's DATABASE_URL may start with


def heads_path() -> str:
    """Where `heads` writes and the fast path reads the image's heads (JHGALAXY_HEADS, else HEADS_FILE)."""
    return os.environ.get("JHGALAXY_HEADS", HEADS_FILE)


def pg_url_rest(url: str) -> str | None:
    """What follows the scheme of a postgres:// or postgresql:// URL, else None."""
    scheme, sep, rest = url.partition("://")
    return rest if sep and scheme in PG_SCHEMES else None


def galaxy_env(env: dict[str, str]) -> dict[str, str]:
    """Galaxy's environment from the chart's: database URL, heartbeat log path."""
    env = dict(env)
    env.setdefault("GALAXY_CONFIG_FILE", "config/galaxy.yml")
    url = env.get("DATABASE_URL", "")
    if url and "GALAXY_CONFIG_OVERRIDE_DATABASE_CONNECTION" not in env:
        rest = pg_url_rest(url)
        if rest is not None:
            url = f"postgresql+psycopg://{rest}"
        env["GALAXY_CONFIG_OVERRIDE_DATABASE_CONNECTION"] = url
    state = env.get("JOBHANDLERS_STATE_DIR")
    if state and "GALAXY_CONFIG_OVERRIDE_HEARTBEAT_LOG" not in env:
        env["GALAXY_CONFIG_OVERRIDE_HEARTBEAT_LOG"] = os.path.join(state, "heartbeat_{server_name}.log")
    return env


def database_urls() -> tuple[Any, Any]:
    """Galaxy's own reading of galaxy.yml + GALAXY_CONFIG_*: (gxy, tsi) DatabaseConfig."""
    from galaxy.model.migrations.scripts import get_configuration_from_file

    gxy, tsi, _ = get_configuration_from_file(os.getcwd(), os.environ["GALAXY_CONFIG_FILE"])
    return gxy, tsi


def engine_for(url: str) -> Any:
    from sqlalchemy import create_engine

    return create_engine(url, connect_args={"connect_timeout": 5}, pool_pre_ping=True)


# Sessions of the migration carry this application_name, so the watchdog finds their waits.
MIGRATE_APP = "jhgalaxy-migrate"
# A statement of the migration waiting this long on a lock held by a session that is idle in a
# transaction (not running a query): that session is terminated (JHGALAXY_BREAK_IDLE_SECONDS).
BREAK_IDLE_SECONDS = 10.0
BLOCKERS = """
SELECT DISTINCT b.pid, coalesce(host(b.client_addr), 'local'), b.application_name,
       round(extract(epoch FROM now() - b.state_change)), left(regexp_replace(b.query, '\\s+', ' ', 'g'), 160),
       round(extract(epoch FROM now() - a.query_start)), left(regexp_replace(a.query, '\\s+', ' ', 'g'), 120)
FROM pg_stat_activity a
CROSS JOIN LATERAL unnest(pg_blocking_pids(a.pid)) AS blocker(pid)
JOIN pg_stat_activity b ON b.pid = blocker.pid
WHERE a.datname = current_database() AND a.application_name = :app AND a.wait_event_type = 'Lock'
  AND now() - a.query_start >= make_interval(secs => :wait)
  AND b.application_name <> :app AND b.state IN ('idle in transaction', 'idle in transaction (aborted)')
"""


def with_app_name(url: str, app: str) -> str:
    """The database URL with application_name=app in its query string."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k != "application_name"] + [("application_name", app)]
    return urlunsplit(parts._replace(query=urlencode(query)))


def break_idle_blockers(engine: Any, stop: Any, wait: float) -> None:
    """Until stop is set: terminate the sessions that are idle in a transaction while a statement
    of the migration has waited `wait` s for their locks. An older Galaxy's processes keep
    transactions open between queries (a 25.1 workflow scheduler: minutes), so the migration's
    ALTER TABLE would wait for ever while every later query on that table queues behind it.
    The terminated process gets a connection error on its next query and reconnects; its pod
    is replaced by the rollout that follows the migration."""
    from sqlalchemy import text

    while not stop.wait(2.0):
        try:
            with engine.connect() as conn:
                rows = conn.execute(text(BLOCKERS), {"app": MIGRATE_APP, "wait": wait}).fetchall()
                for pid, client, app, idle, query, waited, waiting in rows:
                    conn.execute(text("SELECT pg_terminate_backend(:p)"), {"p": pid})
                    print(f"jhgalaxy migrate: terminated session {pid} (client {client}, application {app!r}, "
                          f"idle in transaction {idle:.0f}s after: {query}): the migration waited {waited:.0f}s "
                          f"for its lock in: {waiting}", flush=True)
                conn.commit()
        except Exception as e:  # the watchdog must not end the migration
            print(f"jhgalaxy migrate: watchdog: {type(e).__name__}: {e}", file=sys.stderr, flush=True)


def migrate() -> int:
    """Create or upgrade both schemas; a second concurrent run waits, then finds them at head."""
    import threading

    from sqlalchemy import text
    from sqlalchemy.exc import OperationalError

    from galaxy.model.migrations import verify_databases_via_script

    key = "GALAXY_CONFIG_OVERRIDE_DATABASE_CONNECTION"
    if os.environ.get(key):
        os.environ[key] = with_app_name(os.environ[key], MIGRATE_APP)
    gxy, tsi = database_urls()
    engine = engine_for(gxy.url)
    try:
        conn = engine.connect()
    except OperationalError as e:
        print(f"jhgalaxy migrate: database unreachable: {e.orig}", file=sys.stderr)
        return UNREACHABLE
    with conn:
        t0 = time.monotonic()
        conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": LOCK_KEY})
        conn.commit()
        waited = time.monotonic() - t0
        stop = threading.Event()
        watchdog = threading.Thread(target=break_idle_blockers, daemon=True, args=(
            engine, stop, float(os.environ.get("JHGALAXY_BREAK_IDLE_SECONDS", BREAK_IDLE_SECONDS))))
        watchdog.start()
        try:
            verify_databases_via_script(gxy, tsi, is_auto_migrate=True)
        finally:
            stop.set()
            watchdog.join(timeout=10)
            conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": LOCK_KEY})
            conn.commit()
    engine.dispose()
    rc, msg = check_once()
    print(f"jhgalaxy migrate: waited {waited:.1f}s for the lock; {msg}")
    return rc


def model_state(engine: Any, model: str) -> tuple[int, str]:
    """(code, message) of one model: its revision in the database against the code's head."""
    from alembic.util.exc import CommandError

    from galaxy.model.migrations import AlembicManager

    am = AlembicManager(engine)
    head = am.get_model_script_head(model)
    for rev in am.db_heads or []:
        try:
            am.script_directory.get_revision(rev)
        except CommandError:
            return AHEAD, f"{model}: database at {rev}, unknown to this Galaxy (head {head}): a newer one migrated it"
    db_rev = am.get_model_db_head(model)
    if db_rev is None:
        return BEHIND, f"{model}: no revision in the database (head {head})"
    if db_rev == head:
        return OK, f"{model}: at head {head}"
    return BEHIND, f"{model}: database at {db_rev}, behind head {head}"


def check_once(engine: Any = None) -> tuple[int, str]:
    """(exit code, message) of both models; 5 when the database does not answer."""
    from sqlalchemy.exc import OperationalError

    own = engine is None
    if own:
        engine = engine_for(database_urls()[0].url)
    try:
        results = [model_state(engine, m) for m in MODELS]
    except OperationalError as e:
        return UNREACHABLE, f"database unreachable: {str(e.orig).strip().splitlines()[0]}"
    finally:
        if own:
            engine.dispose()
    code = max(r for r, _ in results)
    return code, "; ".join(m for _, m in results)


def schema_check() -> int:
    code, msg = fast_state() or check_once()
    print(msg, file=sys.stdout if code == OK else sys.stderr)
    return code


def schema_wait(timeout: float, interval: float) -> int:
    """At head by the fast path, or poll check_once in this process until at head (or ahead), or
    until timeout."""
    accept_ahead = os.environ.get("JOBHANDLERS_SCHEMA_ACCEPT_AHEAD") == "1"
    fast = fast_state()
    if fast is not None:
        print(f"jhgalaxy schema-wait: try 1 after 0s: ok: {fast[1]}")
        return OK
    gxy, _ = database_urls()
    engine = engine_for(gxy.url)
    t0 = time.monotonic()
    tries = 0
    while True:
        tries += 1
        code, msg = check_once(engine)
        elapsed = time.monotonic() - t0
        if code == OK or (code == AHEAD and accept_ahead):
            print(f"jhgalaxy schema-wait: try {tries} after {elapsed:.0f}s: ok: {msg}")
            return OK
        print(f"jhgalaxy schema-wait: try {tries} after {elapsed:.0f}s: exit {code}: {msg}", file=sys.stderr)
        if code == AHEAD:
            print("jhgalaxy schema-wait: the schema is ahead of this image: roll forward", file=sys.stderr)
            return AHEAD
        if elapsed >= timeout:
            print(f"jhgalaxy schema-wait: TIMEOUT after {elapsed:.0f}s (limit {timeout:.0f}s)", file=sys.stderr)
            return code
        time.sleep(interval)


def chart_url() -> str | None:
    """The chart's postgresql:// URL when Galaxy's database is that one alone (DATABASE_URL, no
    install database of its own), else None: then only Galaxy's reading of its config will do."""
    url = os.environ.get("DATABASE_URL", "")
    if pg_url_rest(url) is None:
        return None
    if os.environ.get("GALAXY_CONFIG_OVERRIDE_INSTALL_DATABASE_CONNECTION"):
        return None
    return url


def write_heads(path: str) -> int:
    """The code's heads per branch, from Galaxy's AlembicManager (its script directory: an
    in-memory SQLite engine, never connected), to path (temp file, then rename)."""
    from sqlalchemy import create_engine

    from galaxy.model.migrations import AlembicManager

    am = AlembicManager(create_engine("sqlite://"))
    heads = {m: am.get_model_script_head(m) for m in MODELS}
    if not all(heads.values()):
        print(f"jhgalaxy heads: no head for a branch: {heads}", file=sys.stderr)
        return 1
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(heads, f)
    os.replace(tmp, path)
    print(f"jhgalaxy heads: {heads} -> {path}")
    return OK


def fast_state() -> tuple[int, str] | None:
    """(OK, message) when the database's revisions are the heads Galaxy reported at build time,
    read with psycopg alone; None when that cannot be said (no heads file, not the chart's URL,
    unreachable, or any other revision set): Galaxy decides then."""
    url = chart_url()
    path = heads_path()
    if url is None or not os.path.isfile(path):
        return None
    with open(path) as f:
        heads: dict[str, str] = json.load(f)
    import psycopg

    try:
        with psycopg.connect(url, connect_timeout=5) as conn:
            rows = conn.execute("SELECT version_num FROM alembic_version").fetchall()
    except psycopg.Error:
        return None
    if sorted(r[0] for r in rows) != sorted(heads[m] for m in MODELS):
        return None
    return OK, "; ".join(f"{m}: at head {heads[m]}" for m in MODELS) + " (the heads of this image's build)"


def db_ping() -> int:
    url = chart_url()
    if url is not None:
        import psycopg

        try:
            psycopg.connect(url, connect_timeout=5).close()
        except psycopg.Error as e:
            print(f"database unreachable: {(str(e).strip() or type(e).__name__).splitlines()[0]}", file=sys.stderr)
            return UNREACHABLE
        return OK
    from sqlalchemy import text
    from sqlalchemy.exc import OperationalError

    engine = engine_for(database_urls()[0].url)
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except OperationalError as e:
        print(f"database unreachable: {str(e.orig).strip().splitlines()[0]}", file=sys.stderr)
        return UNREACHABLE
    finally:
        engine.dispose()
    return OK


def usage() -> NoReturn:
    print(__doc__, file=sys.stderr)
    sys.exit(2)


def main(argv: Sequence[str]) -> int:
    if not argv:
        usage()
    cmd, rest = argv[0], list(argv[1:])
    os.environ.update(galaxy_env(dict(os.environ)))
    if cmd == "exec":
        if not rest:
            usage()
        os.execvp(rest[0], rest)
    if rest and cmd not in ("schema-wait", "heads"):
        usage()
    if cmd == "migrate":
        return migrate()
    if cmd == "schema-check":
        return schema_check()
    if cmd == "schema-wait":
        timeout = float(rest[0]) if rest else float(os.environ.get("WAIT_TIMEOUT_SECONDS", "600"))
        return schema_wait(timeout, float(os.environ.get("JHGALAXY_WAIT_INTERVAL", "2")))
    if cmd == "db-ping":
        return db_ping()
    if cmd == "heads":
        return write_heads(rest[0] if rest else heads_path())
    usage()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
