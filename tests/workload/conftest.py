"""Fixtures of the workload tests: one real PostgreSQL server per session, a fresh database
per test, and `workload` subprocesses that are always killed at teardown."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from wl_harness import PostgresServer, Workload, run_cli, workload_env  # noqa: E402
from workload import migrations  # noqa: E402


@pytest.fixture(scope="session")
def pg() -> Iterator[PostgresServer]:
    server = PostgresServer().start()
    yield server
    server.stop()


@pytest.fixture
def dburl(pg: PostgresServer) -> Iterator[str]:
    """URL of a fresh, empty database."""
    url = pg.create_database()
    yield url
    pg.drop_database(url)


@pytest.fixture
def migrated(dburl: str) -> str:
    """A fresh database at the v1 head."""
    migrations.migrate(dburl, migrations.head(1))
    return dburl


@pytest.fixture
def env(tmp_path: Path) -> Callable[..., dict[str, str]]:
    """env(url, version=1, state=None, **extra) -> the environment of a workload process."""
    def make(url: str, version: int = 1, state: Path | None = None, **extra: Any) -> dict[str, str]:
        return workload_env(url, state or tmp_path / "state", version, **extra)
    return make


@pytest.fixture
def cli(env: Callable[..., dict[str, str]]) -> Callable[..., Any]:
    """cli(url, *args, version=1, **env) -> CompletedProcess of a short workload command."""
    def run(url: str, *args: str, version: int = 1, timeout: float = 60.0, **extra: Any) -> Any:
        return run_cli(list(args), env(url, version, **extra), timeout=timeout)
    return run


@pytest.fixture
def spawn(tmp_path: Path, env: Callable[..., dict[str, str]]) -> Iterator[Callable[..., Workload]]:
    """spawn(url, *args, version=1, state=None, **env) -> a running Workload (killed at teardown)."""
    procs: list[Workload] = []

    def start(url: str, *args: str, version: int = 1, state: Path | None = None, **extra: Any) -> Workload:
        n = len(procs)
        proc = Workload(list(args), env(url, version, state or tmp_path / f"state{n}", **extra),
                        tmp_path / f"{args[0]}-{n}.log")
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        proc.kill()
