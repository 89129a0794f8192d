"""Real PostgreSQL locks that hold a migration up, for any app's scenarios: one psql session
keeps a lock while the migration waits on it (never a sleep in the app)."""

from __future__ import annotations

import threading

from .scenario import Scenario


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


def lock_done(lock: threading.Thread, seconds: float) -> None:
    """The lock session of hold_lock(.., seconds) ended without error."""
    lock.join(seconds + 300)
    assert not lock.is_alive(), "the lock session never ended"
    assert lock.error is None, f"the lock session failed: {lock.error}"  # type: ignore[attr-defined]
