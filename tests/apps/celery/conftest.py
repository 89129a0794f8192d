"""Fixtures of the Celery app tests (tests/apps/app_fixtures.py): a real PostgreSQL, a fresh
database per test, the unmodified app (Celery + kombu's Redis transport, requirements.txt and
requirements-redis.txt) run as subprocesses from its own venv (`make app-venv`), and one real
redis-server (Debian's, `make deps`) for the session, emptied before each test."""

from __future__ import annotations

import fcntl
import json
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from app_fixtures import define  # noqa: E402
from ceapp import HERE, ROOT, VENV, App, RedisServer  # noqa: E402

define(globals(), name="celery", here=HERE, venv=VENV, entry="celery", app_cls=App,
       v2_glob="none", migrations_dir="jhtasks/migrations", db_prefix="ce")


@pytest.fixture(scope="session", name="facts")
def _facts() -> Iterator[dict[str, Any]]:
    """Measured numbers, merged into bench-results/celery-app.json at the end: the tests sit
    in two xdist groups, so two worker sessions may each write their part (under a lock)."""
    data: dict[str, Any] = {}
    yield data
    if data:
        results = ROOT / "bench-results" / "celery-app.json"
        results.parent.mkdir(exist_ok=True)
        with open(results.parent / ".celery-app.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            merged = json.loads(results.read_text()) if results.is_file() else {}
            merged.update(data)
            results.write_text(json.dumps(merged, indent=2, sort_keys=True) + "\n")


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer().start()
    yield server
    server.stop()


@pytest.fixture
def redis(redis_server: RedisServer) -> RedisServer:
    redis_server.command("FLUSHALL")
    return redis_server
