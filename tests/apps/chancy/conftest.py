"""Fixtures of the chancy app tests: a real PostgreSQL server (the workload harness's),
a fresh database per test, and the unmodified app (chancy from
requirements.txt) run as subprocesses from its own venv (`make app-venv`)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from chapp import HERE, ROOT, VENV, App  # noqa: E402

sys.path.insert(0, str(ROOT / "tests" / "workload"))
from wl_harness import PostgresServer  # noqa: E402

RESULTS = ROOT / "bench-results" / "chancy-app.json"


@pytest.fixture(scope="session")
def venv() -> Path:
    """The app's venv; missing = failure (never a skip)."""
    if not (VENV / "bin" / "chancy").is_file():
        pytest.fail(f"no chancy app venv at {VENV}: run `make app-venv`", pytrace=False)
    return VENV


@pytest.fixture(scope="session")
def pg() -> Iterator[PostgresServer]:
    server = PostgresServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def projects(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    """version -> project dir: v1 is the source tree, v2 a copy with the v2 migration added
    (what tests/apps/chancy/build-image.sh bakes into the :2 image)."""
    v2 = tmp_path_factory.mktemp("v2") / "project"
    shutil.copytree(HERE / "project", v2, ignore=shutil.ignore_patterns("__pycache__"))
    for mig in (HERE / "v2").glob("v*.py"):
        shutil.copy(mig, v2 / "jhchancy" / "migrations" / mig.name)
    return {1: HERE / "project", 2: v2}


@pytest.fixture
def dburl(pg: PostgresServer) -> Iterator[str]:
    url = pg.create_database("ch")
    yield url
    pg.drop_database(url)


@pytest.fixture
def app(venv: Path, projects: dict[int, Path], dburl: str, tmp_path: Path) -> Iterator[Any]:
    """app(version=1) -> App on this test's database; every process is killed at teardown."""
    made: list[App] = []

    def make(version: int = 1) -> App:
        made.append(App(projects[version], dburl, tmp_path))
        return made[-1]

    yield make
    for a in made:
        a.kill_all()


@pytest.fixture(scope="session")
def facts() -> Iterator[dict[str, Any]]:
    """Measured numbers, written to bench-results/chancy-app.json at the end."""
    data: dict[str, Any] = {}
    yield data
    if data:
        RESULTS.parent.mkdir(exist_ok=True)
        RESULTS.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
