"""Database connections and the exit codes shared by every command."""

from __future__ import annotations

import psycopg

# Exit codes of `workload db check` (and of a role refusing to start); see the README.
OK = 0
FAILED = 1
USAGE = 2
BEHIND = 3
AHEAD = 4
UNREACHABLE = 5


class Unreachable(Exception):
    """The database did not accept a connection."""


def connect(url: str, timeout: float = 5.0, autocommit: bool = True, app: str = "workload") -> psycopg.Connection:
    """Open a connection or raise Unreachable with the driver's reason (password never shown)."""
    try:
        return psycopg.connect(url, connect_timeout=max(1, int(timeout)), autocommit=autocommit, application_name=app)
    except psycopg.OperationalError as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise Unreachable(reason) from None
    except psycopg.ProgrammingError as exc:  # malformed URL
        raise Unreachable(f"invalid DATABASE_URL: {exc}") from None
